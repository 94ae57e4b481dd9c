"""Accountants: a valid (epsilon, delta) for everything a DP-SGD release contains, and the noise for a target.

A release is the DP-SGD path (``T`` steps of a subsampled Gaussian mechanism,
noise multiplier ``sigma`` relative to the sensitivity ``D`` of the clipped
mean gradient under the scheme's neighbouring relation,
:func:`ldpsim.privacy.clt.step_noise_sd`) and, composed with it,
further Gaussian mechanisms: the private ``A~`` and ``S~`` of the plug-in and
corrected random-scaling intervals, the private scaling of ``ldpsim fit``.
Gaussian mechanisms compose exactly in Gaussian DP (Dong, Roth & Su 2022,
Corollary 3.3): ``k`` of them with parameters ``mu_i`` are one Gaussian
mechanism with ``mu = sqrt(sum mu_i^2)``, so the further releases enter as
one number, ``extra_mu``.

The accountants (:data:`ACCOUNTANTS`), all but the last from Google's
``dp-accounting``:

``pld``
    the privacy-loss-distribution accountant, pessimistic estimate with
    connect-the-dots (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022):
    a valid upper bound, within 0.1% of the exact epsilon here (the grid of
    the privacy loss is refined until two grids agree). Poisson sampling
    (add/remove neighbours) and cyclic passes. dp-accounting has no PLD for
    ``SampledWithoutReplacementDpEvent``: a Poisson number is NOT a bound for
    fixed-size batches, and ``swor`` with ``pld`` is refused.
``rdp``
    the Renyi-DP accountant (Mironov 2017; for fixed-size batches without
    replacement under replace-one neighbours, Wang, Balle & Kasiviswanathan
    2019, Theorem 27): a valid upper bound, looser than PLD (the conversion
    from RDP to (epsilon, delta) loses). Every scheme; the tightest valid one
    dp-accounting offers for ``swor``.
``gdp``
    exact composition of Gaussian mechanisms in Gaussian DP: cyclic passes
    only, where an example enters ``k = ceil(T m / n)`` steps, each
    ``1 / sigma``-GDP, and nothing is subsampled: ``sqrt(k / sigma^2 + extra_mu^2)``-GDP,
    converted to (epsilon, delta) exactly (:func:`ldpsim.privacy.gdp.gdp_epsilon`).
``clt``
    the central limit theorem of Bu, Dong, Long & Su (2020) that 002 uses:
    the path is asymptotically ``mu``-GDP (:func:`ldpsim.privacy.clt.clt_mu`).
    An approximation, NOT a bound: against PLD it understates epsilon by
    2-36% on the settings of docs/privacy.md, most with few steps or small delta.

:func:`epsilon_pair` gives an accountant's epsilon at ``delta`` for the path
alone and for the whole release; :func:`calibrate_sigma` solves for the
noise multiplier whose epsilon is at most a target and within 1% of it;
:func:`solve_decreasing` is the one-dimensional solver behind it (``ldpsim
fit`` uses it to scale a whole budget split). Results are cached on disk
(``joblib.Memory`` under :func:`cache_dir`), so each setting pays for its
accountant once, whichever process asks; an entry is keyed on ldpsim's source
and the versions that compute it (:func:`_version`).
"""

from __future__ import annotations

import functools
import logging
import math
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

from ..engine.errors import ConfigWarning
from .clt import SAMPLINGS, clt_mu, clt_sigma
from .gdp import gdp_epsilon, gdp_mu

#: Accountants, as configs spell them.
ACCOUNTANTS = ("pld", "rdp", "gdp", "clt")
#: The valid accountant used for each sampling scheme when a config does not name one.
DEFAULT_ACCOUNTANT = {"poisson": "pld", "swor": "rdp", "cyclic": "gdp"}
#: Sampling schemes each accountant can account for.
SUPPORTED = {"pld": ("poisson", "cyclic"), "rdp": ("poisson", "swor", "cyclic"), "gdp": ("cyclic",),
             "clt": SAMPLINGS}
