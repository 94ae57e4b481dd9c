"""Plain-numpy drivers of the zoo's methods, and independent references for their known answers.

The drivers run whole paths with the per-step twins of
:mod:`ldpsim.inference.zoo.twins`, in the order a path kernel will call the
jitted updates, so a kernel can be tested against them to the bit. They take

* ``etas``: the step sizes by step count, ``etas[t - 1] = eta_t`` (the kernels'
  own sequence is :func:`ldpsim.recursion.twins.step_sizes_twin`);
* ``gradient(theta, i, out)``: writes into ``out`` the (privatized) gradient of
  observation ``i`` (0-based) at ``theta`` (OB: ``gradient(theta, i, path, out)``,
  ``path = 0`` the main path, ``1..B`` the perturbed ones).

The references (:func:`r_higrad`, :func:`obm_from_definitions`) recompute the
methods' statistics from their defining formulas, independently of
:mod:`ldpsim.inference.zoo`.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from ldpsim.inference.zoo import twins
from ldpsim.inference.zoo.obm import obm_init


def _sgd_step(theta, grad, eta):
    """``theta - eta * grad``, the path kernels' step (one mini-batch of 1)."""
    return theta - eta * grad


# HulC: B segments, a path restarted at theta0 on each


def hulc_driver(gradient, etas, theta0, ends):
    """The ``(B, d)`` segment averages: segment ``b`` runs observations ``ends[b-1] .. ends[b] - 1`` from ``theta0``.

    The step counter restarts with each segment (step ``j`` of a segment uses ``etas[j - 1]``).
    """
    theta0 = np.asarray(theta0, dtype=float)
    d = theta0.shape[0]
    out = np.zeros((len(ends), d))
    acc, grad = np.zeros(d), np.zeros(d)
    start = 0
    for b, end in enumerate(ends):
        theta = theta0.copy()
        for i in range(start, end):
            gradient(theta, i, grad)
            theta = _sgd_step(theta, grad, etas[i - start])
            twins.accumulate_twin(acc, theta)
        twins.close_stretch_twin(acc, out[b], end - start)
        start = end
    return out


# HiGrad: the tree, level by level, threads interleaved within a step


def higrad_driver(gradient, etas, theta0, layout):
    """The ``(nodes, d)`` node averages of the HiGrad tree of ``layout``.

    Burn-in of ``layout.burnin`` steps first (its counter then restarts);
    level ``k`` step ``i`` takes ``etas[step_first[k] + i - 1]``; within a step
    the threads take the next observations in thread order.
    """
    theta0 = np.asarray(theta0, dtype=float)
    d = theta0.shape[0]
    total = layout.final_threads
    thetas = np.zeros((total, d))
    thetas[0] = theta0
    grad = np.zeros(d)
    obs = 0
    for i in range(layout.burnin):
        gradient(thetas[0], obs, grad)
        thetas[0] = _sgd_step(thetas[0], grad, etas[i])
        obs += 1
    nodes = np.zeros((layout.nodes, d))
    acc = np.zeros((total, d))
    for k in range(layout.levels):
        count = int(layout.threads[k])
        if k > 0:
            twins.higrad_branch_twin(thetas, int(layout.threads[k - 1]), int(layout.fans[k]))
        for i in range(1, int(layout.lengths[k]) + 1):
            eta = etas[layout.step_first[k] + i - 1]
            for j in range(count):
                gradient(thetas[j], obs, grad)
                thetas[j] = _sgd_step(thetas[j], grad, eta)
                twins.accumulate_twin(acc[j], thetas[j])
                obs += 1
        for j in range(count):
            twins.close_stretch_twin(acc[j], nodes[layout.node_first[k] + j], int(layout.lengths[k]))
    return nodes


# The online bootstrap: the main path and B perturbed ones on the same observations


