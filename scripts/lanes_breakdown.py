"""What bounds the lanes kernels: per-part timings at the default lanes.

Each line is ns per replication-step, the minimum over ``--repeats`` interleaved
runs in this process (the machine's drift moves every part alike):

* the vector normal draw (:func:`ldpsim.engine.dialect.rng.normal` on ``L`` lanes) as
  the kernels draw it, beside the same draw without numpy's slow path (the
  layer test decides nothing: not numpy's stream, the cost of the branch and
  the out-of-line redraws), without the ``k`` table (no layer test at all),
  and one lane's scalar draw;
* the quantile-regression kernel (d = 4) with all inference state, without
  the block sums, with the random-scaling sums alone, and its RNG floor;
* the online Huber kernel (d = 10) and its floor;
* the DP-SGD step (m = 1, d = 3) with its batch drawn without replacement
  (each lane gathers its own rows), drawn cyclically (every lane reads the
  same row: one load per coordinate), without noise (sigma = 0: three normals
  fewer), and its floor.

    python scripts/lanes_breakdown.py [--lanes L] [--repeats 7]

Timings are reported, never asserted; README "Performance" reads them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench  # noqa: E402  (imports ldpsim first: numba's cache directory)
import bench_dpsgd  # noqa: E402
import bench_online  # noqa: E402
from ldpsim.engine.dialect.rng import lane_draws as R  # noqa: E402
from ldpsim.engine.dialect.jit import jit  # noqa: E402
from ldpsim.engine.dialect.lanes import LaneVector, lane_array, vector_width  # noqa: E402
from ldpsim.engine.dialect.rng import as_generator, kernel_rngs, local_rng, normal, release_rng  # noqa: E402
from ldpsim.inference.streaming import StreamLayout  # noqa: E402
from ldpsim.recursion.kernels import run_paths_lanes  # noqa: E402
from ldpsim.studies.dpsgd.kernel import draw_data, run_dpsgd_lanes  # noqa: E402
from ldpsim.studies.trajectory.kernel import run_trajectories  # noqa: E402


def _normal_variant(kind: str):
    """The vector normal's fast path with its ending cut: ``"test"`` (layer test, no slow path), ``"w"`` (no test)."""
    @intrinsic
    def draw(typingctx, p):
        count = p.dtype.count

        def codegen(context, builder, signature, args):
            vty, fty = ir.VectorType(R._I64, count), ir.VectorType(R._F64, count)
            r = R._emit_vnext(builder, args[0], vty)
            idx = builder.and_(r, R._vconst(vty, 0xFF))
            rabs = builder.and_(builder.lshr(r, R._vconst(vty, 9)), R._vconst(vty, int(R._MASK52)))
            magnitude = builder.fmul(builder.uitofp(rabs, fty), R._lookup(builder, "wi", R.wi_double, R._F64, idx, count))
            negative = builder.trunc(builder.lshr(r, R._vconst(vty, 8)), ir.VectorType(ir.IntType(1), count))
            x = builder.select(negative, builder.fneg(magnitude), magnitude)
            if kind == "w":
                return x
            accept = builder.icmp_unsigned("<", rabs, R._lookup(builder, "ki", R.ki_double, R._I64, idx, count))
            return builder.select(accept, x, R._vconst(fty, 0.0))  # the test decides a value, not a branch

        return LaneVector(types.float64, count)(p), codegen

    return draw


_test_only, _w_only = _normal_variant("test"), _normal_variant("w")


@jit
def _normals(rngs, n, out):
    gen = local_rng(rngs)
    s = 0.0
    for _ in range(n):
        s += normal(gen)
    release_rng(rngs, gen)
    out[0] = s


@jit
def _normals_test_only(rngs, n, out):
    gen = local_rng(rngs)
    s = 0.0
    for _ in range(n):
        s += _test_only(gen.words)
    release_rng(rngs, gen)
    out[0] = s


@jit
def _normals_w_only(rngs, n, out):
    gen = local_rng(rngs)
    s = 0.0
    for _ in range(n):
        s += _w_only(gen.words)
    release_rng(rngs, gen)
    out[0] = s


