"""What the online models of 004 share: the design, the budget keys, the mechanism, the truth by quadrature.

004's simulations (Section 5) regress on ``x = (1, z)``, ``z ~ N(0, I_dim)``,
with ``beta = 1_(dim+1)``, and bound each user's gradient either by Mallows
weights ``w(x) = min(1, 2 / ||x||^2)`` (the paper's choice, models
``*_mallows``) or by clipping the unweighted gradient to the l2 ball of
radius ``clip`` (the alternative of Figure 1, models ``*_clip``). The l2
sensitivity ``D`` of the bounded gradient calibrates the mechanism
(:func:`ldpsim.privacy.online.online_mechanism`: Laplace, analytic or
classical Gaussian, GDP), and the budget may be drawn per user. The clipped
gradient may instead be released whole by a pure epsilon-LDP mechanism of
:mod:`ldpsim.privacy.mechanisms` (``LDP_MECHANISMS``, issue 30; :func:`ldpsim.privacy.online.ball_mechanism`),
at a constant ``epsilon``.

The truth is computed, not assumed: ``theta*`` is the root of the population
gradient (quadrature over the design, :class:`~.design.GaussianDesign`,
solved by ``scipy.optimize.root``), and the point a clipped recursion
converges to, :meth:`OnlineModel.limit`, is the root of the mean *clipped*
gradient, which differs from ``theta*``.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..engine.errors import ConfigError
from ..privacy.mechanisms import LDP_MECHANISMS, REGISTRY, BoundedMechanism
from ..privacy.online import BUDGET_KEY, ONLINE_MECHANISMS, PER_USER_MECHANISMS, ball_mechanism, budget_law, \
    online_mechanism, online_noise_record
from .base import Model
from .design import GaussianDesign


def solve_root(gradient, start, what: str, fallback=()) -> np.ndarray:
    """Root of a population gradient: Powell's hybrid method, Levenberg-Marquardt if that stalls.

    Converged when every coordinate of the gradient is below 1e-12 in
    absolute value (the quadratures are accurate to about that). Searches
    from ``start``, then (if given) from each of the starts ``fallback`` lists.

    Raises
    ------
    RuntimeError
        If neither method converges (never for the models here).
    """
    from scipy import optimize  # lazy: import ldpsim <= 1 s (issue 41)

    starts = [start] + list(fallback or [])
    for x in starts:
        x = np.asarray(x, dtype=float)
        for method in ("hybr", "lm"):
            sol = optimize.root(gradient, x, method=method, options={"xtol": 1e-14})
            if np.all(np.abs(gradient(sol.x)) < 1e-12):  # ("xtol too small" at the root itself is success)
                return sol.x
    raise RuntimeError(f"{what}: root search failed ({sol.message}); gradient {gradient(sol.x)}")


def numerical_jacobian(gradient, theta, step: float = 1e-5) -> np.ndarray:
    """Central-difference Jacobian of ``gradient`` at ``theta`` (error ~ step^2 times the third derivative)."""
    theta = np.asarray(theta, dtype=float)
    p = theta.shape[0]
    jac = np.empty((p, p))
    for j in range(p):
        e = np.zeros(p)
        e[j] = step
        jac[:, j] = (np.asarray(gradient(theta + e)) - np.asarray(gradient(theta - e))) / (2.0 * step)
    return jac


#: Covariates besides the intercept by default (004's simulations: d = 5).
DEFAULT_DIM = 5


class OnlineModel(Model):
    """Base of the models of 004: Gaussian design of dimension ``dim``, a bounded gradient, 004's mechanisms.

    Parameters
    ----------
    epsilon : float or None
        Budget of Laplace and Gaussian mechanisms (``None`` for GDP).
    dim : int
        ``d``, the number of covariates besides the intercept.
    mechanism : {'gdp', 'laplace', 'gaussian', 'gaussian_classical'}, one of ``LDP_MECHANISMS``, or None
        ``None``: non-private. The releases of :mod:`ldpsim.privacy.mechanisms`
        (budget ``epsilon``, constant) only for the clipped models.
    delta : float, optional
        Of the Gaussian mechanisms.
    mu : float or None
        GDP budget.
    budget : str, optional
        A per-user budget law, ``"uniform(a, b)"``, instead of ``mu`` / ``epsilon``.
    clip : float, optional
        Clipping norm (``*_clip`` models).
    """

    keys = ("dim", "mechanism", "delta", "mu", "budget")
    key_defaults = {"dim": DEFAULT_DIM}
    #: Every online model's config may name these; only the clipped models take the releases of
    #: :data:`~ldpsim.privacy.mechanisms.LDP_MECHANISMS` (the others refuse them in :meth:`complete_values`, naming those that do).
    mechanisms = ONLINE_MECHANISMS + LDP_MECHANISMS
    #: Whether the gradient is bounded by clipping (else by Mallows weights).
    clipped = False
    #: Whether :meth:`excess_risk` is defined.
    has_loss = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.path_keys = Model.path_keys + cls.keys

    def __init__(self, epsilon=None, dim: int = DEFAULT_DIM, mechanism: str | None = "gdp", delta: float | None = None,
                 mu: float | None = None, budget: str | None = None, clip: float | None = None):
        self.d = int(dim)
        self.dim = self.p  # gradient coordinates
        self.epsilon, self.mu, self.delta, self.budget = epsilon, mu, delta, budget
        self.clip = None if clip is None else float(clip)
        self.coef = np.ones(self.d + 1)  # beta = 1_(d+1) (004, Sections 5.1, 5.3)
        self.design = GaussianDesign(self.d, weighted=not self.clipped)
        if mechanism is None:
            self.mechanism = None
        else:
            value = budget_law(budget) if budget is not None else (mu if BUDGET_KEY[mechanism] == "mu" else epsilon)
            self.mechanism = self.make_mechanism(mechanism, value, delta)

    # --- config ---------------------------------------------------------------------

    @classmethod
    def complete_values(cls, values: dict) -> dict:
        """Blank the budget key the mechanism does not read; non-private runs show ``mu = inf``.

        ``budget`` given as a number is the constant budget (it becomes ``mu``
        or ``epsilon``); a law blanks them (each user draws their own).
        """
        values = cls.fill_key_defaults(values)
        mech = values.get("mechanism") or cls.mechanisms[0]
        if mech in LDP_MECHANISMS and not cls.clipped:
            raise ConfigError(ldp_refusal(mech, cls.name))
        key = BUDGET_KEY[mech]
        budget = values.get("budget")
        if isinstance(budget, float):
            values[key], budget = budget, None
        values["epsilon" if key == "mu" else "mu"] = None
        if budget is not None:
            if values.get(key) is not None and math.isinf(values[key]):
                raise ConfigError(f"budget = {budget} draws each user's {key}, but {key} = inf asks for no privacy: "
                                  f"give one of them (a grid crossing both would hold settings that ask for both)")
            if mech in LDP_MECHANISMS:
                raise ConfigError(f"budget = {budget} draws each user's epsilon, but mechanism = {mech!r} (one pure "
                                  f"epsilon-LDP release per user) has no per-user form; allowed with {mech}: a "
                                  f"constant epsilon (budget a number, or none); per-user budgets run with "
                                  f"{', '.join(PER_USER_MECHANISMS)}")
            if mech not in PER_USER_MECHANISMS:
                raise ConfigError(f"budget = {budget} needs a mechanism with a per-user form "
                                  f"({', '.join(PER_USER_MECHANISMS)}); mechanism = {mech!r} (analytic calibration, "
                                  "a root search) has none")
            values[key] = None
            private = True
        else:
            private = not math.isinf(values[key])
        values["budget"] = budget
        if private:
            values["mechanism"] = mech
            if not REGISTRY[mech].delta:
                values["delta"] = None
        else:  # one spelling of "non-private", whichever budget key said so
            values.update(mechanism=None, delta=None, epsilon=None, mu=math.inf)
        if "clip" not in cls.keys:
            values["clip"] = None
        return values

    # --- to override -------------------------------------------------------------------

    #: Parameters beyond the ``dim`` slopes: the intercept (and the Huber scale).
    extra_parameters: int

    @property
    def p(self) -> int:
        """Number of parameters."""
        return self.d + self.extra_parameters

    @classmethod
    def dimension(cls, setting) -> int:
        return int(setting.dim) + cls.extra_parameters

    def sensitivity(self) -> float:
        """l2 sensitivity ``D = sup ||g(x, y) - g(x', y')||_2`` of the bounded gradient, over parameters too."""
        raise NotImplementedError

    def mean_gradient(self, theta) -> np.ndarray:
        """The population gradient of the model's loss (unweighted loss for the clip models) at ``theta``."""
        raise NotImplementedError

    def mean_bounded_gradient(self, theta) -> np.ndarray:
        """The mean of the bounded gradient the recursion uses (the clipped one for clip models)."""
        return self.mean_gradient(theta)

    def excess_risk(self, thetas) -> np.ndarray:
        """``F(theta) - F(theta*)`` for each row of ``thetas`` ``(N, p)``."""
        raise NotImplementedError

    def start(self) -> np.ndarray:
        """Where the root searches start (away from the truth, so that they compute it)."""
        return np.zeros(self.p)

    def make_mechanism(self, name: str, budget, delta: float | None):
        """The mechanism ``name`` at ``budget`` (a number or a :class:`~ldpsim.privacy.online.BudgetLaw`).

        Raises
        ------
        ConfigError
            For a release of :data:`~ldpsim.privacy.mechanisms.LDP_MECHANISMS` (clipped models only).
        """
        if name in LDP_MECHANISMS:
            raise ConfigError(ldp_refusal(name, self.name))
        return online_mechanism(name, self.p, self.sensitivity(), budget, delta)

    # --- the truth ---------------------------------------------------------------------

    @functools.cached_property
    def _theta_star(self) -> np.ndarray:
        return solve_root(self.mean_gradient, self.start(), f"theta* of {self.name}")

    def theta_star(self) -> np.ndarray:
        """Minimiser of the population loss: the root of :meth:`mean_gradient`, computed."""
        return self._theta_star.copy()

    def limit(self) -> np.ndarray:
        """Where the recursion converges: the root of the mean bounded gradient (``theta*`` unless clipped)."""
        return self.theta_star()

    def noise_covariance(self) -> np.ndarray:
        """``S_LDP``: the mechanism's per-coordinate variance (averaged over users) times the identity."""
        variance = 0.0 if self.mechanism is None else self.mechanism.variance
        return variance * np.eye(self.p)

    @property
    def guarantee(self) -> str:
        return "none (mu = inf: non-private SGD)" if self.mechanism is None else self.mechanism.guarantee

    def noise_record(self, lanes: int = 1):
        return online_noise_record(self.mechanism, lanes)

    def privacy_summary(self) -> dict:
        """``guarantee``, ``sensitivity`` (l2) and ``noise_variance`` (per coordinate, mean over users).

        A release (:data:`~ldpsim.privacy.mechanisms.LDP_MECHANISMS`) has no sensitivity, and its
        variance depends on the gradient: the largest of a coordinate's, in
        the gradient's units (``clip^2`` times that of the scaled release).
        """
        mech = self.mechanism
        if isinstance(mech, BoundedMechanism):
            return super().privacy_summary()
        return {"guarantee": self.guarantee, "sensitivity": self.sensitivity(),
                "noise_variance": 0.0 if mech is None else float(mech.variance)}

    def __repr__(self) -> str:
        mech = "none" if self.mechanism is None else type(self.mechanism).__name__
        return f"{type(self).__name__}(dim={self.d}, mechanism={mech})"


