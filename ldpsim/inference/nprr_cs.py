"""NPRR Hoeffding and empirical-Bernstein confidence sequences and intervals, as the authors' code computes them.

Waudby-Smith, Wu & Ramdas (2023, ICML; arXiv 2202.08728; "WWR" below) release, for each user, one
NPRR value ``z_i`` in ``{0, 1/G, .., 1}``: the stochastically rounded ``x_i`` in ``[0, 1]`` with
probability ``r``, a uniform grid point otherwise, so that ``E z_i = zeta(mu) = r mu + (1 - r) / 2``.
For the mean ``mu`` they give Hoeffding-type and empirical-Bernstein-type confidence sequences
(CS, valid at every ``t`` at once) and intervals (CI, for a fixed ``n``). This module reproduces the
four functions of their code (github WannabeSmith/nprr at 36edeca, ``nprr/dpcs.py``:
``nprr_hoeffding_cs``, ``nprr_empbern_cs``, ``nprr_hoeffding_ci``, ``nprr_empbern_ci``, with the
empirical-Bernstein bets of confseq 0.0.11's ``betting_strategies.lambda_predmix_eb``), written
from their formulas (tests/data/nprr_cs_references.json, ``math``), quirks included, in two forms:

* a plain-numpy reference (:func:`hoeffding_cs`, :func:`empbern_cs`, :func:`hoeffding_ci`,
  :func:`empbern_ci`) over the whole array of released values;
* a streaming form for the kernels: a state of :data:`STATE_SIZE` floats that
  :func:`nprr_update` advances by one released value in O(1) work, without allocating, and from which
  :func:`nprr_bounds` and :func:`nprr_running_bounds` read the interval at the current ``t``; the
  constants of a method live in a params array built once by :func:`nprr_params`.

Both rest on one supermartingale argument. With ``S_t = sum_{i<=t}``, predictable bets
``lambda_i > 0`` and CGF terms ``psi_i``, the bound is

    mu_hat_t = S_t lambda_i (z_i - (1 - r) / 2) / S_t (r lambda_i),
    B_t = (log(2 / alpha) + S_t psi_i) / S_t (r lambda_i),
    [L_t, U_t] = [max(0, mu_hat_t - B_t), min(1, mu_hat_t + B_t)],

each side at level ``alpha / 2``. Hoeffding: ``psi_i = lambda_i^2 / 8`` (the CGF bound of a
``[0, 1]`` variable applied to ``z``; WWR's NPRR-Hoeffding CS, their private analogue of
Hoeffding's inequality). Empirical Bernstein: ``psi_i = (z_i - zeta_hat_i)^2 (-log(1 - lambda_i) -
lambda_i)`` with a predictable centre ``zeta_hat_i`` (the empirical-Bernstein supermartingale of
Waudby-Smith & Ramdas 2023, JRSS-B, applied to ``z``), which needs ``lambda_i < 1``. Equation
numbers of WWR are not quoted: no copy of the paper was at hand (it is not in the project's
papers folder); the formulas were read off the authors' code and checked against its outputs.

The authors' quirks, all kept (each one leaves the guarantee intact, see the functions):

1. **No running intersection in the CSs.** ``nprr_*_cs`` return ``[L_t, U_t]`` as above, not
   monotone in ``t``; the CIs do take the running intersection (the Hoeffding CI optionally).
2. **One-sided clipping.** ``L_t`` is floored at 0 but not capped at 1, ``U_t`` capped at 1 but not
   floored at 0: on extreme data ``L_t > U_t``, the empty set. That is the set exactly: ``[max(0, a),
   min(1, b)]`` is ``[a, b]`` intersected with ``[0, 1]``, empty when ``a > 1`` or ``b < 0``, and the
   running intersection is empty when ``max_s L_s > min_s U_s``. Valid at every level and budget (Ville's
   inequality needs only ``alpha < 2``); an empty set covers nothing and has length 0, which the
   coverage study reports (:func:`ldpsim.reporting.stats.set_length`), not the negative ``U_t - L_t``.
3. **Off-by-one in the empirical-Bernstein centre.** ``zeta_hat_t = (1/2 + S_{t-1} z_i) / (t + 1)``:
   ``t`` terms over ``t + 1`` (confseq's own centre is ``(1/2 + S_{t-1} z_i) / t``), which shrinks it
   towards 0 (``zeta_hat_1 = 1/4``). Any predictable centre keeps the supermartingale, so the CS stays
   valid; the squared deviations gain the centre's bias (about ``(zeta / (t + 1))^2``), so it is
   slightly wider on average, noticeably only at small ``t``.
4. **The EB CI tunes its bets at confseq's default alpha = 0.05,** whatever ``alpha`` it is asked
   for (they agree at ``alpha = 0.1`` only), and with prior variance 1/8 where the EB CS uses 1/4.
   The bets are any predictable sequence, so the CI stays valid; only its width is off-target.
5. The Hoeffding CS truncates its bets at ``trunc = 1``, the Hoeffding CI not at all; the EB bets are
   truncated at 0.5 in both.

What a CS means in the streaming form: :func:`nprr_bounds` gives the authors' ``[L_t, U_t]`` (no
running intersection), which equals their ``nprr_*_cs`` arrays element by element;
:func:`nprr_running_bounds` gives the running intersection ``[max_{s<=t} L_s, min_{s<=t} U_s]``,
a CS as well (an intersection of sets that all cover on one event) and the one a time-uniform
coverage check should read. The two cover ``mu`` at every ``t <= n`` on exactly the same event.
With the fixed-``n`` params of a CI, :func:`nprr_running_bounds` at ``t = n`` is the authors' CI
(``nprr_hoeffding_ci``'s default and ``nprr_empbern_ci``) and :func:`nprr_bounds` at ``t = n`` is
``nprr_hoeffding_ci(..., running_intersection=False)``.
"""

