"""The generic engine: everything a Monte Carlo study needs that is not about any one study.

It owns the jit options and the numba cache (:mod:`.jit`), the record-type
dispatch that lets one kernel serve every model (:mod:`.dispatch`), the
random generators seeded from identities (:mod:`.rng`), config keys, grids
and settings (:mod:`.config`), the chunk store (:mod:`.chunks`), the driver
that runs chunks of replications in parallel and resumes them
(:mod:`.driver`) and the places they run (:mod:`.backends`), and the
exceptions turned into one-line messages (:mod:`.errors`). It imports no
other part of ldpsim; every other layer builds on it.
"""