def ob_driver(gradient, etas, theta0, weights):
    """``(theta_bar, boot_means)`` of the main path and the ``B = weights.shape[1]`` perturbed paths.

    Observation ``i`` steps the main path with its gradient at the main
    iterate, then every perturbed path ``b`` with weight ``weights[i, b]`` and
    its gradient at its own iterate.
    """
    theta0 = np.asarray(theta0, dtype=float)
    n, reps = weights.shape
    d = theta0.shape[0]
    theta, total = theta0.copy(), np.zeros(d)
    thetas, sums, grads = np.tile(theta0, (reps, 1)), np.zeros((reps, d)), np.zeros((reps, d))
    grad = np.zeros(d)
    for i in range(n):
        gradient(theta, i, 0, grad)
        theta = _sgd_step(theta, grad, etas[i])
        total += theta
        for b in range(reps):
            gradient(thetas[b], i, b + 1, grads[b])
        twins.ob_update_twin(thetas, sums, grads, weights[i], etas[i])
    return total / n, sums / n


# OBM and the plug-in sandwich: streamed over a stored path


def obm_driver(path, starts):
    """OBM's state ``(vec, mat, sc)`` after the iterates ``path`` ``(n, d)``, recentred at every power of two."""
    path = np.asarray(path, dtype=float).reshape(path.shape[0], -1)
    vec, mat, sc = obm_init(np.zeros(path.shape[1]))
    k, pow2 = 0, 1
    for i in range(1, path.shape[0] + 1):
        new = k < len(starts) and starts[k] == i
        k += new
        twins.obm_add_twin(path[i - 1], new, vec, mat, sc)
        if i == pow2:
            twins.obm_recentre_twin(vec, mat, sc, float(i))
            pow2 *= 2
    return vec, mat, sc


def obm_from_definitions(path, starts):
    """``(theta_bar, Sigma_n)`` of Zhu, Chen & Wu from the stored path by the defining sums.

    ``Sigma_n = sum_i (S_i - l_i theta_bar)(S_i - l_i theta_bar)' / sum_i l_i`` with
    ``S_i`` the sum of the iterates from the start of ``i``'s batch to ``i``.
    """
    x = np.asarray(path, dtype=float).reshape(len(path), -1)
    n = x.shape[0]
    # Sigma_n does not change when every iterate moves by the same vector: taken relative to the first
    # iterate, theta_bar's rounding (|theta_bar| eps) is not multiplied by batch lengths in S_i - l_i theta_bar
    y = x - x[0]
    ybar = y.mean(axis=0)
    bounds = list(starts) + [n + 1]
    num, den = np.zeros((x.shape[1], x.shape[1])), 0.0
    for a, b in zip(bounds[:-1], bounds[1:]):
        centred = np.cumsum(y[a - 1:b - 1] - ybar, axis=0)  # S_i - l_i theta_bar, i in the batch
        num += centred.T @ centred
        den += (b - a) * (b - a + 1) / 2.0
    return x[0] + ybar, num / den


def plugin_driver(grads):
    """``sum g g'`` (upper triangle) over the ``(n, d)`` privatized gradients."""
    grads = np.asarray(grads, dtype=float).reshape(len(grads), -1)
    smat = np.zeros((grads.shape[1], grads.shape[1]))
    for g in grads:
        twins.plugin_add_twin(smat, g)
    return smat


# The R package higrad, its formulas rewritten in numpy (github.com/captainyc/higrad, higrad/R/higrad.R at
# commit 0c96f07, the CRAN release 0.1.0); line numbers refer to that file


def r_create_split(nsteps, nsplits, nthreads, step_ratio, n0=None):
    """``createSplit`` (lines 276-298)."""
    big_k = nsplits
    bs = np.repeat(nthreads, big_k) if np.ndim(nthreads) == 0 else np.asarray(nthreads)
    ratio = float(step_ratio) ** np.arange(1, big_k + 1)
    if n0 is None:
        ns = np.round((nsteps / np.sum(np.r_[1.0, ratio] * np.r_[1, np.cumprod(bs)])) * np.r_[1.0, ratio])
        n0, ns = ns[0], ns[1:]
    else:
        ns = np.round(((nsteps - n0) / np.sum(ratio * np.cumprod(bs))) * ratio)
    keep = ns > 0
    return int(n0), ns[keep].astype(int), bs[keep].astype(int)


