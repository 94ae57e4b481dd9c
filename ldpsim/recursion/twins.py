"""Plain-Python twins of the kernels, for tests.

:func:`path_twin` repeats the arithmetic of the kernels of
:mod:`ldpsim.recursion.kernels` operation for operation, in numpy float64 scalars, drawing from the same generator in the same order; on small ``n``
the two must agree exactly. It also returns the whole path, from which
:func:`state_from_definitions` recomputes the streamed state by the textbook
formulas (blocks, batches, ``V_n`` as a double sum), independently of the
streaming algebra.
"""

from __future__ import annotations

import numpy as np

from ..inference.streaming import PathState, StreamLayout
from ..models import add_privatized_gradient, privatized_gradient
from .kernels import EXACT_STEPS_BELOW, step_ratio, step_ratio_coefficients, sum_of_squares

# the kernel's scalar helpers, as plain Python (their step-size accuracy is
# tested against exact powers separately)
_step_ratio = getattr(step_ratio, "py_func", step_ratio)  # (NUMBA_DISABLE_JIT=1: no dispatcher)
_coefficients = getattr(step_ratio_coefficients, "py_func", step_ratio_coefficients)
_sum_of_squares = getattr(sum_of_squares, "py_func", sum_of_squares)


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


def path_twin(model, gen: np.random.Generator, n: int, c: float, gamma: float, theta0: float,
              layout: StreamLayout, batch_size: int = 1):
    """Twin of :func:`ldpsim.recursion.kernels.run_path`, scalar and vector models alike.

    Coordinate by coordinate it does what both kernels do, in the same
    order, so it must agree with either exactly. ``layout`` may also be a
    list of layouts that share ``n`` and the batches (:func:`~ldpsim.recursion.kernels.run_paths`);
    then ``state`` is a list, one per layout.

    Returns
    -------
    state : PathState or list of PathState
        As the kernel's wrapper returns it.
    path : numpy.ndarray
        The iterates ``theta_1 .. theta_n``, shape ``(n, d)``.
    """
    if isinstance(layout, (list, tuple)):
        first, path = path_twin(model, gen, n, c, gamma, theta0, layout[0], batch_size)
        states = [first] + [_with_blocks(first, path, lay) for lay in layout[1:]]
        return states, path
    params, d = model.kernel_params(), model.dim
    if d == 1:
        def gradient(theta, out):
            g = 0.0
            for _ in range(batch_size):
                g += privatized_gradient(params, float(theta[0]), gen)
            out[0] = g
    else:
        def gradient(theta, out):
            out[:] = 0.0
            for _ in range(batch_size):
                add_privatized_gradient(params, theta, gen, out)
    blocks = np.zeros((layout.n_blocks, d))
    batches = np.zeros((layout.batch_ends.shape[0], d))
    path = np.empty((n, d))
    ratio = _coefficients(gamma)
    theta, ref = np.full(d, float(theta0)), np.full(d, float(theta0))
    s, a, t, block, batch, grad = (np.zeros(d) for _ in range(6))
    j, block_end = 0, layout.block_len if layout.n_blocks > 0 else n + 1
    k, batch_end = 0, int(layout.batch_ends[0]) if len(layout.batch_ends) else n + 1
    pow2, eta, inv_s = 1, c, 1.0 / batch_size
    for i in range(1, n + 1):
        fi = float(i)
        eta = _step_size(i, pow2, eta, c, gamma, ratio)
        gradient(theta, grad)
        theta = theta - (eta * inv_s) * grad
        path[i - 1] = theta
        for q in range(d):
            s[q] += theta[q] - ref[q]
            a[q] += s[q] * s[q]
            t[q] += fi * s[q]
        block += theta
        if i == block_end:
            blocks[j] = block
            block, j = np.zeros(d), j + 1
            block_end = block_end + layout.block_len if j < layout.n_blocks else n + 1
        batch += theta
        if i == batch_end:
            batches[k] = batch
            batch, k = np.zeros(d), k + 1
            batch_end = int(layout.batch_ends[k]) if k < len(layout.batch_ends) else n + 1
        if i == pow2:
            shift = s / fi
            w2 = _sum_of_squares(fi)
            a += shift * (shift * w2 - 2.0 * t)
            t -= shift * w2
            ref += shift
            s[:] = 0.0
            pow2 *= 2
            if not np.isfinite(a).all():
                return PathState(np.full(d, np.nan), np.full(d, np.nan), blocks, batches, i), path[:i]
    fn = float(n)
    e = s / fn
    v = (a + e * (e * _sum_of_squares(fn) - 2.0 * t)) / (fn * fn)
    return PathState(ref + e, v, blocks, batches, n), path


def _with_blocks(state: PathState, path: np.ndarray, layout: StreamLayout) -> PathState:
    """``state`` with the block sums of ``layout``, summed left to right as the kernels do."""
    d = path.shape[1]
    blocks = np.zeros((layout.n_blocks, d))
    if state.steps == path.shape[0] == layout.n:
        for j in range(layout.n_blocks):
            acc = np.zeros(d)
            for x in path[j * layout.block_len:(j + 1) * layout.block_len]:
                acc += x
            blocks[j] = acc
    return PathState(state.theta_bar.copy(), state.sn_v.copy(), blocks, state.batches.copy(), state.steps)


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
