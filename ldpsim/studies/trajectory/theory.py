"""What the fitted rates are compared with: theoretical exponents, and the exact linearized recursion.

**Exponents** (``theory`` key of the trajectory study):

* ``strongly_convex`` (default): the leading terms for a risk that is strongly
  convex near ``theta*`` (docs/corrections.md, item 11): ``-gamma`` for the last
  iterate (``0 < gamma < 1``), ``-1`` for the average (``1/2 < gamma < 1``);
  the loss gap ``F(theta) - F(theta*)``, quadratic near ``theta*``, decays at
  the same rates.
* ``shi_table1``: 004's Table 1 (``shi_rates`` in the packaged
  ``paper_tables.yaml``), the exponents of its bounds on
  ``E||theta_n - theta*||^2`` (delta_n), ``E||theta_bar_n - theta*||^2``
  (delta_bar_n), and on the loss gaps Delta_n, Delta_bar_n (Theorems 5-6,
  which do not assume strong convexity, so they are upper bounds that a
  strongly convex loss beats). Table 1 names the step-size exponent ``a``
  (our ``gamma``); an exponent is blank where the table has none (``a = 1``,
  and the loss of the last iterate for ``a < 1/3``).

**Linearized recursion.** Near ``theta*`` LDP-SGD is
``e_i = (I - eta_i G) e_(i-1) + eta_i xi_i``, ``e = theta - theta*``,
``Cov(xi) = S / s`` (``s`` the mini-batch size). For that linear recursion the
mean squared errors of the last iterate and of the average at every ``k``
are computed exactly, in ``G``'s eigenbasis, by forward recursions
(:func:`linearized_mse`); with them the run's slopes can be judged at the
run's own ``n``, transient included, not only against the limit exponents.
Their part due to the start, ``||prod (I - eta_i G) e_0||^2`` and its average,
is the decay of the initial error.
"""

from __future__ import annotations

import ast
import operator
import re
from fractions import Fraction

import numpy as np

from ...engine.dialect.jit import jit
from ...recursion.kernels import step_ratio_coefficients, step_size
from ...reporting.reference import paper_tables

#: Values of the ``theory`` key.
THEORIES = ("strongly_convex", "shi_table1")
#: Table 1's rows for (metric, estimator).
_SHI_ROWS = {("parameter", "last"): "delta_n", ("parameter", "average"): "delta_bar_n",
             ("loss", "last"): "Delta_n", ("loss", "average"): "Delta_bar_n"}


def _interval(text: str):
    """``"(0,1/3]"`` -> ``(Fraction(0), Fraction(1, 3), open_low, open_high)``."""
    low, high = text[1:-1].split(",")
    return Fraction(low.strip()), Fraction(high.strip()), text[0] == "(", text[-1] == ")"


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def _exponent(text: str, a: float) -> float:
    """The exponent of ``"n^-(3a-1)/2"`` at ``a``: ``-(3a - 1) / 2`` (numbers, ``a``, + - * /, parentheses)."""
    if not text.startswith("n^"):
        raise ValueError(f"not a rate: {text!r}")
    expr = re.sub(r"(\d)a", r"\1*a", text[2:])  # "2a" -> "2*a"

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.Name) and node.id == "a":
            return float(a)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        raise ValueError(f"cannot read the rate {text!r}")

    return ev(ast.parse(expr, mode="eval"))


def shi_table1_slope(metric: str, estimator: str, gamma: float, table: dict | None = None):
    """004 Table 1's exponent for ``(metric, estimator)`` at ``a = gamma``, or ``None`` where it has none.

    Interval ends are taken with a tolerance of 1e-9, so that
    ``gamma = 0.3333333333333333`` is ``a = 1/3``; where two columns meet,
    the table's two expressions agree (checked in the tests).
    """
    rows = (table or paper_tables()["shi_rates"])[_SHI_ROWS[(metric, estimator)]]
    tol = 1e-9
    for text, rate in rows.items():
        low, high, open_low, open_high = _interval(text)
        above = gamma > float(low) + tol if open_low else gamma >= float(low) - tol
        below = gamma < float(high) - tol if open_high else gamma <= float(high) + tol
        if above and below:
            value = _exponent(rate, gamma)
            return 0.0 if abs(value) < 1e-12 else value
    return None


def strongly_convex_slope(metric: str, estimator: str, gamma: float):
    """``-gamma`` (last iterate, ``0 < gamma < 1``), ``-1`` (average, ``1/2 < gamma < 1``), else ``None``."""
    if estimator == "last":
        return -gamma if 0.0 < gamma < 1.0 else None
    return -1.0 if 0.5 < gamma < 1.0 else None