#: Whether an accountant's epsilon is a valid upper bound (``clt``: an approximation).
IS_BOUND = {"pld": True, "rdp": True, "gdp": True, "clt": False}
#: How tables and messages name each accountant.
DESCRIPTION = {
    "pld": "dp-accounting's PLD accountant (pessimistic, connect-the-dots): a valid upper bound",
    "rdp": "dp-accounting's RDP accountant: a valid upper bound",
    "gdp": "exact composition of Gaussian mechanisms (Gaussian DP): exact",
    "clt": "the CLT of Bu, Dong, Long & Su (Xia, Zhang & Cai 2025's calibration): an approximation, NOT a bound",
}
#: Why an accountant cannot account for a scheme, for the one-line errors.
UNSUPPORTED_REASON = {
    ("pld", "swor"): "dp-accounting's PLD accountant has no event for fixed-size batches without replacement "
                     "(a Poisson number is not a bound for them); use accountant = rdp (a valid bound) or clt "
                     "(an approximation)",
    ("gdp", "swor"): "exact GDP composition holds only without subsampling (cyclic passes); use rdp",
    ("gdp", "poisson"): "exact GDP composition holds only without subsampling (cyclic passes); use pld or rdp",
}

#: Above this noise multiplier the accountants are asked at ``SIGMA_CAP`` instead: more noise is
#: post-processing of less (``N(0, s^2) = N(0, c^2) + N(0, s^2 - c^2)``), so the epsilon at the cap is
#: still an upper bound; dp-accounting's RDP of sampling without replacement fails beyond ~1e8.
SIGMA_CAP = 1e4
#: Coarsest grid of the privacy loss (dp-accounting's ``value_discretization_interval``).
PLD_GRID = 1e-3
#: The grid is refined (divided by :data:`PLD_REFINE`) until two grids' epsilons agree within this fraction
#: (the pessimistic estimate's excess falls like the grid squared: the finer one is then ~1e-4 from exact).
PLD_TOLERANCE = 1e-3
PLD_REFINE = 3.0
#: Finest grid tried (1e-3 / 3^5 = 4.1e-6 is the last): T = 1e6 Poisson steps at epsilon 1, delta 1e-5 need it
#: (grids 3.7e-5, 1.2e-5, 4.1e-6 give 0.99669, 0.99514, 0.99499); one finer, 1.4e-6, gives 1.0042, where the
#: rounding of dp-accounting's FFT composition shows, and would be refused by the agreement check anyway.
PLD_FINEST = 4e-6
#: Calibration aims at this fraction of the target, so that the result lies in [0.99, 1] x target.
CALIBRATION_AIM = 0.995


def cache_dir() -> Path | None:
    """Where accountant results are cached: ``$LDPSIM_CACHE`` or ``~/.cache/ldpsim`` (``None``: no cache).

    ``LDPSIM_CACHE=off`` turns the cache off.
    """
    where = os.environ.get("LDPSIM_CACHE")
    if where is not None and where.strip().lower() in ("", "0", "off", "none"):
        return None
    if where is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        where = os.path.join(base, "ldpsim")
    return Path(where)


@functools.lru_cache(maxsize=None)
def _on_disk(function, location: str):
    import joblib

    return joblib.Memory(location=location, verbose=0).cache(function)


class _DamagedEntries(logging.Filter):
    """Catches joblib's report of a cache entry it could not load (a traceback of ~25 lines each), counting them.

    joblib then recomputes the entry and writes it anew; the run says so in one line (:func:`_cached`).
    """

    def __init__(self):
        super().__init__()
        self.count = 0

    def filter(self, record):
        if "Exception while loading results" in record.getMessage():
            self.count += 1
            return False
        return True


#: Cache folders whose damage this process has reported (once each).
_DAMAGE_SAID: set = set()


def _cached(function):
    """``function`` memoised in memory and, where :func:`cache_dir` allows, on disk (``joblib.Memory``)."""
    seen = {}

    @functools.wraps(function)
    def wrapper(*args):
        if args in seen:
            return seen[args]
        where = cache_dir()
        value = None
        if where is not None:
            damaged = _DamagedEntries()
            joblib_log = logging.getLogger("joblib")
            joblib_log.addFilter(damaged)
            try:
                where.mkdir(parents=True, exist_ok=True)
                value = _on_disk(function, str(where))(*args)
            except OSError:  # a read-only home: compute in memory only
                value = None
            finally:
                joblib_log.removeFilter(damaged)
            if damaged.count and str(where) not in _DAMAGE_SAID:  # garbage, or truncated by a full disk: rewritten
                _DAMAGE_SAID.add(str(where))
                warnings.warn(f"entries of the accountant cache in {where} could not be read (damaged or "
                              "truncated): discarded and recomputed", ConfigWarning)
        if value is None:
            value = function(*args)
        seen[args] = value
        return value

    wrapper.clear_memory = seen.clear  # (the on-disk entries stay)
    return wrapper


