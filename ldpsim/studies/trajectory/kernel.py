"""The trajectory kernel: one LDP-SGD path with the squared error recorded at checkpoints.

At steps ``k_1 < ... < k_C = n`` the kernel records, for the last iterate and
for the average of the iterates, the deviations

    theta_k - theta*    and    theta_bar_k - theta*,

from which the study computes ``||.||^2`` (and a study with a loss can compute
its excess risk ``F(theta* + deviation) - F(theta*)``).

It runs the recursion of :mod:`ldpsim.recursion.kernels` with the same step
sizes and draws from the replication's generator in the same order, so a
setting's paths are the coverage study's paths. Every model runs through one
vector loop (scalar models through their vector form,
:func:`ldpsim.models.base.register_scalar`). Memory is the ``2 C d`` recorded
numbers and a few ``(d,)`` work arrays, never ``O(n)``: the average is
streamed as the sum of ``theta_i - theta*``, centred at the truth so that
the sum stays small and loses nothing to cancellation.

:func:`trajectory_twin` repeats the kernel in plain Python, operation for
operation; tests require identical output.
"""

from __future__ import annotations

import numpy as np

from ...engine import interrupt
from ...engine.interrupt import POLL_MASK, stop_requested
from ...engine.jit import jit
from ...engine.rng import kernel_rng, local_rng, release_rng
from ...models import add_privatized_gradient, constrain
from ...recursion.kernels import step_ratio_coefficients, step_size
from ...recursion.twins import step_sizes_twin


@jit
def _trajectory_path(params, stream, n, batch_size, c, gamma, theta, theta_star, grad, dev, checkpoints, last,
                     average, stop):
    # theta starts at theta0; grad and dev are zeroed (d,) work arrays of the wrapper.
    gen = local_rng(stream)  # the generator's state in registers; release_rng writes it back
    d = theta.shape[0]
    n_ck = checkpoints.shape[0]
    q = 0
    next_ck = checkpoints[0]
    pow2 = 1
    ratio = step_ratio_coefficients(gamma)
    inv_s = 1.0 / batch_size
    eta = c
    constrain(params, theta)  # theta0 into the parameter space (a no-op for most models)
    for i in range(1, n + 1):
        eta = step_size(i, pow2, eta, c, gamma, ratio)
        w = eta * inv_s
        for _ in range(batch_size):
            add_privatized_gradient(params, theta, gen, grad)
        for j in range(d):
            theta[j] = theta[j] - w * grad[j]
            grad[j] = 0.0
        constrain(params, theta)
        for j in range(d):
            dev[j] += theta[j] - theta_star[j]
        if i == pow2:
            pow2 *= 2
            finite = True
            for j in range(d):
                finite = finite and np.isfinite(dev[j] * dev[j])  # its square is what gets averaged
            if not finite:  # diverged: stop, the driver counts it
                release_rng(stream, gen)
                return i
        if i == next_ck:
            inv_i = 1.0 / i
            for j in range(d):
                last[q, j] = theta[j] - theta_star[j]
                average[q, j] = dev[j] * inv_i
            q += 1
            next_ck = checkpoints[q] if q < n_ck else n + 1
        if i & POLL_MASK == 0 and stop_requested(stop):  # Ctrl-C (ldpsim.engine.interrupt)
            release_rng(stream, gen)
            return i
    release_rng(stream, gen)
    return n


