"""The CLT of DP-SGD that 002 uses (an approximation, not an accountant), and the noise of one step.

This module holds closed forms only; the accountants that give valid bounds
(dp-accounting's PLD and RDP, exact GDP composition) are in
:mod:`.accountants`, which puts this CLT beside them as ``accountant = clt``.

One step of DP-SGD adds ``N(0, sigma^2 D^2)`` to a sum of clipped per-example
gradients whose sensitivity is ``D``: on its own it is ``1/sigma``-GDP. Over
``T`` steps, each touching a random subsample (rate ``q = m / n``), the central
limit theorem of Bu, Dong, Long & Su (2020; Dong, Roth & Su 2022, Section 5)
gives, for ``q sqrt(T) -> c``, asymptotically mu-GDP with

* sampling without replacement (batches of exactly ``m``; replace-one neighbours):
  ``mu = sqrt(2) c sqrt(e^(1/sigma^2) Phi(1.5/sigma) + 3 Phi(-0.5/sigma) - 2)``;
* Poisson sampling (each example with probability ``q``; add/remove neighbours):
  ``mu = c sqrt(e^(1/sigma^2) - 1)``.

(002, Corollary 3 prints ``sqrt(2c) sqrt(e^(-sigma^2) ...)``: two typos,
docs/corrections.md items 12 and 13.) Cyclic passes have no amplification:
an example used in ``k`` steps is ``sqrt(k) / sigma``-GDP by composition.

Both CLT expressions are computed without overflow for small ``sigma`` (in
logs) and without cancellation for large ``sigma`` (``expm1`` and the exact
cancellation of the Phi terms rewritten; beyond ``sigma = 1e3``, where that
cancellation still costs ``1e-16 sigma`` of relative precision, by their
series in ``1 / sigma``), and inverted for ``sigma`` by Brent's method in
``log sigma``; a ``mu`` whose ``sigma`` lies outside the floating-point range
is a ``ValueError`` that says so. mu-GDP <-> (epsilon, delta) goes through
:mod:`.gdp`. The CLT is an approximation, not a bound: :mod:`.accountants`
puts it beside the valid accountants (PLD, RDP, exact GDP composition).
"""

from __future__ import annotations

import math

from .gdp import gdp_delta, gdp_epsilon, gdp_mu

#: Sampling schemes of DP-SGD, as configs spell them.
SAMPLINGS = ("swor", "poisson", "cyclic")
#: Neighbouring relation under which each scheme's guarantee holds.
NEIGHBOURS = {"swor": "replace-one", "poisson": "add/remove", "cyclic": "replace-one"}


#: Above this noise multiplier the CLT's ``f(sigma)`` is computed by its series in ``1 / sigma``.
SERIES_SIGMA = 1e3
#: ``log sigma`` beyond which a noise multiplier is not a float (``e^709.78`` is the largest).
MAX_LOG_SIGMA = 709.0
_PHI0 = 1.0 / math.sqrt(2.0 * math.pi)
_TWO_PHI0 = 2.0 * _PHI0
_LOG2 = math.log(2.0)


def _log_ndtr(x: float) -> float:
    from scipy import special  # lazy: import ldpsim <= 1 s (issue 41)

    return float(special.log_ndtr(x))