def check_supported(accountant: str, sampling: str) -> str | None:
    """Why ``accountant`` cannot account for ``sampling`` (one line), or ``None``."""
    if accountant not in ACCOUNTANTS:
        return f"accountant = {accountant!r} is not one of: {', '.join(ACCOUNTANTS)}"
    if sampling not in SUPPORTED[accountant]:
        return f"accountant = {accountant} with sampling = {sampling}: " + UNSUPPORTED_REASON[(accountant, sampling)]
    return None


@dataclass(frozen=True)
class DpsgdPath:
    """The DP-SGD path of a release: ``steps`` steps, batches of ``batch_size`` of ``n``, noise multiplier ``sigma``."""

    sampling: str
    sigma: float
    steps: int
    n: int
    batch_size: int

    @property
    def q(self) -> float:
        """Sampling rate ``m / n``."""
        return self.batch_size / self.n

    @property
    def uses(self) -> int:
        """Steps an example enters under cyclic passes: ``ceil(T m / n)``."""
        return math.ceil(self.steps * self.q - 1e-9)


def _dp_accounting():
    import dp_accounting

    return dp_accounting


def path_event(sampling: str, sigma: float, steps: int, n: int, batch_size: int):
    """dp-accounting's event for a DP-SGD path (noise multiplier ``sigma``; see :func:`epsilon_pair`).

    Poisson: ``T`` compositions of ``PoissonSampledDpEvent(q, Gaussian)``;
    swor: of ``SampledWithoutReplacementDpEvent(n, m, Gaussian)`` (replace-one
    neighbours); cyclic: ``ceil(T m / n)`` plain Gaussian mechanisms.
    """
    return _path_event(_dp_accounting(), DpsgdPath(sampling, sigma, steps, n, batch_size), sigma)


def _path_event(dpa, path: DpsgdPath, sigma: float):
    gaussian = dpa.GaussianDpEvent(sigma)
    if path.sampling == "poisson":
        return dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(path.q, gaussian), path.steps)
    if path.sampling == "swor":
        # dp-accounting's noise multiplier is relative to the replace-one sensitivity of the subsampled
        # mechanism (Wang, Balle & Kasiviswanathan 2019; alpha / (2 sigma^2) at q = 1): our D
        return dpa.SelfComposedDpEvent(dpa.SampledWithoutReplacementDpEvent(path.n, path.batch_size, gaussian),
                                       path.steps)
    # cyclic: k Gaussian mechanisms on the example's terms and nothing on the other steps' (which do not see it)
    return dpa.SelfComposedDpEvent(gaussian, path.uses)


def _relation(dpa, sampling: str):
    return (dpa.NeighboringRelation.REPLACE_ONE if sampling == "swor"
            else dpa.NeighboringRelation.ADD_OR_REMOVE_ONE)


def _path_then_extra(dpa, acc, path: DpsgdPath, sigma: float, extra_mu: float, delta: float):
    """``(epsilon of the path alone, of the path and a further mu-GDP Gaussian release)`` from the empty ``acc``."""
    acc.compose(_path_event(dpa, path, sigma))
    alone = float(acc.get_epsilon(delta))
    if extra_mu > 0:
        acc.compose(dpa.GaussianDpEvent(1.0 / extra_mu))
        return alone, float(acc.get_epsilon(delta))
    return alone, alone


def _rdp_pair(path: DpsgdPath, sigma: float, extra_mu: float, delta: float) -> tuple[float, float]:
    dpa = _dp_accounting()
    # (RDP of a Gaussian is alpha mu^2 / 2 with mu = distance / SD, whatever the relation)
    return _path_then_extra(dpa, dpa.rdp.RdpAccountant(neighboring_relation=_relation(dpa, path.sampling)),
                            path, sigma, extra_mu, delta)


def _pld_pair_at(path: DpsgdPath, sigma: float, extra_mu: float, delta: float, grid: float) -> tuple[float, float]:
    dpa = _dp_accounting()
    # a plain Gaussian's privacy loss depends only on distance / SD: under add/remove, dp-accounting's
    # Gaussian has distance 1 (under its replace-one, 2), so cyclic passes are accounted there too
    acc = dpa.pld.PLDAccountant(neighboring_relation=dpa.NeighboringRelation.ADD_OR_REMOVE_ONE,
                                value_discretization_interval=grid)
    return _path_then_extra(dpa, acc, path, sigma, extra_mu, delta)


class Unresolved(ValueError):
    """dp-accounting's PLD does not resolve epsilon at this delta: its grids disagree (the message says how)."""