from __future__ import annotations

import math

import numpy as np

from ..engine.errors import ConfigError
from ..engine.dialect.jit import dual, jit

#: Confidence-set methods of this module.
METHODS = ("hoeffding", "empbern")
HOEFFDING, EMPBERN = 0.0, 1.0

#: Entries of the streamed state: ``t``; ``S z_i`` (for the EB centres); ``S (z_i - mhat_i)^2`` (for
#: the EB bets); ``S r lambda_i``; ``S lambda_i (z_i - (1 - r) / 2)``; ``S psi_i``; the running
#: intersection's lower and upper end.
T, SUM_Z, SUM_SQ, SUM_RL, SUM_LZ, SUM_PSI, RUN_LOW, RUN_UP = range(8)
#: Floats in one state.
STATE_SIZE = 8

#: Entries of the params array: the method (:data:`HOEFFDING` or :data:`EMPBERN`); ``r``;
#: ``(1 - r) / 2``; ``log(2 / alpha)``; the bets' numerator (``8 log(1 / (alpha / 2))`` for
#: Hoeffding, ``2 log(1 / alpha_lambda)`` for EB); their truncation; the fixed ``n`` of a CI (0 for a
#: CS); the EB bets' prior mean and prior variance.
KIND, R, SHIFT, LOG_2_ALPHA, BET_NUM, TRUNC, FIXED_N, PRIOR_MEAN, PRIOR_VAR = range(9)
#: Floats in one params array.
PARAMS_SIZE = 9

#: confseq's default alpha, at which ``nprr_empbern_ci`` tunes its bets whatever its own alpha (quirk 4).
EB_CI_LAMBDA_ALPHA = 0.05


# --- validation -------------------------------------------------------------------------------------


def _check_real(name: str, value, interval: str, what: str) -> float:
    """``float(value)`` if it is a real number in ``interval`` (``"(0, 1]"``, ``"[0, 1]"``, ``"(0, inf]"``, ...)."""
    low, high = (float(part) for part in interval[1:-1].split(","))
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
    if ok:
        v = float(value)
        ok = (low < v if interval[0] == "(" else low <= v) and (v < high if interval[-1] == ")" else v <= high)
    if not ok:
        shown = value if isinstance(value, (int, float, np.integer, np.floating)) else repr(value)
        raise ConfigError(f"{name} = {shown} is not in {interval}: {what}")
    return float(value)


def _check_r(r) -> float:
    return _check_real("r", r, "(0, 1]", "r is the probability that NPRR keeps the rounded value")


def _check_alpha(alpha) -> float:
    return _check_real("alpha", alpha, "(0, 1)", "the error level of the confidence set (0.1 for 90%)")


_EB_TRUNCATION = "the empirical-Bernstein bets must stay below 1"


def _check_n(n) -> int:
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ConfigError(f"n = {n!r} is not a positive integer: the fixed sample size of the interval")
    return int(n)


