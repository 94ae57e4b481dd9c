"""What a model is: a privatized gradient for the kernels, plus its truth.

A model contributes two things:

* a parameter record (a ``NamedTuple`` subclass) and a plain-Python function
  that draws one observation *inside the kernel*, privatizes its gradient at
  ``theta`` and returns it (scalar models: :func:`privatized_gradient`) or
  adds it to an output vector (vector models: :func:`add_privatized_gradient`).
  Registering the function for the record's class makes the generic recursion
  kernels call it whenever they are handed such a record: numba picks the
  implementation at compile time from the record's type
  (:func:`ldpsim.engine.dialect.dispatch.by_record`), so the loop is written once for all
  models and every model's kernel is cached on disk. The same plain function
  is the model's part of the Python twin.
* a :class:`Model` object on the Python side, built from a config setting,
  that knows the true parameter, the Hessian ``G`` and the asymptotic
  covariance (the oracle).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np

from ..engine.dialect.dispatch import by_record
from ..privacy.mechanisms.bounded import BoundedMechanism
from ..privacy.mechanisms.registry import REGISTRY as MECHANISM_REGISTRY


@by_record
def observe(params, gen):
    """Draw one observation: the random numbers of the data, before any privacy.

    Returns the number the gradient reads of them (the observation itself, or
    the draw of the response's error); a vector model writes its covariates
    into ``params.x``. Splitting the draw of the data from the gradient lets
    paths other than the main one (HulC's segments, HiGrad's
    threads, the online bootstrap's perturbed paths) privatize the same
    observation at their own iterates (:func:`gradient_at`).
    """


@by_record
def gradient_at(params, obs, theta, gen):
    """Scalar models: the privatized gradient of the observation ``obs`` (:func:`observe`) at ``theta``.

    Draws the mechanism's noise from ``gen``.
    """


@by_record
def add_gradient_at(params, obs, theta, gen, out):
    """Vector models: add the privatized gradient of the observation ``obs`` at ``theta`` (``(d,)``) to ``out``."""


@by_record
def privatized_gradient(params, theta, gen):
    """Scalar models: draw one observation and return its privatized gradient at ``theta`` (a float).

    :func:`gradient_at` of :func:`observe`: the observation's draws, then the mechanism's.
    """


@by_record
def add_privatized_gradient(params, theta, gen, out):
    """Vector models: draw one observation and add its privatized gradient at ``theta`` to ``out``.

    ``theta`` and ``out`` have shape ``(d,)``; adding (not assigning) lets
    the kernel average a mini-batch without a second buffer.
    """


def _compose_scalar(params, theta, gen):
    return gradient_at(params, observe(params, gen), theta, gen)


def _compose_vector(params, theta, gen, out):
    add_gradient_at(params, observe(params, gen), theta, gen, out)


def _scalar_at_as_vector(params, obs, theta, gen, out):
    out[0] += gradient_at(params, obs, theta[0], gen)


def _keep(params, theta):
    pass


@by_record(default=_keep)  # models that need nothing register nothing
def constrain(params, theta):
    """Map ``theta`` back into the model's parameter space after a step, in place (default: nothing).

    The trajectory kernel applies it to ``theta0`` and after every step: a
    projected recursion, post-processing of the privatized gradients, so the
    privacy guarantee is unchanged. The Huber models keep their scale
    ``s >= SCALE_FLOOR`` (their loss is defined for ``s > 0`` only).
    """


def register_scalar(record_cls):
    """Register a scalar model's gradient (:func:`gradient_at`) for ``record_cls``, and everything built on it.

    The decorated function is :func:`gradient_at`'s implementation;
    :func:`privatized_gradient` is it at :func:`observe` (the scalar kernel
    keeps ``theta`` in a register). Kernels written for every model at once
    (the trajectory study's) call :func:`add_privatized_gradient` and
    :func:`add_gradient_at` with ``(1,)`` arrays, which add that same gradient
    to ``out[0]``. The model registers its :func:`observe` itself.
    """

    def decorate(func):
        gradient_at.register(record_cls)(func)
        privatized_gradient.register(record_cls)(_compose_scalar)
        add_gradient_at.register(record_cls)(_scalar_at_as_vector)
        add_privatized_gradient.register(record_cls)(_scalar_as_vector)
        return func

    return decorate


def register_vector(record_cls):
    """Register a vector model's gradient (:func:`add_gradient_at`) for ``record_cls``, and the composition with :func:`observe`."""

    def decorate(func):
        add_gradient_at.register(record_cls)(func)
        add_privatized_gradient.register(record_cls)(_compose_vector)
        return func

    return decorate


def _scalar_as_vector(params, theta, gen, out):
    out[0] += privatized_gradient(params, theta[0], gen)


def sharing_observation(params, main):
    """``params`` reading the observation that :func:`observe` writes into ``main``'s scratch.

    A model's record keeps the covariates of the observation being drawn in
    its field ``x`` (the models without covariates have none). Paths that
    privatize the main path's observation with a record of their own (the
    method zoo's ``OB_split``, at another epsilon) must read that ``x``.
    """
    if "x" in getattr(params, "_fields", ()):
        return params._replace(x=main.x)
    return params


class Model(ABC):
    """A statistical model whose parameter LDP-SGD estimates.

    Subclasses set the class attributes below, implement the abstract
    members and ``from_setting``. The asymptotic covariance follows from the
    Hessian ``G`` of the risk and the covariance ``S = S_SGD + S_LDP`` of the
    privatized gradient at the truth (Dette & Graw 2024, Theorem 3.1):
    ``Sigma = G^-1 S G^-1``.
    """

    name: str
    dim: int
    #: Model-specific config keys the model reads (``tau``, ``covariates``,
    #: ``clip``, ``mechanism``, ``delta``); in settings of other models they
    #: are blank, so a grid over models does not repeat runs.
    keys: tuple[str, ...] = ()
    #: Privacy mechanisms the model supports, its default first.
    mechanisms: tuple[str, ...] = ()
    #: Config keys that change the random path (the data, the mechanism, the
    #: recursion). They alone, with the model name, seed a replication, so
    #: settings that differ only in inference keys (beta, B, level,
    #: multiplier) share their paths, and keys added for other models never
    #: change this model's numbers.
    path_keys: tuple[str, ...] = ("n", "epsilon", "c", "gamma", "theta0")
    #: Path keys a model gained after runs of it were committed, each with the value those runs had: a
    #: setting at that value is seeded without the key (the committed numbers stay as they were), any
    #: other value enters its seed (:func:`ldpsim.recursion.keys.path_seed_key`).
    late_path_keys: dict = {}
    #: Defaults of model keys whose config default is blank because models that read them differ (``dim``:
    #: 5 for Shi et al.'s models, 3 for the regression models), filled in by :meth:`fill_key_defaults`.
    key_defaults: dict = {}
    #: The privacy mechanism (``None`` when epsilon is infinite).
    mechanism = None
    #: Whether :meth:`excess_risk` (the loss gap ``F(theta) - F(theta*)``) is defined.
    has_loss = False
    #: Why the coverage study cannot run the model (``None``: it can).
    coverage_note: str | None = None

    @classmethod
    def complete_values(cls, values: dict) -> dict:
        """A setting's values with what this model does not read blanked and its default mechanism filled in.

        Called by :func:`ldpsim.recursion.keys.path_values` after the model
        keys other models read are blanked. Default: the mechanism is the
        model's first unless ``epsilon = inf`` (no mechanism), and ``delta``
        is read by the mechanisms whose registry entry says so (the Gaussians).
        """
        values = cls.fill_key_defaults(values)
        if "mechanism" in cls.keys:
            values["mechanism"] = None if math.isinf(values["epsilon"]) else values["mechanism"] or cls.mechanisms[0]
        entry = MECHANISM_REGISTRY.get(values.get("mechanism") or "")
        if entry is None or not entry.delta:
            values["delta"] = None
        return values

    @classmethod
    def fill_key_defaults(cls, values: dict) -> dict:
        """A copy of ``values`` with each blank key of :attr:`key_defaults` at the model's default."""
        values = dict(values)
        for key, default in cls.key_defaults.items():
            if values.get(key) is None:
                values[key] = default
        return values

    @abstractmethod
    def kernel_params(self, lanes: int = 1):
        """The record passed to the kernels (a registered NamedTuple).

        For a kernel of ``lanes`` replications side by side
        (:mod:`ldpsim.engine.dialect.lanes`), the record's scratch arrays (the
        observation being drawn) hold one per lane: :func:`~ldpsim.engine.dialect.lanes.lane_array`.
        """

    @abstractmethod
    def theta_star(self) -> np.ndarray:
        """True parameter, shape ``(dim,)``."""

    def hessian(self) -> np.ndarray:
        """``G``, the Jacobian of the risk gradient at ``theta_star``, ``(dim, dim)``.

        Optional: a model without it has no oracle (built-in), or one that
        ldpsim estimates by Monte Carlo (a user's model, :mod:`.truth`).
        """
        raise NotImplementedError(f"model {self.name!r} does not give its Hessian G")

    def gradient_covariance(self) -> np.ndarray:
        """``S = S_SGD + S_LDP``, the covariance of one privatized gradient at ``theta_star`` (optional, as ``hessian``)."""
        raise NotImplementedError(f"model {self.name!r} does not give its gradient covariance S")

    def sigma(self, batch_size: int = 1) -> np.ndarray:
        """Asymptotic covariance of ``sqrt(n) (theta_bar - theta_star)``, ``(dim, dim)``.

        ``G^-1 S G^-1 / s`` for mini-batches of ``s`` observations each
        privatized on its own (Dette & Graw 2024, Remark 2.1), ``n`` counting steps.
        """
        g_inv = np.linalg.inv(self.hessian())
        sigma = g_inv @ self.gradient_covariance() @ g_inv.T / batch_size
        return (sigma + sigma.T) / 2.0  # symmetric to the last bit

    def limit(self) -> np.ndarray:
        """Where the recursion converges: ``theta_star`` unless the gradient is biased (clipping)."""
        return self.theta_star()

    def excess_risk(self, thetas) -> np.ndarray:
        """``F(theta) - F(theta*)`` for each row of ``thetas``; models with ``has_loss`` define it."""
        raise NotImplementedError(f"model {self.name!r} defines no loss")

    def privacy_summary(self) -> dict:
        """``guarantee``, ``sensitivity`` and ``noise_variance`` (per coordinate); ``None`` where not defined.

        A release (:data:`~ldpsim.privacy.mechanisms.LDP_MECHANISMS`) has no sensitivity and a variance that depends on the
        gradient: the largest of a coordinate's, in the gradient's units (``bounds_j^2`` times the
        scaled release's), as the online models report it.
        """
        mech = self.mechanism
        if isinstance(mech, BoundedMechanism):
            return {"guarantee": self.guarantee, "sensitivity": None,
                    "noise_variance": float(np.max(mech.bounds) ** 2 * mech.variance)}
        return {"guarantee": self.guarantee, "sensitivity": getattr(mech, "sensitivity", None),
                "noise_variance": 0.0 if mech is None else getattr(mech, "variance", None)}

    @classmethod
    def dimension(cls, setting) -> int:
        """Coordinates of theta in ``setting`` without building the model (models sized by a key override it)."""
        return cls.dim

    @classmethod
    def from_setting(cls, setting) -> "Model":
        """The model of one config setting: ``epsilon`` and the model's own keys."""
        return cls(epsilon=setting.epsilon, **{key: getattr(setting, key) for key in cls.keys})

    @property
    def guarantee(self) -> str:
        """The privacy each observation gets, in one line.

        A user's model (:attr:`declared`) states what its own code promises:
        ldpsim cannot prove it, and says so.
        """
        if self.declared:
            return declared_guarantee(self)
        return "none (epsilon = inf: non-private SGD)" if self.mechanism is None else self.mechanism.guarantee

    #: Whether the model's privacy is declared by its author rather than computed by ldpsim (users' models).
    declared = False
    #: Of ``G`` and ``S``, those ldpsim estimates by Monte Carlo for the class (a user's model that omits them).
    estimated: tuple[str, ...] = ()

    @property
    def noise_estimated(self) -> bool:
        """Whether the mechanism is a user's without a variance, or a user's release: ``S`` is then estimated (:mod:`.truth`)."""
        mech = self.mechanism
        return mech is not None and (getattr(mech, "variance", 0.0) is None or getattr(mech, "releases", False))

    def estimated_parts(self) -> tuple[str, ...]:
        """Of ``G`` and ``S``, those of this model that are Monte Carlo estimates (the oracle is then estimated)."""
        return tuple(dict.fromkeys(self.estimated + (("S",) if self.noise_estimated else ())))


def declared_guarantee(model) -> str:
    """The guarantee of a user's model: its mechanism's, or its ``epsilon``, marked "declared, not verified"."""
    mech = model.mechanism
    if mech is not None and getattr(mech, "guarantee", None):
        text = mech.guarantee
        return text if "not verified" in text else f"{text}; declared, not verified"
    epsilon = getattr(model, "epsilon", None)
    if epsilon is None or (isinstance(epsilon, float) and math.isinf(epsilon)):
        return "none (epsilon = inf: non-private SGD)"
    return f"epsilon = {epsilon:g} LDP, declared by model {model.name!r}, not verified"
