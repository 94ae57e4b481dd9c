"""Kernels of the DP-SGD study: a dataset of n points, DP-SGD on it (002, Algorithm 1 with (5.1)), DP-GD.

Three jitted kernels, each with a plain-Python twin that repeats its
arithmetic operation for operation and draws from the numpy generator in the
same order (tests require identical output):

* :func:`draw_data`: ``theta* ~ U[0, hi]^d`` (``hi = 1`` linear, ``1/2``
  logistic; 002, Section 6.1), then for each of the ``n`` rows ``z ~ N(0, I_d)``,
  ``x = L z`` (``L`` the Cholesky factor of the design's covariance), and
  ``y = x'theta* + N(0, 1)`` (linear) or ``y = 1{u < s(x'theta*)}`` (logistic).
  The data are held in memory: they are O(n), the study's fixed sample.
* :func:`run_dpsgd`: ``T`` steps of
  ``theta_t = theta_{t-1} - eta_t ((1/m) sum_{i in I_t} clip(grad l_i(theta_{t-1})) + xi_t)``,
  ``xi_t ~ N(0, sigma_1^2 I)``, ``eta_t = c t^-gamma``, with per-example
  clipping at ``clip`` in l2 norm (5.1) and the mini-batch ``I_t`` drawn by

  - ``swor``: ``m`` distinct indices, a partial Fisher-Yates shuffle of a
    permutation kept across steps (step ``k`` of the shuffle swaps position
    ``k`` with ``k + floor(u (n - k))``, ``u`` uniform on [0, 1): from any
    permutation, the first ``m`` entries are a uniform m-subset; the
    mapping's non-uniformity is below ``n / 2^53``);
  - ``poisson``: each index independently with probability ``q = m / n``,
    by geometric gaps ``floor(E / lambda)``, ``E`` standard exponential,
    ``lambda = -log(1 - q)`` (``P(gap >= k) = (1 - q)^k``): ``|I_t| + 1``
    draws per step instead of ``n``; the sum is divided by the expected size
    ``m`` (unbiased, and its sensitivity does not depend on ``|I_t|``);
  - ``cyclic``: ``m`` consecutive indices, passing through the data in order.

  The path streams what inference needs and nothing O(T): the random-scaling
  sums (:func:`ldpsim.recursion.kernels.sn_add`, ``sn_recentre``, ``sn_read``),
  the block sums of BB and the batch sums of BM
  (:class:`ldpsim.inference.streaming.StreamLayout`), and counts the clipped
  per-example gradients.
* :func:`run_dpgd`: noisy full-gradient descent (Avella-Medina, Bradshaw &
  Loh 2023): ``theta_{k+1} = theta_k - step (1/n) sum_i clip(grad l_i(theta_k)) + s Z_k``.

The model is a record (:class:`Linear` or :class:`Logistic`, :data:`MODELS`)
whose :func:`label` and :func:`residual` are picked by its type
(:func:`ldpsim.engine.dialect.dispatch.by_record`), as every model's gradient is: a
kernel is compiled for one model, with no branch on it inside, and the twins
call the same two functions.
"""

from __future__ import annotations

import math

import numpy as np

from typing import NamedTuple

from ...engine.dialect import interrupt
from ...engine.dialect.dispatch import by_record
from ...engine.dialect.interrupt import poll_mask, stop_requested
from ...engine.dialect.jit import jit
from ...engine.dialect.lanes import any_lane, lane_array, lane_of, lnot, padded, per_lane, where
from ...engine.dialect.rng import exponential_where, kernel_rng, kernel_rngs, local_rng, normal, release_rng, uniform
from ...inference.streaming import PathState, StreamLayout
from ...privacy.mechanisms import gaussian_or_zero
from ...recursion.kernels import sn_add, sn_read, sn_recentre_all, step_ratio_coefficients, step_size
from ...recursion.twins import _coefficients, _step_size, _sum_of_squares

#: Sampling codes of the kernels.
SWOR, POISSON, CYCLIC = 0, 1, 2
SAMPLING_CODES = {"swor": SWOR, "poisson": POISSON, "cyclic": CYCLIC}


# --- the models ----------------------------------------------------------------


class Linear(NamedTuple):
    """Linear regression: ``y = x'theta* + N(0, 1)``, squared loss, residual ``x'theta - y``."""

    zero: float = 0.0  # numba wants a field


class Logistic(NamedTuple):
    """Logistic regression: ``y = 1{u < s(x'theta*)}``, logistic loss, residual ``s(x'theta) - y``."""

    zero: float = 0.0


