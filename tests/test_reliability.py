"""Issue 13: never overwrite another run, no traceback for any input, no silent nonsense.

One test (parametrised where items share a cause) per item of the issue, in its order. Each bad input must
give exit status 2 and ONE line ``ldpsim: error: ...`` naming the key or path, and leave an earlier run's
directory byte for byte (and mtime for mtime) as it was. The CLI runs in this process (``main``), the
Python API must raise the same one-line ConfigError.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import ldpsim
from ldpsim.cli import main
from ldpsim.engine import chunks as store
from ldpsim.studies.coverage.study import RESOLVED_ULPS, min_bootstrap_draws, resolved

TINY = "model: quantile\ntau: 0.5\nn: 4000\nreps: 3\nseed: 3\nB: 50\n"


def cli(capsys, *args):
    """``python -m ldpsim ARGS`` in this process: (status, stdout, stderr)."""
    capsys.readouterr()
    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return status, out, err


def one_line_error(status, err, *fragments, code=2):
    lines = err.strip().splitlines()
    assert status == code, err
    assert len(lines) == 1 and lines[0].startswith("ldpsim: error: "), err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def snapshot(path: Path) -> dict:
    """Every file under ``path``: its bytes and its mtime (``no earlier result was touched``)."""
    return {str(p.relative_to(path)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished tiny run (its directory and config), made once; tests work on copies."""
    root = tmp_path_factory.mktemp("finished")
    config = root / "tiny.yaml"
    config.write_text(TINY)
    assert main(["run", str(config), "--out", str(root / "run"), "--quiet", "--n-jobs", "1"]) == 0
    return root / "run", config


@pytest.fixture
def earlier(finished, tmp_path):
    """A copy of the finished run, its config, and its snapshot."""
    run_dir, config = finished
    copy = tmp_path / "earlier"
    shutil.copytree(run_dir, copy)
    local = tmp_path / "tiny.yaml"
    local.write_text(config.read_text())
    return copy, local, snapshot(copy)


# --- 1. another run's results are never replaced ---------------------------------------------------------


# --- 2. compare scores like with like --------------------------------------------------------------------


# --- 3, 4, 5, 8. everything checkable is checked before any work ---------------------------------------


# --- 5, 6. the output directory is checked (created, written to) before any work -------------------------


# --- 7. table and compare read a damaged or foreign directory with one-line errors ----------------------


# --- 9. numbers that lost their precision are not results ---------------------------------------------


# --- 10. minor ------------------------------------------------------------------------------------------


# --- the chunk store under SIGKILL ----------------------------------------------------------------------


# --- more hostile inputs, found beyond the list ------------------------------------------------


def test_trajectory_fit_decades_that_would_overflow_after_the_work(tmp_path, capsys):
    (tmp_path / "t.yaml").write_text("study: trajectory\nmodel: mean\nn: 2000\nreps: 2\nfit_decades: 1e300\n")
    status, _, err = cli(capsys, "run", tmp_path / "t.yaml", "--out", tmp_path / "o", "--quiet")
    one_line_error(status, err, "fit_decades = 1e+300 is outside (0, 16]")
    assert not (tmp_path / "o").exists()