#: dp-accounting's PLD accountant truncates this much probability mass in each self-composition (its default
#: ``tail_mass_truncation``) and counts it, pessimistically, as infinite privacy loss.
PLD_TRUNCATED_MASS = 1e-15


def _pld_pair(path: DpsgdPath, sigma: float, extra_mu: float, delta: float, grid: float | None):
    """PLD epsilons on ``grid``, or on a grid refined until two agree (returns the grid too).

    Raises :class:`Unresolved` if no two successive grids down to
    :data:`PLD_FINEST` agree within :data:`PLD_TOLERANCE`: at a delta near
    dp-accounting's numerical floor (the truncated tail mass, the rounding of
    its FFT composition: delta = 1e-14 at T = 2.5e5) its epsilon jumps by
    10-30% between grids and between noise multiplier 0.01 apart, and is not
    monotone in the noise; no number from it is stated then.
    """
    if grid is not None:
        return _pld_pair_at(path, sigma, extra_mu, delta, grid), grid
    grid = PLD_GRID
    coarse = _pld_pair_at(path, sigma, extra_mu, delta, grid)
    seen = [coarse[1]]
    while grid / PLD_REFINE >= PLD_FINEST:
        fine = _pld_pair_at(path, sigma, extra_mu, delta, grid / PLD_REFINE)
        grid /= PLD_REFINE
        seen.append(fine[1])
        # both are upper bounds (pessimistic); the finer one is kept
        if abs(coarse[1] - fine[1]) <= PLD_TOLERANCE * fine[1]:
            return fine, grid
        coarse = fine
    if all(math.isinf(e) for e in seen):
        raise Unresolved(f"dp-accounting's PLD gives epsilon = inf at delta = {delta:g} on every loss grid: delta is "
                         f"below the tail mass it truncates ({PLD_TRUNCATED_MASS:g} a composition, counted as infinite "
                         "privacy loss)")
    raise Unresolved(f"dp-accounting's PLD does not resolve epsilon at delta = {delta:g} for T = {path.steps} steps: "
                     f"its estimates on loss grids {PLD_GRID:g} to {grid:.2g} disagree "
                     f"({', '.join(f'{e:.4g}' for e in seen)}), where they should agree within "
                     f"{100 * PLD_TOLERANCE:g}%: at so small a delta the tail mass it truncates ({PLD_TRUNCATED_MASS:g} "
                     "a composition, counted as infinite loss) and the rounding of its FFT composition are of "
                     "delta's order")


@_cached
def _epsilon_pair(accountant: str, sampling: str, sigma: float, steps: int, n: int, batch_size: int,
                  extra_mu: float, delta: float, grid: float | None, version: str) -> tuple[float, float, float]:
    path = DpsgdPath(sampling, sigma, steps, n, batch_size)
    if accountant == "clt":
        mu = clt_mu(sigma, path.q, steps, sampling)
        return gdp_epsilon(mu, delta), gdp_epsilon(math.hypot(mu, extra_mu), delta), math.nan
    if accountant == "gdp":
        mu = math.sqrt(path.uses) / sigma
        return gdp_epsilon(mu, delta), gdp_epsilon(math.hypot(mu, extra_mu), delta), math.nan
    capped = min(sigma, SIGMA_CAP)
    if accountant == "rdp":
        return (*_rdp_pair(path, capped, extra_mu, delta), math.nan)
    (alone, total), used = _pld_pair(path, capped, extra_mu, delta, grid)
    return alone, total, used


@functools.lru_cache(maxsize=None)
def _version() -> str:
    """The on-disk cache's key beside the arguments: everything that computes the number.

    joblib keys an entry on the cached function's own source and its
    arguments only: an edit to a helper it calls (``clt_mu``, ``gdp_epsilon``,
    ``_pld_pair``) would reuse the old epsilon silently. So the key also holds
    the hash of ldpsim's whole source (as the numba cache's directory does,
    :func:`ldpsim.engine.dialect.jit.source_hash`) and the versions of dp-accounting and
    of the numpy and scipy it computes with.
    """
    from importlib.metadata import PackageNotFoundError, version

    from ..engine.dialect.jit import source_hash

    parts = []
    for package in ("dp-accounting", "numpy", "scipy"):
        try:
            parts.append(f"{package} {version(package)}")
        except PackageNotFoundError:  # (not installed as a distribution: its version is unknown)
            parts.append(f"{package} ?")
    return "; ".join(parts + [f"ldpsim source {source_hash()}"])


