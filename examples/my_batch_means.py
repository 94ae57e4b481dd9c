"""Batch means (Chen, Lee, Tong & Zhang 2020), written as a user's interval method against ldpsim.extend.

The averaged SGD iterate has asymptotic variance Sigma / n; batch means
estimates Sigma from the means of batches of the iterates whose sizes grow
with the step sizes: batches k = 0..M, M = floor(n^((1 - gamma) / 2)), batch
k ending at iterate e_k = floor(((k + 1) N)^(1 / (1 - gamma))),
N = n^(1 - gamma) / (M + 1), the last at n; batch 0 is burn-in. With n_k
iterates and mean xbar_k in batch k and xbar the mean of the retained ones,

    Sigma_hat = (1 / M) sum_{k=1..M} n_k (xbar_k - xbar)^2,
    interval: theta_bar +- z sqrt(Sigma_hat / n),  z = Phi^-1((1 + level) / 2).

The method reads only sums of the iterates over segments of the path (the
batches), so it declares their ends (``segments``) and the kernel streams the
sums, as it streams ldpsim's own batch sums: no code of this file runs in the
kernel, and every number equals the built-in BM's to the bit
(``methods: [BM, examples/my_batch_means.py:MyBatchMeans]`` gives two identical rows).
"""

import math

import numpy as np

from ldpsim.extend import IntervalMethod, normal_quantile


def floor_power(value: float) -> int:
    """``floor(value)``, a value within a relative 1e-12 of an integer taken as that integer.

    ``1e8 ** 0.75`` computes as 999999.9999999999: the batch ends must not depend on the platform's pow.
    """
    nearest = round(value)
    return int(nearest) if abs(value - nearest) <= 1e-12 * max(1.0, abs(value)) else math.floor(value)


def batch_ends(n: int, gamma: float) -> np.ndarray:
    """Chen et al.'s batch ends ``e_0 < ... < e_M = n`` (Section 4.1), batch 0 burn-in."""
    m = floor_power(float(n) ** ((1.0 - gamma) / 2.0))
    per_batch = float(n) ** (1.0 - gamma) / (m + 1)
    ends = np.array([floor_power(((k + 1) * per_batch) ** (1.0 / (1.0 - gamma))) for k in range(m + 1)],
                    dtype=np.int64)
    ends[-1] = n
    return ends


class MyBatchMeans(IntervalMethod):
    """Batch means of Chen, Lee, Tong & Zhang (2020), as a user writes it."""

    def validate(self, setting, dim):
        ends = batch_ends(setting.n, setting.gamma) if setting.gamma < 1 else np.zeros(0, np.int64)
        if len(ends) < 3 or ends[0] < 1 or (np.diff(ends) <= 0).any():
            raise ValueError(f"n = {setting.n} with gamma = {setting.gamma} leaves fewer than two batches after "
                             "the burn-in batch; raise n")

    def segments(self, setting, dim):
        return batch_ends(setting.n, setting.gamma)  # batch k: iterates e_{k-1} + 1 .. e_k

    def interval(self, state, theta_bar, setting):
        sizes = np.diff(state.ends)[:, None].astype(float)  # batches 1..M; batch 0 (burn-in) dropped
        sums = state.sums[1:]
        means = sums / sizes
        grand = sums.sum(axis=0) / sizes.sum()
        sigma = (sizes * (means - grand) ** 2).sum(axis=0) / sums.shape[0]
        half = normal_quantile(setting.level) * np.sqrt(sigma / setting.n)
        return theta_bar - half, theta_bar + half
