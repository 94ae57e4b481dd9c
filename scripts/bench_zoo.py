"""Benchmark of the method zoo's kernel passes against their own RNG floors.

For each zoo method, a kernel pass of the main LDP-SGD path with that
method's paths and state (``ldpsim.recursion.zoo``) is timed at the default
lanes, and so is a jitted loop that draws exactly the random numbers of that
pass and nothing else (its floor): the main path's, and for each answer of
the method's own paths its privacy noise (OB and OB_split: ``B`` perturbed
paths, each a weight ``W ~ exponential(1)`` and an answer; OB_split also its
own main path's answer). The ratio pass / floor says how close a method runs
to the cost of its random numbers; the aim is the slowest within 3x.

    python scripts/bench_zoo.py [--n 200000] [--paths 100] [--repeats 3] [--model quantile|quantile_regression] [--lanes L]

Ratios are taken in one run; they differ between machines: the script prints
the CPU and the load with them.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np

from ldpsim.engine.dialect.jit import jit
from ldpsim.engine.dialect.lanes import lane_array, vector_width
from ldpsim.engine.dialect.rng import exponential, kernel_rngs, local_rng, normal, release_rng, uniform
from ldpsim.inference.streaming import StreamLayout
from ldpsim.inference.methods import ZOO_METHODS
from ldpsim.inference.zoo import HiGradLayout, HulCLayout, OBMLayout
from ldpsim.models import QuantileModel, QuantileRegressionModel
from ldpsim.recursion.kernels import run_paths_lanes
from ldpsim.recursion.zoo import STREAM_CODES, ZooSpec

C, GAMMA, THETA0, EPSILON = 1.0, 0.51, 0.0, 1.0
LANES = vector_width()


@jit
def quantile_floor(main, other, n, weights, answers, out):
    """Per step: the main path's normal and uniform; ``weights`` exponentials and ``answers`` uniforms (RR) on ``other``."""
    a = local_rng(main)
    b = local_rng(other)
    s = 0.0
    for _ in range(n):
        s += normal(a)
        s += uniform(a)
        for _ in range(weights):
            s += exponential(b)
        for _ in range(answers):
            s += uniform(b)
    release_rng(main, a)
    release_rng(other, b)
    out[0] = s


@jit
def qr_floor(main, other, n, d, weights, answers, out):
    """Per step: the main path's covariates, error and Laplace noise; then ``weights`` exponentials and ``answers``
    Laplace vectors (``2 d`` exponentials each) on ``other``. The truncated covariates' rare redraws are not
    counted (under 0.5% of the draws at bound 1): the floor is a little low, the ratio a little high."""
    a = local_rng(main)
    b = local_rng(other)
    s = 0.0
    for _ in range(n):
        for _ in range(d):
            s += normal(a)
        for _ in range(2 * d):
            s += exponential(a)
        for _ in range(weights):
            s += exponential(b)
        for _ in range(answers * 2 * d):
            s += exponential(b)
    release_rng(main, a)
    release_rng(other, b)
    out[0] = s


def gens(seed, code=0, lanes=LANES):
    return [np.random.Generator(np.random.SFC64(np.random.SeedSequence(seed, spawn_key=(j, code))))
            for j in range(lanes)]


def spec_for(method, split, n, paths):
    """The main path and ``method`` alone (as the coverage study times each method)."""
    return ZooSpec(HulCLayout.build(n, 5) if method == "HulC" else None,
                   HiGradLayout.build(n) if method == "HiGrad" else None, method == "OB", method == "OB_split", paths,
                   split if method == "OB_split" else None, OBMLayout.build(n, GAMMA) if method == "OBM" else None,
                   method == "plugin_oracle", THETA0)


def draws(method, paths):
    """``(weights, answers)`` per step of the method's own streams."""
    return {"HulC": (0, 1), "HiGrad": (0, 1), "OB": (paths, paths), "OB_split": (paths, paths + 1)}.get(method, (0, 0))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=2e5, help="steps per replication")
    parser.add_argument("--paths", type=int, default=100, help="OB's perturbed paths B")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", default="quantile", choices=("quantile", "quantile_regression"))
    parser.add_argument("--lanes", type=int, default=LANES, help=f"replications per kernel call (default {LANES})")
    args = parser.parse_args(argv)
    lanes = args.lanes
    n = int(args.n)
    if args.model == "quantile":
        model, split = QuantileModel(0.5, EPSILON), QuantileModel(0.5, EPSILON / (args.paths + 1))
    else:
        model = QuantileRegressionModel(0.5, epsilon=EPSILON)
        split = QuantileRegressionModel(0.5, epsilon=EPSILON / (args.paths + 1))
    layouts = [StreamLayout.build(n, 0.75, GAMMA, blocks=False, batches=False)]
    out = lane_array(1, lanes)

    def kernel(method, seed, steps=n):
        spec = None if method == "main" else spec_for(method, split, steps, args.paths)
        g = gens(seed, lanes=lanes)
        zoo_gens = None if spec is None else {m: gens(seed, STREAM_CODES[m], lanes) for m in STREAM_CODES}
        lays = layouts if steps == n else [StreamLayout.build(steps, 0.75, GAMMA, blocks=False, batches=False)]
        run_paths_lanes(model, g, steps, C, GAMMA, THETA0, lays, 1, lanes, spec, zoo_gens)

    def floor(method, seed, steps=n):
        w, a = draws(method, args.paths)
        if args.model == "quantile":
            quantile_floor(kernel_rngs(gens(seed, 0, lanes)), kernel_rngs(gens(seed, 9, lanes)), steps, w, a, out)
        else:
            qr_floor(kernel_rngs(gens(seed, 0, lanes)), kernel_rngs(gens(seed, 9, lanes)), steps, model.dim, w, a, out)

    methods = ["main", *ZOO_METHODS]
    for m in methods:  # compile (or load) first
        kernel(m, 0, 4096)
        floor(m, 0, 4096)
    times = {m: {"pass": [], "floor": []} for m in methods}
    for rep in range(args.repeats):
        for m in methods:
            for what, func in (("pass", kernel), ("floor", floor)):
                start = time.perf_counter()
                func(m, 100 + rep)
                times[m][what].append((time.perf_counter() - start) / (n * lanes) * 1e9)
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next(line.split(":", 1)[1].strip() for line in fh if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"machine: {cpu}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; model {args.model}, epsilon "
          f"{EPSILON}, n = {n}, B = {args.paths}, {lanes} lanes; median of {args.repeats}, ns per replication-step")
    print(f"{'method':15s} {'pass':>10s} {'floor':>10s} {'pass/floor':>11s}")
    worst = ("", 0.0)
    for m in methods:
        p, f = statistics.median(times[m]["pass"]), statistics.median(times[m]["floor"])
        print(f"{m:15s} {p:10.2f} {f:10.2f} {p / f:11.2f}")
        if m != "main" and p / f > worst[1]:
            worst = (m, p / f)
    print(f"slowest against its floor: {worst[0]} at {worst[1]:.2f}x (the aim: <= 3x)")


if __name__ == "__main__":
    main()