def _check_z(z) -> np.ndarray:
    arr = np.asarray(z, dtype=float)
    if arr.ndim != 1 or arr.shape[0] == 0:
        raise ConfigError(f"z has shape {arr.shape}: a non-empty 1-D array of released values is allowed")
    bad = ~((arr >= 0.0) & (arr <= 1.0))  # NaN fails both
    if bad.any():
        i = int(np.argmax(bad))
        raise ConfigError(f"z = {float(arr[i])} at index {i} is not in [0, 1]: NPRR releases values in "
                          "{0, 1/G, .., 1}")
    return arr


# --- the plain-numpy reference ----------------------------------------------------------------------


def hoeffding_lambdas(n: int, alpha: float = 0.1, trunc: float = 1.0, fixed_n: int | None = None) -> np.ndarray:
    """The Hoeffding bets ``lambda_1 .. lambda_n`` (the authors' ``prpl_hoeffding_lambda`` at ``alpha / 2``).

    ``lambda_t = min(trunc, sqrt(8 log(1 / (alpha / 2)) / rate_t))`` with ``rate_t = t log(t + 1)``
    (a CS: the predictable plug-in bets, ``lambda_t = 1`` for ``t <= 9`` at ``alpha = 0.1``), or
    ``rate_t = fixed_n`` (a CI: one constant bet).

    Parameters
    ----------
    n : int
        Number of bets.
    alpha : float
        Level of the two-sided confidence set (each side gets ``alpha / 2``).
    trunc : float
        Truncation (``math.inf`` for none, as the CI uses).
    fixed_n : int, optional
        The CI's sample size; ``None`` for a CS.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` float64.
    """
    n, alpha = _check_n(n), _check_alpha(alpha)
    trunc = _check_real("trunc", trunc, "(0, inf]", "the Hoeffding bets' truncation")
    t = np.arange(1, n + 1)
    rate = np.full(n, float(_check_n(fixed_n))) if fixed_n is not None else t * np.log(t + 1)
    return np.minimum(trunc, np.sqrt(8.0 * math.log(1.0 / (alpha / 2.0)) / rate))


def predmix_eb_lambdas(z, alpha_lambda: float, truncation: float = math.inf, fixed_n: int | None = None,
                       prior_mean: float = 0.5, prior_variance: float = 0.25) -> np.ndarray:
    """confseq 0.0.11's predictable-mixture empirical-Bernstein bets (``lambda_predmix_eb``, ``fake_obs = 1``).

    With ``mhat_t = min(1, (prior_mean + S_t z_i) / (t + 1))`` and ``sigma2_t = (prior_variance +
    S_t (z_i - mhat_i)^2) / (t + 1)`` (each residual against the mean that includes ``z_i``;
    ``sigma2_0 = prior_variance``): ``lambda_t = min(truncation, sqrt(2 log(1 / alpha_lambda) /
    (rate_t sigma2_{t-1})))``, ``rate_t = t log(1 + t)`` for a CS or ``fixed_n`` for a CI.
    ``lambda_t`` depends on ``z_1 .. z_{t-1}`` only. (confseq also maps NaN bets to 0; with
    ``prior_variance > 0`` none arise.)

    Parameters
    ----------
    z : array_like
        Released values in ``[0, 1]``.
    alpha_lambda : float
        The level the bets are tuned for (the EB CS passes ``alpha / 2``, the EB CI confseq's default
        0.05: quirk 4 of the module).
    truncation : float
        Largest bet.
    fixed_n : int, optional
        The CI's sample size; ``None`` for a CS.
    prior_mean, prior_variance : float
        The one fake observation's mean and variance.

    Returns
    -------
    numpy.ndarray
        ``(len(z),)`` float64.
    """
    z = _check_z(z)
    alpha_lambda = _check_real("alpha_lambda", alpha_lambda, "(0, 1)", "the level the bets are tuned for")
    truncation = _check_real("truncation", truncation, "(0, inf]", "the bets' truncation")
    prior_mean = _check_real("prior_mean", prior_mean, "[0, 1]", "the bets' prior mean")
    prior_variance = _check_real("prior_variance", prior_variance, "(0, 0.25]", "the bets' prior variance")
    t = np.arange(1, z.shape[0] + 1)
    cum = np.cumsum(z)
    mhat = np.minimum((prior_mean + cum) / (t + 1), 1.0)
    sigma2 = (prior_variance + np.cumsum((z - mhat) * (z - mhat))) / (t + 1)
    sigma2_prev = np.concatenate(([prior_variance], sigma2[:-1]))
    rate = float(_check_n(fixed_n)) if fixed_n is not None else t * np.log(1 + t)
    return np.minimum(truncation, np.sqrt(2.0 * math.log(1.0 / alpha_lambda) / (rate * sigma2_prev)))