#: The study's models, as configs spell them, and their kernel records.
MODELS = {"linear": Linear(), "logistic": Logistic()}


@by_record
def label(model, gen, mean):
    """The label of a row with ``x'theta* = mean``: one normal (linear) or one uniform (logistic)."""


@by_record
def residual(model, fit, y):
    """``r`` with ``grad l_i(theta) = r x_i``, at ``fit = x_i'theta`` and the label ``y`` (lane-generic)."""


@label.register(Linear)
def _linear_label(model, gen, mean):
    return mean + normal(gen)


@label.register(Logistic)
def _logistic_label(model, gen, mean):
    return 1.0 if uniform(gen) * (1.0 + math.exp(-mean)) < 1.0 else 0.0  # u < s(mean)


@residual.register(Linear)
def _linear_residual(model, fit, y):
    return fit - y


@residual.register(Logistic)
def _logistic_residual(model, fit, y):
    return 1.0 / (1.0 + math.exp(-fit)) - y


# --- the data ---------------------------------------------------------------


@jit
def _draw_data(stream, model, chol, theta_hi, theta_star, z, X, y, xnorm):
    gen = local_rng(stream)  # the generator's state in registers; release_rng writes it back
    n, d = X.shape
    for j in range(d):
        theta_star[j] = theta_hi * uniform(gen)
    for i in range(n):
        for j in range(d):
            z[j] = normal(gen)
        mean = 0.0
        sq = 0.0
        for j in range(d):
            v = 0.0
            for k in range(j + 1):
                v += chol[j, k] * z[k]
            X[i, j] = v
            mean += v * theta_star[j]
            sq += v * v
        xnorm[i] = math.sqrt(sq)
        y[i] = label(model, gen, mean)
    release_rng(stream, gen)


def draw_data(gen: np.random.Generator, model: str, chol: np.ndarray, n: int, theta_hi: float):
    """Draw ``theta*`` and a dataset of ``n`` rows (see the module docstring).

    Returns
    -------
    theta_star : (d,) array
    X : (n, d) array
    y : (n,) array
    xnorm : (n,) array
        ``||x_i||_2``, kept for the clipping of per-example gradients.
    """
    d = chol.shape[0]
    theta_star, z = np.empty(d), np.empty(d)
    X, y, xnorm = np.empty((n, d)), np.empty(n), np.empty(n)
    _draw_data(kernel_rng(gen), MODELS[model], chol, float(theta_hi), theta_star, z, X, y, xnorm)
    return theta_star, X, y, xnorm


def draw_data_twin(gen: np.random.Generator, model: str, chol: np.ndarray, n: int, theta_hi: float):
    """Plain-Python twin of :func:`draw_data`."""
    d = chol.shape[0]
    record = MODELS[model]
    theta_star = np.array([theta_hi * gen.random() for _ in range(d)])
    X, y, xnorm = np.empty((n, d)), np.empty(n), np.empty(n)
    z = np.empty(d)
    for i in range(n):
        for j in range(d):
            z[j] = gen.standard_normal()
        mean = sq = 0.0
        for j in range(d):
            v = 0.0
            for k in range(j + 1):
                v += chol[j, k] * z[k]
            X[i, j] = v
            mean += v * theta_star[j]
            sq += v * v
        xnorm[i] = math.sqrt(sq)
        y[i] = label(record, gen, mean)
    return theta_star, X, y, xnorm


# --- one clipped per-example gradient ---------------------------------------------


@jit(inline=True)
def _add_clipped(X, y, xnorm, i, theta, model, clip, grad, take):
    """Add ``clip(grad l_i(theta))`` to ``grad`` where ``take`` holds; 1 where it was clipped (and taken), else 0.

    ``grad l_i = r x_i`` with ``r = x_i'theta - y_i`` (linear) or
    ``s(x_i'theta) - y_i`` (logistic), so ``||grad l_i|| = |r| ||x_i||``.
    Lane-generic (:mod:`ldpsim.engine.dialect.lanes`): with lanes, ``i`` is each
    lane's index into its own data and ``take`` says which lanes add one.
    """
    d = grad.shape[0]
    fit = 0.0
    for j in range(d):
        fit += X[i, j] * theta[j]
    r = residual(model, fit, y[i])
    norm = abs(r) * xnorm[i]
    over = norm > clip
    if any_lane(over):
        r = where(over, r * (clip / norm), r)
    for j in range(d):
        grad[j] = where(take, grad[j] + r * X[i, j], grad[j])
    return where(take & over, 1, 0)


