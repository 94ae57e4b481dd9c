"""Local privacy mechanisms applied to one observation's gradient.

Randomized response (a privatized bit, used by the quantile model), the
Laplace mechanism (epsilon-LDP, l1 sensitivity) and the Gaussian mechanism
((epsilon, delta)-LDP, l2 sensitivity, analytic calibration). Each mechanism
has a Python-side description (parameters, the variance it adds, the
guarantee in words) and a jitted draw used inside the kernels.
:func:`sensitivity` turns per-coordinate bounds on a gradient into the l1 or
l2 sensitivity the Laplace and Gaussian mechanisms are calibrated to.
"""

from __future__ import annotations

import functools
import inspect
import math
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np

from ..engine import usercode
from ..engine.errors import ConfigError
from ..engine.rng import exponential, normal, uniform
from ..engine.dispatch import by_record
from ..engine.jit import dual, jit
from ..engine.lanes import lane_array
from .ldp import LDP_MECHANISMS, BoundedMechanism, make_ldp_mechanism, release

_SQRT2 = math.sqrt(2.0)

#: Names of the mechanisms as configs spell them.
MECHANISMS = ("rr", "laplace", "gaussian") + LDP_MECHANISMS


def _fmt(x: float) -> str:
    """A number as the guarantee strings print it: ``1``, ``0.5``, ``1e-05``, ``inf``."""
    return f"{x:g}"


def sensitivity(bounds, norm) -> float:
    """Sensitivity of a gradient known to lie in a box, in the l1 or l2 norm.

    With ``|g_j(x)| <= bounds[j]`` for every ``x``, the largest difference
    ``sup_{x, x'} ||g(x) - g(x')||`` (Dette & Graw 2024, Example 2.1) is reached at
    opposite corners of the box: ``2 sum_j bounds[j]`` in l1 and
    ``2 sqrt(sum_j bounds[j]^2)`` in l2. This is an upper bound for a
    gradient that does not fill the box, hence still a valid calibration.

    Parameters
    ----------
    bounds : array_like
        Per-coordinate bounds ``sup |g_j|``, nonnegative and finite, 1-D (a
        scalar counts as one coordinate).
    norm : {"l1", "l2"}
        The norm: "l1" for the Laplace mechanism, "l2" for the Gaussian.

    Returns
    -------
    float
        The sensitivity.

    Raises
    ------
    ValueError
        On a bad ``norm``, or bounds that are empty, more than 1-D, negative
        or not finite.
    """
    if norm not in ("l1", "l2"):
        raise ValueError(f"norm must be 'l1' or 'l2', got {norm!r}")
    b = np.asarray(bounds, dtype=float)
    if b.ndim > 1 or b.size == 0:
        raise ValueError(f"bounds must be a non-empty 1-D array, got shape {b.shape}")
    bad = ~(np.isfinite(b) & (b >= 0))
    if bad.any():
        raise ValueError(f"bounds must be finite and nonnegative, got {b.ravel()[bad.ravel()][0]}")
    if norm == "l1":
        return float(2.0 * b.sum())
    return float(2.0 * math.sqrt(float(np.dot(b.ravel(), b.ravel()))))


def _check_epsilon(epsilon: float) -> None:
    if not epsilon > 0:  # also catches nan
        raise ValueError(f"epsilon must be > 0 (inf for no privacy), got {epsilon}")


def _check_sensitivity(value: float) -> None:
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"sensitivity must be finite and > 0, got {value}")


