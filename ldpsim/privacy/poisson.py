"""Poisson-subsampled DP-SGD under replace-one neighbours: the accountant of ``ldpsim fit --sampling poisson``.

:mod:`.accountants` states Poisson batches under add/remove neighbours, as the
``dpsgd`` study does. ``ldpsim fit`` cannot: its ``T = n^kappa`` and its
sampling rate ``m / n`` are functions of ``n``, which differs between
add/remove neighbours, so its guarantee is stated for data sets of the same
``n`` differing in one row. dp-accounting's PLD accountant has that event
(``REPLACE_ONE``; its RDP accountant has none for Poisson batches), and
:func:`poisson_epsilons` composes it with the further Gaussian releases of a
fit (its private ``A~``, ``S~`` and scaling); :func:`poisson_calibrate` solves
for the noise of a whole budget.

It lives in its own module, beside :mod:`.accountants` rather than inside it,
because it is not one of the config's accountants (``ACCOUNTANTS``): no study
reaches it, and its results are cached in memory only. It shares
the accountants' loss grids (:data:`~.accountants.PLD_GRID` and the rest), their
cap on the noise and their solver.
"""

from __future__ import annotations

import functools
import math

from .accountants import PLD_FINEST, PLD_GRID, PLD_REFINE, PLD_TOLERANCE, SIGMA_CAP, solve_decreasing
from .clt import clt_sigma
from .gdp import gdp_epsilon, gdp_mu


@functools.lru_cache(maxsize=512)
def _poisson_pair_at(sigma: float, steps: int, n: int, batch_size: int, delta: float, extra_mu: float,
                     grid: float) -> tuple[float, float]:
    import dp_accounting as dpa

    acc = dpa.pld.PLDAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE,
                                value_discretization_interval=grid)
    # dp-accounting's replace-one moves one example's term from +u to -u with |u| <= 1 noise multiplier unit:
    # our clip / m (a Poisson batch is averaged over the expected size m)
    acc.compose(dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(batch_size / n, dpa.GaussianDpEvent(sigma)),
                                        steps))
    alone = float(acc.get_epsilon(delta))
    if extra_mu <= 0:
        return alone, alone
    # a mu-GDP Gaussian is distance mu in noise SDs; dp-accounting's replace-one Gaussian has distance 2
    acc.compose(dpa.GaussianDpEvent(2.0 / extra_mu))
    return alone, float(acc.get_epsilon(delta))


def _poisson_grid(sigma, steps, n, batch_size, delta, extra_mu) -> float:
    """The PLD grid refined until two grids' epsilons of the whole release agree within PLD_TOLERANCE."""
    grid = PLD_GRID
    coarse = _poisson_pair_at(sigma, steps, n, batch_size, delta, extra_mu, grid)[1]
    while grid / PLD_REFINE >= PLD_FINEST:
        fine = _poisson_pair_at(sigma, steps, n, batch_size, delta, extra_mu, grid / PLD_REFINE)[1]
        grid /= PLD_REFINE
        if abs(coarse - fine) <= PLD_TOLERANCE * fine:
            break
        coarse = fine
    return grid


def poisson_epsilons(sigma: float, steps: int, n: int, batch_size: int, delta: float, extra_mu: float = 0.0,
                     grid: float | None = None) -> tuple[float, float]:
    """``(path alone, whole release)``: epsilon at ``delta`` of Poisson DP-SGD under replace-one neighbours (PLD).

    ``T`` steps of the Poisson-subsampled Gaussian (rate ``m / n``, noise
    multiplier ``sigma`` relative to ``clip / m``), composed with a further
    ``extra_mu``-GDP Gaussian release, by dp-accounting's PLD accountant with
    ``REPLACE_ONE`` (pessimistic, connect-the-dots; a valid upper bound). The
    grid is refined until two agree within 0.1% unless given.
    """
    capped = min(float(sigma), SIGMA_CAP)  # more noise is post-processing of less (as accountants.SIGMA_CAP)
    args = (capped, int(steps), int(n), int(batch_size), float(delta), float(extra_mu))
    grid = _poisson_grid(*args) if grid is None else grid
    return _poisson_pair_at(*args, grid)


def poisson_calibrate(target: float, delta: float, steps: int, n: int, batch_size: int, extra_mu: float) -> float:
    """The noise multiplier whose whole-release epsilon by :func:`poisson_epsilons` is within 1% below ``target``."""
    floor = gdp_epsilon(extra_mu, delta) if extra_mu > 0 else 0.0
    if floor >= target:
        raise ValueError(f"the further Gaussian releases (mu = {extra_mu:.4g}) alone are epsilon = {floor:.4g} "
                         f"at delta = {delta:g}, at or above the target {target:g}")
    total = gdp_mu(target, delta)
    # the add/remove CLT's answer, doubled (replace-one moves a term twice as far): a start near the root
    start = 2.0 * clt_sigma(math.sqrt(max(total * total - extra_mu * extra_mu, 1e-12)), batch_size / n, steps,
                            "poisson")
    grid = _poisson_grid(min(start, SIGMA_CAP), steps, n, batch_size, delta, extra_mu)
    return solve_decreasing(lambda s: poisson_epsilons(s, steps, n, batch_size, delta, extra_mu, grid)[1], target,
                            start, first_step=1.1)


__all__ = ["poisson_calibrate", "poisson_epsilons"]