def _add_clipped_twin(X, y, xnorm, i, theta, model, clip, grad):
    d = grad.shape[0]
    fit = 0.0
    for j in range(d):
        fit += X[i, j] * theta[j]
    r = residual(model, fit, y[i])
    norm = abs(r) * xnorm[i]
    clipped = 0
    if norm > clip:
        r = r * (clip / norm)
        clipped = 1
    for j in range(d):
        grad[j] += r * X[i, j]
    return clipped


# --- DP-SGD -------------------------------------------------------------------


@jit
def _dpsgd_path(rngs, X, y, xnorm, model, sampling, steps, m, c, gamma, clip, sigma1, inv_lambda, perm,
                theta, grad, ref, s, a, t, block_len, blocks, block, batch_ends, batches, batch, counts, done, stop,
                mask):
    # Lane-generic (ldpsim.engine.dialect.lanes): one replication, or L side by side when handed kernel_rngs of L
    # generators and LaneArrays (each lane's own data X, y, xnorm, perm, and its state); the lanes share the
    # schedule (steps, step sizes, block and batch ends), and each makes the draws and the arithmetic of a
    # path of its own in the same order, so its numbers do not depend on L.
    # theta starts at theta0; grad, ref, s, a, t, block and batch are zeroed (d,) work arrays.
    # On return theta holds theta_bar_T, s holds V_T = T^-2 sum_t S_t^2 (the random-scaling sums),
    # counts = (clipped per-example gradients, examples used), done[0] the steps completed (fewer: the
    # path diverged, or the run was interrupted); a lane that stopped keeps computing, unrecorded.
    gen = local_rng(rngs)  # the generators' states in registers; release_rng writes them back
    n, d = X.shape
    for q in range(d):
        ref[q] = theta[q]
    n_blocks = blocks.shape[0]
    jb = 0
    block_end = block_len if n_blocks > 0 else steps + 1
    n_batches = batch_ends.shape[0]
    k = 0
    batch_end = batch_ends[0] if n_batches > 0 else steps + 1
    pow2 = 1
    ratio = step_ratio_coefficients(gamma)
    inv_m = 1.0 / m
    eta = c
    pos = 0
    running = True
    stopped = 0
    for i in range(1, steps + 1):
        fi = float(i)
        eta = step_size(i, pow2, eta, c, gamma, ratio)
        clipped = 0
        used = 0
        if sampling == 0:  # swor: partial Fisher-Yates on the kept permutation
            for q in range(m):
                r = q + int(uniform(gen) * (n - q))
                idx = perm[r]
                perm[r] = perm[q]
                perm[q] = idx
                clipped += _add_clipped(X, y, xnorm, idx, theta, model, clip, grad, True)
            used += m
        elif sampling == 1:  # poisson: geometric gaps
            idx = -1
            active = True
            while True:
                gap = exponential_where(gen, active, 0.0) * inv_lambda
                active = active & (gap < n - 1 - idx)  # not below: also catches inf
                if not any_lane(active):
                    break
                idx = where(active, idx + 1 + int(gap), idx)
                clipped += _add_clipped(X, y, xnorm, where(active, idx, 0), theta, model, clip, grad, active)
                used += where(active, 1, 0)
        else:  # cyclic (every lane at the same position)
            at = pos
            for q in range(m):
                clipped += _add_clipped(X, y, xnorm, at, theta, model, clip, grad, True)
                at += 1
                if at == n:
                    at = 0
            used += m
        counts[0] += where(running, clipped, 0)
        counts[1] += where(running, used, 0)
        for q in range(d):
            noise = gaussian_or_zero(gen, sigma1)  # the audited mechanism (privacy/audit.py)
            x = theta[q] - eta * (grad[q] * inv_m + noise)
            grad[q] = 0.0
            theta[q] = x
            s[q], a[q], t[q] = sn_add(s[q], a[q], t[q], x, ref[q], fi)
            block[q] += x
            batch[q] += x
        if sampling == 2:
            pos = (pos + m) % n
        if i == block_end:
            for q in range(d):
                blocks[jb, q] = block[q]
                block[q] = 0.0
            jb += 1
            block_end = block_end + block_len if jb < n_blocks else steps + 1
        if i == batch_end:
            for q in range(d):
                batches[k, q] = batch[q]
                batch[q] = 0.0
            k += 1
            batch_end = batch_ends[k] if k < n_batches else steps + 1
        if i == pow2:
            pow2 *= 2
            diverged = running & lnot(sn_recentre_all(s, a, t, ref, fi))
            if any_lane(diverged):  # those paths stop; the study counts them
                stopped = where(diverged, i, stopped)
                running = running & lnot(diverged)
                if not any_lane(running):
                    break
        if i & mask == 0 and stop_requested(stop):  # Ctrl-C (ldpsim.engine.dialect.interrupt)
            stopped = where(running, i, stopped)
            running = False
            break
    release_rng(rngs, gen)
    done[0] = where(running, steps, stopped)
    for q in range(d):
        theta[q], s[q] = sn_read(s[q], a[q], t[q], ref[q], float(steps))