def empbern_centres(z) -> np.ndarray:
    """The authors' predictable centres ``zeta_hat_t = (1/2 + S_{t-1} z_i) / (t + 1)``, ``t = 1..n`` (quirk 3)."""
    z = _check_z(z)
    t = np.arange(1, z.shape[0] + 1)
    return np.concatenate(([0.5], 0.5 + np.cumsum(z)[:-1])) / (t + 1)


def _bounds_from_bets(z: np.ndarray, r: float, alpha: float, lambdas: np.ndarray, psi: np.ndarray):
    """``(L_t, U_t)`` over ``t = 1..n`` from bets and CGF terms (the module's formula)."""
    sum_rl = np.cumsum(r * lambdas)
    mu_hat = np.cumsum(lambdas * (z - (1.0 - r) / 2.0)) / sum_rl
    radius = (math.log(2.0 / alpha) + np.cumsum(psi)) / sum_rl
    return np.maximum(0.0, mu_hat - radius), np.minimum(1.0, mu_hat + radius)


def _hoeffding_bounds(z: np.ndarray, r: float, alpha: float, lambdas: np.ndarray):
    return _bounds_from_bets(z, r, alpha, lambdas, lambdas * lambdas / 8.0)


def _empbern_bounds(z: np.ndarray, r: float, alpha: float, lambdas: np.ndarray):
    d = z - empbern_centres(z)
    return _bounds_from_bets(z, r, alpha, lambdas, (d * d) * (-np.log(1.0 - lambdas) - lambdas))


def running_intersection(lower: np.ndarray, upper: np.ndarray):
    """``(max_{s<=t} L_s, min_{s<=t} U_s)`` over ``t``: a CS's running intersection, itself a CS."""
    return np.maximum.accumulate(lower), np.minimum.accumulate(upper)


def hoeffding_cs(z, r: float, alpha: float = 0.1, trunc: float = 1.0):
    """The authors' NPRR Hoeffding CS (``nprr_hoeffding_cs``), ``t = 1..n``.

    ``mu_hat_t +- (log(2 / alpha) + S_t lambda_i^2 / 8) / S_t (r lambda_i)``, clipped one-sidedly
    (quirk 2), bets :func:`hoeffding_lambdas` ``(trunc)``, no running intersection (quirk 1).

    Parameters
    ----------
    z : array_like
        Released NPRR values in ``[0, 1]``, in arrival order.
    r : float
        Probability in ``(0, 1]`` that NPRR kept the rounded value.
    alpha : float
        Error level in ``(0, 1)``: the CS covers ``mu`` at every ``t`` with probability ``1 - alpha``.
    trunc : float
        Largest bet.

    Returns
    -------
    lower, upper : numpy.ndarray
        ``(n,)`` each, index ``t - 1``; equal to the authors' arrays.
    """
    z, r, alpha = _check_z(z), _check_r(r), _check_alpha(alpha)
    return _hoeffding_bounds(z, r, alpha, hoeffding_lambdas(z.shape[0], alpha, trunc))


def empbern_cs(z, r: float, alpha: float = 0.1, truncation: float = 0.5):
    """The authors' NPRR empirical-Bernstein CS (``nprr_empbern_cs``), ``t = 1..n``.

    ``mu_hat_t +- (log(2 / alpha) + S_t (z_i - zeta_hat_i)^2 (-log(1 - lambda_i) - lambda_i)) /
    S_t (r lambda_i)``, clipped one-sidedly (quirk 2), centres :func:`empbern_centres` (quirk 3),
    bets :func:`predmix_eb_lambdas` at ``alpha / 2`` with prior variance 1/4, no running
    intersection (quirk 1).

    Parameters
    ----------
    z, r, alpha
        As :func:`hoeffding_cs`.
    truncation : float
        Largest bet, in ``(0, 1)``.

    Returns
    -------
    lower, upper : numpy.ndarray
        ``(n,)`` each, index ``t - 1``; equal to the authors' arrays.
    """
    z, r, alpha = _check_z(z), _check_r(r), _check_alpha(alpha)
    truncation = _check_real("truncation", truncation, "(0, 1)", _EB_TRUNCATION)
    return _empbern_bounds(z, r, alpha, predmix_eb_lambdas(z, alpha / 2.0, truncation))


