"""Batch means with a fixed number of equal batches and Student-t critical values: an interval ldpsim lacks.

The method. Cut the path's n iterates into K batches of (nearly) equal size,
batch k holding iterates floor(k n / K) + 1 .. floor((k + 1) n / K), with means
xbar_1, .., xbar_K, and take

    theta_bar +- t_{K-1}((1 + level) / 2) s / sqrt(K),   s^2 = sum_k (xbar_k - mean_k xbar_k)^2 / (K - 1).

Why it is valid. Under the functional CLT of the averaged SGD iterate
(Polyak & Juditsky 1992; Lee, Liao, Seo & Shin 2022, Theorem 1, on which
ldpsim's SN rests), n^(-1/2) sum_{s <= rn} (theta_s - theta*) converges to
Sigma^(1/2) W(r). The K batch sums are its increments over r in [k/K, (k+1)/K):
asymptotically independent N(0, (n / K) Sigma), so the batch means are
asymptotically i.i.d. N(theta*, K Sigma / n) and the statistic above is
Student's t with K - 1 degrees of freedom, for every fixed K. This is the
batch-means interval of simulation output analysis (Schmeiser 1982,
"Batch size effects in the analysis of simulation output") read with the
fixed-b asymptotics of Kiefer & Vogelsang (2005) that random scaling also uses.

Why ldpsim lacks it and why try it. ldpsim's BM (Chen, Lee, Tong & Zhang 2020)
lets the number of batches grow, M = n^((1 - gamma) / 2), with batches that
grow along the path, and reads a normal quantile: consistent for Sigma as
n grows, but at n = 1e6 its variance estimate rests on 29 batches and its
interval ignores that estimate's error (Table 1: BM covers 0.856 of 90%).
SN is exact in the same fixed-b sense but its critical value (5.32 at 90%)
makes it 1.2 times the oracle's length. With K = 10 equal batches, t_9's
1.83 against z's 1.64 buys the estimate's error back at about 1.08 times the
oracle's expected length, a point between BM and SN that a study of the same
private streams can test. Its state is K d numbers and one addition a step.
"""

from typing import NamedTuple

import numpy as np
from scipy import stats

from ldpsim.extend import IntervalMethod, add_iterate, lane_array, register_update


class EqualBatches(NamedTuple):
    ends: np.ndarray  # int64 (K,): the last iterate of each batch, shared by the replications
    batch: np.ndarray  # int64 (1,): the batch being summed
    acc: object  # (d,): the open batch's sum, one per replication
    sums: object  # (K, d): the batches' sums, one per replication


@register_update(EqualBatches)
def update(state, i, theta):
    add_iterate(state.acc, theta)
    k = state.batch[0]
    if i == state.ends[k]:  # the batch closes (the last one at n)
        for q in range(state.acc.shape[0]):
            state.sums[k, q] = state.acc[q]
            state.acc[q] = 0.0
        state.batch[0] = k + 1


class StudentBatchMeans(IntervalMethod):
    """K equal batches of the iterates, Student-t with K - 1 degrees of freedom (fixed-b batch means)."""

    name = "tBM"
    ranges = {"tbm_batches": "[2, 10000]"}
    descriptions = {"tbm_batches": "tBM: number K of equal batches (t with K - 1 degrees of freedom)"}

    def __init__(self, tbm_batches=10):
        self.batches = int(tbm_batches)

    def validate(self, setting, dim):
        if setting.n < self.batches:
            raise ValueError(f"n = {setting.n} is fewer steps than tbm_batches = {self.batches}")

    def state(self, setting, dim, lanes):
        k = np.arange(1, self.batches + 1, dtype=np.int64)
        ends = (k * setting.n) // self.batches  # exact integer arithmetic; the last is n
        return EqualBatches(ends, np.zeros(1, dtype=np.int64), lane_array(dim, lanes),
                            lane_array((self.batches, dim), lanes))

    def interval(self, state, theta_bar, setting):
        sizes = np.diff(state.ends, prepend=0).astype(float)[:, None]
        means = state.sums / sizes
        s = means.std(axis=0, ddof=1)
        half = stats.t.ppf(0.5 + setting.level / 2.0, self.batches - 1) * s / np.sqrt(self.batches)
        return theta_bar - half, theta_bar + half
