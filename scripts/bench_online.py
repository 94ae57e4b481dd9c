"""Benchmark of the online LDP-SGD step of 004: the d = 10 Huber kernel against its RNG floor.

The trajectory kernel (:func:`ldpsim.studies.trajectory.kernel.run_trajectory`)
on the Mallows-weighted Huber regression with joint scale, ``dim = 10``
(``p = 12`` parameters), mu = 1 GDP, ``eta_i = 0.2 i^-1/2``, one checkpoint;
and its RNG floor: a jitted loop that draws what a step draws, in the
kernel's order, through the same :mod:`ldpsim.engine.rng` functions on
``kernel_rng(gen)``, and nothing else: 10 normals (``z``), one normal (the
error), 12 normals (the noise). The same with per-user budgets
``mu_i ~ U(1, 2)`` (one more uniform a step, before the noise). Kernel and
floor are timed interleaved, medians of ``repeats`` runs; a sanity check
requires that floor and kernel leave the generator in the same state.

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

from ldpsim.engine.jit import jit  # imports ldpsim first: fixes numba's cache directory
from ldpsim.engine.rng import as_generator, kernel_rng, local_rng, normal, release_rng, uniform
from ldpsim.models import MODELS
from ldpsim.studies.trajectory.kernel import run_trajectory

DIM, C, GAMMA, THETA0 = 10, 0.2, 0.5, 0.0


@jit
def huber_floor(stream, n, d, p, per_user):
    """Draw what a Huber step draws (``d`` + 1 normals, a uniform if ``per_user``, ``p`` normals), summed."""
    gen = local_rng(stream)  # as the kernels draw: the generator's state in registers
    s = 0.0
    for _ in range(n):
        for _ in range(d + 1):
            s += normal(gen)
        if per_user:
            s += uniform(gen)
        for _ in range(p):
            s += normal(gen)
    release_rng(stream, gen)
    return s


def _model(per_user: bool):
    kwargs = {"budget": "uniform(1, 2)"} if per_user else {"mu": 1.0}
    return MODELS["huber_mallows"](dim=DIM, mechanism="gdp", **kwargs)


def run_kernel(n: int, seed: int, per_user: bool = False, gen=None):
    """One kernel path of ``n`` steps; returns the generator it advanced."""
    gen = as_generator(seed) if gen is None else gen
    run_trajectory(_model(per_user), gen, n, C, GAMMA, THETA0, np.array([n], dtype=np.int64))
    return gen


def run_floor(n: int, seed: int, per_user: bool = False):
    """The floor for ``n`` steps on a fresh generator; returns the generator."""
    gen = as_generator(seed)
    model = _model(per_user)
    huber_floor(kernel_rng(gen), n, DIM, model.p, per_user)
    return gen


def same_draws(n: int = 5000, per_user: bool = False) -> bool:
    """Whether floor and kernel consume the generator alike over ``n`` steps."""
    return run_kernel(n, 7, per_user).random() == run_floor(n, 7, per_user).random()


def _time(func, *args) -> float:
    start = time.perf_counter()
    func(*args)
    return time.perf_counter() - start


def bench(repeats: int = 5, n: int = 1_000_000) -> dict:
    """Median ns per step of the d = 10 Huber kernel and its RNG floor (constant and per-user budgets).

    The ratio is the median over repeats of each kernel run's time over the
    floor run that follows it (on a shared machine, more robust than the
    ratio of the medians).

    Returns
    -------
    dict
        ``huber_d10_ns_per_step``, ``huber_d10_floor_ns_per_step``,
        ``huber_d10_kernel_over_floor``, the same with ``_per_user`` for
        ``mu_i ~ U(1, 2)``, and ``floor_consumes_like_kernel`` (bool).
    """
    out = {"floor_consumes_like_kernel": same_draws() and same_draws(per_user=True)}
    for per_user, suffix in ((False, ""), (True, "_per_user")):
        run_kernel(1000, 0, per_user)  # compile / load from cache
        run_floor(1000, 0, per_user)
        kernel, floor = [], []
        for r in range(repeats):
            kernel.append(_time(run_kernel, n, r, per_user))
            floor.append(_time(run_floor, n, r, per_user))
        k, f = statistics.median(kernel) / n * 1e9, statistics.median(floor) / n * 1e9
        out[f"huber_d10{suffix}_ns_per_step"] = k
        out[f"huber_d10{suffix}_floor_ns_per_step"] = f
        # each kernel run against the floor run right after it, so that load drift cancels in the ratio
        out[f"huber_d10{suffix}_kernel_over_floor"] = statistics.median(a / b for a, b in zip(kernel, floor))
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
        print(f"Huber d = 10 kernel ({what}), per SGD step: {res[f'huber_d10{suffix}_ns_per_step']:.1f} ns")
        print(f"  its RNG floor (23 normals{' + 1 uniform' if suffix else ''}): "
              f"{res[f'huber_d10{suffix}_floor_ns_per_step']:.1f} ns")
        print(f"  kernel / RNG floor: {res[f'huber_d10{suffix}_kernel_over_floor']:.2f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=2)


if __name__ == "__main__":
    main()