@dataclass(frozen=True)
class RandomizedResponse:
    """Randomized response on a bit, debiased (000, Example 2.2 and Section 4).

    The true bit is reported with probability ``p = e^eps / (1 + e^eps)`` and
    flipped otherwise; ``(report - (1 - p)) / (2p - 1)`` is then unbiased for
    the bit. ``epsilon = inf`` reports the bit unchanged (non-private).

    Parameters
    ----------
    epsilon : float
        Privacy budget, ``> 0``; ``math.inf`` for no privacy.
    """

    epsilon: float

    name: ClassVar[str] = "rr"

    @property
    def guarantee(self) -> str:
        """The privacy guarantee in one line, e.g. ``epsilon = 1 LDP (randomized response)``."""
        if math.isinf(self.epsilon):
            return "no privacy (epsilon = inf, randomized response off)"
        return f"epsilon = {_fmt(self.epsilon)} LDP (randomized response)"

    @property
    def flip_prob(self) -> float:
        """``1 - p = 1 / (1 + e^eps)``, the probability of flipping the bit."""
        if math.isinf(self.epsilon):
            return 0.0
        return 1.0 / (1.0 + math.exp(self.epsilon))

    @property
    def scale(self) -> float:
        """``1 / (2p - 1) = (e^eps + 1) / (e^eps - 1)``."""
        if math.isinf(self.epsilon):
            return 1.0
        return 1.0 + 2.0 / math.expm1(self.epsilon)

    @property
    def shift(self) -> float:
        """``(1 - p) / (2p - 1) = 1 / (e^eps - 1)``."""
        if math.isinf(self.epsilon):
            return 0.0
        return 1.0 / math.expm1(self.epsilon)

    @property
    def variance(self) -> float:
        """Variance the mechanism adds to the debiased bit, whatever the bit.

        ``p (1 - p) / (2p - 1)^2 = e^eps / (e^eps - 1)^2``: 0.9207 at eps = 1.
        The paper prints ``e^eps / (e^eps - 1)``, which its own Table 1 refutes
        (docs/corrections.md, item 1).
        """
        if math.isinf(self.epsilon):
            return 0.0
        return math.exp(self.epsilon) / math.expm1(self.epsilon) ** 2


@jit(inline=True)
def randomized_response(bit, gen, flip_prob):
    """Report the boolean ``bit``, flipped with probability ``flip_prob``.

    Always draws one uniform. A boolean, not 0.0 / 1.0: the caller selects
    between two precomputed values rather than computing with the report,
    which keeps the kernel's dependency chain from theta to theta short.
    Models use a separate, mechanism-free gradient for epsilon = inf rather
    than a zero ``flip_prob``: a test of ``flip_prob > 0`` here made the
    whole kernel 60% slower.
    """
    return bit != (uniform(gen) < flip_prob)


@dataclass(frozen=True)
class Laplace:
    """The Laplace mechanism, epsilon-LDP (000, Example 2.1).

    Adds i.i.d. ``Lap(0, b)`` noise, ``b = sensitivity / epsilon``, to every
    coordinate of a gradient whose l1 sensitivity is ``sensitivity``
    (:func:`sensitivity` with ``norm="l1"``). 000, Remark 2.1 prints the
    scale as ``Delta(g) eps``; the mechanism needs ``Delta(g) / eps``
    (docs/corrections.md, item 7).

    Parameters
    ----------
    epsilon : float
        Privacy budget, ``> 0``; ``math.inf`` for no privacy (no noise).
    sensitivity : float
        l1 sensitivity of the gradient, finite and ``> 0``.
    """

    epsilon: float
    sensitivity: float

    name: ClassVar[str] = "laplace"

    def __post_init__(self):
        _check_epsilon(self.epsilon)
        _check_sensitivity(self.sensitivity)

    @property
    def scale(self) -> float:
        """``b = sensitivity / epsilon`` (0.0 for epsilon = inf)."""
        if math.isinf(self.epsilon):
            return 0.0
        return self.sensitivity / self.epsilon

    @property
    def variance(self) -> float:
        """Variance added to each coordinate, ``2 b^2``."""
        return 2.0 * self.scale**2

    @property
    def guarantee(self) -> str:
        """The privacy guarantee in one line, e.g. ``epsilon = 1 LDP (Laplace, l1 sensitivity 4)``."""
        if math.isinf(self.epsilon):
            return "no privacy (epsilon = inf, Laplace noise off)"
        return f"epsilon = {_fmt(self.epsilon)} LDP (Laplace, l1 sensitivity {_fmt(self.sensitivity)})"