def epsilon_pair(accountant: str, sampling: str, sigma: float, steps: int, n: int, batch_size: int,
                 delta: float, extra_mu: float = 0.0, grid: float | None = None) -> tuple[float, float]:
    """epsilon at ``delta`` of the path alone and of the path composed with ``extra_mu``-GDP, by ``accountant``.

    Parameters
    ----------
    accountant : {'pld', 'rdp', 'gdp', 'clt'}
    sampling : {'swor', 'poisson', 'cyclic'}
    sigma : float
        Noise multiplier relative to the sensitivity of the clipped mean
        gradient under the scheme's relation (0: no noise, epsilon inf).
    steps, n, batch_size : int
        ``T``, the sample size and ``m`` (Poisson: the expected batch size).
    delta : float
        In (0, 1).
    extra_mu : float
        GDP parameter of the further Gaussian releases composed with the path
        (0: none; ``inf``: a non-private one, epsilon inf).
    grid : float, optional
        PLD only: the privacy-loss grid; default: refined until two grids agree.

    Returns
    -------
    (float, float)
        Path alone, whole release. ``inf`` if ``sigma = 0`` (no noise).

    Raises
    ------
    ValueError
        If the accountant does not support the scheme (:func:`check_supported`).
    """
    problem = check_supported(accountant, sampling)
    if problem:
        raise ValueError(problem)
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    if sigma == 0.0:  # no noise on the path
        return math.inf, math.inf
    if math.isinf(sigma):  # no path (or one that releases nothing): only the further Gaussian releases
        return 0.0, (gdp_epsilon(extra_mu, delta) if extra_mu > 0 else 0.0)
    alone, total, _ = _epsilon_pair(accountant, sampling, float(sigma), int(steps), int(n), int(batch_size),
                                    float(extra_mu), float(delta), grid, _version())
    return alone, total


def solve_decreasing(epsilon_of, target: float, start: float, rtol: float = 1e-3, lo_aim: float = CALIBRATION_AIM,
                     first_step: float = 2.0, max_evaluations: int = 60) -> float:
    """The ``x`` whose ``epsilon_of(x)`` (decreasing in ``x > 0``) lies in ``[lo_aim - rtol, 1] x target``, near ``lo_aim``.

    Brackets in ``log x`` from ``start`` (a factor ``first_step``, doubled in
    the log until the aim is bracketed), then a safeguarded
    secant in ``(log x, log epsilon)`` (epsilon is close to a power of the
    noise), ending on a point at or below the target. Each call of
    ``epsilon_of`` is an accountant run, so few are made (typically 4-8).

    Raises
    ------
    ValueError
        If no ``x`` in ``(0, 1e300)`` reaches the target.
    """
    aim = lo_aim * target
    log_aim = math.log(aim)

    def f(log_x):
        eps = epsilon_of(math.exp(log_x))
        return (math.log(eps) if eps > 0 else -math.inf) - log_aim, eps

    a = math.log(start)
    fa, ea = f(a)
    if fa == 0:
        return math.exp(a)
    step = math.log(first_step) if fa > 0 else -math.log(first_step)
    b = a + step
    fb, eb = f(b)
    evaluations = 2
    while (fa > 0) == (fb > 0):
        a, fa, ea = b, fb, eb
        step *= 2.0
        b = a + step
        if not -690.0 < b < 690.0 or evaluations > max_evaluations:
            raise ValueError(f"no noise multiplier in (1e-300, 1e300) reaches epsilon = {target:g}")
        fb, eb = f(b)
        evaluations += 1
    # f changes sign between a and b: regula falsi in (log x, log epsilon) with the Illinois rule, keeping the
    # noisier end (f <= 0: epsilon at or below the aim) as the answer
    lo, flo, hi, fhi = (a, fa, b, fb) if a < b else (b, fb, a, fa)  # flo > 0 >= fhi
    best_eps = eb if hi == b else ea
    side = 0
    while evaluations < max_evaluations:
        if (lo_aim - rtol) * target <= best_eps <= target:
            return math.exp(hi)
        x = hi - fhi * (hi - lo) / (fhi - flo) if math.isfinite(flo) and math.isfinite(fhi) else 0.5 * (lo + hi)
        if not lo < x < hi:
            x = 0.5 * (lo + hi)
        fx, ex = f(x)
        evaluations += 1
        if fx > 0:
            lo, flo = x, fx
            if side == -1:
                fhi *= 0.5
            side = -1
        else:
            hi, fhi, best_eps = x, fx, ex
            if side == 1:
                flo *= 0.5
            side = 1
        if hi - lo < 1e-12:
            break
    if best_eps <= target:
        return math.exp(hi)
    raise ValueError(f"the calibration to epsilon = {target:g} did not converge")


