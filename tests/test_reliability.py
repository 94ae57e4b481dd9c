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


@pytest.mark.parametrize("args,fragments", [
    # 3. B too small for the bootstrap quantiles
    (["--set", "B=1"], ["B = 1 is outside [50, inf)"]),
    (["--set", "B=2"], ["B = 2 is outside [50, inf)"]),
    (["--set", "B=100", "--set", "level=0.99"], ["B = 100 bootstrap draws are too few for level = 0.99",
                                                  "B >= max(50, 2 / (1 - level)) = 200"]),
    # 5. found only after the work, before
    (["--set", "level=1e-300"], ["level = 1e-300 is outside [0.001, 0.99999]"]),
    # 8. extreme values that passed validation, then crashed (or took 43.7 TiB)
    (["--n", "1e19"], ["n = 10000000000000000000 is outside [2, 2^53]"]),
    (["--n", "1e30"], ["n = 1e+30 is outside [2, 2^53]"]),
    (["--set", "epsilon=1e-160"], ["model 'quantile' cannot be computed in floating point at epsilon = 1e-160",
                                   "variance is not a positive finite number"]),
    (["--set", "epsilon=1e300"], ["cannot be computed in floating point at epsilon = 1e+300"]),
    (["--set", "tau=1e-300"], ["cannot be computed in floating point", "tau = 1e-300"]),
    (["--set", "B=1e12"], ["this needs about", "TiB per replication", "B = 1000000000000"]),
    (["--set", "beta=0.001", "--n", "1e12"], ["this needs about", "per replication", "beta = 0.001"]),
    (["--reps", "1e12"], ["for the results", "reps = 1000000000000"]),
    # 10. keys a setting does not read are still checked; null values are named
    (["--set", "model=linear", "--set", "tau=5"], ["tau = 5.0 is outside (0, 1)"]),
    (["--set", "model=linear", "--set", "clip=-1"], ["clip = -1.0 is outside (0, inf]"]),
    (["--set", "model=mean", "--set", "delta=5"], ["delta = 5.0 is outside (0, 1)"]),
    (["--set", "methods="], ["methods = null has no value; give a list of: BB, BBjoint, BM, SN, oracle"]),
    (["--set", "tau="], ["tau = null has no value; give a number in (0, 1)"]),
    (["--set", "methods=[BB, null]"], ["methods contains null; allowed: BB"]),
])
def test_bad_values_are_refused_before_any_work(earlier, capsys, monkeypatch, args, fragments):
    out, config, before = earlier
    monkeypatch.setattr("ldpsim.api.simulate", lambda *a, **k: pytest.fail("the simulation started"))
    status, _, err = cli(capsys, "run", config, "--out", out, "--quiet", "--n-jobs", "1", *args)
    one_line_error(status, err, *fragments)
    assert snapshot(out) == before


@pytest.mark.parametrize("command,args,fragments", [
    ("check", ["--set", "epsilon=1e-160"], ["cannot be computed in floating point at epsilon = 1e-160"]),
    ("check", ["--set", "B=1"], ["B = 1 is outside [50, inf)"]),
    ("trace", ["--n", "1e19"], ["n = 10000000000000000000 is outside [2, 2^53]"]),
    ("trace", ["--set", "checkpoints=1e9"], ["checkpoints = 1000000000 is outside [2, 10000]"]),
    ("trace", ["--set", "checkpoints=10000", "--set", "beta=0.01", "--n", "1e9"], ["this needs about"]),
    ("trace", ["--set", "epsilon=1e300"], ["cannot be computed in floating point"]),
])
def test_check_and_trace_refuse_them_too(earlier, capsys, command, args, fragments):
    out, config, before = earlier
    config.write_text(TINY.replace("reps: 3\n", ""))
    extra = ["--out", out] if command == "trace" else []
    status, _, err = cli(capsys, command, config, *extra, *args)
    one_line_error(status, err, *fragments)
    assert snapshot(out) == before


def test_check_with_a_huge_step_size_fails_the_condition_instead_of_crashing(tmp_path, capsys):
    (tmp_path / "c.yaml").write_text(TINY)
    status, out, err = cli(capsys, "check", tmp_path / "c.yaml", "--set", "c=1e300")
    assert status == 1 and err == "" and "[FAIL] condition (14)" in out and "no b0 <= 1000000" in out


@pytest.mark.parametrize("level,draws", [(0.9, 50), (0.95, 50), (0.99, 200), (0.999, 2000), (0.9999, 20000)])
def test_fewest_bootstrap_draws(level, draws):
    # B (1 - level) / 2 >= 1: the level's quantiles of the draws are not their extremes (B >= 2 / (1 - level))
    assert min_bootstrap_draws(level) == draws


