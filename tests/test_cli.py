"""The command line end to end, as a user runs it."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ldpsim.cli import main

from run_helpers import (ROOT, SMALL, TINY, checked_cli, cli, no_work, one_error_line,
                         one_line_error_after_warnings, write)

TINY_YAML = """\
model: quantile
tau: [0.5, 0.9]
n: 2e4
reps: 6
seed: 3
B: 100
"""


def ldpsim(*args, cwd=None, check=True):
    proc = subprocess.run([sys.executable, "-m", "ldpsim", *args], capture_output=True, text=True, cwd=cwd)
    if check and proc.returncode != 0:
        raise AssertionError(proc.stderr)
    return proc


@pytest.fixture
def tiny_yaml(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY_YAML)
    return path


def test_run_writes_all_outputs_and_table_rerenders(tiny_yaml, tmp_path):
    proc = ldpsim("run", str(tiny_yaml), "--n-jobs", "1", cwd=tmp_path)
    out = tmp_path / "results" / "tiny"  # default: results/<config name>
    for name in ("summary.csv", "table.md", "table.tex", "meta.json"):
        assert (out / name).exists(), name
    assert "| 0.5   | BB" in proc.stdout and "cover" in proc.stdout
    meta = json.loads((out / "meta.json").read_text())
    assert meta["root_seed"] == 3 and meta["config"]["tau"] == [0.5, 0.9]
    assert {"numpy", "numba", "python"} <= set(meta["versions"]) and meta["wall_time_s"] > 0
    (out / "table.md").unlink()
    rerender = ldpsim("table", str(out))
    assert (out / "table.md").read_text() in rerender.stdout + "\n"
    assert "\\begin{tabular}" in (out / "table.tex").read_text()


def test_overrides_from_flags(tiny_yaml, tmp_path):
    out = tmp_path / "o"
    ldpsim("run", str(tiny_yaml), "--reps", "3", "--n", "1e4", "2e4", "--set", "tau=0.7", "--set", "methods=[SN]",
           "--out", str(out), "--quiet", "--n-jobs", "1")
    lines = (out / "summary.csv").read_text().splitlines()
    assert lines[0].startswith("method,coord,n,reps")  # only n varies now
    assert [line.split(",")[:4] for line in lines[1:]] == [["SN", "0", "10000", "3"], ["SN", "0", "20000", "3"]]


@pytest.mark.parametrize(
    "args,message",
    [
        (["--set", "tau=1.5"], "ldpsim: error: tau = 1.5 is outside (0, 1)"),
        (["--set", "tua=0.5"], "ldpsim: error: unknown key 'tua' in --set (did you mean 'tau'?)"),
        (["--n", "1e4.5"], "ldpsim: error: n = '1e4.5' is not an integer"),
        (["--set", "epsilon=0"], "ldpsim: error: epsilon = 0.0 is outside (0, inf]"),
    ],
)
def test_bad_input_one_line_and_exit_2(tiny_yaml, tmp_path, args, message, capsys):
    status = main(["run", str(tiny_yaml), "--out", str(tmp_path / "x"), *args])
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith(message)
    assert err.count("\n") == 1 and "Traceback" not in err


def test_missing_config_and_dir(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.yaml")]) == 2
    assert main(["table", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("ldpsim: error: config file") and "not found" in err[0]
    assert err[1].startswith("ldpsim: error: dir =") and "has no summary.csv" in err[1]


def test_warning_is_one_line(tiny_yaml, tmp_path):
    proc = ldpsim("run", str(tiny_yaml), "--set", "beta=0.5", "--reps", "2", "--out", str(tmp_path / "w"),
                  "--quiet", "--n-jobs", "1")
    warning = [line for line in proc.stderr.splitlines() if line.startswith("ldpsim: warning")]
    assert warning == ["ldpsim: warning: beta = 0.5 <= gamma = 0.51: Theorem 3.2 (block bootstrap) needs gamma < beta"]


def test_compare_with_paper(tmp_path):
    # a summary in the paper's setting (numbers made up): compare reports z and length ratio
    out = tmp_path / "c"
    out.mkdir()
    config = {"study": "coverage", "model": "quantile", "tau": 0.5, "epsilon": 1.0, "c": 1.0, "gamma": 0.51,
              "theta0": 0.0, "beta": 0.75, "B": 500, "level": 0.9, "multiplier": "uniform", "n": 1000000,
              "reps": 500, "seed": 1, "methods": ["BB"]}
    (out / "meta.json").write_text(json.dumps({"name": "c", "config": config, "varied": ["tau"]}))
    (out / "summary.csv").write_text(
        "tau,method,coord,n,reps,n_failed,coverage,coverage_se,length,length_se,theta_star,bias,sd,se_ratio\n"
        "0.5,BB,0,1000000,500,0,0.9,0.0134,0.0085,5e-05,0.0,0.0,0.0027,1.0\n"
    )
    proc = ldpsim("compare", str(out))
    assert "+0.99" in proc.stdout  # (0.900 - 0.880) / hypot(0.0134, 0.015)
    assert "1.000" in proc.stdout and (out / "compare_table1_quantile.md").exists()


@pytest.mark.slow  # a run killed in a subprocess and resumed in another: 8-10 s of the fast tier
def test_killed_run_resumes_to_the_same_summary(tmp_path):
    config = tmp_path / "k.yaml"
    config.write_text("tau: 0.5\nn: 1e6\nreps: 60\nseed: 5\nmethods: [BB, SN]\n")  # 3 chunks of 20
    killed = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "ldpsim", "run", str(config), "--out", str(killed),
                             "--n-jobs", "1", "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while not list((killed / "chunks").glob("*.npz")) if (killed / "chunks").exists() else True:
        assert time.time() < deadline and proc.poll() is None, "run ended before a chunk was saved"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    saved = list((killed / "chunks").glob("*.npz"))
    assert 1 <= len(saved) < 3 and not (killed / "summary.csv").exists()
    ldpsim("run", str(config), "--out", str(killed), "--n-jobs", "1", "--quiet", "--resume")
    whole = tmp_path / "whole"
    ldpsim("run", str(config), "--out", str(whole), "--n-jobs", "1", "--quiet")
    assert (killed / "summary.csv").read_bytes() == (whole / "summary.csv").read_bytes()
    assert all(p.exists() for p in saved)


def test_help_lists_commands():
    proc = ldpsim("--help")
    assert all(word in proc.stdout for word in ("run", "table", "compare"))


def test_module_entry_point_exists():
    assert (Path(__file__).parents[1] / "ldpsim" / "__main__.py").exists()


def test_keys_lists_the_models_own_mechanisms_and_laws(capsys):
    # the quantile model takes randomized response alone, and the normal or Cauchy law; the mean model its own list
    from ldpsim.cli import main

    def cells(model):  # key -> (default, allowed)
        assert main(["keys", model]) == 0
        lines = [line.split("|") for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
        return {c[1].strip(): (c[2].strip(), c[3].strip()) for c in lines}

    quantile = cells("quantile")
    assert quantile["mechanism"] == ("'rr'", "rr (the only one)")
    assert quantile["law"] == ("'normal'", "normal or cauchy")
    mean = cells("mean")
    assert mean["mechanism"][0] == "'laplace'" and "path/to/file.py:Class" in mean["mechanism"][1]
    assert "rr" not in [m.strip() for m in mean["mechanism"][1].removeprefix("one of: ").split(",")]
    assert "cauchy" not in mean["law"][1] and mean["law"][0] == "'uniform'"


# --- one-line errors and clean output -----------------------------------------------------------------------


@pytest.mark.parametrize("argv, message", [
    (["run", "configs/quantile.yaml", "--lanes", "abc"], r"--lanes: 'abc' is not an integer; allowed: 1 to 64"),
    (["run", "configs/quantile.yaml", "--lanes", "1.5"], r"--lanes: '1\.5' is not an integer; allowed: 1 to 64"),
    (["run", "configs/quantile.yaml", "--lanes", "0"], r"lanes = 0 is outside \[1, 64\]; allowed: 1 to 64"),
    (["fit", "x.csv", "--response", "y", "--epsilon", "abc"], r"--epsilon: 'abc' is not a decimal number"),
    (["fit", "x.csv", "--response", "y", "--mu", "1", "--epsilon", "1"], r"--epsilon: not allowed with argument --mu"),
    (["fit", "x.csv", "--response", "y", "--model", "probit"], r"--model: invalid choice: 'probit'"),
    (["fit", "x.csv", "--response", "y", "--covariates"], r"--covariates: expected at least one argument"),
    (["fit", "--response", "y", "--covariates", "a", "b", "missing.csv"],
     r"give the data file .*, before --covariates \(which take every value after them\)"),
    (["fit", "--response", "y", "--bounds", "a=0:1", "missing.csv"],
     r"give the data file .*, before --bounds \(which take every value after them\)"),
    (["frobnicate"], r"argument command: invalid choice: 'frobnicate'"),
    (["run"], r"the following arguments are required: config"),
])
def test_argparse_refusals_are_one_line(argv, message, capsys, monkeypatch, tmp_path):
    # they printed the whole usage (7 to 15 lines) before the error
    monkeypatch.chdir(ROOT)
    with pytest.raises(SystemExit) as info:
        if main(argv) == 2:
            raise SystemExit(2)
    assert info.value.code == 2
    err = one_error_line(capsys)
    assert re.search(message, err), err


def test_a_flag_given_twice_is_refused_not_half_ignored(tmp_path, capsys, monkeypatch):
    no_work(monkeypatch)
    config = write(tmp_path, SMALL)
    status, _, err = checked_cli(capsys, "run", config, "--n", "1e3", "--n", "2e3", "4e3")
    one_line_error_after_warnings(status, err, "--n is given twice (--n 1e3 and --n 2e3 4e3): give it once, with every value")
    status, _, err = checked_cli(capsys, "run", config, "--reps", "2", "--reps", "3")
    one_line_error_after_warnings(status, err, "--reps is given twice (--reps 2 and --reps 3)")
    status, _, err = checked_cli(capsys, "trace", ROOT / "configs" / "trace_quantile.yaml", "--seed", "1", "--seed", "2")
    one_line_error_after_warnings(status, err, "--seed is given twice")


def test_more_workers_left_out_than_cores_is_refused(tmp_path, capsys, monkeypatch):
    no_work(monkeypatch)
    status, _, err = checked_cli(capsys, "run", write(tmp_path, SMALL), "--n-jobs", "-100", "--out", tmp_path / "o")
    one_line_error_after_warnings(status, err, "n_jobs = -100 leaves 99 cores out of this machine's")


def test_no_raw_numpy_warning_for_a_far_start(tmp_path, capsys):
    (tmp_path / "c.yaml").write_text(TINY)
    status, _, err = cli(capsys, "run", tmp_path / "c.yaml", "--out", tmp_path / "o", "--quiet", "--n-jobs", "1",
                         "--set", "theta0=1e200")
    assert status == 0 and all(line.startswith("ldpsim: ") for line in err.splitlines()), err
    assert "RuntimeWarning" not in err


# --- without numba ------------------------------------------------------------------------------------------


def test_the_package_imports_and_checks_with_numba_disabled():
    # how users debug numba code: every command failed at import
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    proc = subprocess.run([sys.executable, "-m", "ldpsim", "check", "configs/quantile.yaml"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


def test_a_run_with_numba_disabled(tmp_path):
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    config = write(tmp_path, {"model": "mean", "n": 300, "reps": 2, "seed": 1, "methods": ["BM", "SN"]})
    proc = subprocess.run([sys.executable, "-m", "ldpsim", "run", str(config), "--out", str(tmp_path / "o"),
                           "--quiet", "--n-jobs", "1"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr


def test_a_closed_stdout_pipe_ends_quietly():
    # `python -m ldpsim fit ... | head` ended in "internal error: BrokenPipeError" (issue 44, section 5)
    child = subprocess.Popen([sys.executable, "-m", "ldpsim", "keys", "quantile"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    child.stdout.close()  # the reader is gone before the first line is written
    with child.stderr:
        err = child.stderr.read().decode()
    assert child.wait(timeout=300) == 1
    assert err == "", err  # no internal error, no traceback, no "Exception ignored" at exit


def test_a_broken_pipe_that_is_not_stdout_is_still_a_bug(capsys, monkeypatch):
    import ldpsim.cli as cli_module

    def broken(args):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(cli_module, "_keys", broken)
    monkeypatch.delenv("LDPSIM_TRACEBACK", raising=False)
    status = cli_module.main(["keys", "quantile"])
    assert status == 70 and "internal error: BrokenPipeError" in capsys.readouterr().err