def calibrate_sigma(target: float, delta: float, accountant: str, sampling: str, steps: int, n: int,
                    batch_size: int, extra_mu: float = 0.0, whole: bool = False) -> float:
    """The noise multiplier whose epsilon at ``delta`` by ``accountant`` is at most ``target`` and within 1% of it.

    Parameters
    ----------
    target, delta : float
        The budget: ``epsilon > 0`` (``inf``: no noise, returns 0) and delta in (0, 1).
    accountant, sampling, steps, n, batch_size
        As for :func:`epsilon_pair`.
    extra_mu : float
        GDP parameter of further Gaussian releases composed with the path.
    whole : bool
        Calibrate the whole release (path and ``extra_mu``) to ``target``;
        default: the path alone (the further releases are then reported on top).

    Raises
    ------
    ValueError
        If the accountant does not support the scheme, or (``whole``) the
        further releases alone already spend the target.
    """
    if math.isinf(target):
        return 0.0
    problem = check_supported(accountant, sampling)
    if problem:
        raise ValueError(problem)
    return _calibrate(float(target), float(delta), accountant, sampling, int(steps), int(n), int(batch_size),
                      float(extra_mu) if whole else 0.0, _version())


@_cached
def _calibrate(target, delta, accountant, sampling, steps, n, batch_size, extra_mu, version) -> float:
    q = batch_size / n
    if extra_mu > 0:
        floor = gdp_epsilon(extra_mu, delta)
        if floor >= target:
            raise ValueError(f"the further Gaussian releases (mu = {extra_mu:.4g}) alone are epsilon = {floor:.4g} "
                             f"at delta = {delta:g}, at or above the target {target:g}")
    if accountant in ("clt", "gdp"):
        # closed forms in GDP: the path's mu from the target's, then sigma by the CLT (or exactly, cyclic)
        # (a hair below the target, so that rounding cannot put the round trip above it)
        total = gdp_mu(target * (1.0 - 1e-9), delta)
        mu = math.sqrt(max(total * total - extra_mu * extra_mu, 0.0))
        return clt_sigma(mu, q, steps, sampling)
    start = clt_sigma(gdp_mu(target, delta), q, steps, sampling)  # the CLT's answer: close, usually too small
    index = 1 if extra_mu > 0 else 0
    grid = None
    if accountant == "pld":
        # the grid that resolves epsilon near the CLT's answer (a coarse grid overstates epsilon by up to a
        # third at T = 1e6, q = 1e-3), then the root on that grid
        grid = _epsilon_pair(accountant, sampling, start, steps, n, batch_size, extra_mu, delta, None, version)[2]
    sigma = solve_decreasing(lambda s: _epsilon_pair(accountant, sampling, s, steps, n, batch_size, extra_mu, delta,
                                                     grid, version)[index], target, start, first_step=1.1)
    if accountant == "pld":
        # the run states the refined epsilon at sigma (epsilon_pair): it too must be at most the target and within
        # 1% of it (Unresolved if the grids disagree there)
        refined = _epsilon_pair(accountant, sampling, sigma, steps, n, batch_size, extra_mu, delta, None, version)
        if not (CALIBRATION_AIM - 1e-3) * target <= refined[index] <= target:
            sigma = solve_decreasing(lambda s: _epsilon_pair(accountant, sampling, s, steps, n, batch_size, extra_mu,
                                                             delta, refined[2], version)[index],
                                     target, sigma, first_step=1.01)
            again = _epsilon_pair(accountant, sampling, sigma, steps, n, batch_size, extra_mu, delta, None, version)
            if not (CALIBRATION_AIM - 1e-3) * target <= again[index] <= target:
                raise Unresolved(f"dp-accounting's PLD gives no noise multiplier whose epsilon at delta = {delta:g} "
                                 f"is within 1% of {target:g} below it (at {sigma:.6g}: {again[index]:.6g})")
    return sigma


__all__ = ["ACCOUNTANTS", "CALIBRATION_AIM", "DEFAULT_ACCOUNTANT", "DESCRIPTION", "DpsgdPath", "IS_BOUND", "SIGMA_CAP",
           "SUPPORTED", "Unresolved", "cache_dir", "calibrate_sigma", "check_supported", "epsilon_pair", "path_event",
           "solve_decreasing"]
