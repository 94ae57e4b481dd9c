"""Mechanisms of online LDP-SGD with a bounded gradient and per-user budgets (004, Section 3.2).

In 004's recursion ``theta_i = theta_(i-1) - eta_i (grad f + C0 omega_i)`` every
user privatizes one gradient, known only to satisfy ``||grad f||_2 <= C0``
(Condition 1): its l2 sensitivity is at most ``D = 2 C0`` (a model may know a
smaller ``D``: the Mallows-weighted Huber loss has ``sqrt(8 c^2 + c^4 / 4)``).
The mechanisms are calibrated to ``D`` alone:

* ``laplace``: i.i.d. ``Lap(0, sqrt(p) D / epsilon)`` per coordinate, the l1
  sensitivity bounded by Cauchy-Schwarz, ``||v||_1 <= sqrt(p) ||v||_2`` in
  ``R^p`` (004, Example 1): epsilon-LDP;
* ``gaussian``: ``N(0, sigma^2 I)`` with the analytic calibration of Balle &
  Wang (2018) for (epsilon, delta)-LDP (:class:`~.mechanisms.gaussian_noise.Gaussian`);
* ``gaussian_classical``: ``sigma = D sqrt(2 ln(1.25 / delta)) / epsilon``
  (004, Example 2; Dwork & Roth, Theorem A.1, which proves it for
  epsilon < 1 only);
* ``gdp``: ``sigma = D / mu``, mu-GDP (004, Example 3; Dong, Roth & Su 2022).

With ``D = 2 C0`` these are 004's ``C0 omega_i`` with ``omega_i`` of scale
``2 sqrt(p) / epsilon`` (Laplace), standard deviation
``2 sqrt(2 ln(1.25/delta)) / epsilon`` (classical Gaussian) and ``2 / mu``
(GDP); Examples 2 and 3 print the variances as ``8 ln(1.25/delta) / epsilon``
and ``4 / mu``, which are not squared (docs/corrections.md, item 23).

**Per-user budgets.** The budget (``epsilon`` of Laplace or classical
Gaussian, ``mu`` of GDP) is a constant or drawn per user from a law
(:class:`BudgetLaw`, config ``budget: {uniform: [1, 2]}``), independently of
the data; the noise scale is then ``numerator / b_i`` with the user's draw
``b_i`` (one uniform, drawn inside the kernel before the noise), and user
``i`` gets the guarantee of budget ``b_i``. By parallel composition (004,
Theorem 1) the run as a whole is private at the weakest budget drawn, at
most the law's upper end. The analytic Gaussian calibration is a root search
and has no per-user form.

**Releases of a clipped gradient.** A gradient clipped to the l2 ball of
radius ``clip`` (the ``*_clip`` models) may instead be released whole by a
pure epsilon-LDP release of :mod:`.mechanisms` (``LDP_MECHANISMS``, budget key
``epsilon``, one release per user; :func:`ball_mechanism`): ``t = g / clip``
lies in ``[-1, 1]^p``, the release is unbiased for ``t``, and ``clip`` times
it replaces ``g``. ``duchi_l2`` releases ``t`` on the unit ball itself
(:class:`~.mechanisms.duchi.DuchiL2` with ``ball=True``). These have no per-user form.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..engine.runs.config import ConfigError, show
from .mechanisms import LDP_MECHANISMS, ONLINE_MECHANISMS, PER_USER_MECHANISMS, REGISTRY, make_ldp_mechanism
from .mechanisms.duchi import DuchiL2
from .mechanisms.kernel import NoNoise, _fmt

#: Which budget key each mechanism reads (the releases read ``epsilon``); ``ONLINE_MECHANISMS`` (the default first)
#: and ``PER_USER_MECHANISMS`` (budgets drawn per user) are the registry's (:mod:`.mechanisms.registry`).
BUDGET_KEY = {name: REGISTRY[name].budget_key for name in ONLINE_MECHANISMS + LDP_MECHANISMS}


# --- budget laws -----------------------------------------------------------------


def _num(x: float) -> str:
    """A number as budget laws print it: ``1``, ``1.5``, ``0.30000000000000004`` (round-trips)."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


@dataclass(frozen=True)
class BudgetLaw:
    """The law of a user's privacy budget: ``U(low, high)``.

    Parameters
    ----------
    low, high : float
        ``0 < low < high < inf``.
    """

    low: float
    high: float

    kind: ClassVar[str] = "uniform"

    def __post_init__(self):
        if not (0.0 < self.low < self.high < math.inf):
            raise ValueError(f"uniform budget needs 0 < a < b < inf, got [{self.low}, {self.high}]")

    @property
    def text(self) -> str:
        """Canonical spelling, as settings and CSV files show it: ``uniform(1, 2)``."""
        return f"uniform({_num(self.low)}, {_num(self.high)})"

    def inverse_moment(self, k: int) -> float:
        """``E[b^-k]`` for ``k = 1, 2``: what the mean noise variance needs (``k = 2``)."""
        a, b = self.low, self.high
        if k == 1:
            return math.log(b / a) / (b - a)
        if k == 2:
            return 1.0 / (a * b)
        raise ValueError(f"k must be 1 or 2, got {k}")

    def draw(self, u: float) -> float:
        """The budget of a user from one ``U[0, 1)`` draw ``u`` (what the kernel does)."""
        return self.low + (self.high - self.low) * u


