"""The scripts of ``scripts/`` answer ``--help`` (each script's own work is tested where its feature is)."""

from __future__ import annotations

import pytest

from run_helpers import ROOT


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "scripts").glob("*.py")))
def test_every_script_answers_help_without_work_or_a_traceback(script):
    # path_curvature, reaccount, resummarize and simd_lanes_probe took --help for a number or a directory and
    # ended in a traceback; privacy_table ignored it and started minutes of accounting
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(ROOT / "scripts" / script), "--help"], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: ") and "Traceback" not in done.stderr + done.stdout
