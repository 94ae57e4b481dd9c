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


@pytest.mark.parametrize("change,shown", [
    (["--seed", "4"], "(seed = 3), not this one"),
    (["--n", "5000"], "(n = 4000), not this one"),
    (["--reps", "4"], "(reps = 3), not this one"),
    (["--set", "tau=0.7"], "(tau = 0.5), not this one"),
    (["--set", "methods=[BB]"], "(methods = ['BB', 'BM', 'SN', 'oracle']), not this one"),
])
@pytest.mark.parametrize("resume", [False, True])
def test_another_runs_directory_is_refused_with_both_runs_named(earlier, capsys, change, shown, resume):
    out, config, before = earlier
    theirs = json.loads((out / "meta.json").read_text())["run_id"]
    status, _, err = cli(capsys, "run", config, "--out", out, "--quiet", "--n-jobs", "1", *change,
                         *(["--resume"] if resume else []))
    line = one_line_error(status, err, f"out = '{out}' holds another run, {theirs} ", shown, "--force")
    assert len(set(re.findall(r"\b[0-9a-f]{12}\b", line))) == 2  # both runs, by their ids
    assert snapshot(out) == before


def test_same_run_again_and_resume_say_what_they_reuse(earlier, capsys):
    out, config, before = earlier
    status, _, err = cli(capsys, "run", config, "--out", out, "--quiet", "--n-jobs", "1", "--resume")
    assert status == 0 and "ldpsim: resume: reusing 1 of 1 chunks saved in" in err
    assert (out / "summary.csv").read_bytes() == before["summary.csv"][0]
    status, _, err = cli(capsys, "run", config, "--out", out, "--quiet", "--n-jobs", "1")  # its own directory
    assert status == 0 and (out / "summary.csv").read_bytes() == before["summary.csv"][0]


def test_resume_of_an_empty_directory_says_nothing_was_reused(tmp_path, capsys):
    (tmp_path / "c.yaml").write_text(TINY)
    status, _, err = cli(capsys, "run", tmp_path / "c.yaml", "--out", tmp_path / "new", "--quiet", "--n-jobs", "1",
                         "--resume")
    assert status == 0 and "resume: reusing 0 of 1 chunks" in err


def test_force_replaces_the_other_run_and_its_chunks(earlier, capsys):
    out, config, before = earlier
    old_chunks = sorted(p.name for p in (out / "chunks").glob("*.npz"))
    status, _, _ = cli(capsys, "run", config, "--out", out, "--quiet", "--n-jobs", "1", "--seed", "4", "--force")
    assert status == 0
    meta = json.loads((out / "meta.json").read_text())
    assert meta["root_seed"] == 4 and meta["status"] == "complete"
    assert not {p.name for p in (out / "chunks").glob("*.npz")} & set(old_chunks)
    assert (out / "summary.csv").read_bytes() != before["summary.csv"][0]


def test_the_api_refuses_and_forces_alike(earlier):
    out, config, before = earlier
    with pytest.raises(ldpsim.ConfigError, match=r"^out = .* holds another run, .*\(seed = 3\), not this one") as info:
        ldpsim.run(str(config), out=out, seed=4, n_jobs=1, progress=False)
    assert "\n" not in str(info.value) and snapshot(out) == before
    result = ldpsim.run(str(config), out=out, seed=4, n_jobs=1, progress=False, force=True)
    assert result.meta["root_seed"] == 4
    with pytest.raises(ldpsim.ConfigError, match=r"holds another run, .*\(study = 'coverage'.*\(study = 'trajectory'"):
        ldpsim.run({"study": "trajectory", "model": "quantile", "n": 4000, "reps": 2}, out=out, progress=False)
    memory = ldpsim.run({"model": "quantile", "n": 4000, "reps": 2, "B": 50, "seed": 9}, n_jobs=1, progress=False)
    with pytest.raises(ldpsim.ConfigError, match="holds another run"):
        memory.save(out)
    memory.save(out, force=True)
    assert ldpsim.open_result(out).meta["root_seed"] == 9


def test_the_run_is_identified_before_any_work(tmp_path, capsys, monkeypatch):
    (tmp_path / "c.yaml").write_text(TINY)
    out = tmp_path / "o"
    seen = {}

    def interrupted(config, **kw):  # the moment the simulation would start
        seen.update(json.loads((out / "meta.json").read_text()))
        raise KeyboardInterrupt

    monkeypatch.setattr("ldpsim.api.simulate", interrupted)
    status, _, _ = cli(capsys, "run", tmp_path / "c.yaml", "--out", out, "--quiet")
    assert status == 130
    assert seen["status"] == "running" and len(seen["run_id"]) == 12 and seen["config"]["seed"] == 3
    assert not out.exists()  # nothing was saved: the directory it made is gone again


