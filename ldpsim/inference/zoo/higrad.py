"""HiGrad: a tree of SGD threads and the t interval of their averages (Su & Zhu 2018, R package ``higrad``).

The path runs ``n_0`` steps as one thread, then splits into ``B_1`` threads
that run ``n_1`` steps each on disjoint observations, each of which splits into
``B_2`` threads of ``n_2`` steps, and so on (``K = nsplits`` levels,
``T = B_1 ... B_K`` final threads). A thread at level ``k`` takes step ``i`` with
``eta_{L_{k-1} + i}``, ``L_{k-1} = n_0 + ... + n_{k-1}``: along every
root-to-leaf chain the step sizes are those of one path of ``L_K`` steps.
Within level ``k`` the threads advance together, one observation each per
step, in thread order (as ``higrad()`` consumes its data).

Thread ``s`` estimates ``theta_s = sum_k w_k avg_k(s)``, ``avg_k(s)`` the
average of the ``n_k`` iterates of its level-``k`` ancestor and
``w_k ~ n_k B_1 ... B_k`` (weights summing to 1). With
``Sigma0 = sum_k w_k^2 / n_k * (block-diagonal ones of the level-k subtrees)``
(the Ruppert-Polyak covariance of the ``theta_s`` up to a common factor), the
interval of coordinate ``j`` is ``mean_s theta_sj +- t_{T-1} SE_j`` with

    SE_j^2 = (1' Sigma0 1) r_j' Sigma0^-1 r_j / (T^2 (T - 1)),   r_j = theta_.j - mean_s theta_sj.

All of this is ``higrad()``, ``predict.higrad()``, ``createSplit()`` and
``getSigma0()`` of ``higrad/R/higrad.R`` (github.com/captainyc/higrad, commit
0c96f07), defaults ``nsplits = 2``, ``nthreads = 2``, ``step.ratio = 1``,
``skip = 0``; docs/zoo_methods.md cites the lines.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...engine.errors import ConfigError
from ...engine.dialect.jit import jit


def r_round(x):
    """R's ``round(x)`` to an integer: halves to even (IEC 60559), as Python's ``round``."""
    return int(round(float(x)))


def create_split(nsteps: int, nsplits: int = 2, nthreads=2, step_ratio=1.0, n0: int | None = None):
    """Stage lengths of the tree, as the R package's ``createSplit`` (higrad.R lines 276-298).

    ``ns_k = round(N r^k / sum_{k'=0..K} r^k' B_1..B_k')`` for ``k = 0..K``
    (``r = step_ratio``, ``N = nsteps``), or, given ``n0``,
    ``ns_k = round((N - n0) r^k / sum_{k'=1..K} r^k' B_1..B_k')`` for ``k >= 1``;
    levels with ``ns_k = 0`` are dropped with their ``B_k``.

    Returns
    -------
    n0 : int
    ns : list of int
        ``n_1 .. n_K`` (only positive ones).
    fans : list of int
        ``B_1 .. B_K`` of the kept levels.
    """
    fans = [int(nthreads)] * nsplits if np.ndim(nthreads) == 0 else [int(b) for b in nthreads]
    if len(fans) != nsplits:
        raise ConfigError(f"higrad_nthreads = {nthreads} must give one number or one per split ({nsplits})")
    # R's step.ratio^(1:K): a number r gives r, r^2, ..., r^K; a vector r_1..r_K gives r_k^k (elementwise)
    base = [float(step_ratio)] * nsplits if np.ndim(step_ratio) == 0 else [float(r) for r in step_ratio]
    if len(base) != nsplits:
        raise ConfigError(f"higrad_step_ratio = {step_ratio} must give one number or one per split ({nsplits})")
    ratios = [r ** (k + 1) for k, r in enumerate(base)]
    cum = np.cumprod(fans).tolist()
    if n0 is None:
        scale = nsteps / sum(r * b for r, b in zip([1.0] + ratios, [1] + cum))
        lengths = [r_round(scale * r) for r in [1.0] + ratios]
        n0, ns = lengths[0], lengths[1:]
    else:
        scale = (nsteps - n0) / sum(r * b for r, b in zip(ratios, cum))
        ns = [r_round(scale * r) for r in ratios]
    kept = [k for k, length in enumerate(ns) if length > 0]
    return int(n0), [ns[k] for k in kept], [fans[k] for k in kept]


def sigma0(lengths, threads, weights) -> np.ndarray:
    """``Sigma0`` of the final threads' estimates, as ``getSigma0`` (higrad.R lines 301-313).

    ``sum_k w_k^2 / n_k`` times the block-diagonal matrix of ``threads[k]``
    blocks of ones, each ``T / threads[k]`` square, over the levels with ``n_k > 0``.
    """
    total = int(threads[-1])
    out = np.zeros((total, total))
    for length, count, w in zip(lengths, threads, weights):
        if length > 0:
            size = total // int(count)
            out += np.kron(np.eye(int(count)), np.full((size, size), w * w / length))
    return out


def _empty_levels(n, nsplits, nthreads, step_ratio, first: int, splits: bool) -> str:
    """Why ``createSplit`` left level 0 or every later level without a step, naming the key to change."""
    tree = f"a HiGrad tree of higrad_splits = {nsplits} into higrad_threads = {nthreads}"
    if first >= 1 or splits:  # one end of the tree is empty: the ratio of consecutive levels put it there
        where, change = (("the levels after the first", "raise") if first >= 1 else ("level 0", "lower"))
        return (f"higrad_step_ratio = {step_ratio} leaves {where} of {tree} without a step at n = {n} (lengths "
                f"n r^k / sum_k r^k B_1..B_k, rounded); {change} higrad_step_ratio (or raise n)")
    return f"n = {n} is too small for {tree} (higrad_step_ratio = {step_ratio}); raise n"


@dataclass(frozen=True)
class HiGradLayout:
    """The HiGrad tree for one setting.

    Level ``k = 0..K`` has ``threads[k]`` threads (``threads[0] = 1``), each
    running ``lengths[k]`` steps; its thread ``j`` is node ``node_first[k] + j``
    and its children are threads ``j fans[k+1] .. (j + 1) fans[k+1] - 1`` of level
    ``k + 1``. Final thread ``s`` descends from thread ``s // (T / threads[k])`` of level ``k``.

    Attributes
    ----------
    n : int
        Observations the setting has.
    burnin : int
        Steps of one thread before level 0; its step counter restarts after it
        (``higrad()``'s burn-in, which the R package adds on top of ``nsteps``).
    lengths, fans, threads, node_first, step_first : numpy.ndarray
        ``int64`` ``(K + 1,)``: ``n_k``; ``B_k`` (``fans[0] = 1``); ``B_1 .. B_k``;
        first node of level ``k``; ``L_{k-1}``, the steps before level ``k`` along a chain.
    weights : numpy.ndarray
        ``(K + 1,)`` ``w_k``.
    sigma0 : numpy.ndarray
        ``(T, T)``.
    """

    n: int
    burnin: int
    lengths: np.ndarray
    fans: np.ndarray
    threads: np.ndarray
    node_first: np.ndarray
    step_first: np.ndarray
    weights: np.ndarray
    sigma0: np.ndarray

    @classmethod
    def from_tree(cls, n: int, n0: int, ns, fans, burnin: int = 0):
        """The layout of an explicit tree: level 0 of ``n0`` steps, level ``k`` of ``ns[k-1]`` steps and ``fans[k-1]`` splits."""
        lengths = np.array([n0, *ns], dtype=np.int64)
        fan = np.array([1, *fans], dtype=np.int64)
        if len(ns) != len(fans) or len(ns) < 1:
            raise ConfigError(f"a HiGrad tree needs one split per level after the first, got {len(ns)} and {len(fans)}")
        if (lengths < 1).any() or (fan < 1).any() or burnin < 0:
            raise ConfigError(f"HiGrad's levels need n_k >= 1 steps and B_k >= 1 threads, got n = {lengths.tolist()}, "
                              f"B = {fan[1:].tolist()}")
        threads = np.cumprod(fan)
        if threads[-1] < 2:
            raise ConfigError(f"a HiGrad tree of higrad_splits = {len(fans)} into higrad_threads = {fan[1:].tolist()} "
                              f"has {int(threads[-1])} final thread: its t interval needs at least 2; raise "
                              "higrad_threads")
        used = burnin + int((lengths * threads).sum())
        if used > n:
            raise ConfigError(f"the HiGrad tree uses {used} observations, more than n = {n}")
        node_first = np.concatenate([[0], np.cumsum(threads)[:-1]]).astype(np.int64)
        step_first = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        weights = (lengths * threads).astype(float)
        weights /= weights.sum()
        return cls(int(n), int(burnin), lengths, fan, threads, node_first, step_first, weights,
                   sigma0(lengths, threads, weights))

    @classmethod
    def build(cls, n: int, nsplits: int = 2, nthreads=2, step_ratio=1.0, n0: int | None = None, burnin: int = 0):
        """The R package's tree for the ``n - burnin`` observations after the burn-in.

        ``createSplit`` rounds each level's length, so its tree can need a few
        more observations than it was given (the R package then cycles back
        to its first data point); here the last level is shortened by the
        fewest steps that keep the tree within ``n``.
        """
        budget = n - burnin
        first, ns, fans = create_split(budget, nsplits, nthreads, step_ratio, n0)
        if first < 1 or not ns:
            raise ConfigError(_empty_levels(n, nsplits, nthreads, step_ratio, first, bool(ns)))
        total = int(np.prod(fans))
        used = first + sum(length * int(np.prod(fans[:k + 1])) for k, length in enumerate(ns))
        if used > budget:
            ns[-1] -= -(-(used - budget) // total)  # ceil: each step of the last level costs T observations
            if ns[-1] < 1:  # the rounding took more than the last level had
                raise ConfigError(_empty_levels(n, nsplits, nthreads, step_ratio, 0, False))
        return cls.from_tree(n, first, ns, fans, burnin)

    @property
    def levels(self) -> int:
        """``K + 1``: level 0 and the ``K`` split levels."""
        return int(self.lengths.shape[0])

    @property
    def final_threads(self) -> int:
        """``T = B_1 ... B_K``."""
        return int(self.threads[-1])

    @property
    def nodes(self) -> int:
        """Threads of all levels: the rows of the node averages."""
        return int(self.threads.sum())

    @property
    def used(self) -> int:
        """Observations the tree and its burn-in take (at most ``n``)."""
        return self.burnin + int((self.lengths * self.threads).sum())

    def ancestors(self) -> np.ndarray:
        """``int64`` ``(T, K + 1)``: the node of each final thread's ancestor at each level."""
        s = np.arange(self.final_threads)[:, None]
        return self.node_first[None, :] + s // (self.final_threads // self.threads[None, :])


@jit(inline=True)
def higrad_branch(thetas, parents, fan):
    """Level change: threads ``0 .. parents - 1`` of ``thetas`` (rows) each become ``fan`` children, in place.

    Child ``j`` starts from parent ``j // fan``'s last iterate (``higrad()``'s
    ``rep(..., each = Bs[k+1])``). Rows are written from the last down, so
    no parent is overwritten before its children are set.
    """
    for j in range(parents * fan - 1, -1, -1):
        p = j // fan
        if p != j:
            for q in range(thetas.shape[1]):
                thetas[j, q] = thetas[p, q]


def higrad_thread_estimates(node_averages: np.ndarray, layout: HiGradLayout) -> np.ndarray:
    """``theta_s = sum_k w_k avg_k(s)`` for every final thread, ``(T, d)``, from the ``(nodes, d)`` node averages."""
    anc = layout.ancestors()
    return np.einsum("k,skd->sd", layout.weights, node_averages[anc])


def higrad_interval(estimates: np.ndarray, layout: HiGradLayout, *, level: float):
    """HiGrad's t interval per coordinate from the ``(T, d)`` thread estimates (``predict.higrad``, lines 205-236).

    Returns
    -------
    lo, hi : numpy.ndarray
        ``(d,)``, centred at the mean of the thread estimates; NaN where an estimate is not finite.
    """
    from scipy import stats  # lazy: import ldpsim <= 1 s (issue 41)

    total = layout.final_threads
    centre = estimates.mean(axis=0)
    resid = estimates - centre
    quad = (resid * np.linalg.solve(layout.sigma0, resid)).sum(axis=0)
    se = np.sqrt(layout.sigma0.sum() * quad / (total * total * (total - 1)))
    half = stats.t.ppf(0.5 + level / 2.0, total - 1) * se
    return centre - half, centre + half


def higrad_state_size(d: int, layout: HiGradLayout) -> int:
    """Floats HiGrad streams: the node averages, and the open sums and iterates of at most ``T`` threads."""
    return layout.nodes * d + 2 * layout.final_threads * d