def _log_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    """``log`` of :func:`gaussian_delta` for finite ``epsilon`` and ``0 < sigma < inf``.

    With ``u = D / (2 sigma)``, ``v = eps sigma / D`` the delta of Balle & Wang
    is ``Phi(-x1) - e^eps Phi(-x2)``, ``x1 = v - u``, ``x2 = v + u``. Naively, at
    eps = 50 the second term is 5e21 times 1e-28, and for small delta both
    terms are far below 1 and cancel. Writing ``Phi(-x) = erfcx(x / sqrt 2)
    e^(-x^2/2) / 2`` and using ``(x2^2 - x1^2) / 2 = 2uv = eps`` exactly,

        delta = Phi(-x1) (1 - erfcx(x2 / sqrt 2) / erfcx(x1 / sqrt 2)),

    with no exponential left to overflow and no large logarithms to cancel
    (checked against 60-digit mpmath for delta from 0.4 down to 1e-100:
    relative error below 1e-12 for eps in [0.1, 200], 2e-10 at eps = 1e-3,
    where the difference of two ``log_ndtr`` loses 5e-9 and 2e-7). For
    ``x1 < 0`` (delta > 1/2) ``erfcx`` would overflow, and the difference of
    ``log_ndtr`` terms, both small, is accurate instead.
    """
    from scipy import special  # lazy: import ldpsim <= 1 s (issue 41)

    u = sensitivity / (2.0 * sigma)
    v = epsilon * sigma / sensitivity
    x1, x2 = v - u, v + u
    if x1 >= 0.0:
        log_ratio = math.log(special.erfcx(x2 / _SQRT2) / special.erfcx(x1 / _SQRT2))
    else:
        log_ratio = epsilon + special.log_ndtr(-x2) - special.log_ndtr(-x1)
    if not log_ratio < 0.0:  # delta rounds to 0 (only for absurdly large sigma)
        return -math.inf
    return float(special.log_ndtr(-x1) + math.log(-math.expm1(log_ratio)))


def gaussian_delta(sigma, epsilon, sensitivity) -> float:
    """The smallest delta for which ``N(0, sigma^2)`` noise is (epsilon, delta)-DP.

    Balle & Wang (2018, ICML), Theorem 8: with ``D`` the l2 sensitivity,

        delta = Phi(D/(2 sigma) - eps sigma/D) - e^eps Phi(-D/(2 sigma) - eps sigma/D).

    Parameters
    ----------
    sigma : float
        Noise standard deviation, ``>= 0``.
    epsilon : float
        ``> 0``; ``math.inf`` gives 0.
    sensitivity : float
        l2 sensitivity, finite and ``> 0``.

    Returns
    -------
    float
        delta in [0, 1]: 1 for sigma = 0, 0 for sigma = inf or epsilon = inf.
    """
    sigma, epsilon, sensitivity = float(sigma), float(epsilon), float(sensitivity)
    _check_epsilon(epsilon)
    _check_sensitivity(sensitivity)
    if not sigma >= 0:
        raise ValueError(f"sigma must be >= 0, got {sigma}")
    if math.isinf(epsilon) or math.isinf(sigma):
        return 0.0
    if sigma == 0.0:
        return 1.0  # the gradient itself is released
    return math.exp(_log_delta(sigma, epsilon, sensitivity))


def classical_gaussian_sigma(epsilon, delta, sensitivity) -> float:
    """The classical calibration ``D sqrt(2 ln(1.25 / delta)) / epsilon``.

    Dwork & Roth (2014), Theorem A.1, which proves it only for epsilon < 1;
    kept for comparison with :attr:`Gaussian.sigma`, which is smaller.

    Parameters
    ----------
    epsilon : float
        ``> 0``; ``math.inf`` gives 0.
    delta : float
        In (0, 1).
    sensitivity : float
        l2 sensitivity ``D``, finite and ``> 0``.

    Returns
    -------
    float
        The noise standard deviation.
    """
    _check_epsilon(epsilon)
    _check_sensitivity(sensitivity)
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    if math.isinf(epsilon):
        return 0.0
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