def hoeffding_ci(z, r: float, alpha: float = 0.1, running_intersection: bool = True):
    """The authors' NPRR Hoeffding CI at ``n = len(z)`` (``nprr_hoeffding_ci``).

    The CS of :func:`hoeffding_cs` with the constant, untruncated bet ``lambda = sqrt(8 log(1 /
    (alpha / 2)) / n)``, read at ``t = n`` after the running intersection (default) or without it
    (then ``mu_hat_n +- sqrt(log(2 / alpha) / (2 n)) / r``, clipped).

    Parameters
    ----------
    z, r, alpha
        As :func:`hoeffding_cs`; ``n = len(z)``.
    running_intersection : bool
        Read the running intersection over ``t = 1..n`` (the code's default) or the bound at ``n``.

    Returns
    -------
    lower, upper : float
    """
    z, r, alpha = _check_z(z), _check_r(r), _check_alpha(alpha)
    n = z.shape[0]
    lower, upper = _hoeffding_bounds(z, r, alpha, hoeffding_lambdas(n, alpha, math.inf, fixed_n=n))
    if running_intersection:
        return float(lower.max()), float(upper.min())
    return float(lower[-1]), float(upper[-1])


def empbern_ci(z, r: float, alpha: float = 0.1, truncation: float = 0.5, prior_mean: float = 0.5,
               prior_variance: float = 0.125, lambda_alpha: float = EB_CI_LAMBDA_ALPHA):
    """The authors' NPRR empirical-Bernstein CI at ``n = len(z)`` (``nprr_empbern_ci``).

    The CS of :func:`empbern_cs` with the fixed-``n`` bets :func:`predmix_eb_lambdas` ``(z,
    lambda_alpha, truncation, fixed_n=n, prior_mean, prior_variance)``, read at ``t = n`` after the
    running intersection (always). The centres keep 1/2 whatever ``prior_mean`` (as the code does).

    Parameters
    ----------
    z, r, alpha, truncation
        As :func:`empbern_cs`; ``n = len(z)``.
    prior_mean, prior_variance : float
        The bets' fake observation (defaults: the code's, 1/2 and 1/8).
    lambda_alpha : float
        The level the bets are tuned for: confseq's default 0.05 whatever ``alpha``, as the code
        calls it (quirk 4); ``alpha / 2`` tunes them for ``alpha``.

    Returns
    -------
    lower, upper : float
    """
    z, r, alpha = _check_z(z), _check_r(r), _check_alpha(alpha)
    truncation = _check_real("truncation", truncation, "(0, 1)", _EB_TRUNCATION)
    lambdas = predmix_eb_lambdas(z, lambda_alpha, truncation, z.shape[0], prior_mean, prior_variance)
    lower, upper = _empbern_bounds(z, r, alpha, lambdas)
    return float(lower.max()), float(upper.min())


# --- the streaming form -----------------------------------------------------------------------------


