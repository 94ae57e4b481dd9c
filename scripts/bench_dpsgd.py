"""Benchmark of the DP-SGD step (Xia, Zhang & Cai 2025, Algorithm 1 with per-example clipping) against its RNG floor.

One step of the kernel at batch size m draws m uniforms (the batch, without replacement) and d = 3 normals
(the noise), computes m clipped per-example gradients of linear regression and streams the inference state
(random-scaling sums, BB blocks, BM batches). Its RNG floor is a jitted loop making the same draws in the
same order and nothing else, measured in the same process, interleaved with the kernel. Medians of
``repeats`` runs.

    python scripts/bench_dpsgd.py            # prints the table
    python scripts/bench_dpsgd.py --figure2 results/dpsgd   # adds the Figure 2 run's wall time from meta.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from ldpsim.engine.dialect.jit import jit
from ldpsim.engine.dialect.lanes import lane_array
from ldpsim.engine.dialect.rng import as_generator, kernel_rngs, local_rng, normal, release_rng, uniform
from ldpsim.inference.streaming import StreamLayout
from ldpsim.studies.dpsgd.kernel import draw_data, run_dpsgd, run_dpsgd_lanes
from ldpsim.studies.dpsgd.study import default_lanes

N = 1000
STEPS = 2_000_000


@jit
def _floor(rngs, steps, m, n, d, out):
    # the kernel's draws in its order and nothing else, for one replication or L side by side (lanes),
    # drawn as the kernel draws them; their sum goes to out[0] so that none is left out
    gen = local_rng(rngs)
    acc = 0.0
    for _ in range(steps):
        for q in range(m):
            acc += uniform(gen) * (n - q)
        for _ in range(d):
            acc += normal(gen)
    release_rng(rngs, gen)
    out[0] = acc


def floor_seconds(gens, steps: int, m: int = 1, n: int = N, d: int = 3) -> float:
    """Seconds of :func:`_floor` over ``steps`` steps of the replications of ``gens`` side by side."""
    out = lane_array(1, len(gens))
    tic = time.perf_counter()
    _floor(kernel_rngs(gens), steps, m, n, d, out)
    return time.perf_counter() - tic


#: The widths timed (the study's default is :func:`ldpsim.studies.dpsgd.study.DpsgdStudy.default_lanes`).
WIDTHS = (1, 2, 4, 8)


def bench_lanes(repeats: int = 5, steps: int = STEPS, widths=WIDTHS) -> dict:
    """ns per replication-step at each lane width (m = 1, d = 3), each against its floor with the same lanes."""
    lanes = max(widths)
    gens = [as_generator(j) for j in range(lanes)]
    data = [draw_data(g, "linear", np.eye(3), N, 1.0)[1:] for g in gens]
    layout = StreamLayout.build(steps, 0.75, 0.501)
    out = {}
    for width in widths:
        args = ("linear", "swor", steps, 1, 0.2, 0.501, 6.0, 11.0, 0.0, layout)
        run_dpsgd_lanes(gens[:width], data[:width], "linear", "swor", 100, 1, 0.2, 0.501, 6.0, 11.0, 0.0,
                        StreamLayout.build(100, 0.5, 0.501))
        floor_seconds(gens[:width], 10)
        kernel, floor = [], []
        for _ in range(repeats):
            tic = time.perf_counter()
            run_dpsgd_lanes(gens[:width], data[:width], *args)
            kernel.append((time.perf_counter() - tic) / (steps * width) * 1e9)
            floor.append(floor_seconds(gens[:width], steps) / (steps * width) * 1e9)
        k, f = statistics.median(kernel), statistics.median(floor)
        out[f"L{width}_ns"] = round(k, 2)
        out[f"L{width}_floor_ns"] = round(f, 2)
        out[f"L{width}_ratio"] = round(k / f, 3)
    out["widths"] = list(widths)
    out["default"] = default_lanes()
    out["speedup"] = round(out["L1_ns"] / out[f"L{out['default']}_ns"], 3) if out["default"] in widths else None
    return out


def bench(repeats: int = 5, steps: int = STEPS) -> dict:
    """ns per DP-SGD step at m = 1 and m = 10 and the ratio to the RNG floor (medians of ``repeats`` runs)."""
    gen = as_generator(1)
    _, X, y, xnorm = draw_data(gen, "linear", np.eye(3), N, 1.0)
    layout = StreamLayout.build(steps, 0.75, 0.501)
    out = {}
    for m in (1, 10):
        run_dpsgd(gen, X, y, xnorm, "linear", "swor", 100, m, 0.2, 0.501, 6.0, 11.0, 0.0,
                  StreamLayout.build(100, 0.5, 0.501))
        floor_seconds([gen], 10, m)
        kernel, floor = [], []
        for _ in range(repeats):  # interleaved, so that load changes hit both alike
            tic = time.perf_counter()
            run_dpsgd(gen, X, y, xnorm, "linear", "swor", steps, m, 0.2, 0.501, 6.0, 11.0, 0.0, layout)
            kernel.append((time.perf_counter() - tic) / steps * 1e9)
            floor.append(floor_seconds([gen], steps, m) / steps * 1e9)
        k, f = statistics.median(kernel), statistics.median(floor)
        out[f"m{m}_ns_per_step"] = round(k, 2)
        out[f"m{m}_floor_ns_per_step"] = round(f, 2)
        out[f"m{m}_ratio"] = round(k / f, 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--figure2", type=Path, help="a finished run of configs/dpsgd.yaml (its meta.json)")
    args = parser.parse_args()
    result = bench(args.repeats)
    for m in (1, 10):
        print(f"DP-SGD step, m = {m:2d}: {result[f'm{m}_ns_per_step']:7.1f} ns; RNG floor "
              f"{result[f'm{m}_floor_ns_per_step']:7.1f} ns; ratio {result[f'm{m}_ratio']:.2f}")
    lanes = bench_lanes(args.repeats)
    for width in lanes["widths"]:
        print(f"DP-SGD, m = 1, L = {width}: {lanes[f'L{width}_ns']:7.1f} ns per replication-step; its floor "
              f"{lanes[f'L{width}_floor_ns']:7.1f} ns; ratio {lanes[f'L{width}_ratio']:.2f}")
    print(f"default L = {lanes['default']} over L = 1: {lanes['speedup']}x")
    if args.figure2 is not None:
        meta = json.loads((args.figure2 / "meta.json").read_text())
        print(f"Figure 2 run ({args.figure2}): {meta['wall_time_s'] / 60:.1f} min wall, n_jobs = {meta['n_jobs']}")


if __name__ == "__main__":
    main()
