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

from ...engine.dialect import interrupt
from ...engine.dialect.interrupt import POLL_MASK, stop_requested
from ...engine.dialect.jit import jit
from ...engine.dialect.lanes import any_lane, lane_array, lane_of, lnot, padded, where
from ...engine.dialect.rng import kernel_rngs, local_rng, release_rng
from ...models import add_privatized_gradient, constrain
from ...recursion.kernels import step_ratio_coefficients, step_size
from ...recursion.twins import step_sizes_twin


@jit
def _trajectory_path(params, rngs, n, batch_size, c, gamma, theta, theta_star, grad, dev, checkpoints, last,
                     average, stop, steps):
    # Lane-generic (ldpsim.engine.dialect.lanes): one path, or L side by side (rngs of L generators, LaneArray state
    # and records). theta starts at theta0; grad and dev are zeroed (d,) work arrays of the wrapper.
    # On return steps[0] is n, or the step at which the path stopped (it diverged, or the run was
    # interrupted); a lane that stopped keeps computing, unrecorded.
    gen = local_rng(rngs)  # the generators' states in registers; release_rng writes them back
    d = theta.shape[0]
    n_ck = checkpoints.shape[0]
    q = 0
    next_ck = checkpoints[0]
    pow2 = 1
    ratio = step_ratio_coefficients(gamma)
    inv_s = 1.0 / batch_size
    eta = c
    running = True
    stopped = 0
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
                finite = finite & np.isfinite(dev[j] * dev[j])  # its square is what gets averaged
            diverged = running & lnot(finite)
            if any_lane(diverged):  # those paths stop; the driver counts them
                stopped = where(diverged, i, stopped)
                running = running & lnot(diverged)
                if not any_lane(running):
                    break
        if i == next_ck:
            inv_i = 1.0 / i
            for j in range(d):
                last[q, j] = theta[j] - theta_star[j]
                average[q, j] = dev[j] * inv_i
            q += 1
            next_ck = checkpoints[q] if q < n_ck else n + 1
        if i & POLL_MASK == 0 and stop_requested(stop):  # Ctrl-C (ldpsim.engine.dialect.interrupt)
            stopped = where(running, i, stopped)
            running = False
            break
    release_rng(rngs, gen)
    steps[0] = where(running, n, stopped)


def run_trajectories(model, gens, n: int, c: float, gamma: float, theta0: float, checkpoints: np.ndarray,
                     batch_size: int = 1, width: int | None = None):
    """:func:`run_trajectory` for the replications of ``gens`` side by side (lanes): one result per generator.

    One kernel call of ``width`` lanes (default ``len(gens)``; more are padded)
    advances every path (:mod:`ldpsim.engine.dialect.lanes`); path ``l`` is the one
    :func:`run_trajectory` gives for ``gens[l]`` alone, to the bit.
    """
    count = len(gens)
    gens = padded(gens, width or count)
    lanes = len(gens)
    d = model.dim
    theta = lane_array(d, lanes, float(theta0))
    grad, dev = lane_array(d, lanes), lane_array(d, lanes)
    last = lane_array((checkpoints.shape[0], d), lanes, np.nan)
    average = lane_array((checkpoints.shape[0], d), lanes, np.nan)
    steps = lane_array(1, lanes, 0, np.int64)
    _trajectory_path(model.kernel_params(lanes), kernel_rngs(gens), int(n), int(batch_size), float(c), float(gamma),
                     theta, np.asarray(model.theta_star(), dtype=float), grad, dev,
                     np.asarray(checkpoints, dtype=np.int64), last, average, interrupt.FLAG, steps)
    interrupt.check()  # a path stopped by Ctrl-C is no result
    out = []
    for lane in range(count):
        done = int(lane_of(steps, lane)[0])
        own_last, own_average = lane_of(last, lane).copy(), lane_of(average, lane).copy()
        if done < n:  # checkpoints passed before the divergence was seen may already be far off
            own_last[:] = np.nan
            own_average[:] = np.nan
        out.append((own_last, own_average, done))
    return out


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
    return run_trajectories(model, [gen], n, c, gamma, theta0, checkpoints, batch_size)[0]


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


def replications(model, gens, setting, checkpoints: np.ndarray, twin: bool = False, width: int | None = None) -> list[dict]:
    """Replications of the trajectory study, one per generator: ``last``, ``average`` (``(C, d)`` deviations), ``ok``.

    By the kernel (their paths side by side, ``width`` lanes) or, with
    ``twin``, its Python twin one by one. ``ok`` is False for a path that
    diverged (the driver counts it).
    """
    s = setting
    if twin:
        paths = [trajectory_twin(model, gen, s.n, s.c, s.gamma, s.theta0, checkpoints, s.batch_size) for gen in gens]
    else:
        paths = run_trajectories(model, gens, s.n, s.c, s.gamma, s.theta0, checkpoints, s.batch_size, width)
    out = []
    for last, average, steps in paths:
        ok = steps == s.n and bool(np.isfinite(squared_norms(np.stack([last, average]))).all())
        out.append({"last": last, "average": average, "ok": ok})
    return out


def replication(model, gen: np.random.Generator, setting, checkpoints: np.ndarray, twin: bool = False) -> dict:
    """One replication of the trajectory study (:func:`replications` of one generator)."""
    return replications(model, [gen], setting, checkpoints, twin)[0]


__all__ = ["replication", "replications", "run_trajectories", "run_trajectory", "squared_norms",
           "trajectory_twin"]