def nprr_params(method: str, r: float, alpha: float = 0.1, n: int | None = None, *,
                truncation: float | None = None, prior_mean: float = 0.5, prior_variance: float | None = None,
                lambda_alpha: float | None = None) -> np.ndarray:
    """The constants of one method, for :func:`nprr_update`; defaults are the authors'.

    Parameters
    ----------
    method : {'hoeffding', 'empbern'}
    r, alpha
        As :func:`hoeffding_cs`.
    n : int, optional
        ``None``: the CS (bets tuned for every ``t``). An integer: the CI at ``t = n`` (bets tuned
        for ``n``, the CI's truncation, prior variance and bet level).
    truncation : float, optional
        Largest bet. Default 1 for the Hoeffding CS, none for its CI, 0.5 for both EB forms.
    prior_mean : float
        The EB bets' prior mean (the centres keep 1/2).
    prior_variance : float, optional
        The EB bets' prior variance: 1/4 for the CS, 1/8 for the CI.
    lambda_alpha : float, optional
        The level the EB bets are tuned for: ``alpha / 2`` for the CS, 0.05 for the CI (quirk 4).

    Returns
    -------
    numpy.ndarray
        ``(PARAMS_SIZE,)`` float64.
    """
    if method not in METHODS:
        raise ConfigError(f"method = {method!r} is not one of {', '.join(METHODS)}")
    r, alpha = _check_r(r), _check_alpha(alpha)
    fixed_n = 0.0 if n is None else float(_check_n(n))
    params = np.zeros(PARAMS_SIZE)
    params[R], params[SHIFT], params[LOG_2_ALPHA], params[FIXED_N] = r, (1.0 - r) / 2.0, math.log(2.0 / alpha), fixed_n
    if method == "hoeffding":
        default = 1.0 if n is None else math.inf
        params[KIND] = HOEFFDING
        params[TRUNC] = _check_real("truncation", default if truncation is None else truncation, "(0, inf]",
                                    "the Hoeffding bets' truncation")
        params[BET_NUM] = 8.0 * math.log(1.0 / (alpha / 2.0))
        return params
    params[KIND] = EMPBERN
    params[TRUNC] = _check_real("truncation", 0.5 if truncation is None else truncation, "(0, 1)", _EB_TRUNCATION)
    if lambda_alpha is None:
        lambda_alpha = alpha / 2.0 if n is None else EB_CI_LAMBDA_ALPHA
    lambda_alpha = _check_real("lambda_alpha", lambda_alpha, "(0, 1)", "the level the bets are tuned for")
    params[BET_NUM] = 2.0 * math.log(1.0 / lambda_alpha)
    params[PRIOR_MEAN] = _check_real("prior_mean", prior_mean, "[0, 1]", "the bets' prior mean")
    if prior_variance is None:
        prior_variance = 0.25 if n is None else 0.125
    params[PRIOR_VAR] = _check_real("prior_variance", prior_variance, "(0, 0.25]", "the bets' prior variance")
    return params


def nprr_state() -> np.ndarray:
    """A fresh state (``t = 0``; the running intersection ``[0, 1]``)."""
    state = np.zeros(STATE_SIZE)
    state[RUN_UP] = 1.0
    return state


@dual
def _clipped_bounds(state, params):
    """``(max(0, mu_hat_t - B_t), min(1, mu_hat_t + B_t))`` at the state's ``t >= 1``."""
    mu_hat = state[SUM_LZ] / state[SUM_RL]
    radius = (params[LOG_2_ALPHA] + state[SUM_PSI]) / state[SUM_RL]
    return max(0.0, mu_hat - radius), min(1.0, mu_hat + radius)


@jit(borrow=True)
def nprr_update(state, params, z):
    """Add released value ``z`` (in ``[0, 1]``, unchecked) to ``state``, in place; O(1), no allocation.

    Step ``t``: the bet ``lambda_t`` from ``z_1 .. z_{t-1}`` (Hoeffding: ``min(trunc, sqrt(BET_NUM /
    rate_t))``; EB: ``min(trunc, sqrt(BET_NUM / (rate_t sigma2_{t-1})))``; ``rate_t = t log(t + 1)``
    or the fixed ``n``), the CGF term ``psi_t`` (``lambda_t^2 / 8``, or ``(z - zeta_hat_t)^2
    (-log(1 - lambda_t) - lambda_t)`` with ``zeta_hat_t = (1/2 + S_{t-1} z_i) / (t + 1)``), then the
    sums and the running intersection. Costs two logarithms and a square root at most; compiled
    without numba's runtime (``borrow``): it only reads and writes its arrays, allocating nothing.
    """
    t = state[T] + 1.0
    if params[FIXED_N] > 0.0:
        rate = params[FIXED_N]
    else:
        rate = t * math.log(t + 1.0)
    if params[KIND] == HOEFFDING:
        lam = min(params[TRUNC], math.sqrt(params[BET_NUM] / rate))
        psi = lam * lam / 8.0
    else:  # empirical Bernstein
        sigma2_prev = (params[PRIOR_VAR] + state[SUM_SQ]) / t  # sigma2_{t-1}, one fake observation
        lam = min(params[TRUNC], math.sqrt(params[BET_NUM] / (rate * sigma2_prev)))
        d = z - (0.5 + state[SUM_Z]) / (t + 1.0)
        psi = (d * d) * (-math.log(1.0 - lam) - lam)
        state[SUM_Z] += z
        resid = z - min((params[PRIOR_MEAN] + state[SUM_Z]) / (t + 1.0), 1.0)
        state[SUM_SQ] += resid * resid
    state[T] = t
    state[SUM_RL] += params[R] * lam
    state[SUM_LZ] += lam * (z - params[SHIFT])
    state[SUM_PSI] += psi
    lower, upper = _clipped_bounds(state, params)
    state[RUN_LOW] = max(state[RUN_LOW], lower)
    state[RUN_UP] = min(state[RUN_UP], upper)


