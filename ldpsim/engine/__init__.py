"""The generic engine: everything a Monte Carlo study needs that is not about any one study.

Two layers that change for different reasons, and the errors both raise:

* :mod:`.dialect`: the numba dialect the kernels are written in: the jit
  options and the numba cache (:mod:`.dialect.jit`, :mod:`.dialect.numba_cache`,
  :mod:`.dialect.numba_typing`), the record-type dispatch that lets one kernel
  serve every model (:mod:`.dialect.dispatch`), lane vectors
  (:mod:`.dialect.lanes`), the random generators seeded from identities and
  the kernels' draws (:mod:`.dialect.rng`), and kernels stopped on request
  (:mod:`.dialect.interrupt`);
* :mod:`.runs`: the machinery of a run: config keys, grids and settings
  (:mod:`.runs.config`), the chunk store (:mod:`.runs.chunks`), the driver that
  runs chunks of replications in parallel and resumes them (:mod:`.runs.driver`)
  and the places they run (:mod:`.runs.backends`), output folders
  (:mod:`.runs.outdir`), the time estimate (:mod:`.runs.pilot`), memory and time
  checks (:mod:`.runs.resources`), users' files (:mod:`.runs.usercode`) and the
  kernels a run compiles (:mod:`.runs.compiling`); it builds on the dialect;
* :mod:`.errors`: the exceptions turned into one-line messages, used by everything.

It imports no other part of ldpsim; every other layer builds on it.
"""
