"""scripts/bench.py keeps running (its numbers are reported, never asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).parents[1] / "scripts" / "bench.py"


def test_bench_runs_small_and_reports_every_number(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--n", "1e5", "--n-qr", "2e4", "--repeats", "1", "--n-vec", "2048",
         "--reps-vec", "20", "--json", str(out)],
        capture_output=True, text=True, check=True,
    )
    res = json.loads(out.read_text())
    for key in ("kernel_ns_per_step", "floor_ns_per_step", "kernel_over_floor", "numpy_ns_per_replication_step",
                "numpy_over_kernel", "peak_rss_mib_1e5", "peak_rss_mib_1e7", "peak_rss_ratio",
                "qr_kernel_ns_per_step", "qr_floor_ns_per_step", "qr_kernel_over_floor"):
        assert res[key] > 0, key
    assert "kernel / floor" in proc.stdout and "numpy / kernel" in proc.stdout
    assert "QR kernel" in proc.stdout and "QR RNG floor" in proc.stdout
    # the QR floor draws exactly the kernel's random numbers, in its order
    assert res["qr_floor_consumes_like_kernel"] is True
