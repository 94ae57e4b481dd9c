"""scripts/bench.py keeps running (its numbers are reported, never asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).parents[1] / "scripts" / "bench.py"


@pytest.mark.slow  # the benchmark's kernels, floors and a Table 1 slice compiled (28 s, cold): CI's slow tier
def test_bench_runs_small_and_reports_every_number(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--n", "1e5", "--n-qr", "2e4", "--repeats", "1", "--n-vec", "2048",
         "--reps-vec", "20", "--json", str(out)],
        capture_output=True, text=True, check=True,
    )
    res = json.loads(out.read_text())
    widths = res["widths"]
    assert widths == sorted({1, res["lanes"]})  # one lane and the default
    for lanes in widths:
        for key in ("kernel", "floor", "qr_kernel", "qr_floor"):
            assert res[f"{key}_L{lanes}_ns"] > 0, (key, lanes)
        assert res[f"kernel_L{lanes}_over_floor"] > 0 and res[f"qr_kernel_L{lanes}_over_floor"] > 0
    for key in ("kernel_speedup", "qr_kernel_speedup", "numpy_ns_per_replication_step", "numpy_over_kernel",
                "peak_rss_mib_1e5", "peak_rss_mib_1e7", "peak_rss_ratio", "old_floor_ns", "qr_old_floor_ns", "looks_ns",
                "looks_over_kernel_L1"):
        assert res[key] > 0, key
    assert "kernel / floor" in proc.stdout and "numpy / kernel" in proc.stdout
    assert "QR kernel" in proc.stdout and "its floor (same lanes)" in proc.stdout
    # the QR floor draws exactly the kernel's random numbers, in its order, lane by lane
    assert res["qr_floor_consumes_like_kernel"] is True


@pytest.mark.slow  # a config's kernels compiled in an empty cache folder (about 10 s)
def test_bench_compile_times_a_configs_first_result_cold_and_warm_and_writes_the_table(tmp_path):
    page = tmp_path / "performance.md"
    page.write_text("# Performance\n\n<!-- compile-table -->\nold\n<!-- compile-table -->\n\nafter\n")
    out = tmp_path / "compile.json"
    proc = subprocess.run([sys.executable, str(BENCH), "--compile", "quantile", "--markdown", str(page), "--json",
                           str(out)], capture_output=True, text=True, check=True)
    res = json.loads(out.read_text())
    row = res["configs"]["quantile"]
    assert set(row) == {"cold", "warm"} and row["cold"] > 0 and row["warm"] > 0  # no error in either run
    assert "quantile" in proc.stdout and "machine:" in proc.stdout
    text = page.read_text()
    assert "| `quantile` |" in text and "old" not in text and text.endswith("\n\nafter\n")
