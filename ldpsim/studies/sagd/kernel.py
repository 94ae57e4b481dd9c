"""SAGD on a training set: the jitted path with its gradient oracles, and its plain-Python twin.

One replication draws a training set ``S`` of ``n`` points (:func:`draw_data`;
O(n d) memory, the only large array), then runs one or more paths on it
(:func:`run_path`), each ``T`` steps of

    g~_t = oracle(S, w_t)                       (DPG-Lap, DPG-Sparse, or the plain gradient)
    v_t  = beta2 v_(t-1) + (1 - beta2) g~_t^2   (v_0 = 0)
    w_(t+1) = w_t - eta g~_t / (sqrt(v_t) + nu)

(RMSprop, the update of 001's Algorithm 1 and Theorem 7) or Adam's update for
the non-private baseline. The oracles (001, Lemmas 2-3, Theorems 1 and 3;
docs/corrections.md item 18 says line by line where each step comes from):

* ``LAP``: ``g~ = g^_S + b``, ``b`` i.i.d. ``Lap(sigma)`` per coordinate, ``g^_S``
  the mean gradient over the batch (the whole of ``S`` by default);
* ``SPARSE`` (Thresholdout, Dwork et al. 2015, with ``S1`` the first ``n1``
  points as the protected set and ``S2`` the rest): ``gamma ~ Lap(2 sigma)``
  at the start; at each step, while the budget lasts, a fresh
  ``eta_q ~ Lap(4 sigma)``; if ``||g^_S1 - g^_S2||_2 > tau + gamma + eta_q``
  the answer is ``g^_S1 + Lap(sigma)^d``, the budget drops by one and
  ``gamma`` is redrawn (a privacy-paying query), else it is ``g^_S2``. When
  the budget is spent the algorithm halts (Thresholdout answers no more);
* ``RMSPROP`` / ``ADAM``: ``g~ = g^_S`` (non-private baselines).

Mini-batches: with ``B`` batches, step ``t`` uses batch ``(t - 1) mod B``,
points ``[k n / B, (k + 1) n / B)`` (integer division), a fixed partition
visited in order (one epoch = B steps).

What a path records, streamed (nothing of size T):

* with ``track``: the population gradient ``g_t = grad f(w_t)`` at every step
  (:func:`ldpsim.models.erm.population_gradient`, exact), and then
  - ``exceed[k]``: steps with ``||g~_t - g_t|| >= sqrt(d) sigma (1 + mu_k)``,
  - ``exceed[M + k]``: steps with ``||g~_t - g^_t|| >= sqrt(d) sigma mu_k``
    (Theorem 1's empirical error; ``g^_t`` is ``g^_S1`` for DPG-Sparse, Theorem 3),
  - ``exceed[2M]``: steps with ``||g^_t - g_t|| >= sqrt(d) sigma`` (the generalization error),
  - ``stats[MIN_G2]``, ``stats[SUM_G2]``: ``min_t`` and ``sum_t`` of ``||g_t||^2``;
* at checkpoint steps ``ck`` (0: the start): the empirical loss on all of
  ``S`` and the population loss ``f(w)``;
* ``stats[STEPS]`` steps done, ``stats[PAID]`` privacy-paying queries.

:func:`path_twin` is :func:`run_path` in plain Python (same arithmetic, same
draws in the same order); tests require identical output.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ...engine.dialect import interrupt
from ...engine.dialect.interrupt import poll_mask, stop_requested
from ...engine.dialect.jit import dual, jit
from ...engine.dialect.rng import kernel_rng, local_rng, release_rng
from ...inference.methods import get, names
from ...models.erm import draw_sample, empirical_gradient, empirical_loss, population_gradient, population_loss
from ...privacy.mechanisms import laplace

#: Gradient oracles / optimisers, as the kernel codes them (the codes are declared with the methods,
#: :mod:`ldpsim.inference.methods.sagd`).
LAP, SPARSE, RMSPROP, ADAM = (get(name).code for name in ("sagd_lap", "sagd_sparse", "rmsprop", "adam"))
#: Names of the codes, as configs and tables spell them.
METHOD_NAMES = {get(name).code: name for name in names("sagd_generalization")}
#: Slots of the ``stats`` array a path fills.
STEPS, PAID, MIN_G2, SUM_G2, DIVERGED = 0, 1, 2, 3, 4
N_STATS = 5


class PathParams(NamedTuple):
    """Scalars of one path."""

    method: int  # LAP, SPARSE, RMSPROP, ADAM
    T: int  # steps
    n_batches: int  # B (1: full batch)
    n1: int  # |S1| (DPG-Sparse)
    eta: float
    nu: float
    beta1: float  # Adam's first-moment weight
    beta2: float
    sigma: float  # Laplace scale of the oracles
    threshold: float  # tau of DPG-Sparse (absolute)
    budget: int  # C_s of DPG-Sparse
    track: bool  # record the population-gradient statistics at every step


@dual(inline=True)
def lap_oracle(gen, g_hat, sigma, out):
    """DPG-Lap: ``out = g_hat + b``, ``b_j`` i.i.d. ``Lap(sigma)`` (drawn in coordinate order)."""
    for j in range(g_hat.shape[0]):
        out[j] = g_hat[j] + laplace(gen, sigma)


@dual(inline=True)
def sparse_oracle(gen, g_hat1, g_hat2, threshold, gamma, sigma, out):
    """DPG-Sparse, one query (Thresholdout with S1 protected); returns ``(paid, gamma)``.

    Draws ``eta_q ~ Lap(4 sigma)``; if ``||g_hat1 - g_hat2||_2 > threshold + gamma + eta_q``
    answers ``g_hat1 + Lap(sigma)^d`` and redraws ``gamma ~ Lap(2 sigma)`` (a
    privacy-paying query), else answers ``g_hat2``.
    """
    gap = 0.0
    for j in range(g_hat1.shape[0]):
        gap += (g_hat1[j] - g_hat2[j]) ** 2
    gap = math.sqrt(gap)
    eta_q = laplace(gen, 4.0 * sigma)
    if gap > threshold + gamma + eta_q:
        for j in range(g_hat1.shape[0]):
            out[j] = g_hat1[j] + laplace(gen, sigma)
        return True, laplace(gen, 2.0 * sigma)
    for j in range(g_hat1.shape[0]):
        out[j] = g_hat2[j]
    return False, gamma


@jit
def draw_data(model, stream, X, y):
    """Draw the training set into ``X`` (n, d), ``y`` (n,)."""
    gen = local_rng(stream)  # the generator's state in registers; release_rng writes it back
    draw_sample(model, gen, X, y)
    release_rng(stream, gen)


@jit
def run_path(model, stream, X, y, run, w, work, mu, exceed, stats, ck, train, test, stop, mask):
    """One path of ``run.T`` steps from ``w`` (updated in place); see the module docstring.

    ``work`` is a zeroed ``(6, d)`` scratch array (gradients, moments);
    ``exceed`` (int64, ``2 M + 1``), ``stats`` (``N_STATS``), ``train`` and
    ``test`` (``len(ck)``) are filled. Returns the number of steps done.
    Stops early when ``stop`` (:data:`ldpsim.engine.dialect.interrupt.FLAG`) is set,
    looking at steps ``t`` with ``t & mask == 0``.
    """
    gen = local_rng(stream)  # the generator's state in registers; release_rng writes it back
    n, d = X.shape
    g_hat, g_hat2, g_pop, g_tilde, v, m = work[0], work[1], work[2], work[3], work[4], work[5]
    n_mu = mu.shape[0]
    n_ck = ck.shape[0]
    root = math.sqrt(d) * run.sigma
    q = 0
    if n_ck > 0 and ck[0] == 0:
        train[0] = empirical_loss(model, X, y, w, 0, n)
        test[0] = population_loss(model, w)
        q = 1
    gamma = 0.0
    if run.method == SPARSE:
        gamma = laplace(gen, 2.0 * run.sigma)
    remaining = run.budget
    paid = 0
    min_g2 = math.inf
    sum_g2 = 0.0
    b1t = 1.0
    b2t = 1.0
    steps = 0
    for t in range(1, run.T + 1):
        if run.method == SPARSE and remaining == 0:
            break  # the budget is spent: Thresholdout answers no more queries
        if t & mask == 0 and stop_requested(stop):  # Ctrl-C (ldpsim.engine.dialect.interrupt)
            break
        if run.n_batches == 1:
            lo, hi = 0, n
        else:
            k = (t - 1) % run.n_batches
            lo, hi = k * n // run.n_batches, (k + 1) * n // run.n_batches
        if run.track:
            population_gradient(model, w, g_pop)
            g2 = 0.0
            for j in range(d):
                g2 += g_pop[j] * g_pop[j]
            min_g2 = min(min_g2, g2)
            sum_g2 += g2
        # --- the oracle
        if run.method == SPARSE:
            empirical_gradient(model, X, y, w, 0, run.n1, g_hat)
            empirical_gradient(model, X, y, w, run.n1, n, g_hat2)
            above, gamma = sparse_oracle(gen, g_hat, g_hat2, run.threshold, gamma, run.sigma, g_tilde)
            if above:
                remaining -= 1
                paid += 1
        else:
            empirical_gradient(model, X, y, w, lo, hi, g_hat)
            if run.method == LAP:
                lap_oracle(gen, g_hat, run.sigma, g_tilde)
            else:
                for j in range(d):
                    g_tilde[j] = g_hat[j]
        if run.track:
            e_tot = 0.0
            e_emp = 0.0
            e_gen = 0.0
            for j in range(d):
                e_tot += (g_tilde[j] - g_pop[j]) ** 2
                e_emp += (g_tilde[j] - g_hat[j]) ** 2
                e_gen += (g_hat[j] - g_pop[j]) ** 2
            e_tot = math.sqrt(e_tot)
            e_emp = math.sqrt(e_emp)
            for i in range(n_mu):
                if e_tot >= root * (1.0 + mu[i]):
                    exceed[i] += 1
                if e_emp >= root * mu[i]:
                    exceed[n_mu + i] += 1
            if math.sqrt(e_gen) >= root:
                exceed[2 * n_mu] += 1
        # --- the update
        finite = True
        if run.method == ADAM:
            b1t *= run.beta1
            b2t *= run.beta2
            for j in range(d):
                m[j] = run.beta1 * m[j] + (1.0 - run.beta1) * g_tilde[j]
                v[j] = run.beta2 * v[j] + (1.0 - run.beta2) * g_tilde[j] * g_tilde[j]
                w[j] -= run.eta * (m[j] / (1.0 - b1t)) / (math.sqrt(v[j] / (1.0 - b2t)) + run.nu)
                finite = finite and np.isfinite(w[j])
        else:
            for j in range(d):
                v[j] = run.beta2 * v[j] + (1.0 - run.beta2) * g_tilde[j] * g_tilde[j]
                w[j] -= run.eta * g_tilde[j] / (math.sqrt(v[j]) + run.nu)
                finite = finite and np.isfinite(w[j])
        steps = t
        if not finite:
            stats[DIVERGED] = 1.0
            break
        if q < n_ck and t == ck[q]:
            train[q] = empirical_loss(model, X, y, w, 0, n)
            test[q] = population_loss(model, w)
            q += 1
    stats[STEPS] = steps
    stats[PAID] = paid
    stats[MIN_G2] = min_g2
    stats[SUM_G2] = sum_g2
    release_rng(stream, gen)
    return steps


def path_twin(model, gen, X, y, run, w, work, mu, exceed, stats, ck, train, test, stop=None, mask=0):
    """Plain-Python twin of :func:`run_path`: the same arithmetic, the same draws in the same order.

    (``stop`` and ``mask`` are the kernel's; Python code stops on Ctrl-C by itself.)
    """
    n, d = X.shape
    g_hat, g_hat2, g_pop, g_tilde, v, m = work[0], work[1], work[2], work[3], work[4], work[5]
    n_mu = mu.shape[0]
    n_ck = ck.shape[0]
    root = math.sqrt(d) * run.sigma
    q = 0
    if n_ck > 0 and ck[0] == 0:
        train[0] = empirical_loss(model, X, y, w, 0, n)
        test[0] = population_loss(model, w)
        q = 1
    gamma = laplace(gen, 2.0 * run.sigma) if run.method == SPARSE else 0.0
    remaining, paid = run.budget, 0
    min_g2, sum_g2 = math.inf, 0.0
    b1t = b2t = 1.0
    steps = 0
    for t in range(1, run.T + 1):
        if run.method == SPARSE and remaining == 0:
            break
        if run.n_batches == 1:
            lo, hi = 0, n
        else:
            k = (t - 1) % run.n_batches
            lo, hi = k * n // run.n_batches, (k + 1) * n // run.n_batches
        if run.track:
            population_gradient(model, w, g_pop)
            g2 = 0.0
            for j in range(d):
                g2 += g_pop[j] * g_pop[j]
            min_g2 = min(min_g2, g2)
            sum_g2 += g2
        if run.method == SPARSE:
            empirical_gradient(model, X, y, w, 0, run.n1, g_hat)
            empirical_gradient(model, X, y, w, run.n1, n, g_hat2)
            above, gamma = sparse_oracle(gen, g_hat, g_hat2, run.threshold, gamma, run.sigma, g_tilde)
            if above:
                remaining -= 1
                paid += 1
        else:
            empirical_gradient(model, X, y, w, lo, hi, g_hat)
            if run.method == LAP:
                lap_oracle(gen, g_hat, run.sigma, g_tilde)
            else:
                g_tilde[:] = g_hat
        if run.track:
            e_tot = e_emp = e_gen = 0.0
            for j in range(d):
                e_tot += (g_tilde[j] - g_pop[j]) ** 2
                e_emp += (g_tilde[j] - g_hat[j]) ** 2
                e_gen += (g_hat[j] - g_pop[j]) ** 2
            e_tot, e_emp = math.sqrt(e_tot), math.sqrt(e_emp)
            for i in range(n_mu):
                if e_tot >= root * (1.0 + mu[i]):
                    exceed[i] += 1
                if e_emp >= root * mu[i]:
                    exceed[n_mu + i] += 1
            if math.sqrt(e_gen) >= root:
                exceed[2 * n_mu] += 1
        finite = True
        if run.method == ADAM:
            b1t *= run.beta1
            b2t *= run.beta2
            for j in range(d):
                m[j] = run.beta1 * m[j] + (1.0 - run.beta1) * g_tilde[j]
                v[j] = run.beta2 * v[j] + (1.0 - run.beta2) * g_tilde[j] * g_tilde[j]
                w[j] -= run.eta * (m[j] / (1.0 - b1t)) / (math.sqrt(v[j] / (1.0 - b2t)) + run.nu)
                finite = finite and bool(np.isfinite(w[j]))
        else:
            for j in range(d):
                v[j] = run.beta2 * v[j] + (1.0 - run.beta2) * g_tilde[j] * g_tilde[j]
                w[j] -= run.eta * g_tilde[j] / (math.sqrt(v[j]) + run.nu)
                finite = finite and bool(np.isfinite(w[j]))
        steps = t
        if not finite:
            stats[DIVERGED] = 1.0
            break
        if q < n_ck and t == ck[q]:
            train[q] = empirical_loss(model, X, y, w, 0, n)
            test[q] = population_loss(model, w)
            q += 1
    stats[STEPS] = steps
    stats[PAID] = paid
    stats[MIN_G2] = min_g2
    stats[SUM_G2] = sum_g2
    return steps


class PathResult(NamedTuple):
    """What one path recorded (see the module docstring)."""

    exceed: np.ndarray  # (2 M + 1,) int64
    stats: np.ndarray  # (N_STATS,)
    train: np.ndarray  # (C,) empirical loss on S at the checkpoints (NaN where not reached)
    test: np.ndarray  # (C,) population loss at the checkpoints
    w: np.ndarray  # (d,) last iterate


def replicate_paths(model, gen: np.random.Generator, n: int, runs, w0: float, mu, ck, twin: bool = False):
    """Draw a training set of ``n`` points, then run each of ``runs`` on it from ``w = w0``.

    Parameters
    ----------
    model : ldpsim.models.erm.ErmModel
    gen : numpy.random.Generator
        The replication's generator: the data first, then each path's noise, in order.
    n : int
        Size of the training set.
    runs : sequence of PathParams
        The paths, run in order on the same data.
    w0 : float
        Starting value of every coordinate.
    mu : array_like
        The ``mu`` levels of the concentration counts.
    ck : array_like
        Checkpoint steps (int, increasing; 0 is the start).
    twin : bool
        Run the plain-Python twin instead of the kernels.

    Returns
    -------
    list of PathResult
    """
    params = model.kernel_params()
    d = model.dim
    mu = np.asarray(mu, dtype=float)
    ck = np.asarray(ck, dtype=np.int64)
    X, y = np.empty((n, d)), np.empty(n)
    rng = gen if twin else kernel_rng(gen)
    (getattr(draw_data, "py_func", draw_data) if twin else draw_data)(params, rng, X, y)
    path = path_twin if twin else run_path
    results = []
    for run in runs:
        w = np.full(d, float(w0))
        exceed = np.zeros(2 * mu.shape[0] + 1, dtype=np.int64)
        stats = np.zeros(N_STATS)
        train, test = np.full(ck.shape[0], np.nan), np.full(ck.shape[0], np.nan)
        points = n if run.method == SPARSE else n // run.n_batches  # what a step reads
        path(params, rng, X, y, run, w, np.zeros((6, d)), mu, exceed, stats, ck, train, test, interrupt.FLAG,
             poll_mask(points * d))
        interrupt.check()  # a path stopped by Ctrl-C is no result
        results.append(PathResult(exceed, stats, train, test, w))
    return results


__all__ = ["ADAM", "LAP", "METHOD_NAMES", "N_STATS", "PathParams", "PathResult", "RMSPROP", "SPARSE", "draw_data",
           "lap_oracle", "path_twin", "replicate_paths", "run_path", "sparse_oracle"]