def r_get_sigma0(ns, bs, ws):
    """``getSigma0`` (lines 301-313) with ``ns = c(n0, ns)``, ``bs = c(1, Bs)``."""
    big_b = int(np.prod(bs))
    bbs = np.cumprod(bs)
    sigma = np.zeros((big_b, big_b))
    for level in range(np.flatnonzero(ns > 0)[0], len(ns)):
        size = big_b // bbs[level]
        for block in range(bbs[level]):
            sl = slice(block * size, (block + 1) * size)
            sigma[sl, sl] += ws[level] ** 2 / ns[level]
    return sigma


def r_higrad(x, y, *, nsplits=2, nthreads=2, step_ratio=1.0, n0=None, eta=0.5, alpha=0.5, burnin=0,
             start=None, split=None):
    """``higrad(x, y, model = "lm", replace = FALSE, skip = 0)`` (lines 63-186).

    ``split`` = ``(n0, ns, Bs)`` overrides ``createSplit``. Observations are
    taken in order, cycling (``sampleNext``, line 111). Returns the thread
    estimates ``(B, d)`` (``coefficients.bootstrap``) and ``Sigma0``.
    """
    nsteps, d = x.shape
    n0, ns, bs = split if split is not None else r_create_split(nsteps, nsplits, nthreads, step_ratio, n0)
    ns, bs = np.asarray(ns, dtype=int), np.asarray(bs, dtype=int)
    big_k, big_b = len(ns), int(np.prod(bs))
    ws = np.r_[n0, ns] * np.cumprod(np.r_[1, bs])
    ws = ws / ws.sum()

    def step_size(t):
        return eta / t ** alpha

    def gradient(theta, i):
        return x[i] * (np.sum(theta * x[i]) - y[i])

    idx = -1
    start = np.zeros(d) if start is None else np.asarray(start, dtype=float)
    for i in range(1, burnin + 1):
        idx = (idx + 1) % nsteps
        start = start - step_size(i) * gradient(start, idx)
    theta_avg = np.zeros((big_b, d, big_k + 1))
    current = start.copy()
    path0 = []
    for i in range(1, n0 + 1):
        idx = (idx + 1) % nsteps
        current = current - step_size(i) * gradient(current, idx)
        path0.append(current)
    theta_avg[:, :, 0] = np.mean(path0, axis=0) if n0 > 0 else start
    starts = np.repeat(current[None, :], bs[0], axis=0)
    for k in range(big_k):
        count = int(np.prod(bs[:k + 1]))
        cur = starts.copy()
        sums = np.zeros((count, d))
        n_current = int(np.sum(np.r_[n0, ns][:k + 1]))
        for i in range(1, ns[k] + 1):
            for j in range(count):
                idx = (idx + 1) % nsteps
                cur[j] = cur[j] - step_size(n_current + i) * gradient(cur[j], idx)
                sums[j] += cur[j]
        means = sums / ns[k]
        theta_avg[:, :, k + 1] = np.repeat(means, big_b // count, axis=0)  # rep(..., each = B / cumprod(Bs)[k])
        if k < big_k - 1:
            starts = np.repeat(cur, bs[k + 1], axis=0)  # rep(theta.current[, , ns[k]+1], each = Bs[k+1])
    thetas = theta_avg @ ws
    return thetas, r_get_sigma0(np.r_[n0, ns], np.r_[1, bs], ws)


def r_predict_higrad(thetas, sigma0, level):
    """``predict.higrad(fit, newx = diag(d), alpha = 1 - level)`` (lines 205-236): ``(pred, lower, upper)``."""
    big_b = sigma0.shape[0]
    mu = thetas.mean(axis=0)
    dev = thetas - mu  # t(mus - mu), one column per coordinate
    ses = np.sqrt(np.sum(sigma0) * np.sum(dev * np.linalg.solve(sigma0, dev), axis=0) / (big_b ** 2 * (big_b - 1)))
    margin = stats.t.ppf(1 - (1 - level) / 2, big_b - 1) * ses
    return mu, mu - margin, mu + margin