@jit(borrow=True)
def nprr_bounds(state, params):
    """The authors' CS ``(L_t, U_t)`` at the state's ``t`` (no running intersection); ``(0, 1)`` at ``t = 0``."""
    if state[T] == 0.0:
        return 0.0, 1.0
    return _clipped_bounds(state, params)


@jit(borrow=True)
def nprr_running_bounds(state):
    """The running intersection ``(max_{s<=t} L_s, min_{s<=t} U_s)``; at ``t = n`` with CI params, the authors' CI."""
    return state[RUN_LOW], state[RUN_UP]


@jit
def nprr_trace(z, state, params, out):
    """Stream ``z`` through :func:`nprr_update`, writing row ``t - 1`` of ``out`` ``(len(z), 4)``.

    Columns: :func:`nprr_bounds` then :func:`nprr_running_bounds`. A driver for tests and offline
    use (``out`` has ``n`` rows); a kernel keeps the state only.
    """
    for i in range(z.shape[0]):
        nprr_update(state, params, z[i])
        out[i, 0], out[i, 1] = nprr_bounds(state, params)
        out[i, 2], out[i, 3] = nprr_running_bounds(state)


# --- as methods of a coverage run (ldpsim.inference.methods.nprr names them: NPRR_H, NPRR_EB, NPRR_H_CI, NPRR_EB_CI)


def release_params(specs, r: float, level: float, n: int) -> np.ndarray:
    """``(len(specs), PARAMS_SIZE)`` params of the ``(method, ci)`` pairs ``specs`` at ``alpha = 1 - level``.

    ``method`` is one of :data:`METHODS`; ``ci``: a fixed-``n`` interval (bets tuned for ``n``) or a CS.
    """
    out = np.zeros((len(specs), PARAMS_SIZE))
    for j, (method, ci) in enumerate(specs):
        out[j] = nprr_params(method, r, 1.0 - level, n if ci else None)
    return out


def release_reference(method: str, ci: bool, z, r: float, level: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The running bounds of ``(method, ci)`` over ``t = 1..len(z)``, from the plain-numpy reference (the twin's).

    ``n`` is the run's length (the CIs' bets are tuned for it; ``len(z) <= n``). At ``t = n`` the
    CIs equal :func:`hoeffding_ci` and :func:`empbern_ci`.
    """
    alpha = 1.0 - level
    if not ci:  # the authors' CS arrays
        return running_intersection(*{"hoeffding": hoeffding_cs, "empbern": empbern_cs}[method](z, r, alpha))
    z = _check_z(z)  # the CIs' bets, as hoeffding_ci and empbern_ci tune them, over every t <= len(z)
    if method == "hoeffding":
        lower, upper = _hoeffding_bounds(z, r, alpha, hoeffding_lambdas(z.shape[0], alpha, math.inf, fixed_n=n))
    else:
        lambdas = predmix_eb_lambdas(z, EB_CI_LAMBDA_ALPHA, 0.5, n, 0.5, 0.125)
        lower, upper = _empbern_bounds(z, r, alpha, lambdas)
    return running_intersection(lower, upper)


@dual
def released_value(t, grid, keep):
    """``z`` in ``{0, 1/G, .., 1}``: NPRR's release of ``X``, from the mean model's scaled release ``t``.

    The mean model releases ``1 - 2X`` in ``[-1, 1]``: NPRR draws ``y = k / G`` for ``x = 1 - X`` and
    writes ``t = 2 (y - (1 - r) / 2) / r - 1`` (:func:`ldpsim.privacy.mechanisms.nprr._release_nprr`). Inverting
    that in floating point is off by a few units in the last place; rounding ``G y`` to its integer
    ``k`` undoes it exactly (``G <= 1e6``), and ``(G - k) / G`` is the release of ``X`` itself.
    """
    k = math.floor(grid * (0.5 * keep * (t + 1.0) + 0.5 * (1.0 - keep)) + 0.5)
    return (grid - k) / grid