@pytest.mark.parametrize("files,what", [
    ({"summary.csv": "a,b\n1,2\n"}, "results without a meta.json (summary.csv)"),
    ({"meta.json": "{not json"}, "a meta.json that is not a run's (not valid JSON"),
    ({"meta.json": "[1, 2]"}, "a meta.json that is not a run's (it does not hold a JSON object)"),
])
def test_a_directory_of_unknown_results_is_refused(tmp_path, capsys, files, what):
    (tmp_path / "c.yaml").write_text(TINY)
    out = tmp_path / "o"
    out.mkdir()
    for name, text in files.items():
        (out / name).write_text(text)
    before = snapshot(out)
    status, _, err = cli(capsys, "run", tmp_path / "c.yaml", "--out", out, "--quiet", "--n-jobs", "1")
    one_line_error(status, err, f"out = '{out}' holds {what}")
    assert snapshot(out) == before and not (out / "chunks").exists()


def test_a_directory_with_other_files_only_is_fine(tmp_path, capsys):
    (tmp_path / "c.yaml").write_text(TINY)
    out = tmp_path / "o"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    status, _, _ = cli(capsys, "run", tmp_path / "c.yaml", "--out", out, "--quiet", "--n-jobs", "1")
    assert status == 0 and (out / "notes.txt").read_text() == "mine" and (out / "summary.csv").exists()


# --- 2. compare scores like with like --------------------------------------------------------------------

PAPER = {"study": "coverage", "model": "quantile", "tau": [0.5, 0.9], "epsilon": 1.0, "c": 1.0, "gamma": 0.51,
         "theta0": 0.0, "beta": 0.75, "B": 500, "level": 0.9, "multiplier": "uniform", "n": 1000000, "reps": 500,
         "seed": 1, "methods": ["BB"]}


def paper_like(out: Path, varied=("tau",), rows=None, **changes) -> Path:
    out.mkdir(parents=True)
    config = {**PAPER, **changes}
    (out / "meta.json").write_text(json.dumps({"name": out.name, "config": config, "varied": list(varied)}))
    head = ",".join(varied) + ",method,coord,n,reps,n_failed,coverage,coverage_se,length,length_se,theta_star,bias,sd," \
                              "se_ratio\n"
    rows = rows or [[0.5], [0.9]]
    body = "".join(",".join(map(str, r)) + ",BB,0,1000000,500,0,0.9,0.0134,0.0085,5e-05,0.0,0.0,0.0027,1.0\n"
                   for r in rows)
    (out / "summary.csv").write_text(head + body)
    return out


@pytest.mark.parametrize("changes,why", [
    ({"epsilon": "inf", "gamma": 0.7}, "epsilon = inf, the paper's is 1.0"),
    ({"gamma": 0.7}, "gamma = 0.7, the paper's is 0.51"),
    ({"B": 200}, "B = 200, the paper's is 500"),
    ({"multiplier": "rademacher"}, "multiplier = rademacher, the paper's is uniform"),
    ({"model": "mean", "tau": 0.5}, "model = mean, the paper's is quantile"),
])
def test_compare_refuses_a_run_outside_the_papers_setting(tmp_path, capsys, changes, why):
    out = paper_like(tmp_path / "r", **changes)
    before = snapshot(out)
    status, _, err = cli(capsys, "compare", out)
    one_line_error(status, err, f"dir = '{out}': no setting matches table1_quantile (model = quantile, epsilon = 1.0",
                   why)
    assert snapshot(out) == before  # no compare_*.md


def test_compare_scores_only_the_rows_of_the_papers_setting(tmp_path, capsys):
    out = paper_like(tmp_path / "r", varied=("gamma",), rows=[[0.51], [0.7]], tau=0.5, gamma=[0.51, 0.7])
    status, stdout, err = cli(capsys, "compare", out)
    assert status == 0
    assert "1 row(s) left out of the comparison (first: gamma = 0.7, the paper's is 0.51)" in err
    assert stdout.count("| BB ") == 1 and "+0.99" in stdout