@dataclass(frozen=True)
class Gaussian:
    """The Gaussian mechanism, (epsilon, delta)-LDP, analytically calibrated.

    Adds i.i.d. ``N(0, sigma^2)`` noise to every coordinate of a gradient
    whose l2 sensitivity is ``sensitivity`` (:func:`sensitivity` with
    ``norm="l2"``). ``sigma`` is the smallest that gives (epsilon, delta)
    exactly (Balle & Wang 2018, Theorem 8), valid for every epsilon > 0,
    unlike the classical ``sqrt(2 ln(1.25/delta))`` calibration
    (:func:`classical_gaussian_sigma`), which also adds more noise.

    Parameters
    ----------
    epsilon : float
        Privacy budget, ``> 0``; ``math.inf`` for no privacy (no noise).
    delta : float
        In (0, 1).
    sensitivity : float
        l2 sensitivity of the gradient, finite and ``> 0``.
    """

    epsilon: float
    delta: float
    sensitivity: float

    name: ClassVar[str] = "gaussian"

    def __post_init__(self):
        _check_epsilon(self.epsilon)
        _check_sensitivity(self.sensitivity)
        if not 0.0 < self.delta < 1.0:
            raise ValueError(f"delta must be in (0, 1), got {self.delta}")

    @functools.cached_property  # a root search: once per mechanism, not per access
    def sigma(self) -> float:
        """Smallest sigma with ``gaussian_delta(sigma, epsilon, sensitivity) <= delta``.

        0.0 for epsilon = inf. Solved by Brent's method in ``log sigma`` on
        ``log delta`` (delta decreases in sigma, from 1 at 0 to 0 at inf).
        """
        from scipy import optimize

        eps, delta, sens = float(self.epsilon), float(self.delta), float(self.sensitivity)
        if math.isinf(eps):
            return 0.0
        log_target = math.log(delta)

        def excess(log_sigma):
            return _log_delta(math.exp(log_sigma), eps, sens) - log_target

        # bracket the root around sigma = D / eps by doubling outwards
        lo = hi = math.log(sens / eps)
        while excess(lo) <= 0:
            lo -= math.log(2.0)
        while excess(hi) > 0:
            hi += math.log(2.0)
        root = optimize.brentq(excess, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=200)
        sigma = math.exp(root)
        # the root is known to a few ulps: step to the safe side, so that
        # gaussian_delta (this same exp(log delta)) never exceeds delta
        for _ in range(64):
            if math.exp(_log_delta(sigma, eps, sens)) <= delta:
                break
            sigma = math.nextafter(sigma, math.inf)
        return sigma

    @property
    def variance(self) -> float:
        """Variance added to each coordinate, ``sigma^2``."""
        return self.sigma**2

    @property
    def guarantee(self) -> str:
        """The guarantee in one line, e.g. ``(epsilon = 1, delta = 1e-05) LDP (Gaussian, l2 sensitivity 2)``."""
        if math.isinf(self.epsilon):
            return "no privacy (epsilon = inf, Gaussian noise off)"
        return (
            f"(epsilon = {_fmt(self.epsilon)}, delta = {_fmt(self.delta)}) LDP "
            f"(Gaussian, l2 sensitivity {_fmt(self.sensitivity)})"
        )


@dual(inline=True)  # the SAGD twins call it in plain Python
def laplace(gen, scale):
    """One ``Lap(0, scale)`` draw.

    ``E1 - E2`` with ``E1, E2`` i.i.d. standard exponential is exactly
    standard Laplace; numpy's ziggurat exponentials make the two draws about
    twice as fast as ``gen.laplace`` (13 vs 26 ns a draw in a jitted loop),
    which takes a logarithm every time.
    """
    return scale * (exponential(gen) - exponential(gen))


@jit(inline=True)
def gaussian(gen, sigma):
    """One ``N(0, sigma^2)`` draw."""
    return sigma * normal(gen)


@jit(inline=True)
def gaussian_or_zero(gen, sigma):
    """One ``N(0, sigma^2)`` draw, or ``0.0`` without a draw when ``sigma = 0`` (a non-private run).

    The noise of one DP-SGD (or DP-GD) step on one coordinate; the privacy
    audit (:mod:`.audit`) draws through this function, so a kernel that
    calls it is audited as it runs.
    """
    return sigma * normal(gen) if sigma > 0.0 else 0.0


