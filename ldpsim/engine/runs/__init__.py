"""The run machinery: what a Monte Carlo run needs around its kernels, whatever they compute.

Config keys, grids and settings (:mod:`.config`), the chunk store
(:mod:`.chunks`), the driver that runs chunks of replications in parallel and
resumes them (:mod:`.driver`) and where its tasks run (:mod:`.backends`), output
folders (:mod:`.outdir`), the time estimate from a pilot (:mod:`.pilot`), the
machine's memory and a run's time (:mod:`.resources`), users' files loaded by
path or module (:mod:`.usercode`), the kernels a run needs, listed and
compiled side by side (:mod:`.compiling`), and one run from its checks to its
``meta.json`` (:mod:`.run`, with the code's and machine's record,
:mod:`.provenance`). It builds on the numba dialect
(:mod:`ldpsim.engine.dialect`) and the errors (:mod:`ldpsim.engine.errors`).
"""