def test_compare_of_a_grid_over_models_outside_the_papers_setting(tmp_path, capsys):
    # the committed non-private run is a grid over three models: compare used to crash on its model list
    out = tmp_path / "nonprivate"
    shutil.copytree(Path(__file__).parents[1] / "results" / "nonprivate", out)
    before = snapshot(out)
    status, _, err = cli(capsys, "compare", out)
    one_line_error(status, err, "no setting matches table1_quantile", "epsilon = inf, the paper's is 1.0")
    assert snapshot(out) == before


def test_table_of_a_trace_directory_says_what_it_is(tmp_path, capsys):
    (tmp_path / "trace.csv").write_text("checkpoint\n10\n")
    status, _, err = cli(capsys, "table", tmp_path)
    one_line_error(status, err, "holds a trace (trace.csv, no summary.csv)")


def test_compare_of_a_trajectory_run_says_so(tmp_path, capsys):
    out = tmp_path / "t"
    out.mkdir()
    (out / "meta.json").write_text(json.dumps({"config": {"study": "trajectory", "model": "mean"}}))
    (out / "summary.csv").write_text("estimator,k,distance,distance_se,reps,n_failed\nlast,10,0.1,0.01,2,0\n")
    (out / "rates.csv").write_text("estimator,slope,slope_lo,slope_hi,theory,slope_se,k_from,k_to,points\n"
                                   "last,-0.5,-0.6,-0.4,-0.51,0.05,10,100,5\n")
    status, _, err = cli(capsys, "compare", out)
    one_line_error(status, err, "holds a trajectory run: compare scores the coverage study's intervals")


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


def _bad_out(t: Path, kind: str):
    if kind in ("file", "under a file"):
        (t / "file").write_text("x")
        return t / "file" if kind == "file" else t / "file" / "sub"
    if kind == "foreign chunks":
        (t / "d" / "chunks").mkdir(parents=True)
        np.savez(t / "d" / "chunks" / "abc_0000000_0000003.npz", ok=np.ones(3, bool))
        return t / "d"
    if kind == "chunks is a file":
        (t / "d").mkdir()
        (t / "d" / "chunks").write_text("")
        return t / "d"
    return {"empty": "", "blank": "   ", "uncreatable": "/proc/ldpsim-no/such"}[kind]


@pytest.mark.parametrize("kind,fragment", [
    ("empty", "out = '' is empty: give a directory"),
    ("blank", "out = '   ' is empty"),
    ("file", "out = '{t}/file' is a file, not a directory"),
    ("under a file", "out = '{t}/file/sub' cannot be created: '{t}/file' is a file"),
    ("uncreatable", "out = '/proc/ldpsim-no/such' cannot be created: No such file or directory"),
    ("foreign chunks", "out = '{t}/d' holds results without a meta.json (chunks/)"),
    ("chunks is a file", "out = '{t}/d' holds a file 'chunks'"),
])
def test_a_bad_out_is_refused_before_any_work(tmp_path, capsys, monkeypatch, kind, fragment):
    (tmp_path / "c.yaml").write_text(TINY)
    out = _bad_out(tmp_path, kind)
    monkeypatch.chdir(tmp_path)
    before = snapshot(tmp_path)
    monkeypatch.setattr("ldpsim.api.simulate", lambda *a, **k: pytest.fail("the simulation started"))
    status, _, err = cli(capsys, "run", tmp_path / "c.yaml", "--out", out, "--quiet")
    one_line_error(status, err, fragment.format(t=tmp_path))
    assert snapshot(tmp_path) == before  # in particular, nothing in the current directory


def test_a_read_only_file_system_is_found_before_any_work(tmp_path, capsys, monkeypatch):
    (tmp_path / "c.yaml").write_text(TINY)

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr("ldpsim.engine.outdir.tempfile.mkstemp", read_only)
    monkeypatch.setattr("ldpsim.api.simulate", lambda *a, **k: pytest.fail("the simulation started"))
    status, _, err = cli(capsys, "run", tmp_path / "c.yaml", "--out", tmp_path / "ro", "--quiet")
    one_line_error(status, err, f"out = '{tmp_path / 'ro'}' is not writable: Read-only file system")
    assert not (tmp_path / "ro").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_an_unwritable_directory_is_found_before_any_work(tmp_path, capsys):  # pragma: no cover
    (tmp_path / "c.yaml").write_text(TINY)
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    status, _, err = cli(capsys, "run", tmp_path / "c.yaml", "--out", locked, "--quiet")
    one_line_error(status, err, "is not writable: Permission denied")


