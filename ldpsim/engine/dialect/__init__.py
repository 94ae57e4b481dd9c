"""The numba dialect ldpsim's kernels are written in: what changes with numba, not with a run.

The jit options and numba's cache folder (:mod:`.jit`, imported first by
``ldpsim/__init__.py``: it fixes the folder before numba is imported), numba's
cache keyed on the sources each kernel compiles (:mod:`.numba_cache`) and its
typing remembered per argument types (:mod:`.numba_typing`), record-type
dispatch (:mod:`.dispatch`), lane vectors: L replications side by side in SIMD
registers (:mod:`.lanes`), the random generators seeded from identities and the
kernels' draws (:mod:`.rng`), and kernels stopped on Ctrl-C (:mod:`.interrupt`).
It imports nothing of ldpsim outside itself. (This module imports nothing: numba
must not load before :mod:`.jit` has run.)
"""
