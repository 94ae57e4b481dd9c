"""What bounds a path kernel: instructions per step (valgrind), time per step, and their ratio (IPC).

Issue 19 asked whether running L replications side by side ("lanes") lets the
core overlap the serial dependency chains of the paths. That pays only when a
kernel is latency-bound, i.e. when the core retires few instructions per cycle.
This script measures it for the benchmarked kernels and their RNG floors:

* instructions per step: ``valgrind --tool=callgrind`` counts every
  instruction a child process retires; the child runs the kernel for ``n1``
  and then (in another child) ``n2`` steps, and the difference divided by
  ``n2 - n1`` is the kernel's cost per step, free of Python's start-up.
  Under valgrind llvmlite sees a "haswell" CPU with the same AVX2/FMA/BMI2
  features as the host, so numba compiles the same kind of code (the first
  child under valgrind fills numba's cache for that CPU name, and is not counted);
* time per step: the same steps timed natively in this process (min of ``--repeats``);
* IPC: instructions per step over cycles per step at the nominal clock of
  ``/proc/cpuinfo`` (``cpu MHz``).

An IPC near the core's sustained width (3-4 on Zen) means the kernel is
bound by the number of instructions, not by a dependency chain: lanes can
only add work (lane indexing, generator words in memory) and SIMD across
lanes would be needed to cut it.

    python scripts/instructions.py                 # every kernel (about 20 minutes)
    python scripts/instructions.py quantile dpsgd4 # some
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: name -> (steps n1, steps n2, replications per step, what it is)
KERNELS = {
    "quantile": (10**5, 40_100_000, 1, "Dette & Graw's quantile kernel (tau 0.5, epsilon 1)"),
    "quantile_floor": (10**5, 40_100_000, 1, "its RNG floor (1 normal + 1 uniform)"),
    "qr": (10**5, 10_100_000, 1, "Dette & Graw's quantile regression kernel (d 4, Laplace)"),
    "qr_floor": (10**5, 10_100_000, 1, "its RNG floor"),
    "dpsgd1": (10**5, 10_100_000, 1, "Xia et al.'s DP-SGD, m 1, d 3, lanes 1"),
    "dpsgd1_floor": (10**5, 10_100_000, 1, "its RNG floor, lanes 1"),
    "dpsgd4": (10**5, 2_600_000, 4, "Xia et al.'s DP-SGD, m 1, d 3, lanes 4"),
    "dpsgd4_floor": (10**5, 2_600_000, 4, "its RNG floor, lanes 4"),
}


def run(name: str, n: int) -> float:
    """Run kernel ``name`` for ``n`` steps in this process (the child's work); the seconds of those steps."""
    sys.path.insert(0, str(HERE))
    if name.startswith(("quantile", "qr")):
        import bench
        func = {"quantile": bench.run_kernel, "quantile_floor": bench.run_floor,
                "qr": bench.run_qr_kernel, "qr_floor": bench.run_qr_floor}[name]
        func(1000, 1)  # compile or load before the counted part
        tic = time.perf_counter()
        func(n, 2)
        return time.perf_counter() - tic
    import numpy as np

    import bench_dpsgd as bd
    from ldpsim.engine.dialect.rng import as_generator, kernel_lanes
    from ldpsim.inference.streaming import StreamLayout
    lanes = int(name[5])
    gens = [as_generator(j) for j in range(lanes)]
    data = [bd.draw_data(g, "linear", np.eye(3), bd.N, 1.0)[1:] for g in gens]
    layout = StreamLayout.build(n, 0.75, 0.501)
    bd._floor_lanes(kernel_lanes(gens), 1000, 1, bd.N, 3)  # compile or load before the counted part
    bd.run_dpsgd_lanes(gens, data, "linear", "swor", 1000, 1, 0.2, 0.501, 6.0, 11.0, 0.0,
                       StreamLayout.build(1000, 0.75, 0.501))
    tic = time.perf_counter()
    if name.endswith("_floor"):
        bd._floor_lanes(kernel_lanes(gens), n, 1, bd.N, 3)
    else:
        bd.run_dpsgd_lanes(gens, data, "linear", "swor", n, 1, 0.2, 0.501, 6.0, 11.0, 0.0, layout)
    return time.perf_counter() - tic


def _instructions(name: str, n: int) -> int:
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                          __file__, "--child", name, str(n)], capture_output=True, text=True, check=True)
    return int(re.search(r"Collected : (\d+)", out.stderr).group(1))


def _seconds(name: str, n: int, repeats: int) -> float:
    return min(run(name, n) for _ in range(repeats))


def _mhz() -> float:
    text = Path("/proc/cpuinfo").read_text()
    return float(re.search(r"cpu MHz\s*:\s*([\d.]+)", text).group(1))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernels", nargs="*", default=list(KERNELS), help=f"some of {', '.join(KERNELS)}")
    parser.add_argument("--repeats", type=int, default=3, help="native timings per kernel (the min is kept)")
    parser.add_argument("--child", nargs=2, metavar=("NAME", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(run(args.child[0], int(args.child[1])))
        return 0
    unknown = [k for k in args.kernels if k not in KERNELS]
    if unknown:
        parser.error(f"kernels = {unknown} unknown; allowed: {', '.join(KERNELS)}")
    if shutil.which("valgrind") is None:
        parser.error("valgrind is not installed (apt install valgrind)")
    ghz = _mhz() / 1e3
    print(f"nominal clock {ghz:.2f} GHz (/proc/cpuinfo); per replication-step")
    print(f"{'kernel':14s} {'instr':>7s} {'ns':>7s} {'cycles':>7s} {'IPC':>5s}  what")
    for name in args.kernels:
        n1, n2, lanes, what = KERNELS[name]
        _instructions(name, 1000)  # numba compiles for valgrind's CPU name once; not counted
        instr = (_instructions(name, n2) - _instructions(name, n1)) / ((n2 - n1) * lanes)
        ns = _seconds(name, n2, args.repeats) / (n2 * lanes) * 1e9
        cycles = ns * ghz
        print(f"{name:14s} {instr:7.0f} {ns:7.1f} {cycles:7.0f} {instr / cycles:5.2f}  {what}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
