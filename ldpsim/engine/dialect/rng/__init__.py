"""Random number generators: one bit generator, seeds derived from identities, and the kernels' draws.

Every replication draws from its own ``numpy.random.Generator`` built on
``SeedSequence(root, spawn_key=(setting_key, rep))``: its numbers depend on
what it is, never on which worker runs it or when (:mod:`.seeds`). The bit
generator is numpy's SFC64 (Chris Doty-Humphrey's Small Fast Chaotic
generator, 256-bit state with a counter, so every stream has period at least
2^64; it passes BigCrush and PractRand).

Inside the kernels the SFC64 recurrence is inlined: a kernel is handed
:func:`kernel_rng` ``(gen)``, a record holding the address of ``gen``'s C state,
and :func:`uniform`, :func:`normal` and :func:`exponential` step that state in
place with the published SFC64 recurrence and turn the 64-bit words into
numbers exactly as numpy does (``next_double``; the 256-layer ziggurats of
``random_standard_normal`` and ``random_standard_exponential``, with numpy's
tables, computed here as numpy's were made: :func:`normal_tables`,
:func:`exponential_tables`). The numbers are numpy's, bit for bit and in the
same order, and ``gen`` is left where numpy's own methods would have left it;
a call through numba's ``Generator`` instead goes through a function pointer
per draw, which costs more than the draw itself (``scripts/bench.py``).
Generators on other bit generators are handed over as they are and draw
through numba's ``Generator``.

One module per idea:

* :mod:`.seeds`: the bit generator, generators from seeds and the replications' generators;
* :mod:`.ziggurat`: numpy's ziggurat tables, computed;
* :mod:`.sfc64`: the scalar SFC64 in kernels: the handle on a generator's state
  (:func:`kernel_rng`), its step and the draws' fast paths (LLVM IR), slow paths
  and plain-Python twins;
* :mod:`.lane_draws`: the generators of several replications in one kernel
  (:func:`kernel_rngs`), stepped as vectors;
* :mod:`.draws`: the functions kernels call (:func:`uniform`, :func:`normal`,
  :func:`exponential`, their ``_where`` forms, :func:`local_rng`,
  :func:`release_rng`, :func:`copy_state`), where what each compiles to is decided.
"""

from .draws import (copy_state, exponential, exponential_where, local_rng, normal, normal_where, release_rng, uniform,
                    uniform_where)
from .lane_draws import Sfc64Lanes, Sfc64LocalLanes, kernel_rngs
from .seeds import BIT_GENERATOR, as_generator, replication_generator
from .sfc64 import Sfc64Local, Sfc64Stream, kernel_rng
from .ziggurat import (EXPONENTIAL_R, NORMAL_INV_R, NORMAL_R, Ziggurat, exponential_tables, fe_double, fi_double,
                       ke_double, ki_double, normal_tables, we_double, wi_double, ziggurat_exp_r, ziggurat_nor_inv_r,
                       ziggurat_nor_r)

__all__ = ["BIT_GENERATOR", "EXPONENTIAL_R", "NORMAL_INV_R", "NORMAL_R", "Sfc64Lanes", "Sfc64Local", "Sfc64LocalLanes",
           "Sfc64Stream", "Ziggurat", "as_generator", "copy_state", "exponential", "exponential_tables",
           "exponential_where", "fe_double", "fi_double", "ke_double", "ki_double", "kernel_rng", "kernel_rngs",
           "local_rng", "normal", "normal_tables", "normal_where", "release_rng", "replication_generator", "uniform",
           "uniform_where", "we_double", "wi_double", "ziggurat_exp_r", "ziggurat_nor_inv_r", "ziggurat_nor_r"]