# --- kernel side: noise records ------------------------------------------------
# Models hold one of these records; numba compiles one kernel per record type,
# so epsilon = inf (NoNoise) costs no branch and no draw.


class NoNoise(NamedTuple):
    """No privacy (epsilon = inf)."""

    zero: float = 0.0  # numba wants a field


class LaplaceNoise(NamedTuple):
    """I.i.d. ``Lap(0, scale)`` per coordinate."""

    scale: float


class GaussianNoise(NamedTuple):
    """I.i.d. ``N(0, sigma^2)`` per coordinate."""

    sigma: float


@by_record
def add_noise(noise, gen, out):
    """Add the mechanism's i.i.d. noise to every coordinate of ``out``."""


@by_record
def draw_noise(noise, gen):
    """One draw of the mechanism's noise (scalar models)."""


@add_noise.register(NoNoise)
def _add_no_noise(noise, gen, out):
    pass


@add_noise.register(LaplaceNoise)
def _add_laplace(noise, gen, out):
    for j in range(out.shape[0]):
        out[j] += laplace(gen, noise.scale)


@add_noise.register(GaussianNoise)
def _add_gaussian(noise, gen, out):
    for j in range(out.shape[0]):
        out[j] += gaussian(gen, noise.sigma)


@draw_noise.register(NoNoise)
def _draw_no_noise(noise, gen):
    return 0.0


@draw_noise.register(LaplaceNoise)
def _draw_laplace(noise, gen):
    return laplace(gen, noise.scale)


@draw_noise.register(GaussianNoise)
def _draw_gaussian(noise, gen):
    return gaussian(gen, noise.sigma)


def _add_drawn(noise, gen, out):
    for j in range(out.shape[0]):
        out[j] += draw_noise(noise, gen)


# --- the models' calls: a bounded gradient's release, whatever the mechanism ------------------
# The models with a bounded gradient (mean, linear, logistic, quantile_regression) call these two;
# an additive record adds its noise to the gradient (the arithmetic the models always did), a
# BoundedNoise record scales the gradient into [-1, 1]^d and releases it (ldp.release).


class BoundedNoise(NamedTuple):
    """A mechanism of :mod:`.ldp` on a gradient in the box ``|g_j| <= bounds[j]``; ``t`` is scratch (per lane)."""

    mechanism: tuple
    bounds: np.ndarray
    t: np.ndarray


@by_record
def add_released(noise, gen, w, x, out):
    """Add the release of the gradient ``w x`` (a residual times the covariates) to ``out``."""


@by_record
def released_scalar(noise, gen, value, center, half):
    """The release of a scalar gradient ``value`` known to lie in ``[center - half, center + half]``."""


@by_record
def add_released_joint(noise, gen, w, x, last, out):
    """Add the release of the gradient ``(w x, last)`` (``len(x) + 1`` coordinates: 004's Huber ``(b, s)``) to ``out``.

    Only this observation's gradient is released: ``out`` may already hold
    the other gradients of a mini-batch.
    """


def _add_released_additive(noise, gen, w, x, out):
    for j in range(x.shape[0]):
        out[j] += w * x[j]
    add_noise(noise, gen, out)


def _add_released_joint_additive(noise, gen, w, x, last, out):
    out[x.shape[0]] += last  # (its own coordinate: the same sums as adding it after w x)
    add_released(noise, gen, w, x, out)


def _released_scalar_additive(noise, gen, value, center, half):
    return value + draw_noise(noise, gen)


def register_additive_vector(record_cls):
    """Register an additive record (``add_noise``) for the vector gradients' releases: the gradient plus its noise."""
    add_released.register(record_cls)(_add_released_additive)
    add_released_joint.register(record_cls)(_add_released_joint_additive)


def _register_additive(record_cls):
    register_additive_vector(record_cls)
    released_scalar.register(record_cls)(_released_scalar_additive)


for _cls in (NoNoise, LaplaceNoise, GaussianNoise):
    _register_additive(_cls)


