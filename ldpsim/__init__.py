"""ldpsim: simulation engine for inference with (locally) differentially private SGD.

Layers, bottom to top (each imports only the ones before it):

* :mod:`ldpsim.engine`: the numba dialect (:mod:`ldpsim.engine.dialect`: jit
  options, record dispatch, lanes, seeds and draws) and the run machinery
  (:mod:`ldpsim.engine.runs`: config keys and grids, the chunk store, the Monte
  Carlo driver and its backends);
* :mod:`ldpsim.privacy`: mechanisms that privatize a gradient;
* :mod:`ldpsim.models`: privatized gradients drawn inside the kernels, and the truth;
* :mod:`ldpsim.inference`: the streamed state of a path and the intervals built from it;
* :mod:`ldpsim.recursion`: the jitted LDP-SGD kernels and their Python twins;
* :mod:`ldpsim.reporting`: CSV tables, Monte Carlo statistics, figures, the papers' tables;
* :mod:`ldpsim.studies`: what a run computes, summarises and draws (``coverage``, ``trajectory``);
* :mod:`ldpsim.fit`: ``ldpsim fit``, DP-SGD and its private intervals on a user's data (not a Monte Carlo study);
* :mod:`ldpsim.api` and :mod:`ldpsim.cli`: ``ldpsim.run(...)`` and ``python -m ldpsim``.
"""

from .engine.dialect import jit as _jit  # noqa: F401  (fixes numba's cache directory before numba loads)

__version__ = "0.1.0"

from .api import Result, load_config, open_result, run  # noqa: E402
from .engine.errors import ConfigError, ConfigWarning, MissingExtra  # noqa: E402

#: The layers a plain ``import ldpsim`` no longer imports (the studies load on a config's first load, issue 41),
#: still reached as attributes of the package: ``ldpsim.models`` imports :mod:`ldpsim.models` on first use.
_LAYERS = ("engine", "privacy", "models", "inference", "recursion", "reporting", "studies", "fit", "extend")


def __getattr__(name):
    if name in _LAYERS:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ConfigError", "ConfigWarning", "MissingExtra", "Result", "__version__", "load_config", "open_result",
           "run"]
