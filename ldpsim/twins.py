"""Plain-Python twins of the kernels, for tests.

:func:`scalar_path_twin` repeats the arithmetic of
:func:`ldpsim.recursion._scalar_path` operation for operation, in Python
floats, drawing from the same generator in the same order; on small ``n``
the two must agree exactly. It also returns the whole path, from which
:func:`state_from_definitions` recomputes the streamed state by the textbook
formulas (blocks, batches, ``V_n`` as a double sum), independently of the
streaming algebra.
"""

from __future__ import annotations

import numpy as np

from .recursion import EXACT_STEPS_BELOW, step_ratio, step_ratio_coefficients, sum_of_squares
from .streaming import PathState, StreamLayout

# the kernel's scalar helpers, as plain Python (their step-size accuracy is
# tested against exact powers separately)
_step_ratio = step_ratio.py_func
_coefficients = step_ratio_coefficients.py_func
_sum_of_squares = sum_of_squares.py_func


def _step_size(i: int, pow2: int, eta: float, c: float, gamma: float, ratio) -> float:
    if i < EXACT_STEPS_BELOW or i == pow2:
        return c * float(i) ** -gamma
    return eta * _step_ratio(float(i), ratio)


def step_sizes_twin(n: int, c: float, gamma: float) -> np.ndarray:
    """The kernel's step sizes ``eta_1 .. eta_n``."""
    out = np.empty(n)
    ratio = _coefficients(gamma)
    eta, pow2 = c, 1
    for i in range(1, n + 1):
        eta = _step_size(i, pow2, eta, c, gamma, ratio)
        out[i - 1] = eta
        if i == pow2:
            pow2 *= 2
    return out


def scalar_path_twin(model, gen: np.random.Generator, n: int, c: float, gamma: float, theta0: float,
                     layout: StreamLayout):
    """Twin of :func:`ldpsim.recursion.run_path` for scalar models.

    Returns
    -------
    state : PathState
        As the kernel's wrapper returns it.
    path : numpy.ndarray
        The iterates ``theta_1 .. theta_n``.
    """
    params, gradient = model.kernel_params(), model.gradient_py
    blocks = np.zeros(layout.n_blocks)
    batches = np.zeros(layout.batch_ends.shape[0])
    path = np.empty(n)
    ratio = _coefficients(gamma)
    theta, ref, s, a, t = theta0, theta0, 0.0, 0.0, 0.0
    j, block = 0, 0.0
    block_end = layout.block_len if layout.n_blocks > 0 else n + 1
    k, batch = 0, 0.0
    batch_end = int(layout.batch_ends[0]) if len(layout.batch_ends) else n + 1
    pow2, eta = 1, c
    for i in range(1, n + 1):
        fi = float(i)
        eta = _step_size(i, pow2, eta, c, gamma, ratio)
        theta -= eta * gradient(params, theta, gen)
        path[i - 1] = theta
        s += theta - ref
        a += s * s
        t += fi * s
        block += theta
        if i == block_end:
            blocks[j] = block
            block, j = 0.0, j + 1
            block_end = block_end + layout.block_len if j < layout.n_blocks else n + 1
        batch += theta
        if i == batch_end:
            batches[k] = batch
            batch, k = 0.0, k + 1
            batch_end = int(layout.batch_ends[k]) if k < len(layout.batch_ends) else n + 1
        if i == pow2:
            shift = s / fi
            w2 = _sum_of_squares(fi)
            a += shift * (shift * w2 - 2.0 * t)
            t -= shift * w2
            ref += shift
            s = 0.0
            pow2 *= 2
            if not np.isfinite(a):
                return PathState(np.array([np.nan]), np.array([np.nan]), blocks[:, None], batches[:, None], i), path
    fn = float(n)
    e = s / fn
    v = (a + e * (e * _sum_of_squares(fn) - 2.0 * t)) / (fn * fn)
    state = PathState(np.array([ref + e]), np.array([v]), blocks[:, None], batches[:, None], n)
    return state, path


def state_from_definitions(path: np.ndarray, layout: StreamLayout) -> PathState:
    """The streamed state recomputed from a stored path by the defining formulas.

    Parameters
    ----------
    path : numpy.ndarray
        Iterates, shape ``(n,)`` or ``(n, d)``.
    layout : StreamLayout
        Block and batch ends.
    """
    x = path.reshape(path.shape[0], -1)
    n = x.shape[0]
    theta_bar = x.mean(axis=0)
    l, m = layout.block_len, layout.n_blocks
    blocks = x[: m * l].reshape(m, l, -1).sum(axis=1) if m else np.zeros((0, x.shape[1]))
    starts = np.concatenate([[0], layout.batch_ends[:-1]])
    batches = np.array([x[a:b].sum(axis=0) for a, b in zip(starts, layout.batch_ends)]).reshape(-1, x.shape[1])
    running_means = np.cumsum(x, axis=0) / np.arange(1, n + 1)[:, None]
    t = np.arange(1, n + 1)[:, None]
    sn_v = (t**2 * (running_means - theta_bar) ** 2).sum(axis=0) / n**2
    return PathState(theta_bar, sn_v, blocks, batches, n)