#: The smallest constant budget: below it the mechanisms' noise variance (sensitivity / budget)^2 overflows.
MIN_BUDGET = 1e-150

_UNIFORM_TEXT = re.compile(r"\s*uniform\s*\(\s*([^,]+?)\s*,\s*([^)]+?)\s*\)\s*")


def parse_budget(name: str, value):
    """A config's ``budget`` value: ``None`` (the constant ``mu`` / ``epsilon``), a number, or a law.

    Accepts ``{uniform: [a, b]}`` (YAML), ``"uniform(a, b)"`` (``--set``) and a
    positive number (a constant budget). Returns ``None``, the number as a
    float, or the law's canonical text ``"uniform(a, b)"`` (hashable, prints
    as is in CSV files).

    Raises
    ------
    ConfigError
        One line naming the key, the value and what is allowed.
    """
    allowed = "a number > 0, {uniform: [a, b]} or 'uniform(a, b)' with 0 < a < b < inf"
    if value is None:
        return None
    if isinstance(value, bool):
        raise ConfigError(f"{name} = {show(value)} is not a budget; allowed: {allowed}")
    if isinstance(value, str) and not _UNIFORM_TEXT.fullmatch(value):
        try:  # a number as YAML leaves it in text: --set budget=1e0 (1e0 is no YAML float), inf
            value = float(value)
        except ValueError:
            pass
    if isinstance(value, (int, float)):
        if not (value > 0):  # NaN too
            raise ConfigError(f"{name} = {show(value)} is outside (0, inf]; allowed: {allowed}")
        if value < MIN_BUDGET:
            raise ConfigError(f"{name} = {show(value)} is too small: the noise variance, of order 1 / {name}^2, "
                              f"overflows; a constant budget must be at least {MIN_BUDGET:g}")
        return float(value)
    bounds = None
    if isinstance(value, dict) and len(value) == 1 and "uniform" in value:
        bounds = value["uniform"]
    elif isinstance(value, str):
        match = _UNIFORM_TEXT.fullmatch(value)
        if match:
            bounds = [match.group(1), match.group(2)]
    if not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
        raise ConfigError(f"{name} = {show(value)} is not a budget; allowed: {allowed}")
    try:
        low, high = (float(b) for b in bounds)
        law = BudgetLaw(low, high)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} = {show(value)} is not a budget; allowed: {allowed}") from None
    return law.text


def budget_law(text: str) -> BudgetLaw:
    """The :class:`BudgetLaw` of a canonical ``"uniform(a, b)"`` text (from :func:`parse_budget`)."""
    match = _UNIFORM_TEXT.fullmatch(text)
    if match is None:
        raise ValueError(f"not a budget law: {text!r}")
    return BudgetLaw(float(match.group(1)), float(match.group(2)))


# --- Python side ------------------------------------------------------------------------


@dataclass(frozen=True)
class PerUserBudget:
    """A mechanism whose budget each user draws from ``law``.

    Parameters
    ----------
    name : {'laplace', 'gaussian_classical', 'gdp'}
        The mechanism.
    law : BudgetLaw
        Law of the budget (``epsilon`` or ``mu``).
    dim : int
        ``p``, the number of gradient coordinates.
    sensitivity : float
        l2 sensitivity ``D``.
    delta : float, optional
        The classical Gaussian's delta.
    """

    name: str
    law: BudgetLaw
    dim: int
    sensitivity: float
    delta: float | None = None

    @property
    def numerator(self) -> float:
        """Noise scale times the budget: ``sqrt(p) D`` (Laplace scale), ``D sqrt(2 ln(1.25/delta))``, ``D`` (sd)."""
        return _numerator(self.name, self.dim, self.sensitivity, self.delta)

    @property
    def variance(self) -> float:
        """Mean variance added to each coordinate over users: ``k numerator^2 E[b^-2]`` (k = 2 for Laplace)."""
        return REGISTRY[self.name].calibration.variance_factor * self.numerator**2 * self.law.inverse_moment(2)

    def at(self, budget: float):
        """The mechanism of a user whose budget is ``budget``."""
        return _constant(self.name, budget, self.dim, self.sensitivity, self.delta)

    @property
    def guarantee(self) -> str:
        """Each user's guarantee, and the run's (the weakest), in one line."""
        symbol = BUDGET_KEY[self.name]
        low, high = (_num(b) for b in (self.law.low, self.law.high))
        kind = REGISTRY[self.name].calibration.per_user_text.format(
            numerator=self.numerator, dim=self.dim, sensitivity=self.sensitivity, delta=_fmt(self.delta or 0))
        return (f"user i draws {symbol}_i ~ {self.law.text} independently of the data and is {kind}, i.e. between "
                f"{symbol} = {high} and {symbol} = {low}; the run as a whole (parallel composition): "
                f"{self.at(self.law.high).guarantee}")

    def record(self):
        cls = REGISTRY[self.name].calibration.per_user_record
        return cls(float(self.numerator), float(self.law.low), float(self.law.high - self.law.low))