@add_released.register(BoundedNoise)
def _add_released_bounded(noise, gen, w, x, out):
    t, bounds = noise.t, noise.bounds
    for j in range(x.shape[0]):
        t[j] = w * x[j] / bounds[j]
    release(noise.mechanism, gen, t)
    for j in range(x.shape[0]):
        out[j] += bounds[j] * t[j]


@add_released_joint.register(BoundedNoise)
def _add_released_joint_bounded(noise, gen, w, x, last, out):
    # t is the release's own scratch: a mini-batch's other gradients in out stay out of it
    t, bounds = noise.t, noise.bounds
    n = x.shape[0]
    for j in range(n):
        t[j] = w * x[j] / bounds[j]
    t[n] = last / bounds[n]
    release(noise.mechanism, gen, t)
    for j in range(n + 1):
        out[j] += bounds[j] * t[j]


@released_scalar.register(BoundedNoise)
def _released_scalar_bounded(noise, gen, value, center, half):
    t = noise.t
    t[0] = (value - center) / half
    release(noise.mechanism, gen, t)
    return center + half * t[0]


def register_noise(record_cls):
    """Register a user's additive mechanism: ``func(noise, gen)`` draws the noise of one coordinate.

    The models that take an additive mechanism add one draw to each
    coordinate of the gradient (:func:`add_noise`), or to the scalar gradient
    (:func:`draw_noise`), in the order of the coordinates; the audit
    (``ldpsim audit``) draws through the same functions.
    """

    def decorate(func):
        draw_noise.register(record_cls)(func)
        add_noise.register(record_cls)(_add_drawn)
        _register_additive(record_cls)
        return func

    return decorate


class Mechanism:
    """A user's local mechanism for a bounded gradient (:mod:`ldpsim.extend`): additive noise, or a release.

    The models with a bounded gradient (``mean``, ``linear``, ``logistic``,
    ``quantile_regression``) take ``mechanism: path/to/file.py:Class``. They
    build it as ``Class(epsilon=..., bounds=..., delta=...)``: ``bounds[j]``
    bounds coordinate ``j`` of the (clipped) gradient, so
    ``sensitivity(bounds, "l1")`` or ``"l2"`` is what a calibration needs. The
    subclass gives

    * ``kernel_params()`` (or ``kernel_params(lanes)``, for scratch arrays of
      :func:`lane_array`): the NamedTuple record its kernel function reads,
      registered either with :func:`register_noise` (additive noise: one
      coordinate's noise, added to each coordinate) or with
      :func:`~.ldp.register_release` (a release: the gradient scaled into
      ``[-1, 1]^d`` is replaced in place by an unbiased release of it, as
      Duchi's mechanism or PM do);
    * ``variance``: the variance additive noise adds to each coordinate (the
      oracle's ``S``); ``None`` (the default) makes ldpsim estimate ``S`` by
      Monte Carlo, as it always does for a release;
    * ``epsilon`` and ``delta``: the guarantee it declares. ldpsim cannot
      prove it: every guarantee printed says "declared, not verified", and
      ``ldpsim audit`` tests it.
    """

    name: ClassVar[str] = ""
    #: Per-coordinate variance of the noise (``None``: not known, estimated with the model's truth).
    variance = None

    def __init__(self, epsilon, bounds, delta=None):
        self.epsilon = float(epsilon)
        self.bounds = np.asarray(bounds, dtype=float)
        self.delta = None if delta is None else float(delta)

    def kernel_params(self):
        """The NamedTuple record of the noise or release (:func:`register_noise` or ``register_release``)."""
        raise NotImplementedError(f"mechanism {type(self).__name__} does not define kernel_params()")

    @property
    def releases(self) -> bool:
        """Whether the mechanism releases the scaled gradient (``register_release``) rather than adding noise."""
        return type(user_record(self)) in release.registry

    @property
    def guarantee(self) -> str:
        """The declared guarantee, in one line, marked as declared."""
        name = self.name or type(self).__name__
        delta = getattr(self, "delta", None)
        budget = f"epsilon = {_fmt(self.epsilon)}" if not delta else f"(epsilon = {_fmt(self.epsilon)}, " \
                                                                       f"delta = {_fmt(delta)})"
        return f"{budget} LDP ({name}; declared, not verified)"