def _swor_log_f(sigma: float) -> float:
    """``log f(sigma)``, ``f = e^(1/sigma^2) Phi(1.5/sigma) + 3 Phi(-0.5/sigma) - 2``, without overflow or cancellation.

    ``f = expm1(a) Phi(b) + [3 Phi(-c) - 1 - Phi(-b)]`` with ``a = 1/sigma^2``,
    ``b = 1.5/sigma``, ``c = 0.5/sigma``: the bracket is ``-phi(0) c^3 ... ``,
    small and negative; for large ``sigma`` both parts are ``O(1/sigma^2)`` and
    ``O(1/sigma^3)``, computed with full relative precision by ``expm1`` and
    ``ndtr`` of small arguments (``3 Phi(-c) - 1 - Phi(-b) = 3 (Phi(-c) - 1/2) - (Phi(-b) - 1/2)``
    with ``Phi(-x) - 1/2 = -erf(x / sqrt 2) / 2``).
    """
    from scipy import special

    if sigma > SERIES_SIGMA:
        # f = (x^2/2) (1 + 2 phi(0) x + x^2/2 + (3/4) phi(0) x^3 + x^4/6 + 0.086 x^5 + ...), x = 1/sigma (Taylor,
        # checked against 60 digits): the first term left out is below 1e-16 here, where the closed form below
        # loses 1e-16 sigma of relative precision to the cancellation of its O(x) terms (at sigma ~ 1e16, all)
        x = 1.0 / sigma
        return 2.0 * math.log(x) - _LOG2 + math.log1p(x * (_TWO_PHI0 + x * (0.5 + x * (0.75 * _PHI0 + x / 6.0))))
    a = 1.0 / (sigma * sigma)
    b, c = 1.5 / sigma, 0.5 / sigma
    if a > 600.0:  # e^a overflows: log f = a + log Phi(b) + log(1 + rest), rest ~ e^-a
        rest = (3.0 * special.ndtr(-c) - 2.0) * math.exp(-a) / special.ndtr(b)
        return a + _log_ndtr(b) + math.log1p(rest)
    bracket = -1.5 * special.erf(c / math.sqrt(2.0)) + 0.5 * special.erf(b / math.sqrt(2.0))
    return math.log(math.expm1(a) * special.ndtr(b) + bracket)


def _poisson_log_f(sigma: float) -> float:
    """``log(e^(1/sigma^2) - 1)`` without overflow."""
    if sigma > SERIES_SIGMA:  # e^a - 1 = a (1 + a/2 + a^2/6 + ...), and a = 1/sigma^2 may underflow
        a = 1.0 / (sigma * sigma)
        return -2.0 * math.log(sigma) + math.log1p(a * (0.5 + a / 6.0))
    a = 1.0 / (sigma * sigma)
    if a > 600.0:
        return a + math.log(-math.expm1(-a))
    return math.log(math.expm1(a))


def _check(name: str, value: float, low: float = 0.0) -> None:
    if not (value > low and math.isfinite(value)):
        raise ValueError(f"{name} must be finite and > {low:g}, got {value}")


def clt_mu(sigma: float, q: float, steps: int, sampling: str = "swor") -> float:
    """mu of ``steps`` DP-SGD steps with noise multiplier ``sigma`` and sampling rate ``q`` (CLT).

    Parameters
    ----------
    sigma : float
        Noise multiplier: one step's noise SD over the sensitivity of what it
        is added to (one step is ``1/sigma``-GDP); ``sigma = inf`` gives mu = 0.
    q : float
        Sampling rate ``m / n`` in (0, 1].
    steps : int
        Number of steps ``T``.
    sampling : {'swor', 'poisson', 'cyclic'}
        ``cyclic``: ``q`` is ignored and every example is used in
        ``ceil(T q)`` steps (``q = m / n``): ``mu = sqrt(ceil(T q)) / sigma``.

    Returns
    -------
    float
    """
    if math.isinf(sigma):
        return 0.0
    _check("sigma", sigma)
    _check("q", q)
    if q > 1.0:
        raise ValueError(f"q must be <= 1, got {q}")
    _check("steps", steps)
    if sampling == "cyclic":
        return math.sqrt(math.ceil(steps * q - 1e-9)) / sigma
    if sampling == "swor":
        log_f = _swor_log_f(sigma)
        scale = math.sqrt(2.0) * q * math.sqrt(steps)
    elif sampling == "poisson":
        log_f = _poisson_log_f(sigma)
        scale = q * math.sqrt(steps)
    else:
        raise ValueError(f"sampling must be one of {', '.join(SAMPLINGS)}, got {sampling!r}")
    try:
        return scale * math.exp(0.5 * log_f)
    except OverflowError:  # a tiny sigma: mu beyond the largest float
        return math.inf