def run_dpsgd_lanes(gens, data, model: str, sampling: str, steps: int, batch_size: int, c: float, gamma: float,
                    clip: float, sigma1: float, theta0: float, layout: StreamLayout, width: int | None = None):
    """Run DP-SGD for ``steps`` iterations on ``L`` datasets side by side (lanes); one result per lane.

    Parameters
    ----------
    gens : sequence of numpy.random.Generator
        One replication's generator per lane, after its data were drawn; advanced.
    data : sequence of (X, y, xnorm)
        Each lane's dataset (:func:`draw_data`), all of one shape.
    model, sampling, steps, batch_size, c, gamma, clip, sigma1, theta0, layout
        As :func:`run_dpsgd`.
    width : int, optional
        Lanes of the kernel call (default ``len(gens)``); more are padded (they
        run on the first dataset, unrecorded: :func:`~ldpsim.engine.dialect.lanes.padded`).

    Returns
    -------
    list of (PathState, float)
        Per lane what :func:`run_dpsgd` returns; lane ``l``'s numbers are those of
        ``run_dpsgd(gens[l], *data[l], ...)``, whatever ``L``.
    """
    count = len(gens)
    gens = padded(gens, width or count)
    data = list(data) + [data[0]] * (len(gens) - count)
    lanes = len(gens)
    X, y, xnorm = (per_lane((dat[part] for dat in data), readonly=True) for part in range(3))
    n, d = data[0][0].shape
    perm = per_lane(np.arange(n, dtype=np.int64) for _ in range(lanes))
    theta = lane_array(d, lanes, float(theta0))
    work = [lane_array(d, lanes) for _ in range(7)]  # grad, ref, s, a, t, block, batch
    blocks = lane_array((layout.n_blocks, d), lanes)
    batches = lane_array((layout.batch_ends.shape[0], d), lanes)
    counts = lane_array(2, lanes, 0, np.int64)
    done = lane_array(1, lanes, 0, np.int64)
    _dpsgd_path(kernel_rngs(gens), X, y, xnorm, MODELS[model], SAMPLING_CODES[sampling],
                int(steps), int(batch_size), float(c), float(gamma), float(clip), float(sigma1),
                _inv_lambda(batch_size, n), perm, theta, *work[:5], int(layout.block_len), blocks, work[5],
                layout.batch_ends, batches, work[6], counts, done, interrupt.FLAG, poll_mask(batch_size * d))
    interrupt.check()  # a path stopped by Ctrl-C is no result
    out = []
    for lane in range(count):
        steps_done = int(lane_of(done, lane)[0])
        theta_bar, v = lane_of(theta, lane).copy(), lane_of(work[2], lane).copy()
        if steps_done < steps:
            theta_bar[:] = np.nan
            v[:] = np.nan
        state = PathState(theta_bar, v, lane_of(blocks, lane).copy(), lane_of(batches, lane).copy(), steps_done)
        out.append((state, _rate(lane_of(counts, lane))))
    return out


