"""The LDP-SGD recursion (000, eq. 6) with the inference state streamed alongside.

``theta_i = theta_{i-1} - eta_i A(g(X_i, theta_{i-1}))`` with ``eta_i = c i^-gamma``.
The kernel draws each observation itself (no n-sized array exists), calls the
model's registered privatized gradient and updates, in the same pass, the
block sums, batch sums and random-scaling sums of :mod:`ldpsim.inference.streaming`.
"""

from __future__ import annotations

import numpy as np

from ..engine.jit import jit
from ..engine.rng import kernel_rng
from ..inference.streaming import PathState, StreamLayout
from ..models.base import add_privatized_gradient, privatized_gradient

#: Below this step the step size is ``c * i**-gamma`` exactly; above it, it is
#: updated by the ratio series of :func:`step_ratio` (a ``pow`` costs more
#: than the random numbers of a step) and recomputed exactly at powers of two,
#: so rounding cannot drift: the relative error stays below 1e-12.
EXACT_STEPS_BELOW = 4096


@jit
def step_ratio_coefficients(gamma):
    """Coefficients ``b_1..b_4`` of ``(1 - x)^gamma = 1 + b_1 x + ... + b_4 x^4 + O(x^5)``."""
    b1 = -gamma
    b2 = b1 * (1.0 - gamma) / 2.0
    b3 = b2 * (2.0 - gamma) / 3.0
    b4 = b3 * (3.0 - gamma) / 4.0
    return b1, b2, b3, b4


@jit
def step_ratio(i, b):
    """``eta_i / eta_{i-1} = (1 - 1/i)^gamma`` for ``i >= 4096``, ``b`` from :func:`step_ratio_coefficients`.

    The binomial series to ``x^4``, ``x = 1/i <= 2^-12``: the omitted terms
    are below 3e-20, far under the rounding of a double.
    """
    x = 1.0 / i
    return 1.0 + x * (b[0] + x * (b[1] + x * (b[2] + x * b[3])))


@jit
def step_size(i, pow2, eta, c, gamma, ratio):
    """``eta_i`` from ``eta_{i-1}``: exact for small ``i`` and at ``i == pow2``, else by ratio."""
    if i < EXACT_STEPS_BELOW or i == pow2:
        return c * float(i) ** -gamma
    return eta * step_ratio(float(i), ratio)


@jit
def sum_of_squares(i):
    """``1^2 + ... + i^2`` as a float (exact in integers would overflow int64)."""
    return i * (i + 1.0) * (2.0 * i + 1.0) / 6.0


    """``1^2 + ... + i^2`` as a float (exact in integers would overflow int64)."""
    return i * (i + 1.0) * (2.0 * i + 1.0) / 6.0


# The random-scaling sums, centred at a reference ``ref`` that moves to the
# running mean at every power of two. For i <= t the centred partial sums are
# S_t = sum_{s<=t} (theta_s - ref). Random scaling needs
# k^2 V_k = sum_{t<=k} (S_t - t e)^2 = A - 2 e T + e^2 W2(k), e = S_k / k,
# with A = sum S_t^2, T = sum t S_t, W2 = sum t^2: the terms grow like k^3,
# so without the recentring they would cancel catastrophically. The three
# helpers below are shared by every kernel that streams V (the trace reads V
# at many k along one path), so their arithmetic exists once.


@jit
def sn_add(s, a, t, theta, ref, fi):
    """Add iterate ``theta_i`` (``fi = float(i)``) to the centred sums ``(S, A, T)``."""
    s += theta - ref
    return s, a + s * s, t + fi * s


@jit
def sn_recentre(s, a, t, ref, fi):
    """Move ``ref`` to the running mean after step ``fi``; returns the new ``(S, A, T, ref)``."""
    shift = s / fi
    w2 = sum_of_squares(fi)
    return 0.0, a + shift * (shift * w2 - 2.0 * t), t - shift * w2, ref + shift


@jit
def sn_read(s, a, t, ref, fk):
    """``(theta_bar_k, V_k)`` from the centred sums after step ``fk = float(k)``."""
    e = s / fk
    return ref + e, (a + e * (e * sum_of_squares(fk) - 2.0 * t)) / (fk * fk)


# A mini-batch of s observations uses the step eta_i / s on their sum
# (eta_i * (1/s) is exact for s = 1, so s = 1 is plain LDP-SGD to the bit).


@jit
def _scalar_path(params, gen, n, batch_size, c, gamma, theta0, block_len, blocks, batch_ends, batches):
    theta = theta0
    ref = theta0
    s = 0.0
    a = 0.0
    t = 0.0
    n_blocks = blocks.shape[0]
    j = 0
    block = 0.0
    block_end = block_len if n_blocks > 0 else n + 1
    n_batches = batch_ends.shape[0]
    k = 0
    batch = 0.0
    batch_end = batch_ends[0] if n_batches > 0 else n + 1
    pow2 = 1
    ratio = step_ratio_coefficients(gamma)
    inv_s = 1.0 / batch_size
    eta = c
    for i in range(1, n + 1):
        fi = float(i)
        eta = step_size(i, pow2, eta, c, gamma, ratio)
        g = 0.0
        for _ in range(batch_size):
            g += privatized_gradient(params, theta, gen)
        theta -= (eta * inv_s) * g
        s, a, t = sn_add(s, a, t, theta, ref, fi)
        block += theta
        if i == block_end:
            blocks[j] = block
            block = 0.0
            j += 1
            block_end = block_end + block_len if j < n_blocks else n + 1
        batch += theta
        if i == batch_end:
            batches[k] = batch
            batch = 0.0
            k += 1
            batch_end = batch_ends[k] if k < n_batches else n + 1
        if i == pow2:
            s, a, t, ref = sn_recentre(s, a, t, ref, fi)
            pow2 *= 2
            if not np.isfinite(a):  # diverged: stop, the driver counts it
                return i, np.nan, np.nan
    theta_bar, v = sn_read(s, a, t, ref, float(n))
    return n, theta_bar, v