def test_a_full_disk_during_the_run_is_one_line(tmp_path, capsys, monkeypatch):
    (tmp_path / "c.yaml").write_text(TINY)

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("ldpsim.engine.chunks.np.savez", full)
    status, _, err = cli(capsys, "run", tmp_path / "c.yaml", "--out", tmp_path / "o", "--quiet", "--n-jobs", "1")
    one_line_error(status, err, f"out = '{tmp_path / 'o'}': cannot write", "No space left on device")
    assert not (tmp_path / "o").exists()  # it made the directory and saved nothing: removed again


def test_a_second_run_into_a_directory_in_use_is_refused(earlier, capsys):
    out, config, before = earlier
    import fcntl

    with open(out / "chunks" / ".lock", "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a running ldpsim holds it
        status, _, err = cli(capsys, "run", config, "--out", out, "--quiet", "--n-jobs", "1", "--resume")
    one_line_error(status, err, f"out = '{out}' is in use by another ldpsim run")
    assert snapshot(out) == before


def _damage(path: Path, how: str):
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "garbage":
        path.write_bytes(b"not a chunk")
    elif how == "foreign arrays":
        np.savez(path, x=np.zeros(3))
    elif how == "wrong shapes":
        with np.load(path) as z:
            arrays = {k: z[k] for k in z.files}
        arrays["bounds"] = arrays["bounds"][:, :2]
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)
    elif how == "wrong reps":
        with np.load(path) as z:
            arrays = {k: np.concatenate([z[k], z[k][:1]]) if z[k].ndim else z[k] for k in z.files}
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)
    elif how == "bare array":
        with open(path, "wb") as fh:
            np.save(fh, np.zeros(3))
    elif how == "directory":
        path.unlink()
        path.mkdir()


@pytest.mark.parametrize("how", ["truncated", "empty", "garbage", "foreign arrays", "wrong shapes", "wrong reps",
                                 "bare array", "directory"])
def test_a_damaged_chunk_is_reported_moved_aside_and_recomputed(earlier, capsys, how):
    out, config, before = earlier
    chunk = next((out / "chunks").glob("*.npz"))
    _damage(chunk, how)
    status, _, err = cli(capsys, "run", config, "--out", out, "--quiet", "--n-jobs", "1", "--resume")
    assert status == 0 and "Traceback" not in err, err
    assert f"ldpsim: chunk {chunk.name} " in err and "moved to chunks/damaged/, its replications are recomputed" in err
    assert (out / "chunks" / "damaged" / chunk.name).exists()
    assert (out / "summary.csv").read_bytes() == before["summary.csv"][0]
    assert store.read_chunk(chunk, 3)[1] is None  # recomputed, whole


# --- 7. table and compare read a damaged or foreign directory with one-line errors ----------------------


@pytest.mark.parametrize("name,text,fragment", [
    ("summary.csv", "", "summary.csv' is empty: no header"),
    ("summary.csv", "method,coord,n\nBB,0,5\n", "has no 'reps' column"),
    ("summary.csv", "method\n", "has a header but no rows"),
    ("summary.csv", None, "line 3: 12 cells, but the header has 13"),  # a short row
    ("summary.csv", "coverage=abc", "line 2: coverage = 'abc' is not a number"),
    ("summary.csv", "drop method", "has no 'method' column: not a table of this study"),
    ("summary.csv", b"\xff\xfe", "summary.csv' is not UTF-8 text"),
    ("summary.csv", "a\n" + "x" * 200_000 + "\n", "is not a CSV table: field larger than field limit"),
    ("meta.json", "{bad json", "meta.json' cannot be read: not valid JSON: Expecting property name"),
    ("meta.json", "[]", "meta.json' cannot be read: it does not hold a JSON object"),
    ("meta.json", '{"config": [1]}', "meta.json' has a config that is not a mapping"),
    ("meta.json", '{"config": {"study": "nope"}}', "study = 'nope' is not one of: coverage, trajectory"),
    ("meta.json", '{"config": {"study": "trajectory"}}', "summary.csv' has no 'estimator' column"),
])
@pytest.mark.parametrize("command", ["table", "compare"])
def test_table_and_compare_of_a_damaged_directory(earlier, capsys, name, text, fragment, command):
    out, _, _ = earlier
    path = out / name
    lines = path.read_text().splitlines(keepends=True)
    if text is None:
        path.write_text(lines[0] + lines[1] + lines[2].rsplit(",", 1)[0] + "\n")
    elif text == "coverage=abc":
        head = lines[0].strip().split(",")
        cells = lines[1].strip().split(",")
        cells[head.index("coverage")] = "abc"
        path.write_text(lines[0] + ",".join(cells) + "\n")
    elif text == "drop method":
        path.write_text("".join(line.replace("method,", "what,") for line in lines))
    elif isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    before = snapshot(out)
    if command == "compare" and "trajectory" in str(text):  # compare reads the study before the tables
        fragment = "holds a trajectory run: compare scores the coverage study's intervals"
    status, _, err = cli(capsys, command, out)
    one_line_error(status, err, fragment)
    assert snapshot(out) == before