@pytest.mark.parametrize("text,fragment", [
    (b"tau: 0.5\nmodel: \"\xff\xfe\"\n", "is not UTF-8 text (byte 0xff at line 2)"),
    (b"tau: 0.5\ntau: 0.9\n", "is not valid YAML: key 'tau' is given twice at line 2"),
    (b"tau: " + b"[" * 3000 + b"]" * 3000 + b"\n", "is not valid YAML: nested too deeply"),
    (b"seed: 1" + b"0" * 5000 + b"\n", "is not valid YAML: an integer with more than 4300 digits"),
    (b"- 1\n- 2\n", "must hold a mapping of keys to values"),
    (b"x" * (2 << 20), "is larger than 1 MiB: not a config"),
])
def test_config_files_that_are_not_configs(tmp_path, capsys, text, fragment):
    path = tmp_path / "bad.yaml"
    path.write_bytes(text)
    status, _, err = cli(capsys, "run", path, "--out", tmp_path / "o")
    one_line_error(status, err, f"config file '{path}' ", fragment)
    assert not (tmp_path / "o").exists()


def test_a_config_path_that_is_not_a_file(tmp_path, capsys):
    status, _, err = cli(capsys, "run", tmp_path)
    one_line_error(status, err, f"config file '{tmp_path}' is a directory")
    status, _, err = cli(capsys, "check", "/dev/zero")
    one_line_error(status, err, "config file '/dev/zero' is not a regular file")


# --- 5, 6. the output directory is checked (created, written to) before any work -------------------------


# --- 7. table and compare read a damaged or foreign directory with one-line errors ----------------------


# --- 9. numbers that lost their precision are not results ---------------------------------------------


def test_a_path_whose_numbers_lost_their_precision_is_counted_as_failed(tmp_path, capsys):
    (tmp_path / "c.yaml").write_text(TINY)
    status, _, err = cli(capsys, "run", tmp_path / "c.yaml", "--out", tmp_path / "o", "--quiet", "--n-jobs", "1",
                         "--set", "theta0=1e20", "--set", "methods=[BB,oracle]")
    assert status == 0
    assert "ldpsim: 3 replication(s) diverged, gave non-finite results or lost their precision" in err
    rows = ldpsim.open_result(tmp_path / "o").rows
    assert all(r["n_failed"] == 3 and r["reps"] == 0 and math.isnan(r["length"]) for r in rows)


def test_the_precision_rule_keeps_every_ordinary_interval():
    # an interval is kept if its length is RESOLVED_ULPS units in the last place of its ends: at
    # theta* = 1.28 (tau = 0.9) that is 2.9e-10, a millionth of the shortest committed interval (0.000874)
    assert resolved(np.array([[1.2815, 1.2815 + 3e-10]])) and not resolved(np.array([[1.2815, 1.2815 + 2e-10]]))
    assert not resolved(np.array([[1e20, 1e20]])) and not resolved(np.array([[1e20, 1e20 + 9.6e5]]))
    assert RESOLVED_ULPS * np.spacing(1.2815) < 1e-6 * 0.000874
    assert resolved(np.array([[-1e-300, 1e-300]]))  # tiny but resolved: not a precision problem


# --- 10. minor ------------------------------------------------------------------------------------------


def test_no_raw_numpy_warning_for_a_far_start(tmp_path, capsys):
    (tmp_path / "c.yaml").write_text(TINY)
    status, _, err = cli(capsys, "run", tmp_path / "c.yaml", "--out", tmp_path / "o", "--quiet", "--n-jobs", "1",
                         "--set", "theta0=1e200")
    assert status == 0 and all(line.startswith("ldpsim: ") for line in err.splitlines()), err
    assert "RuntimeWarning" not in err


def test_a_scheduler_error_leaves_no_empty_directory(tmp_path, capsys):
    pytest.importorskip("distributed")
    (tmp_path / "c.yaml").write_text(TINY)
    out = tmp_path / "o"
    status, _, err = cli(capsys, "run", tmp_path / "c.yaml", "--out", out, "--quiet", "--backend", "dask",
                         "--scheduler", str(tmp_path / "nowhere.json"))
    one_line_error(status, err, "scheduler file", "not found")
    assert not out.exists()