def run_trajectory(model, gen: np.random.Generator, n: int, c: float, gamma: float, theta0: float,
                   checkpoints: np.ndarray, batch_size: int = 1):
    """Run one path of ``n`` steps and record its squared errors at ``checkpoints``.

    Parameters
    ----------
    model : ldpsim.models.Model
        Supplies the kernel parameters and ``theta_star``.
    gen : numpy.random.Generator
        The replication's generator; the kernel advances it.
    n : int
        Steps; ``checkpoints[-1] <= n``.
    c, gamma : float
        Step size ``eta_i = c i^-gamma``.
    theta0 : float
        Starting value of every coordinate.
    checkpoints : numpy.ndarray
        Strictly increasing ``int64`` steps ``>= 1``.
    batch_size : int
        Observations per step.

    Returns
    -------
    last, average : numpy.ndarray
        ``theta_k - theta*`` and ``theta_bar_k - theta*``, shape ``(C, d)``
        (a row per checkpoint); all NaN if the path diverged.
    steps : int
        Steps completed: ``n``, or fewer if the path diverged and stopped.
    """
    d = model.dim
    theta = np.full(d, float(theta0))
    work = np.zeros((2, d))  # grad, dev
    last = np.full((checkpoints.shape[0], d), np.nan)
    average = np.full((checkpoints.shape[0], d), np.nan)
    steps = _trajectory_path(model.kernel_params(), kernel_rng(gen), int(n), int(batch_size), float(c),
                             float(gamma), theta, np.asarray(model.theta_star(), dtype=float), work[0], work[1],
                             np.asarray(checkpoints, dtype=np.int64), last, average, interrupt.FLAG)
    interrupt.check()  # a path stopped by Ctrl-C is no result
    if steps < n:  # checkpoints passed before the divergence was seen may already be far off
        last[:] = np.nan
        average[:] = np.nan
    return last, average, int(steps)


def trajectory_twin(model, gen: np.random.Generator, n: int, c: float, gamma: float, theta0: float,
                    checkpoints: np.ndarray, batch_size: int = 1):
    """Plain-Python twin of :func:`run_trajectory`: the same arithmetic in the same order."""
    d = model.dim
    params = model.kernel_params()
    theta_star = np.asarray(model.theta_star(), dtype=float)
    theta = np.full(d, float(theta0))
    grad, dev = np.zeros(d), np.zeros(d)
    etas = step_sizes_twin(n, c, gamma)
    last = np.full((len(checkpoints), d), np.nan)
    average = np.full((len(checkpoints), d), np.nan)
    q, pow2, inv_s = 0, 1, 1.0 / batch_size
    constrain(params, theta)
    for i in range(1, n + 1):
        w = etas[i - 1] * inv_s
        for _ in range(batch_size):
            add_privatized_gradient(params, theta, gen, grad)
        for j in range(d):
            theta[j] = theta[j] - w * grad[j]
            grad[j] = 0.0
        constrain(params, theta)
        for j in range(d):
            dev[j] += theta[j] - theta_star[j]
        if i == pow2:
            pow2 *= 2
            if not np.isfinite(dev * dev).all():
                last[:], average[:] = np.nan, np.nan
                return last, average, i
        if q < len(checkpoints) and i == checkpoints[q]:
            inv_i = 1.0 / i
            for j in range(d):
                last[q, j] = theta[j] - theta_star[j]
                average[q, j] = dev[j] * inv_i
            q += 1
    return last, average, n


def squared_norms(deviations: np.ndarray) -> np.ndarray:
    """``||deviation||^2`` per replication and checkpoint from ``(R, C, d)`` deviations."""
    return np.einsum("rcd,rcd->rc", deviations, deviations)


def replication(model, gen: np.random.Generator, setting, checkpoints: np.ndarray, twin: bool = False) -> dict:
    """One replication of the trajectory study: ``last``, ``average`` (``(C, d)`` deviations) and ``ok``.

    By the kernel or, with ``twin``, its Python twin. ``ok`` is False for a
    path that diverged (the driver counts it).
    """
    path = trajectory_twin if twin else run_trajectory
    s = setting
    last, average, steps = path(model, gen, s.n, s.c, s.gamma, s.theta0, checkpoints, s.batch_size)
    ok = steps == s.n and bool(np.isfinite(squared_norms(np.stack([last, average]))).all())
    return {"last": last, "average": average, "ok": ok}


__all__ = ["replication", "run_trajectory", "squared_norms", "trajectory_twin"]