def run_dpsgd(gen: np.random.Generator, X, y, xnorm, model: str, sampling: str, steps: int, batch_size: int,
              c: float, gamma: float, clip: float, sigma1: float, theta0: float, layout: StreamLayout):
    """Run DP-SGD for ``steps`` iterations on ``(X, y)`` and return its streamed state.

    Parameters
    ----------
    gen : numpy.random.Generator
        The replication's generator, after the data were drawn; advanced.
    X, y, xnorm : numpy.ndarray
        The dataset (:func:`draw_data`).
    model : {'linear', 'logistic'}
    sampling : {'swor', 'poisson', 'cyclic'}
    steps : int
        ``T``.
    batch_size : int
        ``m`` (``poisson``: the expected size).
    c, gamma : float
        Step sizes ``eta_t = c t^-gamma``.
    clip : float
        Per-example clipping threshold (``inf``: none).
    sigma1 : float
        SD of the Gaussian noise on the averaged gradient (0: non-private).
    theta0 : float
        Start, every coordinate.
    layout : StreamLayout
        Block and batch ends for ``steps``.

    Returns
    -------
    state : PathState
        ``theta_bar``, ``sn_v`` (``V_T = T^-2 sum_t S_t^2``, ``S_t`` the partial sums of
        ``theta_s - theta_bar_T``), block and batch sums, ``steps`` completed.
    clip_rate : float
        Share of the per-example gradients used along the path that were clipped.
    """
    return run_dpsgd_lanes([gen], [(X, y, xnorm)], model, sampling, steps, batch_size, c, gamma, clip, sigma1,
                           theta0, layout)[0]


#: Nanoseconds of a DP-SGD step, ``STEP_NS[0] + STEP_NS[1] m d`` (m examples of d coordinates), measured on a
#: 2-core laptop under load (90-150 ns a step at m = 1, d = 3; 760 at m = 10; 2026-11).
STEP_NS = (20.0, 25.0)


def replication_seconds(n: int, d: int, steps: int, batch_size: int, dpgd_steps: int = 0) -> float:
    """Estimated seconds of one replication: the data, ``steps`` DP-SGD steps and ``dpgd_steps`` passes of DP-GD."""
    data = n * d * d * 5e-9
    path = steps * (STEP_NS[0] + STEP_NS[1] * batch_size * d) * 1e-9
    return data + path + dpgd_steps * n * d * STEP_NS[1] * 1e-9


def _inv_lambda(batch_size: int, n: int) -> float:
    """``1 / lambda = -1 / log(1 - q)`` of the Poisson gaps, ``q = m / n`` (0 at ``q = 1``: every index)."""
    q = batch_size / n
    return 0.0 if q >= 1.0 else -1.0 / math.log1p(-q)


def _rate(counts) -> float:
    return float(counts[0]) / float(counts[1]) if counts[1] > 0 else 0.0


def run_dpsgd_twin(gen: np.random.Generator, X, y, xnorm, model: str, sampling: str, steps: int, batch_size: int,
                   c: float, gamma: float, clip: float, sigma1: float, theta0: float, layout: StreamLayout):
    """Plain-Python twin of :func:`run_dpsgd` (same arithmetic, same draws); also returns the path ``(T, d)``."""
    n, d = X.shape
    record = MODELS[model]
    code = SAMPLING_CODES[sampling]
    inv_lambda = _inv_lambda(batch_size, n)
    theta = np.full(d, float(theta0))
    ref = theta.copy()
    grad, s, a, t = np.zeros(d), np.zeros(d), np.zeros(d), np.zeros(d)
    block, batch = np.zeros(d), np.zeros(d)
    blocks = np.zeros((layout.n_blocks, d))
    batches = np.zeros((layout.batch_ends.shape[0], d))
    perm = np.arange(n, dtype=np.int64)
    path = np.empty((steps, d))
    ratio = _coefficients(gamma)
    block_end = layout.block_len if layout.n_blocks > 0 else steps + 1
    batch_end = layout.batch_ends[0] if layout.batch_ends.shape[0] > 0 else steps + 1
    jb = kb = pos = clipped = used = 0
    pow2, eta, inv_m = 1, c, 1.0 / batch_size
    for i in range(1, steps + 1):
        fi = float(i)
        eta = _step_size(i, pow2, eta, c, gamma, ratio)
        if code == SWOR:
            for q in range(batch_size):
                r = q + int(gen.random() * (n - q))
                idx = perm[r]
                perm[r] = perm[q]
                perm[q] = idx
                clipped += _add_clipped_twin(X, y, xnorm, idx, theta, record, clip, grad)
            used += batch_size
        elif code == POISSON:
            idx = -1
            while True:
                gap = gen.standard_exponential() * inv_lambda
                if gap >= n - 1 - idx:
                    break
                idx += 1 + int(gap)
                clipped += _add_clipped_twin(X, y, xnorm, idx, theta, record, clip, grad)
                used += 1
        else:
            for q in range(batch_size):
                clipped += _add_clipped_twin(X, y, xnorm, pos, theta, record, clip, grad)
                pos = 0 if pos + 1 == n else pos + 1
            used += batch_size
        for q in range(d):
            noise = sigma1 * gen.standard_normal() if sigma1 > 0.0 else 0.0
            x = theta[q] - eta * (grad[q] * inv_m + noise)
            grad[q] = 0.0
            theta[q] = x
            s[q] += x - ref[q]
            a[q] += s[q] * s[q]
            t[q] += fi * s[q]
            block[q] += x
            batch[q] += x
        path[i - 1] = theta
        if i == block_end:
            blocks[jb] = block
            block[:] = 0.0
            jb += 1
            block_end = block_end + layout.block_len if jb < layout.n_blocks else steps + 1
        if i == batch_end:
            batches[kb] = batch
            batch[:] = 0.0
            kb += 1
            batch_end = layout.batch_ends[kb] if kb < layout.batch_ends.shape[0] else steps + 1
        if i == pow2:
            for q in range(d):
                shift = s[q] / fi
                w2 = _sum_of_squares(fi)
                s[q], a[q], t[q], ref[q] = 0.0, a[q] + shift * (shift * w2 - 2.0 * t[q]), t[q] - shift * w2, \
                    ref[q] + shift
            pow2 *= 2
            if not np.isfinite(a).all():
                nan = np.full(d, np.nan)
                return PathState(nan, nan.copy(), blocks, batches, i), clipped / max(used, 1), path[:i]
    theta_bar, v = np.empty(d), np.empty(d)
    for q in range(d):
        e = s[q] / float(steps)
        theta_bar[q] = ref[q] + e
        v[q] = (a[q] + e * (e * _sum_of_squares(float(steps)) - 2.0 * t[q])) / (float(steps) * float(steps))
    rate = float(clipped) / float(used) if used > 0 else 0.0
    return PathState(theta_bar, v, blocks, batches, steps), rate, path


