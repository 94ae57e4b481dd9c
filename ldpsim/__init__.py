"""ldpsim: simulation engine for inference with (locally) differentially private SGD.

Flow: models (privatized gradients) -> recursion (the jitted SGD kernel, which
streams the inference state) -> inference (BB, BM, SN, oracle intervals) ->
driver (Monte Carlo over replications) -> tables.
"""

from . import _jit  # noqa: F401  (fixes numba's cache directory before numba loads)

__version__ = "0.1.0"
