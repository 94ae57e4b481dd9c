"""What a model is: a privatized gradient for the kernels, plus its truth.

A model contributes two things:

* a parameter record (a ``NamedTuple`` subclass) and a plain-Python function
  ``gradient(params, theta, gen)`` that draws one observation *inside the
  kernel*, privatizes its gradient at ``theta`` and returns it. Registering
  the function with :func:`gradient_for` makes the generic recursion kernels
  call it whenever they are handed that record: numba picks the
  implementation at compile time from the record's type, so the loop is
  written once for all models and every model's kernel is cached on disk.
  The same plain function is the model's part of the Python twin.
* a :class:`Model` object on the Python side, built from a config setting,
  that knows the true parameter and the asymptotic covariance (the oracle).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
from numba.core import types
from numba.extending import overload

from .._jit import JIT_OPTIONS


def privatized_gradient(params, theta, gen):
    """Privatized stochastic gradient at ``theta`` for the model of ``params``.

    Only callable from jitted code; the implementation is chosen by the type
    of ``params`` (see :func:`gradient_for`).
    """
    raise TypeError("privatized_gradient is resolved inside jitted kernels only")


def gradient_for(params_cls):
    """Register ``func`` as the privatized gradient of records of ``params_cls``.

    Parameters
    ----------
    params_cls : type
        A ``typing.NamedTuple`` subclass holding the model's constants.

    Returns
    -------
    callable
        A decorator returning the plain-Python function unchanged.
    """

    def decorate(func):
        # inlined in numba's IR: a call would pay reference counting on ``gen``
        @overload(privatized_gradient, jit_options=JIT_OPTIONS, inline="always")
        def _select(params, theta, gen):
            if isinstance(params, types.BaseNamedTuple) and params.instance_class is params_cls:
                return func
            return None

        return func

    return decorate


class Model(ABC):
    """A statistical model whose parameter LDP-SGD estimates.

    Subclasses set ``name``, ``dim`` and ``path_keys`` and implement the
    abstract members.
    """

    name: str
    dim: int
    #: Config keys that change the random path (the data, the mechanism, the
    #: recursion). They alone, with the model name, seed a replication, so
    #: settings that differ only in inference keys (beta, B, level,
    #: multiplier) share their paths, and keys added for other models never
    #: change this model's numbers.
    path_keys: tuple[str, ...] = ("n", "epsilon", "c", "gamma", "theta0")

    @abstractmethod
    def kernel_params(self):
        """The record passed to the kernels (a registered NamedTuple)."""

    @property
    @abstractmethod
    def gradient_py(self):
        """The plain-Python privatized gradient, for the twin."""

    @abstractmethod
    def theta_star(self) -> np.ndarray:
        """True parameter, shape ``(dim,)``."""

    @abstractmethod
    def sigma(self) -> np.ndarray:
        """Asymptotic covariance of ``sqrt(n) (theta_bar - theta_star)``, ``(dim, dim)``."""