def test_table_of_a_missing_or_odd_directory(tmp_path, capsys):
    status, _, err = cli(capsys, "table", tmp_path / "none")
    one_line_error(status, err, f"dir = '{tmp_path / 'none'}' not found")
    status, _, err = cli(capsys, "table", "")
    one_line_error(status, err, "dir = '' is empty")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "summary.csv").mkdir()
    status, _, err = cli(capsys, "table", tmp_path / "d")
    one_line_error(status, err, "has no summary.csv")


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

KILLER = textwrap.dedent("""
    import os, signal, sys
    import ldpsim.engine.chunks as chunks
    from ldpsim.cli import main

    chunks.MAX_CHUNK_REPS = 2  # three chunks of a tiny run
    real, saved = os.replace, []

    def replace(src, dst):  # SIGKILL between writing the second chunk and renaming it
        if str(dst).endswith(".npz"):
            saved.append(dst)
            if len(saved) == 2:
                os.kill(os.getpid(), signal.SIGKILL)
        return real(src, dst)

    os.replace = replace
    sys.exit(main(sys.argv[1:]))
""")


def test_sigkill_between_write_and_rename_then_resume_is_byte_identical(tmp_path, capsys, monkeypatch):
    (tmp_path / "k.yaml").write_text(TINY.replace("reps: 3", "reps: 6"))
    killed = tmp_path / "killed"
    proc = subprocess.run([sys.executable, "-c", KILLER, "run", str(tmp_path / "k.yaml"), "--out", str(killed),
                           "--quiet", "--n-jobs", "1"], capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    names = sorted(p.name for p in (killed / "chunks").iterdir() if p.name != ".lock")
    assert len(names) == 2 and names[1].endswith(".npz") and names[0].endswith(".tmp")  # one chunk, one half
    assert json.loads((killed / "meta.json").read_text())["status"] == "running"  # identified, not finished
    monkeypatch.setattr(store, "MAX_CHUNK_REPS", 2)
    status, _, err = cli(capsys, "run", tmp_path / "k.yaml", "--out", killed, "--quiet", "--n-jobs", "1", "--resume")
    assert status == 0 and "resume: reusing 1 of 3 chunks" in err
    assert not list((killed / "chunks").glob("*.tmp"))
    whole = tmp_path / "whole"
    assert cli(capsys, "run", tmp_path / "k.yaml", "--out", whole, "--quiet", "--n-jobs", "1")[0] == 0
    assert (killed / "summary.csv").read_bytes() == (whole / "summary.csv").read_bytes()


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


def test_a_trace_directory_and_a_run_directory_are_told_apart(tmp_path, capsys):
    (tmp_path / "c.yaml").write_text(TINY)
    out = tmp_path / "trace"
    out.mkdir()  # as `trace` wrote it before run ids existed
    (out / "meta.json").write_text(json.dumps({"name": "trace", "replication": 0, "config": {"n": 4000, "seed": 3}}))
    (out / "trace.csv").write_text("checkpoint\n10\n")
    before = snapshot(out)
    status, _, err = cli(capsys, "run", tmp_path / "c.yaml", "--out", out, "--quiet")
    one_line_error(status, err, "holds another run", "(study = 'trace'), not this one", "(study = 'coverage')")
    assert snapshot(out) == before


def test_an_output_directory_with_a_meta_json_directory_or_a_symlink_loop(tmp_path, capsys):
    (tmp_path / "c.yaml").write_text(TINY)
    (tmp_path / "m" / "meta.json").mkdir(parents=True)
    status, _, err = cli(capsys, "run", tmp_path / "c.yaml", "--out", tmp_path / "m", "--quiet")
    one_line_error(status, err, "holds a meta.json that is not a run's (it is a directory)")
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    status, _, err = cli(capsys, "run", tmp_path / "c.yaml", "--out", tmp_path / "loop1" / "x", "--quiet")
    one_line_error(status, err, "cannot be created: Too many levels of symbolic links")


def test_a_chunk_that_is_a_link_to_a_device_is_set_aside(earlier, capsys):
    out, config, before = earlier
    chunk = next((out / "chunks").glob("*.npz"))
    chunk.unlink()
    chunk.symlink_to("/dev/zero")
    status, _, err = cli(capsys, "run", config, "--out", out, "--quiet", "--n-jobs", "1", "--resume")
    assert status == 0 and "moved to chunks/damaged/" in err
    assert (out / "summary.csv").read_bytes() == before["summary.csv"][0]


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


def test_the_readme_quick_look_never_replaces_the_committed_table(capsys, monkeypatch):
    root = Path(__file__).parents[1]
    monkeypatch.chdir(root)
    before = snapshot(root / "results" / "quantile")
    monkeypatch.setattr("ldpsim.api.simulate", lambda *a, **k: pytest.fail("the simulation started"))
    status, _, err = cli(capsys, "run", "configs/quantile.yaml", "--reps", "50", "--n", "1e6")
    one_line_error(status, err, "out = 'results/quantile' holds another run", "(n = [1000000, 10000000, 100000000], "
                   "reps = 500), not this one")
    assert snapshot(root / "results" / "quantile") == before


def test_sigterm_is_handled_as_an_interrupt(tmp_path, capsys, monkeypatch):
    (tmp_path / "c.yaml").write_text(TINY)

    def terminated(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)  # a batch system's time limit, mid-run
        pytest.fail("SIGTERM did not stop the run")

    monkeypatch.setattr("ldpsim.api.simulate", terminated)
    handler = signal.getsignal(signal.SIGTERM)
    status, _, err = cli(capsys, "run", tmp_path / "c.yaml", "--out", tmp_path / "o", "--quiet")
    assert status == 143 and err == "ldpsim: terminated; finished chunks are saved, rerun with --resume to continue\n"
    assert signal.getsignal(signal.SIGTERM) == handler and not (tmp_path / "o").exists()


def test_files_that_are_links_to_a_device_are_not_read_forever(earlier, capsys):
    out, config, before = earlier
    (out / "meta.json").unlink()
    (out / "meta.json").symlink_to("/dev/zero")
    status, _, err = cli(capsys, "run", config, "--out", out, "--quiet", "--resume")
    one_line_error(status, err, "holds a meta.json that is not a run's (it is not a regular file)")
    status, _, err = cli(capsys, "table", out)
    one_line_error(status, err, "meta.json' cannot be read: it is not a regular file")


def test_compare_leaves_out_rows_without_usable_replications(tmp_path, capsys):
    out = paper_like(tmp_path / "r")
    text = (out / "summary.csv").read_text().replace("BB,0,1000000,500,0,0.9", "BB,0,1000000,0,500,nan", 1)
    (out / "summary.csv").write_text(text)
    status, stdout, err = cli(capsys, "compare", out)
    assert status == 0 and "1 row(s) left out of the comparison (first: no usable replications" in err
    assert stdout.count("| BB ") == 1


def test_force_removes_only_what_a_run_writes(earlier, capsys):
    out, config, _ = earlier
    meta = json.loads((out / "meta.json").read_text())
    meta["outputs"] += ["notes.txt", "../tiny.yaml", "c.yaml"]  # a meta.json is not trusted to name other files
    (out / "meta.json").write_text(json.dumps(meta))
    (out / "notes.txt").write_text("mine")
    (out / "c.yaml").write_text(TINY)
    status, _, _ = cli(capsys, "run", config, "--out", out, "--quiet", "--n-jobs", "1", "--seed", "5", "--force")
    assert status == 0 and (out / "notes.txt").exists() and (out / "c.yaml").exists() and config.exists()


def test_a_trace_whose_numbers_lost_their_precision_has_no_intervals():
    from ldpsim.studies.coverage.trace import compute_trace, resolve_trace

    config = resolve_trace({"n": 2000, "checkpoints": 8, "seed": 3, "B": 50, "theta0": 1e20})
    result = compute_trace(config)  # BB, BM, SN were [1e20, 1e20]: length 0, reported as intervals
    assert np.isnan(result.bounds).all() and (result.trace.theta_bar == 1e20).all()