def ldp_refusal(mechanism: str, model: str) -> str:
    """Why ``model`` (Mallows-weighted) refuses a release of :data:`~ldpsim.privacy.mechanisms.LDP_MECHANISMS`, and which models take it."""
    takers = ", ".join(sorted(cls.name for cls in Clipped.__subclasses__()))
    return (f"mechanism = {mechanism!r} is not available for model {model!r}: of Shi et al.'s models the releases of a "
            f"clipped gradient ({', '.join(LDP_MECHANISMS)}) run with {takers}; allowed for {model}: "
            f"{', '.join(ONLINE_MECHANISMS)}")


__all__ = ["OnlineModel", "ldp_refusal", "numerical_jacobian", "solve_root"]


class Clipped:
    """What the ``*_clip`` models share: the unweighted gradient clipped to l2 norm ``clip`` (004, Figure 1).

    Listed before the model it clips: ``class HuberClipModel(Clipped, HuberModel)``.
    """

    keys = OnlineModel.keys + ("clip",)
    clipped = True

    def sensitivity(self) -> float:
        """``2 clip``: clipped gradients lie in the ball of radius ``clip``."""
        return 2.0 * self.clip

    def make_mechanism(self, name: str, budget, delta: float | None):
        """004's mechanisms, or a release of the clipped gradient (``t = g / clip``; ``duchi_l2`` on the ball)."""
        if name in LDP_MECHANISMS:
            return ball_mechanism(name, self.p, self.clip, budget)
        return super().make_mechanism(name, budget, delta)

    def hessian(self) -> np.ndarray:
        raise NotImplementedError(f"{self.name}: G of the clipped recursion is not computed")

    def gradient_covariance(self) -> np.ndarray:
        raise NotImplementedError(f"{self.name}: S of the clipped recursion is not computed")