def user_record(mech, lanes: int = 1):
    """A user's mechanism's record: ``kernel_params(lanes)`` if it takes ``lanes``, else ``kernel_params()``."""
    if "lanes" in inspect.signature(mech.kernel_params).parameters:
        return mech.kernel_params(lanes=lanes)
    return mech.kernel_params()


def build_mechanism(spec: str, epsilon: float, bounds, delta: float | None = None) -> Mechanism:
    """A user's :class:`Mechanism` from its canonical value, built and checked (one-line errors)."""
    cls = usercode.resolve(spec, Mechanism, "mechanism")
    shown = usercode.shown(spec)
    params = inspect.signature(cls).parameters
    kwargs = {"epsilon": float(epsilon), "bounds": np.asarray(bounds, dtype=float)}
    if "delta" in params:
        kwargs["delta"] = delta
    try:
        mech = cls(**kwargs)
    except Exception as exc:  # noqa: BLE001  (the user's code)
        raise ConfigError(f"mechanism = {shown!r}: {cls.__name__}({', '.join(kwargs)}) failed: "
                          f"{usercode.describe_exception(exc)}") from None
    try:
        record = user_record(mech)
    except Exception as exc:  # noqa: BLE001
        raise ConfigError(f"mechanism = {shown!r}: kernel_params() failed: {usercode.describe_exception(exc)}") from None
    if not (isinstance(record, tuple) and hasattr(type(record), "_fields")):
        raise ConfigError(f"mechanism = {shown!r}: kernel_params() returned a {type(record).__name__}, not a "
                          "NamedTuple record")
    if type(record) in release.registry:
        check_release_draws(record, mech.bounds.size, shown)
    elif type(record) not in draw_noise.registry:
        raise ConfigError(f"mechanism = {shown!r}: neither a noise nor a release is registered for "
                          f"{type(record).__qualname__} records: decorate its draw with "
                          f"@register_noise({type(record).__qualname__}) (additive noise) or "
                          f"@register_release({type(record).__qualname__}) (a release of the scaled gradient)")
    else:
        check_noise_draws(record, shown)
    try:
        variance = getattr(mech, "variance", None)
    except Exception as exc:  # noqa: BLE001  (the user's property)
        raise ConfigError(f"mechanism = {shown!r}: its variance failed at epsilon = {mech.epsilon:g}: "
                          f"{usercode.describe_exception(exc)}") from None
    if variance is not None and not (isinstance(variance, (int, float, np.floating)) and math.isfinite(variance)
                                     and variance >= 0):
        raise ConfigError(f"mechanism = {shown!r}: variance = {variance!r} is not a finite number >= 0 (or None)")
    if not getattr(mech, "name", ""):
        mech.name = cls.__name__
    return mech


#: Noise draws of a user's mechanism made twice from one seed in plain Python: finite, and equal (reproducible).
REPEAT_DRAWS = 64


def check_noise_draws(record, shown: str) -> None:
    """Draw a user's noise twice from one seed in plain Python: refuse it non-finite or not reproducible.

    A noise that draws from ``np.random.*`` (or any source besides ``gen``)
    passes an audit and runs, but no run of it can be repeated; one that
    draws infinities makes every replication diverge and the audit read
    nothing (one line each, before any compilation).
    """
    try:
        first, again = usercode.draws_twice(lambda gen: draw_noise(record, gen), REPEAT_DRAWS)
    except Exception as exc:  # noqa: BLE001  (the user's code, run as plain Python)
        raise ConfigError(f"mechanism = {shown!r}: its noise failed in plain Python: "
                          f"{usercode.describe_exception(exc)}") from None
    try:
        first, again = np.asarray(first, dtype=float), np.asarray(again, dtype=float)
    except (TypeError, ValueError):
        raise ConfigError(f"mechanism = {shown!r}: its noise returned {type(first[0]).__name__}, not a float") from None
    if not np.isfinite(first).all():
        bad = first[~np.isfinite(first)][0]
        raise ConfigError(f"mechanism = {shown!r}: its noise drew {float(bad)!r} in plain Python ({int(np.sum(~np.isfinite(first)))} "
                          f"of {REPEAT_DRAWS} draws): a noise must be finite")
    if not np.array_equal(first, again):
        raise ConfigError(f"mechanism = {shown!r}: its noise is not a function of the generator it is given: two runs "
                          "from one seed drew different values (np.random.* or another source of randomness besides "
                          "gen?); draw only from gen, with ldpsim.extend's functions, or neither its audit nor a run "
                          "of it can be reproduced")