# --- DP-GD --------------------------------------------------------------------


@jit
def _dpgd_path(stream, X, y, xnorm, model, steps, step, clip, noise_sd, theta, grad, stop):
    gen = local_rng(stream)  # the generator's state in registers; release_rng writes it back
    n, d = X.shape
    inv_n = 1.0 / n
    for _ in range(steps):
        if stop_requested(stop):  # Ctrl-C (ldpsim.engine.dialect.interrupt), before each pass over the n examples
            break
        for i in range(n):
            _add_clipped(X, y, xnorm, i, theta, model, clip, grad, True)
        for q in range(d):
            noise = gaussian_or_zero(gen, noise_sd)  # the audited mechanism (privacy/audit.py)
            theta[q] = theta[q] - step * (grad[q] * inv_n) + noise
            grad[q] = 0.0
    release_rng(stream, gen)


def run_dpgd(gen: np.random.Generator, X, y, xnorm, model: str, steps: int, step: float, clip: float,
             noise_sd: float, theta0: float) -> np.ndarray:
    """Noisy gradient descent: ``steps`` full-gradient steps of size ``step``, noise SD ``noise_sd`` per step.

    Returns the last iterate, shape ``(d,)``.
    """
    d = X.shape[1]
    theta, grad = np.full(d, float(theta0)), np.zeros(d)
    _dpgd_path(kernel_rng(gen), X, y, xnorm, MODELS[model], int(steps), float(step), float(clip),
               float(noise_sd), theta, grad, interrupt.FLAG)
    interrupt.check()  # stopped by Ctrl-C: no result
    return theta


def run_dpgd_twin(gen: np.random.Generator, X, y, xnorm, model: str, steps: int, step: float, clip: float,
                  noise_sd: float, theta0: float) -> np.ndarray:
    """Plain-Python twin of :func:`run_dpgd`."""
    n, d = X.shape
    record = MODELS[model]
    theta, grad = np.full(d, float(theta0)), np.zeros(d)
    inv_n = 1.0 / n
    for _ in range(steps):
        for i in range(n):
            _add_clipped_twin(X, y, xnorm, i, theta, record, clip, grad)
        for q in range(d):
            noise = noise_sd * gen.standard_normal() if noise_sd > 0.0 else 0.0
            theta[q] = theta[q] - step * (grad[q] * inv_n) + noise
            grad[q] = 0.0
    return theta


__all__ = ["CYCLIC", "MODELS", "POISSON", "SAMPLING_CODES", "SWOR", "Linear", "Logistic", "draw_data",
           "draw_data_twin", "label", "residual", "replication_seconds", "run_dpgd", "run_dpgd_twin", "run_dpsgd", "run_dpsgd_twin"]