def _timer(func, *args):
    def run():
        tic = time.perf_counter()
        func(*args)
        return time.perf_counter() - tic
    return run


def measure(lanes: int, repeats: int = 7, n: int = 4_000_000) -> dict:
    """Per-part ns per replication-step at ``lanes`` lanes (see the module docstring)."""
    gens = [as_generator(j) for j in range(lanes)]
    out = lane_array(1, lanes)
    steps = n // lanes
    qr, qr_steps = bench.qr_model(), (n // 4) // lanes
    qr_layouts = {
        "QR kernel, all inference state": [StreamLayout.build(qr_steps, 0.75, 0.51)],
        "QR kernel, no block sums": [StreamLayout.build(qr_steps, 0.75, 0.51, blocks=False)],
        "QR kernel, random scaling only": [StreamLayout.build(qr_steps, 0.75, 0.51, blocks=False, batches=False)],
    }
    huber, huber_steps = bench_online._model(False), (n // 8) // lanes  # (built once: its quadratures take a while)
    dp_steps = (n // 4) // lanes
    data = [draw_data(g, "linear", np.eye(3), bench_dpsgd.N, 1.0)[1:] for g in gens]
    dp_layout = StreamLayout.build(dp_steps, 0.75, 0.501)

    def dpsgd(sampling, sigma):
        return _timer(run_dpsgd_lanes, gens, data, "linear", sampling, dp_steps, 1, 0.2, 0.501, 6.0, sigma, 0.0,
                      dp_layout)

    parts = {  # name: (timer, replication-steps)
        "normal draw": (_timer(_normals, kernel_rngs(gens), steps, out), n),
        "normal draw, layer test only (no slow path)": (_timer(_normals_test_only, kernel_rngs(gens), steps, out), n),
        "normal draw, no layer test": (_timer(_normals_w_only, kernel_rngs(gens), steps, out), n),
        "normal draw, one lane": (_timer(_normals, kernel_rngs(gens[:1]), n, lane_array(1, 1)), n),
        **{name: (_timer(run_paths_lanes, qr, gens, qr_steps, bench.C, bench.GAMMA, bench.THETA0, layouts),
                  qr_steps * lanes) for name, layouts in qr_layouts.items()},
        "QR floor": (_timer(bench.run_qr_floor, qr_steps * lanes, 1, False, lanes), qr_steps * lanes),
        "Huber d = 10 kernel": (_timer(run_trajectories, huber, gens, huber_steps, bench_online.C, bench_online.GAMMA,
                                       bench_online.THETA0, np.array([huber_steps], dtype=np.int64)),
                                huber_steps * lanes),
        "Huber d = 10 floor": (_timer(bench_online.huber_floor, kernel_rngs(gens), huber_steps, bench_online.DIM,
                                      huber.p, False, out), huber_steps * lanes),
        "DP-SGD, batch without replacement (gathers)": (dpsgd("swor", 11.0), dp_steps * lanes),
        "DP-SGD, cyclic batch (no gathers)": (dpsgd("cyclic", 11.0), dp_steps * lanes),
        "DP-SGD, without replacement, no noise": (dpsgd("swor", 0.0), dp_steps * lanes),
        "DP-SGD floor": (_timer(bench_dpsgd.floor_seconds, gens, dp_steps), dp_steps * lanes),
    }
    for timer, _ in parts.values():  # compile or load
        timer()
    best = {name: [] for name in parts}
    for _ in range(repeats):
        for name, (timer, count) in parts.items():
            seconds = timer()
            best[name].append(seconds / count * 1e9)
    return {name: min(values) for name, values in best.items()} | {
        f"{name} (median)": statistics.median(values) for name, values in best.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", type=int, default=vector_width())
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    res = measure(args.lanes, args.repeats)
    print(f"L = {args.lanes}: ns per replication-step (minimum of {args.repeats}; median)")
    for name, value in res.items():
        if not name.endswith("(median)"):
            print(f"  {name:48s} {value:8.2f}  ({res[name + ' (median)']:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
