"""What a model is: a privatized gradient for the kernels, plus its truth.

A model contributes two things:

* a parameter record (a ``NamedTuple`` subclass) and a plain-Python function
  that draws one observation *inside the kernel*, privatizes its gradient at
  ``theta`` and returns it (scalar models: :func:`privatized_gradient`) or
  adds it to an output vector (vector models: :func:`add_privatized_gradient`).
  Registering the function for the record's class makes the generic recursion
  kernels call it whenever they are handed such a record: numba picks the
  implementation at compile time from the record's type
  (:func:`ldpsim.engine.dispatch.by_record`), so the loop is written once for all
  models and every model's kernel is cached on disk. The same plain function
  is the model's part of the Python twin.
* a :class:`Model` object on the Python side, built from a config setting,
  that knows the true parameter, the Hessian ``G`` and the asymptotic
  covariance (the oracle).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from ..engine.dispatch import by_record


@by_record
def privatized_gradient(params, theta, gen):
    """Scalar models: draw one observation and return its privatized gradient at ``theta`` (a float)."""


@by_record
def add_privatized_gradient(params, theta, gen, out):
    """Vector models: draw one observation and add its privatized gradient at ``theta`` to ``out``.

    ``theta`` and ``out`` have shape ``(d,)``; adding (not assigning) lets
    the kernel average a mini-batch without a second buffer.
    """


def register_scalar(record_cls):
    """Register a scalar model's gradient for ``record_cls``, and its vector form for vector kernels.

    The decorated function is :func:`privatized_gradient`'s implementation
    (the scalar kernel keeps ``theta`` in a register); kernels written for
    every model at once (the trajectory study's) call
    :func:`add_privatized_gradient` with ``(1,)`` arrays, which adds that same
    gradient to ``out[0]``.
    """

    def decorate(func):
        privatized_gradient.register(record_cls)(func)
        add_privatized_gradient.register(record_cls)(_scalar_as_vector)
        return func

    return decorate


def _scalar_as_vector(params, theta, gen, out):
    out[0] += privatized_gradient(params, theta[0], gen)


class Model(ABC):
    """A statistical model whose parameter LDP-SGD estimates.

    Subclasses set the class attributes below, implement the abstract
    members and ``from_setting``. The asymptotic covariance follows from the
    Hessian ``G`` of the risk and the covariance ``S = S_SGD + S_LDP`` of the
    privatized gradient at the truth (000, Theorem 3.1):
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
    #: The privacy mechanism (``None`` when epsilon is infinite).
    mechanism = None

    @abstractmethod
    def kernel_params(self):
        """The record passed to the kernels (a registered NamedTuple)."""

    @abstractmethod
    def theta_star(self) -> np.ndarray:
        """True parameter, shape ``(dim,)``."""

    @abstractmethod
    def hessian(self) -> np.ndarray:
        """``G``, the Jacobian of the risk gradient at ``theta_star``, ``(dim, dim)``."""

    @abstractmethod
    def gradient_covariance(self) -> np.ndarray:
        """``S = S_SGD + S_LDP``, the covariance of one privatized gradient at ``theta_star``."""

    def sigma(self, batch_size: int = 1) -> np.ndarray:
        """Asymptotic covariance of ``sqrt(n) (theta_bar - theta_star)``, ``(dim, dim)``.

        ``G^-1 S G^-1 / s`` for mini-batches of ``s`` observations each
        privatized on its own (000, Remark 2.1), ``n`` counting steps.
        """
        g_inv = np.linalg.inv(self.hessian())
        sigma = g_inv @ self.gradient_covariance() @ g_inv.T / batch_size
        return (sigma + sigma.T) / 2.0  # symmetric to the last bit

    @classmethod
    def from_setting(cls, setting) -> "Model":
        """The model of one config setting: ``epsilon`` and the model's own keys."""
        return cls(epsilon=setting.epsilon, **{key: getattr(setting, key) for key in cls.keys})

    @property
    def guarantee(self) -> str:
        """The privacy each observation gets, in one line."""
        return "none (epsilon = inf: non-private SGD)" if self.mechanism is None else self.mechanism.guarantee
