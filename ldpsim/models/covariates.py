"""Covariate laws of the regression models: ``X = (1, X_1, ..., X_{d-1})``, bounded.

The ``X_j`` are i.i.d. on ``[-bound, bound]`` and symmetric, so
``E[X X^T] = diag(1, v, ..., v)`` with ``v = Var(X_1)``. Each law has a
record the kernels draw from (:func:`draw_covariates`) and a Python
description with its moments and a quadrature rule for expectations that
have no closed form (the logistic model's Hessian).
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np

from ..engine.dialect.lanes import any_lane
from ..engine.dialect.rng import normal, normal_where, uniform
from ..engine.dialect.dispatch import by_record
from ..engine.dialect.jit import jit


class TruncatedNormalBox(NamedTuple):
    """``N(0, 1)`` truncated to ``[-bound, bound]``, per coordinate."""

    bound: float


class UniformBox(NamedTuple):
    """``U(-bound, bound)``, per coordinate."""

    bound: float


@by_record
def draw_covariates(law, gen, x):
    """Fill ``x`` with one covariate vector: ``x[0] = 1`` (intercept), ``x[1:]`` i.i.d. from ``law``."""


@draw_covariates.register(TruncatedNormalBox)
def _draw_truncated_normal(law, gen, x):
    x[0] = 1.0
    for j in range(1, x.shape[0]):
        z = normal(gen)
        outside = abs(z) > law.bound
        while any_lane(outside):  # rejection from N(0, 1): exact; 1.46 draws per value at bound 1
            z = normal_where(gen, outside, z)  # (lanes: a lane redraws until it is inside, alone)
            outside = abs(z) > law.bound
        x[j] = z


@draw_covariates.register(UniformBox)
def _draw_uniform(law, gen, x):
    x[0] = 1.0
    for j in range(1, x.shape[0]):
        x[j] = law.bound * (2.0 * uniform(gen) - 1.0)


@jit(inline=True)  # inlined like the gradients that call it: no array refcounts per call
def predictors(x, theta, coef):
    """``(X^T theta, X^T coef)``: the fit at ``theta`` and the true linear predictor."""
    fit = 0.0
    mean = 0.0
    for j in range(x.shape[0]):
        fit += x[j] * theta[j]
        mean += x[j] * coef[j]
    return fit, mean


@jit(inline=True)
def add_scaled(out, w, x):
    """``out += w x``: a gradient of the form (scalar residual) times the covariates."""
    for j in range(x.shape[0]):
        out[j] += w * x[j]


class CovariateLaw:
    """Python side of a covariate law on ``[-bound, bound]^(d-1)`` plus an intercept.

    Parameters
    ----------
    name : {'truncnorm', 'uniform'}
        Standard normal truncated to the box (000, Section 4), or uniform.
    bound : float
        Half-width of the box (the paper's ``m``).
    """

    def __init__(self, name: str, bound: float = 1.0):
        from scipy import stats  # lazy: import ldpsim <= 1 s (issue 41)

        if name not in COVARIATES:
            raise ValueError(f"covariates = {name!r} is not one of: {', '.join(COVARIATES)}")
        self.name, self.bound = name, float(bound)
        b = self.bound
        self._marginal = stats.truncnorm(-b, b) if name == "truncnorm" else stats.uniform(-b, 2 * b)

    def record(self):
        """The record :func:`draw_covariates` dispatches on."""
        return TruncatedNormalBox(self.bound) if self.name == "truncnorm" else UniformBox(self.bound)

    def bounds(self, d: int) -> np.ndarray:
        """``sup |X_j|`` per coordinate: 1 for the intercept, ``bound`` for the others."""
        return np.array([1.0] + [self.bound] * (d - 1))

    @property
    def variance(self) -> float:
        """``Var(X_1)``: ``1 - 2 b phi(b) / (2 Phi(b) - 1)`` (truncated normal), ``b^2 / 3`` (uniform)."""
        return float(self._marginal.var())

    def second_moment(self, d: int) -> np.ndarray:
        """``E[X X^T] = diag(1, v, ..., v)``."""
        return np.diag([1.0] + [self.variance] * (d - 1))

    def expectation(self, func, d: int, nodes: int | None = None) -> np.ndarray:
        """``E[func(X)]`` by tensor-product Gauss-Legendre quadrature on the box.

        Parameters
        ----------
        func : callable
            Maps an ``(N, d)`` array of covariate vectors (intercept first) to
            an ``(N, ...)`` array.
        d : int
            Dimension including the intercept.
        nodes : int, optional
            Nodes per coordinate (``nodes^(d-1)`` evaluations). The integrands
            of ldpsim's models are analytic on the box, so the rule converges
            geometrically: 11 nodes already give full double precision for
            the logistic Hessian at d = 4 (within 1e-15 of 40 nodes, both
            laws). Default: 40 up to d = 4, 16 at d = 5, 12 at d = 6
            (:data:`QUADRATURE_NODES`); beyond, pass ``nodes``.

        Returns
        -------
        numpy.ndarray
        """
        from scipy import special

        if nodes is None:
            if d - 1 not in QUADRATURE_NODES:
                raise ValueError(f"a quadrature over {d - 1} covariates needs nodes given (defaults up to "
                                 f"{max(QUADRATURE_NODES)})")
            nodes = QUADRATURE_NODES[d - 1]
        t, w = special.roots_legendre(nodes)
        x1 = self.bound * t
        w1 = self.bound * w * self._marginal.pdf(x1)
        grid = np.array(list(itertools.product(x1, repeat=d - 1)))
        weights = np.prod(np.array(list(itertools.product(w1, repeat=d - 1))), axis=1)
        points = np.column_stack([np.ones(len(grid)), grid])
        values = np.asarray(func(points))
        return np.tensordot(weights, values, axes=(0, 0))


#: Default quadrature nodes per coordinate by the number of covariates (about 2.5e5 points at most).
QUADRATURE_NODES = {0: 40, 1: 40, 2: 40, 3: 40, 4: 16, 5: 12}
#: Covariate laws by their config name.
COVARIATES = ("truncnorm", "uniform")
