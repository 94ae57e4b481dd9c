"""The LDP-SGD recursion: jitted kernels that run one path and stream its state.

:mod:`.kernels` runs ``theta_i = theta_{i-1} - eta_i A(g(X_i, theta_{i-1}))``
(000, eq. 6), drawing each observation inside the kernel through the model's
registered gradient, and streams the inference state of
:mod:`ldpsim.inference.streaming` in the same pass. :mod:`.twins` repeats the
kernels in plain Python (tests require identical output) and recomputes
the streamed state from its definitions. :mod:`.keys` holds the config keys
every path takes and the seed identity of a path.
"""

from .kernels import run_path

__all__ = ["run_path"]
