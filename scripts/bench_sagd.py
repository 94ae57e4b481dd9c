"""Benchmark of the SAGD kernel (studies ``sagd_*``): cost per step against its floors.

One SAGD step on a training set of n points costs one pass over the data (a
dot product, a sigmoid and d multiply-adds per point), d Laplace draws (2 d
standard exponentials) and the update. Measured, medians over ``repeats``
interleaved repetitions in one process (logistic model, d = 5, n = 1e4,
T = 200, DPG-Lap, full batch):

* ``kernel_ns_per_step``: :func:`ldpsim.studies.sagd.kernel.run_path` without
  tracking (what the generalization study's paths cost between checkpoints);
* ``rng_floor_ns_per_step``: a jitted loop making the same draws, in the same
  order, and nothing else (``rng_floor_consumes_like_kernel`` checks it leaves
  the generator where the kernel does);
* ``pass_floor_ns_per_step``: a jitted loop computing the mean gradient over
  the data once per step, nothing else (the arithmetic floor);
* ``kernel_over_floor``: kernel / (RNG floor + pass floor);
* ``tracked_ns_per_step``: with the exact population gradient at every step
  (K = 32^2 quadrature nodes; the concentration and rate studies).

Usage: ``python scripts/bench_sagd.py [--repeats 5]``. Timings are reported, never asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time

import numpy as np

from ldpsim.engine.dialect.jit import jit  # imports ldpsim first: fixes numba's cache directory
from ldpsim.engine.dialect.interrupt import FLAG, poll_mask
from ldpsim.engine.dialect.rng import as_generator, exponential, kernel_rng, local_rng, normal, release_rng, uniform
from ldpsim.models.erm import ErmModel
from ldpsim.studies.sagd.kernel import LAP, N_STATS, PathParams, draw_data, run_path

D, N, T, SIGMA = 5, 10_000, 200, 0.5


@jit
def rng_floor(stream, n, d, steps):
    """The kernel's draws: per point d - 1 normals and a uniform; per step 2 d exponentials."""
    gen = local_rng(stream)  # as the kernels draw: the generator's state in registers
    s = 0.0
    for _ in range(n):
        for _ in range(d - 1):
            s += normal(gen)
        s += uniform(gen)
    for _ in range(steps):
        for _ in range(2 * d):
            s += exponential(gen)
    release_rng(stream, gen)
    return s


@jit
def pass_floor(X, y, w, out, steps):
    """The mean logistic gradient over the data, ``steps`` times: the arithmetic every step must do."""
    n, d = X.shape
    for _ in range(steps):
        for j in range(d):
            out[j] = 0.0
        for i in range(n):
            u = 0.0
            for j in range(d):
                u += X[i, j] * w[j]
            psi = 1.0 / (1.0 + math.exp(-u)) - y[i]
            for j in range(d):
                out[j] += psi * X[i, j]
        for j in range(d):
            out[j] = out[j] / n
            w[j] -= 1e-3 * out[j]
    return out[0]


def _kernel_once(model, seed, track):
    gen = as_generator(seed)
    params = model.kernel_params()
    X, y = np.empty((N, D)), np.empty(N)
    rng = kernel_rng(gen)
    draw_data(params, rng, X, y)
    run = PathParams(LAP, T, 1, N // 2, 0.2, 0.1, 0.9, 0.9, SIGMA, 0.0, T, track)
    w = np.zeros(D)
    args = (params, rng, X, y, run, w, np.zeros((6, D)), np.array([1.0]), np.zeros(3, dtype=np.int64),
            np.zeros(N_STATS), np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0), FLAG, poll_mask(N * D))
    tic = time.perf_counter()
    run_path(*args)
    return time.perf_counter() - tic, gen, X, y


def bench(repeats: int = 5) -> dict:
    """Medians of ``repeats`` interleaved timings; see the module docstring for the keys."""
    model = ErmModel("logistic", D, nodes=32)
    _kernel_once(model, 0, False)  # compile
    _kernel_once(model, 0, True)
    rng_floor(kernel_rng(as_generator(0)), 4, D, 2)
    pass_floor(np.ones((4, D)), np.zeros(4), np.zeros(D), np.zeros(D), 1)
    kernel, tracked, rng_t, pass_t = [], [], [], []
    consumes = True
    for r in range(repeats):
        seconds, gen_k, X, y = _kernel_once(model, r, False)
        kernel.append(seconds)
        tracked.append(_kernel_once(model, r, True)[0])
        gen_f = as_generator(r)
        tic = time.perf_counter()
        rng_floor(kernel_rng(gen_f), N, D, T)
        total = time.perf_counter() - tic
        consumes = consumes and np.array_equal(gen_f.bit_generator.state["state"]["state"],
                                               gen_k.bit_generator.state["state"]["state"])
        # the data draw is part of the replication, not of a step: time it alone and take it off
        gen_d = as_generator(r)
        tic = time.perf_counter()
        rng_floor(kernel_rng(gen_d), N, D, 0)
        rng_t.append(max(total - (time.perf_counter() - tic), 0.0))
        tic = time.perf_counter()
        pass_floor(X, y, np.zeros(D), np.zeros(D), T)
        pass_t.append(time.perf_counter() - tic)
    per = {k: statistics.median(v) / T * 1e9 for k, v in
           (("kernel", kernel), ("tracked", tracked), ("rng", rng_t), ("pass", pass_t))}
    return {
        "kernel_ns_per_step": per["kernel"],
        "kernel_ns_per_sample_step": per["kernel"] / N,
        "rng_floor_ns_per_step": per["rng"],
        "pass_floor_ns_per_step": per["pass"],
        "kernel_over_floor": per["kernel"] / (per["rng"] + per["pass"]),
        "tracked_ns_per_step": per["tracked"],
        "tracking_ns_per_step": per["tracked"] - per["kernel"],
        "rng_floor_consumes_like_kernel": bool(consumes),
        "n": N, "d": D, "T": T, "repeats": repeats,
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args(argv)
    res = bench(args.repeats)
    print(f"SAGD kernel (DPG-Lap, logistic d = {D}, n = {N:,}, T = {T}), per step: {res['kernel_ns_per_step']:,.0f} ns "
          f"({res['kernel_ns_per_sample_step']:.2f} ns per point)")
    print(f"  RNG floor (2 d exponentials), per step:        {res['rng_floor_ns_per_step']:,.0f} ns")
    print(f"  pass floor (mean gradient over S), per step:   {res['pass_floor_ns_per_step']:,.0f} ns")
    print(f"  kernel / (RNG floor + pass floor):             {res['kernel_over_floor']:.3f}")
    print(f"  with the exact population gradient each step:  {res['tracked_ns_per_step']:,.0f} ns "
          f"(+{res['tracking_ns_per_step']:,.0f} ns for 1024 quadrature nodes)")
    print(f"  RNG floor leaves the generator where the kernel does: {res['rng_floor_consumes_like_kernel']}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=2)


if __name__ == "__main__":
    main()