def theory_slope(estimator: str, gamma: float, metric: str = "parameter", theory: str = "strongly_convex"):
    """The exponent ``theory`` gives for ``metric`` of ``estimator`` at step-size exponent ``gamma``."""
    if theory == "shi_table1":
        return shi_table1_slope(metric, estimator, gamma)
    return strongly_convex_slope(metric, estimator, gamma)


@jit
def _linearized_path(lams, noise, e0, n, c, gamma, checkpoints, last, average, last_mean, average_mean):
    # Per eigen-direction m: e_i = a_i e_(i-1) + eta_i xi_i, a_i = 1 - eta_i lam_m, Var xi = noise[m].
    # mean part: mu_i = a_i mu_(i-1), its running sum M_i; noise part: v_i = E e_i^2,
    # c_i = E[S_i e_i] and W_i = E S_i^2 for the running sum S_i (S_0 = 0).
    p = lams.shape[0]
    mu = e0.copy()
    big_m = np.zeros(p)
    v = np.zeros(p)
    cc = np.zeros(p)
    big_w = np.zeros(p)
    ratio = step_ratio_coefficients(gamma)
    eta = c
    pow2 = 1
    q = 0
    for i in range(1, n + 1):
        eta = step_size(i, pow2, eta, c, gamma, ratio)
        for m in range(p):
            a = 1.0 - eta * lams[m]
            mu[m] = a * mu[m]
            big_m[m] += mu[m]
            v[m] = a * a * v[m] + eta * eta * noise[m]
            big_w[m] += 2.0 * a * cc[m] + v[m]
            cc[m] = a * cc[m] + v[m]
        if i == pow2:
            pow2 *= 2
        if q < checkpoints.shape[0] and i == checkpoints[q]:
            inv = 1.0 / (float(i) * float(i))
            for m in range(p):
                last[q, m] = mu[m] * mu[m] + v[m]
                last_mean[q, m] = mu[m]
                average[q, m] = (big_m[m] * big_m[m] + big_w[m]) * inv
                average_mean[q, m] = big_m[m] / float(i)
            q += 1


def linearized_mse(hessian, covariance, e0, n: int, c: float, gamma: float, checkpoints, batch_size: int = 1):
    """Exact mean squared errors of the linearized recursion at ``checkpoints``, per eigen-direction of ``G``.

    Parameters
    ----------
    hessian, covariance : numpy.ndarray
        ``G`` and ``S`` (the privatized gradient's covariance at ``theta*``).
    e0 : numpy.ndarray
        ``theta_0 - theta*``.
    n, c, gamma, batch_size
        As the kernel's (the same step sizes, to the bit).
    checkpoints : numpy.ndarray
        Increasing steps.

    Returns
    -------
    dict
        ``lambdas`` (eigenvalues of ``G``), and ``(C, p)`` arrays ``last``,
        ``average`` (``E e_m^2`` per direction ``m``) and ``last_start``,
        ``average_start`` (the part due to ``e0``, ``(E e_m)^2``). The
        squared distance is the sum over directions; the loss gap
        ``e' G e / 2`` is the sum weighted by ``lambda_m / 2``. And
        ``last_mean``, ``average_mean``: ``E e`` in the original coordinates,
        ``(C, p)``: the transient, the deterministic part of the error.
    """
    g = (np.asarray(hessian, dtype=float) + np.asarray(hessian, dtype=float).T) / 2.0
    lams, vecs = np.linalg.eigh(g)
    noise = np.einsum("im,ij,jm->m", vecs, np.asarray(covariance, dtype=float), vecs) / batch_size
    e0r = vecs.T @ np.asarray(e0, dtype=float)
    ck = np.asarray(checkpoints, dtype=np.int64)
    out = {k: np.full((ck.shape[0], lams.shape[0]), np.nan) for k in ("last", "average", "last_mean", "average_mean")}
    _linearized_path(lams, noise, e0r, int(n), float(c), float(gamma), ck, out["last"], out["average"],
                     out["last_mean"], out["average_mean"])
    for est in ("last", "average"):
        out[f"{est}_start"] = out[f"{est}_mean"] ** 2
        out[f"{est}_mean"] = out[f"{est}_mean"] @ vecs.T
    out["lambdas"] = lams
    return out