@jit
def _vector_path(params, gen, n, batch_size, c, gamma, theta, grad, ref, s, a, t,
                 block_len, blocks, block, batch_ends, batches, batch):
    # The scalar kernel coordinate by coordinate; theta starts at theta0 and
    # ref, s, a, t, block and batch are zeroed (d,) work arrays of the wrapper.
    # On return theta holds theta_bar and s holds V_n.
    d = theta.shape[0]
    ref[:] = theta
    n_blocks = blocks.shape[0]
    jb = 0
    block_end = block_len if n_blocks > 0 else n + 1
    n_batches = batch_ends.shape[0]
    k = 0
    batch_end = batch_ends[0] if n_batches > 0 else n + 1
    pow2 = 1
    ratio = step_ratio_coefficients(gamma)
    inv_s = 1.0 / batch_size
    eta = c
    for q in range(d):
        grad[q] = 0.0
    for i in range(1, n + 1):
        fi = float(i)
        eta = step_size(i, pow2, eta, c, gamma, ratio)
        w = eta * inv_s
        for _ in range(batch_size):
            add_privatized_gradient(params, theta, gen, grad)
        for q in range(d):
            x = theta[q] - w * grad[q]
            grad[q] = 0.0  # zeroed for the next step here: ``grad[:] = 0.0`` was a memset call per step
            theta[q] = x
            s[q], a[q], t[q] = sn_add(s[q], a[q], t[q], x, ref[q], fi)
            block[q] += x
            batch[q] += x
        if i == block_end:
            blocks[jb] = block
            block[:] = 0.0
            jb += 1
            block_end = block_end + block_len if jb < n_blocks else n + 1
        if i == batch_end:
            batches[k] = batch
            batch[:] = 0.0
            k += 1
            batch_end = batch_ends[k] if k < n_batches else n + 1
        if i == pow2:
            finite = True
            for q in range(d):
                s[q], a[q], t[q], ref[q] = sn_recentre(s[q], a[q], t[q], ref[q], fi)
                finite = finite and np.isfinite(a[q])
            pow2 *= 2
            if not finite:  # diverged: stop, the driver counts it
                return i
    for q in range(d):
        theta[q], s[q] = sn_read(s[q], a[q], t[q], ref[q], float(n))
    return n


def run_path(model, gen: np.random.Generator, n: int, c: float, gamma: float, theta0: float,
             layout: StreamLayout, batch_size: int = 1) -> PathState:
    """Run one LDP-SGD path of ``n`` steps and return its streamed state.

    Parameters
    ----------
    model : ldpsim.models.Model
        Supplies the kernel parameters (its privatized gradient).
    gen : numpy.random.Generator
        The replication's generator; the kernel advances it.
    n : int
        Number of steps.
    c, gamma : float
        Step size ``eta_i = c i^-gamma``.
    theta0 : float
        Starting value of every coordinate.
    layout : StreamLayout
        Block and batch ends for ``n``.
    batch_size : int
        Observations per step, each privatized on its own (000, Remark 2.1).

    Returns
    -------
    PathState
        Arrays shaped with a trailing coordinate axis of length ``model.dim``.
    """
    d = model.dim
    params = model.kernel_params()
    if d == 1:  # the scalar kernel keeps theta in a register: a third faster than d = 1 arrays
        blocks = np.zeros(layout.n_blocks)
        batches = np.zeros(layout.batch_ends.shape[0])
        steps, theta_bar, sn_v = _scalar_path(
            params, kernel_rng(gen), int(n), int(batch_size), float(c), float(gamma), float(theta0),
            int(layout.block_len), blocks, layout.batch_ends, batches,
        )
        return PathState(np.array([theta_bar]), np.array([sn_v]), blocks[:, None], batches[:, None], int(steps))
    theta = np.full(d, float(theta0))
    work = np.zeros((6, d))  # grad, ref, s, a, t, block
    batch = np.zeros(d)
    blocks = np.zeros((layout.n_blocks, d))
    batches = np.zeros((layout.batch_ends.shape[0], d))
    steps = _vector_path(
        params, kernel_rng(gen), int(n), int(batch_size), float(c), float(gamma), theta, *work[:5],
        int(layout.block_len), blocks, work[5], layout.batch_ends, batches, batch,
    )
    if steps < n:
        theta[:] = np.nan
        work[2] = np.nan
    return PathState(theta, work[2].copy(), blocks, batches, int(steps))
