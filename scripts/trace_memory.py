"""Peak memory and run time of ``python -m ldpsim trace`` as n grows.

For each ``n``, a fresh child process loads ``configs/trace_quantile.yaml``
with ``n`` overridden (same number of checkpoints), warms the kernel up on a
tiny path, then runs the whole trace (path, intervals at every checkpoint,
trace.csv, figure1.png into a temporary directory) and reports its peak RSS
(``resource.getrusage``, ``ru_maxrss``). The trace keeps
``sum_k (m_k + M_k + 1)`` numbers, ``O(C n^0.25)``, so the peaks should agree.

Usage
-----
``python scripts/trace_memory.py [--n 1e6 1e7] [--checkpoints 200] [--json PATH]``.
Numbers are reported, never asserted.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "trace_quantile.yaml"


def child(n: int, checkpoints: int) -> None:
    """Run one trace of ``n`` steps and print a JSON line with its peak RSS and times."""
    from ldpsim.studies.coverage.trace import compute_trace, load_trace, write_trace

    compute_trace(load_trace(CONFIG, {"n": 1000, "checkpoints": 20}))  # compile or load the kernel
    config = load_trace(CONFIG, {"n": n, "checkpoints": checkpoints})
    tic = time.perf_counter()
    result = compute_trace(config)
    with tempfile.TemporaryDirectory() as out:
        write_trace(result, Path(out))
    total = time.perf_counter() - tic
    print(json.dumps({
        "n": n,
        "checkpoints": len(result.checkpoints),
        "stream_entries": result.trace.layout.size,
        "path_s": round(result.seconds_path, 3),
        "intervals_s": round(result.seconds_intervals, 3),
        "total_s": round(total, 3),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),  # KiB on Linux
    }))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", nargs="+", default=["1e6", "1e7"], help="path lengths")
    parser.add_argument("--checkpoints", type=int, default=200)
    parser.add_argument("--json", metavar="PATH", help="also write the numbers to this JSON file")
    parser.add_argument("--child", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        return child(int(args.child), args.checkpoints)
    rows = []
    for n in args.n:
        out = subprocess.run([sys.executable, __file__, "--child", n, "--checkpoints", str(args.checkpoints)],
                             check=True, capture_output=True, text=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
        r = rows[-1]
        print(f"n = {r['n']:.0e}: {r['checkpoints']} checkpoints, {r['stream_entries']} stream entries, "
              f"path {r['path_s']:.2f} s, intervals {r['intervals_s']:.2f} s, total {r['total_s']:.2f} s, "
              f"peak RSS {r['peak_rss_mib']:.1f} MiB")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