def linearized_curves(model, setting, checkpoints, metrics) -> dict | None:
    """The linearized recursion of a setting, or ``None`` where the model has no ``G``, ``S``.

    Returns ``{(metric, estimator): E distance}`` at the checkpoints.
    ``theta0`` is projected into the parameter space as the kernel does.
    """
    from ...models import constrain

    try:
        g, s = model.hessian(), model.gradient_covariance()
    except NotImplementedError:
        return None
    theta0 = np.full(model.dim, float(setting.theta0))
    constrain(model.kernel_params(), theta0)
    fit = linearized_mse(g, s, theta0 - model.theta_star(), setting.n, setting.c, setting.gamma, checkpoints,
                         setting.batch_size)
    weights = {"parameter": np.ones_like(fit["lambdas"]), "loss": fit["lambdas"] / 2.0}
    return {(metric, est): fit[est] @ weights[metric] for metric in metrics for est in ("last", "average")}


#: Most evaluations of the mean gradient :func:`mean_field` spends on the noise-free path (the shi_* runs need
#: 620-650; each costs a quadrature, 0.1-5 ms).
MEAN_FIELD_CALLS = 20_000


class _Abandoned(Exception):
    """The noise-free path cannot be computed (a gradient that overflows) or costs too much."""


def mean_field(model, setting, checkpoints) -> dict | None:
    """The noise-free path: ``dtheta / dtau = -g(theta)``, ``tau_i = eta_1 + ... + eta_i``, from ``theta0``.

    ``g`` is the mean of the gradient the recursion uses
    (``model.mean_bounded_gradient``: the clipped one for clip models). The
    recursion's mean follows this path up to ``O(eta)`` terms (the Euler
    steps, and the noise through the curvature of ``g``), so it is the decay
    of the initial error, nonlinear early phase included. Solved by an
    explicit Runge-Kutta method to a relative tolerance of 1e-9, read at
    every ``tau_i``.

    Returns
    -------
    dict or None
        ``last``, ``average``: ``(C, p)`` deviations from ``theta*`` of the
        path and of its running mean at the checkpoints; ``None`` for models
        without a mean gradient, and where the path cannot be computed (a
        gradient that overflows) or needs more than :data:`MEAN_FIELD_CALLS`
        evaluations of it.
    """
    from scipy.integrate import solve_ivp

    from ...models import constrain

    gradient = getattr(model, "mean_bounded_gradient", None)
    if gradient is None:
        return None
    params = model.kernel_params()
    theta0 = np.full(model.dim, float(setting.theta0))
    constrain(params, theta0)
    n = int(setting.n)
    slab = 65536

    def taus(lo, hi, offset):  # tau_(lo+1) .. tau_hi, from tau_lo = offset (a batch's step is eta x mean)
        return offset + np.cumsum(setting.c * np.arange(lo + 1, hi + 1, dtype=float) ** -setting.gamma)

    tau_n = 0.0
    for lo in range(0, n, slab):
        tau_n = taus(lo, min(lo + slab, n), tau_n)[-1]

    calls = [0]

    def rhs(_, theta):
        theta = theta.copy()
        constrain(params, theta)
        value = -np.asarray(gradient(theta))
        calls[0] += 1
        # a gradient that overflows (theta0 = 1e300) would make RK45 shrink its step forever; a path that needs
        # more evaluations than this is not worth the minutes: the columns it serves stay blank
        if not np.isfinite(value).all() or calls[0] > MEAN_FIELD_CALLS:
            raise _Abandoned
        return value

    try:
        with np.errstate(all="ignore"):
            sol = solve_ivp(rhs, (0.0, float(tau_n)), theta0, method="RK45", rtol=1e-9, atol=1e-12,
                            dense_output=True)
    except (NotImplementedError, _Abandoned):
        return None
    if not sol.success:
        return None
    star = model.theta_star()
    ck = np.asarray(checkpoints, dtype=np.int64)
    last = np.empty((ck.shape[0], model.dim))
    average = np.empty_like(last)
    total = np.zeros(model.dim)
    q, offset = 0, 0.0
    for lo in range(0, n, slab):  # the running sum of the path at tau_1 .. tau_n, a slab of steps at a time
        hi = min(lo + slab, n)
        tau = taus(lo, hi, offset)
        offset = tau[-1]
        start = lo
        while q < ck.shape[0] and ck[q] <= hi:
            k = int(ck[q])
            values = sol.sol(tau[start - lo:k - lo])
            total += values.sum(axis=1)
            start = k
            last[q] = values[:, -1] - star if values.shape[1] else sol.sol(tau[k - 1 - lo]) - star
            average[q] = total / k - star
            q += 1
        total += sol.sol(tau[start - lo:]).sum(axis=1) if start < hi else 0.0
    return {"last": last, "average": average}


__all__ = ["THEORIES", "linearized_curves", "mean_field", "linearized_mse", "shi_table1_slope", "strongly_convex_slope",
           "theory_slope"]
