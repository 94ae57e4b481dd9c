"""Benchmark of the online LDP-SGD step of Shi et al. (2025): the d = 10 Huber kernel against its RNG floor.

The trajectory kernel (:func:`ldpsim.studies.trajectory.kernel.run_trajectory`)
on the Mallows-weighted Huber regression with joint scale, ``dim = 10``
(``p = 12`` parameters), mu = 1 GDP, ``eta_i = 0.2 i^-1/2``, one checkpoint;
and its RNG floor: a jitted loop that draws what a step draws, in the
kernel's order, through the same :mod:`ldpsim.engine.dialect.rng` functions on
``kernel_rng(gen)``, and nothing else: 10 normals (``z``), one normal (the
error), 12 normals (the noise). The same with per-user budgets
``mu_i ~ U(1, 2)`` (one more uniform a step, before the noise). Both at one
lane and at the study's default lanes (replications side by side,
:mod:`ldpsim.engine.dialect.lanes`), the floor drawn with the same lanes, in ns per
replication-step. Kernel and floor are timed interleaved, medians of
``repeats`` runs; a sanity check requires that floor and kernel leave the
generator in the same state.

Usage: ``python scripts/bench_online.py [--n 1e6] [--repeats 5] [--json PATH]``.
Timings are reported, never asserted. :func:`bench` is what ``scripts/bench.py``
calls.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from ldpsim.engine.dialect.jit import jit  # imports ldpsim first: fixes numba's cache directory
from ldpsim.engine.dialect.lanes import lane_array, vector_width
from ldpsim.engine.dialect.rng import as_generator, kernel_rngs, local_rng, normal, release_rng, uniform
from ldpsim.models import MODELS
from ldpsim.studies.trajectory.kernel import run_trajectories

DIM, C, GAMMA, THETA0 = 10, 0.2, 0.5, 0.0


@jit
def huber_floor(rngs, n, d, p, per_user, out):
    """Draw what a Huber step draws (``d`` + 1 normals, a uniform if ``per_user``, ``p`` normals); sum into ``out[0]``.

    One replication, or several side by side (lanes) as the kernel draws them.
    """
    gen = local_rng(rngs)  # as the kernels draw: the generators' states in registers
    s = 0.0
    for _ in range(n):
        for _ in range(d + 1):
            s += normal(gen)
        if per_user:
            s += uniform(gen)
        for _ in range(p):
            s += normal(gen)
    release_rng(rngs, gen)
    out[0] = s


def _model(per_user: bool):
    kwargs = {"budget": "uniform(1, 2)"} if per_user else {"mu": 1.0}
    return MODELS["huber_mallows"](dim=DIM, mechanism="gdp", **kwargs)


def _gens(seed: int, lanes: int):
    return [as_generator(seed * 1000 + j) for j in range(lanes)]


def run_kernel(n: int, seed: int, per_user: bool = False, lanes: int = 1):
    """``lanes`` kernel paths of ``n`` steps side by side; returns the generators it advanced."""
    gens = _gens(seed, lanes)
    run_trajectories(_model(per_user), gens, n, C, GAMMA, THETA0, np.array([n], dtype=np.int64))
    return gens


def run_floor(n: int, seed: int, per_user: bool = False, lanes: int = 1):
    """The floor for ``n`` steps of ``lanes`` replications side by side on fresh generators; returns them."""
    gens = _gens(seed, lanes)
    huber_floor(kernel_rngs(gens), n, DIM, _model(per_user).p, per_user, lane_array(1, lanes))
    return gens


def same_draws(n: int = 5000, per_user: bool = False, lanes: int = 1) -> bool:
    """Whether floor and kernel consume the generators alike over ``n`` steps."""
    return all(a.random() == b.random() for a, b in zip(run_kernel(n, 7, per_user, lanes),
                                                      run_floor(n, 7, per_user, lanes)))


def _time(func, *args) -> float:
    start = time.perf_counter()
    func(*args)
    return time.perf_counter() - start


def bench(repeats: int = 5, n: int = 1_000_000, widths=None) -> dict:
    """Median ns per replication-step of the d = 10 Huber kernel and its RNG floor, per lane width.

    ``widths``: 1 and the default (:func:`~ldpsim.engine.dialect.lanes.vector_width`).
    The ratio is the median over repeats of each kernel run's time over the
    floor run that follows it (on a shared machine, more robust than the
    ratio of the medians).

    Returns
    -------
    dict
        Per width ``L``: ``huber_d10_L{L}_ns_per_step``, ``..._floor_ns_per_step``,
        ``..._kernel_over_floor``, the same with ``_per_user`` for ``mu_i ~ U(1, 2)``;
        ``widths``, ``default``, and ``floor_consumes_like_kernel`` (bool).
    """
    default = vector_width()
    widths = widths or sorted({1, default})
    out = {"widths": list(widths), "default": default,
           "floor_consumes_like_kernel": all(same_draws(2000, per_user, lanes) for per_user in (False, True)
                                             for lanes in widths)}
    for per_user, suffix in ((False, ""), (True, "_per_user")):
        for lanes in widths:
            steps = max(1, n // lanes)
            run_kernel(1000, 0, per_user, lanes)  # compile / load from cache
            run_floor(1000, 0, per_user, lanes)
            kernel, floor = [], []
            for r in range(repeats):
                kernel.append(_time(run_kernel, steps, r, per_user, lanes))
                floor.append(_time(run_floor, steps, r, per_user, lanes))
            k = statistics.median(kernel) / (steps * lanes) * 1e9
            f = statistics.median(floor) / (steps * lanes) * 1e9
            key = f"huber_d10_L{lanes}{suffix}"
            out[f"{key}_ns_per_step"] = k
            out[f"{key}_floor_ns_per_step"] = f
            # each kernel run against the floor run right after it, so that load drift cancels in the ratio
            out[f"{key}_kernel_over_floor"] = statistics.median(a / b for a, b in zip(kernel, floor))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e6, help="steps per timed run")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args(argv)
    res = bench(args.repeats, int(args.n))
    print(f"floor draws what the kernel draws, in its order: {'yes' if res['floor_consumes_like_kernel'] else 'NO'}")
    for suffix, what in (("", "mu = 1"), ("_per_user", "mu_i ~ U(1, 2)")):
        for lanes in res["widths"]:
            key = f"huber_d10_L{lanes}{suffix}"
            print(f"Huber d = 10 kernel ({what}), L = {lanes}, per replication-step: {res[f'{key}_ns_per_step']:.1f} ns; "
                  f"its RNG floor (23 normals{' + 1 uniform' if suffix else ''}, same lanes) "
                  f"{res[f'{key}_floor_ns_per_step']:.1f} ns; kernel / floor {res[f'{key}_kernel_over_floor']:.2f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=2)


if __name__ == "__main__":
    main()