@pytest.mark.parametrize("kwargs,fragment", [
    ({"out": ""}, "out = '' is empty"),
    ({"out": 5}, "out = 5 is not a path"),
    ({"out": "a\0b"}, "contains a NUL byte"),
    ({"n_jobs": "2"}, "n_jobs = '2' is not an integer"),
    ({"n_jobs": 10 ** 6}, "n_jobs = 1000000 is more than 8 workers per core"),
    ({"resume": "yes"}, "resume = 'yes' is not True or False"),
    ({"resume": True, "out": None}, "resume = True needs out"),
])
def test_api_run_options_are_checked(tmp_path, kwargs, fragment):
    with pytest.raises(ldpsim.ConfigError) as info:
        ldpsim.run({"model": "quantile", "n": 4000, "reps": 2, "B": 50}, progress=False, **kwargs)
    assert fragment in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ldpsim.ConfigError, match="config = 5 is not a YAML file, a dict of config keys or a Config"):
        ldpsim.run(5)


# --- the chunk store under SIGKILL ----------------------------------------------------------------------


# --- more hostile inputs, found beyond the list ------------------------------------------------


@pytest.mark.parametrize("args,fragment", [
    (["--set", "tau=0.5", "--set", "tau=0.9"], "tau is set twice in --set (0.5 and 0.9); give it once"),
    (["--n", "5000", "--set", "n=6000"], "n is given twice: --n and --set n=...; give it once"),
    (["--set", "batch_size=1e30"], "makes n x batch_size = 4e+33 observations, more than 2^53"),
    (["--set", "tau=[" + ",".join(str(0.01 + i / 1e4) for i in range(500)) + "]",
      "--set", "gamma=[" + ",".join(str(0.6 + i / 1e4) for i in range(201)) + "]"],
     "the grid has 100500 settings (500 tau x 201 gamma); at most 100000 in one run"),
    (["--set", "level=0.99999"], "level = 0.99999 is outside [0.05, 0.9999] (SN critical values)"),
    (["--set", "methods={BB: 1}"], "methods = {'BB': 1} is a mapping; give a list of: BB"),
    (["--n-jobs", "100000"], "n_jobs = 100000 is more than 8 workers per core"),
    (["--set", "study="], "study = null is not one of: coverage, trajectory"),
    (["--set", "n_jobs=1"], "--set n_jobs=...: n_jobs is not a config key; run takes it as --n-jobs"),
    (["--set", "out=elsewhere"], "--set out=...: out is not a config key; run takes it as --out"),
])
def test_hunted_inputs_are_refused_in_one_line(earlier, capsys, monkeypatch, args, fragment):
    out, config, before = earlier
    monkeypatch.setattr("ldpsim.api.simulate", lambda *a, **k: pytest.fail("the simulation started"))
    status, _, err = cli(capsys, "run", config, "--out", out, "--quiet", "--n-jobs", "1", *args)
    one_line_error(status, err, fragment)
    assert snapshot(out) == before


def test_trajectory_fit_decades_that_would_overflow_after_the_work(tmp_path, capsys):
    (tmp_path / "t.yaml").write_text("study: trajectory\nmodel: mean\nn: 2000\nreps: 2\nfit_decades: 1e300\n")
    status, _, err = cli(capsys, "run", tmp_path / "t.yaml", "--out", tmp_path / "o", "--quiet")
    one_line_error(status, err, "fit_decades = 1e+300 is outside (0, 16]")
    assert not (tmp_path / "o").exists()


def test_a_huge_batch_means_layout_is_not_built_to_validate(tmp_path, capsys):
    # n = 2^53 and gamma = 0.01 have 7.5e7 batches: validation used to build all their ends in Python
    (tmp_path / "c.yaml").write_text(TINY)
    status, out, _ = cli(capsys, "check", tmp_path / "c.yaml", "--n", str(2 ** 53), "--set", "gamma=0.01",
                         "--set", "beta=0.9", "--set", "methods=[BM]")
    assert status == 1 and "[FAIL] gamma in (1/2, 1)" in out


def test_a_config_with_a_byte_order_mark_and_from_a_pipe(tmp_path, capsys):
    (tmp_path / "bom.yaml").write_bytes(b"\xef\xbb\xbf" + TINY.encode())
    status, out, _ = cli(capsys, "check", tmp_path / "bom.yaml")
    assert status == 0
    read, write = os.pipe()
    os.write(write, TINY.encode())
    os.close(write)
    try:
        status, out, _ = cli(capsys, "check", f"/dev/fd/{read}")
    finally:
        os.close(read)
    assert status == 0


def test_a_trace_whose_numbers_lost_their_precision_has_no_intervals():
    from ldpsim.studies.coverage.trace import compute_trace, resolve_trace

    config = resolve_trace({"n": 2000, "checkpoints": 8, "seed": 3, "B": 50, "theta0": 1e20})
    result = compute_trace(config)  # BB, BM, SN were [1e20, 1e20]: length 0, reported as intervals
    assert np.isnan(result.bounds).all() and (result.trace.theta_bar == 1e20).all()