def clt_sigma(mu: float, q: float, steps: int, sampling: str = "swor") -> float:
    """The noise multiplier ``sigma`` with ``clt_mu(sigma, q, steps, sampling) = mu``.

    ``mu = inf`` gives 0 (no noise). mu decreases strictly in sigma, from
    ``inf`` to 0, so the root is unique; it is found in ``log sigma``.
    """
    from scipy import optimize

    if math.isinf(mu):
        return 0.0
    _check("mu", mu)
    if sampling == "cyclic":
        sigma = math.sqrt(math.ceil(steps * q - 1e-9)) / mu
        if not math.isfinite(sigma):
            raise ValueError(f"mu = {mu:g} needs a noise multiplier sigma = sqrt(ceil(T q)) / mu above the largest "
                             "float")
        return sigma
    log_mu = math.log(mu)

    def excess(log_sigma):
        value = clt_mu(math.exp(log_sigma), q, steps, sampling)
        if 0.0 < value < math.inf:
            return math.log(value) - log_mu
        return _log_clt_mu(math.exp(log_sigma), q, steps, sampling) - log_mu  # mu below the smallest float

    lo, hi = -1.0, 1.0
    while excess(lo) < 0:
        lo -= 1.0
        if lo < -MAX_LOG_SIGMA:  # not reached: mu = 1.8e308 needs sigma ~ 0.027
            raise ValueError(f"mu = {mu:g} needs a noise multiplier sigma below e^-{MAX_LOG_SIGMA:g}")
    while excess(hi) > 0:
        hi += 1.0
        if hi > MAX_LOG_SIGMA:
            raise ValueError(f"mu = {mu:g} needs a noise multiplier sigma above e^{MAX_LOG_SIGMA:g} ~ 1e308, "
                             "the largest float")
    return math.exp(optimize.brentq(excess, lo, hi, xtol=1e-14, rtol=1e-14, maxiter=200))


def _log_clt_mu(sigma: float, q: float, steps: int, sampling: str) -> float:
    """``log clt_mu``, for noise so large that ``mu`` itself underflows (swor and poisson)."""
    if sampling == "swor":
        return math.log(math.sqrt(2.0) * q * math.sqrt(steps)) + 0.5 * _swor_log_f(sigma)
    return math.log(q * math.sqrt(steps)) + 0.5 * _poisson_log_f(sigma)


def step_noise_sd(sigma: float, clip: float, batch_size: int, sampling: str = "swor") -> float:
    """SD ``sigma_1`` of the Gaussian noise on the averaged clipped gradient (002, Algorithm 1 with (5.1)).

    The average ``(1/m) sum_{i in I_t} clip(g_i)`` changes by at most
    ``2 clip / m`` when one example is replaced (``swor``, ``cyclic``) and by
    ``clip / m`` when one is added or removed (``poisson``, dividing by the
    expected batch size ``m``), so a ``1/sigma``-GDP step needs
    ``sigma_1 = 2 sigma clip / m`` (``sigma clip / m`` for Poisson).
    002's Corollary 3 prints ``2 sigma Delta_g / m`` with ``Delta_g = 2 clip``,
    twice as much (docs/corrections.md, item 14).
    """
    sensitivity = (1.0 if sampling == "poisson" else 2.0) * clip / batch_size
    return sigma * sensitivity


def gdp_summary(mu: float, deltas=(1e-5,), epsilons=(1.0,)) -> dict:
    """(epsilon, delta) pairs implied by mu-GDP: ``delta(epsilon)`` and ``epsilon(delta)``."""
    out = {"mu": mu}
    for eps in epsilons:
        out[f"delta_at_eps{eps:g}"] = gdp_delta(eps, mu) if mu > 0 else 0.0
    for delta in deltas:
        out[f"eps_at_delta{delta:g}"] = gdp_epsilon(mu, delta) if mu > 0 else 0.0
    return out


def mu_from_epsilon_delta(epsilon: float, delta: float) -> float:
    """The mu whose GDP guarantee gives exactly ``(epsilon, delta)``-DP (a target stated as (epsilon, delta))."""
    return gdp_mu(epsilon, delta)


__all__ = ["MAX_LOG_SIGMA", "NEIGHBOURS", "SAMPLINGS", "SERIES_SIGMA", "clt_mu", "clt_sigma", "gdp_summary",
           "mu_from_epsilon_delta", "step_noise_sd"]