#: Scaled gradients at which a user's release is drawn twice: the two corners of the box and its centre.
RELEASE_PROBES = (-1.0, 0.0, 1.0)


def check_release_draws(record, dim: int, shown: str) -> None:
    """Release ``t = -1, 0, 1`` (every coordinate) twice from one seed in plain Python: finite and reproducible."""
    def draw(gen):
        out = []
        for value in RELEASE_PROBES:
            t = np.full(dim, value)
            release(record, gen, t)
            out.extend(t.tolist())
        return out

    try:
        first, again = usercode.draws_twice(draw, REPEAT_DRAWS // len(RELEASE_PROBES))
    except Exception as exc:  # noqa: BLE001  (the user's code, run as plain Python)
        raise ConfigError(f"mechanism = {shown!r}: its release failed in plain Python: "
                          f"{usercode.describe_exception(exc)}") from None
    first, again = np.asarray(first, dtype=float), np.asarray(again, dtype=float)
    if not np.isfinite(first).all():
        raise ConfigError(f"mechanism = {shown!r}: its release drew {float(first[~np.isfinite(first)][0])!r} in plain "
                          "Python: a release must be finite")
    if not np.array_equal(first, again):
        raise ConfigError(f"mechanism = {shown!r}: its release is not a function of the generator it is given: two "
                          "runs from one seed drew different values (np.random.* or another source of randomness "
                          "besides gen?); draw only from gen, with ldpsim.extend's functions")


def make_mechanism(name: str, epsilon: float, bounds, delta: float | None = None):
    """The additive-noise mechanism for a gradient with ``|g_j| <= bounds[j]``.

    Parameters
    ----------
    name : {'laplace', 'gaussian'}
        Laplace is calibrated to the l1 sensitivity, Gaussian to the l2
        sensitivity (analytic calibration), both computed from ``bounds``.
    epsilon : float
        Privacy budget; ``inf`` gives ``None`` (no mechanism).
    bounds : array_like
        Per-coordinate bound of the (clipped) gradient.
    delta : float, optional
        Required for ``'gaussian'``.

    Returns
    -------
    Laplace, Gaussian or None
    """
    if math.isinf(epsilon):
        return None
    if name == "laplace":
        return Laplace(epsilon, sensitivity(bounds, "l1"))
    if name == "gaussian":
        return Gaussian(epsilon, delta, sensitivity(bounds, "l2"))
    if name in LDP_MECHANISMS:
        return make_ldp_mechanism(name, epsilon, bounds)
    if usercode.looks_like_spec(name):  # a user's mechanism, path/to/file.py:Class
        return build_mechanism(name, epsilon, bounds, delta)
    raise ValueError(f"mechanism = {name!r} is not a mechanism of a bounded gradient; allowed: laplace, gaussian, "
                     f"{', '.join(LDP_MECHANISMS)}")


def noise_record(mechanism, lanes: int = 1):
    """The kernel record of a mechanism from :func:`make_mechanism` (``None``: no noise); scratch for ``lanes``."""
    if mechanism is None:
        return NoNoise()
    if isinstance(mechanism, BoundedMechanism):
        return BoundedNoise(mechanism.record(lanes), mechanism.bounds.copy(), lane_array(mechanism.dim, lanes))
    if isinstance(mechanism, Laplace):
        return LaplaceNoise(mechanism.scale)
    if isinstance(mechanism, Mechanism):
        record = user_record(mechanism, lanes)
        if type(record) in release.registry:
            return BoundedNoise(record, mechanism.bounds.astype(float), lane_array(mechanism.bounds.size, lanes))
        return record
    return GaussianNoise(mechanism.sigma)