def _numerator(name, dim, sensitivity, delta) -> float:
    """Noise scale times the budget (see :class:`PerUserBudget`; its family's :class:`OnlineCalibration`)."""
    numerator = REGISTRY[name].calibration.numerator
    return sensitivity if numerator is None else numerator(dim, sensitivity, delta)


def _constant(name, budget, dim, sensitivity, delta):
    return REGISTRY[name].calibration.make(budget, dim, sensitivity, delta)


def online_mechanism(name: str, dim: int, sensitivity: float, budget, delta: float | None = None):
    """The mechanism of an online model, calibrated to its l2 sensitivity ``D``.

    Parameters
    ----------
    name : {'gdp', 'laplace', 'gaussian', 'gaussian_classical'}
        See the module docstring.
    dim : int
        ``p``, the number of gradient coordinates (Laplace's ``sqrt(p)``).
    sensitivity : float
        ``D = sup ||grad f(x) - grad f(x')||_2``.
    budget : float or BudgetLaw
        ``epsilon`` (Laplace, Gaussian) or ``mu`` (GDP); ``inf`` for no privacy
        (returns ``None``); a law for per-user budgets.
    delta : float, optional
        For the Gaussian mechanisms.

    Returns
    -------
    mechanism or None
        With ``variance`` (per coordinate, averaged over users), ``guarantee``
        and a kernel record from :func:`online_noise_record`.
    """
    if name not in ONLINE_MECHANISMS:
        raise ValueError(f"mechanism = {name!r} is not one of: {', '.join(ONLINE_MECHANISMS)}")
    if not (sensitivity > 0 and math.isfinite(sensitivity)):
        raise ValueError(f"sensitivity must be finite and > 0, got {sensitivity}")
    _numerator(name, dim, sensitivity, delta)  # checks delta
    if isinstance(budget, BudgetLaw):
        if name not in PER_USER_MECHANISMS:
            raise ValueError(f"mechanism {name!r} has no per-user budgets; allowed: {', '.join(PER_USER_MECHANISMS)}")
        return PerUserBudget(name, budget, int(dim), sensitivity, delta)
    budget = float(budget)
    if math.isinf(budget):
        return None
    return _constant(name, budget, int(dim), sensitivity, delta)


def ball_mechanism(name: str, dim: int, radius: float, epsilon: float):
    """A release of :mod:`.mechanisms` for a gradient in the l2 ball of radius ``radius`` (``dim`` coordinates).

    Parameters
    ----------
    name : str
        One of :data:`~.mechanisms.LDP_MECHANISMS`.
    dim : int
        ``p``, the number of gradient coordinates.
    radius : float
        The clip: ``||g||_2 <= radius``, hence ``|g_j| <= radius``.
    epsilon : float
        The user's budget (pure epsilon-LDP, one release); ``inf`` for no privacy (returns ``None``).

    Returns
    -------
    BoundedMechanism or None
        On the box ``|g_j| <= radius`` (``bounds = (radius, .., radius)``),
        which holds the ball; ``duchi_l2`` on the ball itself.
    """
    if name not in LDP_MECHANISMS:
        raise ValueError(f"mechanism = {name!r} is not one of: {', '.join(LDP_MECHANISMS)}")
    if isinstance(epsilon, BudgetLaw):
        raise ValueError(f"mechanism {name!r} has no per-user budgets; allowed: {', '.join(PER_USER_MECHANISMS)}")
    if not (radius > 0 and math.isfinite(radius)):
        raise ValueError(f"radius must be finite and > 0, got {radius}")
    epsilon = float(epsilon)
    if math.isinf(epsilon):
        return None
    bounds = np.full(int(dim), float(radius))
    if name == "duchi_l2":
        return DuchiL2(epsilon, bounds, ball=True)
    return make_ldp_mechanism(name, epsilon, bounds)


def online_noise_record(mechanism, lanes: int = 1):
    """The kernel record of a mechanism from :func:`online_mechanism` or :func:`ball_mechanism` (``None``: no noise).

    ``lanes``: the scratch of a release (per lane); an additive record has none.
    """
    if mechanism is None:
        return NoNoise()
    if isinstance(mechanism, PerUserBudget):
        return mechanism.record()
    return mechanism.noise_record(lanes)  # its class's (a release's, Laplace's, a Gaussian's)


__all__ = ["BUDGET_KEY", "BudgetLaw", "ONLINE_MECHANISMS", "PER_USER_MECHANISMS", "PerUserBudget", "ball_mechanism",
           "budget_law", "online_mechanism", "online_noise_record", "parse_budget"]
