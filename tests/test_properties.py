"""Property: whatever a config file holds, ``run`` and ``check`` accept it or refuse it in one line.

Random mappings of config keys (and unknown keys) to wrong types, extreme floats, strings, nulls, lists
where scalars belong and mappings, written as YAML files, go through the command line in this process.
Each must end with exit status 0 (or 1: a ``check`` whose assumption fails) or 2 with exactly one
``ldpsim: error: ...`` line, every line on stderr being ldpsim's own (no traceback, no raw numpy
warning), within a hang guard of 60 s per example (a tiny accepted run takes well under a second).
The keys that set the amount of work (``n``, ``reps``, ``B``, ``batch_size``, ...) are drawn from tiny
valid values and from invalid ones, so that accepted runs stay tiny.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
import signal
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ldpsim
from ldpsim.cli import main
from ldpsim.engine.runs.config import RUN_KEYS
from ldpsim.studies import STUDIES

#: A value that is not what any key wants, or is at the edge of what it takes.
SCALAR = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-10**25, max_value=10**25),
    st.floats(allow_nan=True, allow_infinity=True), st.floats(min_value=-1e-300, max_value=1e-300),
    st.sampled_from(["", "abc", "1e6", "inf", "-inf", "nan", ".nan", "1e400", "0x10", "BB", "quantile", "rr",
                     "uniform", "laplace", "gaussian", "trajectory", "coverage", "1e4.5", "\u00e9", "[1, 2]"]),
)
WILD = st.one_of(SCALAR, st.lists(SCALAR, max_size=3), st.dictionaries(st.text(max_size=3), SCALAR, max_size=2))

#: Values a valid run could use, so that many drawn configs are accepted and run.
PLAUSIBLE = {
    "model": ["quantile", "mean", "linear", "logistic", "quantile_regression"],
    "tau": [0.5, 0.9, [0.3, 0.7]], "epsilon": [1, 0.5, "inf", 8], "mechanism": [None, "rr", "laplace", "gaussian"],
    "delta": [1e-5, 0.1], "covariates": ["truncnorm", "uniform"], "clip": [1, 2.5], "c": [1, 0.5, 2],
    "gamma": [0.51, 0.75, 0.9, 1.0, 0.4], "theta0": [0, 0.5, -1], "beta": [0.75, 0.6, 0.9], "level": [0.9, 0.8],
    "multiplier": ["uniform", "rademacher", "gaussian", "mammen"], "methods": [["BB"], ["SN", "oracle"], "BM"],
    "seed": [1, 7, 0], "study": sorted(STUDIES),
    # dpsgd and sagd
    "oracle": ["lap", "sparse", ["lap", "sparse"]], "sampling": ["swor", "poisson", "cyclic"],
    "design": ["identity", "toeplitz"], "calibration": ["exact", "printed"], "mu": [2, "inf", [1, 2]],
    "eta": ["theorem", 0.1], "budget": ["theorem", "T", 5], "threshold": [4, 1],
}
#: Methods of the dpsgd and sagd studies (the coverage study's are in PLAUSIBLE).
STUDY_METHODS = {"dpsgd": [["plugin", "RS"], ["oracle", "BM"], ["BB"], ["DPGD", "plugin"]],
                 "sagd_generalization": [["sagd_lap", "adam"], ["sagd_sparse"], ["rmsprop"]]}
#: The keys that size the work: tiny valid values, or invalid ones (never a large valid one).
SIZED = {
    "n": [3000, 4000, [3000, 4000], 1, 0, -5, 2.5, 1e19, 1e30, "abc", "1e3.5", None, [], True, "inf"],
    "reps": [1, 2, 0, -1, 1e12, 2.5, "x", None, [1, 2], True],
    "B": [50, 60, 1, 2, 49, 1e12, -1, "many", None, [50, 60]],
    "batch_size": [1, 2, 0, -1, 1e30, None, 1.5],
    "checkpoints": [2, 10, 10000, 1, 1e9, None, "x"],
    "k_min": [1, 2, 10, 0, 1e9, -3],
    "fit_decades": [1, 0.5, 0, 1e300, -1, None, "inf"],
    # dpsgd: T = n^kappa steps, DP-GD's iteration counts
    "kappa": [1, 1.1, 0, 3.5, -1, None, "x"],
    "T2_max": [2, 3, 0, 1e9, None],
    "T2_every": [1, 2, 0, 1e9, None],
    # sagd: steps (T, epochs, T_factor, and T = 2 n sigma^2 / G1^2 when T is 'theorem', G1 set by radius and
    # scale), the dimension and the quadrature nodes per axis (a population gradient costs nodes^2 x d)
    "T": [20, 50, 0, -1, 1e15, 2.5, None, "x"],
    "epochs": [2, 5, 0, -1, 1e7, None, "x"],
    "T_factor": [3e3, 1e4, 1, 10, 0, -1, 1e300, float("inf"), None],  # (T >= 2 steps needs T_factor >= 539 here)
    "sigma": [0.5, 1, 0, -1, 1e-300, 1e-9, 1e300, None, "theorem", "x"],
    "radius": [1, 2, 0, -1, 1e-300, 1e300, None],
    "scale": [1, 2, 0, 1e-300, 1e300, None],
    "d": [3, 5, 2, 0, 1001, 1e9, None, 2.5],
    "nodes": [4, 8, 3, 0, 513, 1e9, None],
}
#: Every registered study's keys: a new study is drawn from as soon as it is in STUDIES (add its keys that
#: size the work to SIZED, so that accepted runs stay tiny).
KEYS = sorted({k.name for study in STUDIES.values() for k in study.keys} | {k.name for k in RUN_KEYS} | {"study"})
UNKNOWN = st.sampled_from(["tua", "Tau", "foo", "n ", "", "methods2"])


#: For ``check``: condition (14) is searched up to b0 = 1e6 in Python, a second for a tiny step size, so
#: its c and gamma come from here (wild ones go through ``run``; test_checks.py checks c = 1e300).
TAME = {"c": [1, 0.5, 2, 1e300, 0, -1, "x", None, [1, 2], float("inf")],
        "gamma": [0.51, 0.75, 1.0, 0.4, 0, 1.5, "x", None, [0.6, 0.7], float("nan")]}


def value_for(key, tame=False, wild=True):
    if key in SIZED:
        return st.sampled_from(SIZED[key] if wild else SIZED[key][:2])
    if tame and key in TAME:
        return st.sampled_from(TAME[key])
    plausible = st.sampled_from(PLAUSIBLE[key]) if key in PLAUSIBLE else st.nothing()
    return st.one_of(plausible, plausible, WILD) if wild or key not in PLAUSIBLE else plausible


@st.composite
def mappings(draw, wild_keys=True, tame=False):
    keys = draw(st.lists(st.sampled_from(KEYS), max_size=6, unique=True))
    mapping = {"n": 3000, "reps": 2, "B": 50}
    wild = draw(st.booleans())  # half the mappings use plausible values only: they mostly run
    for key in keys:
        mapping[key] = draw(value_for(key, tame, wild))
    if wild_keys and wild and draw(st.booleans()):
        mapping[draw(UNKNOWN)] = draw(SCALAR)
    # a mapping key YAML keeps as an int, not a string
    if wild_keys and draw(st.integers(0, 9)) == 0:
        mapping[3] = 1
    return mapping


class Hang(Exception):
    pass


def run_cli(args) -> tuple[int, str]:
    def alarm(signum, frame):
        raise Hang(f"ldpsim {' '.join(args)} ran past the hang guard")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(60)
    err, out = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out), warnings.catch_warnings():
            warnings.simplefilter("default")  # printed as the CLI prints them (a raw one fails the check below)
            status = main(args)
    except SystemExit as exc:  # argparse's refusal of a flag
        status = exc.code
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return status, err.getvalue()


def check_outcome(status: int, err: str, allowed=(0, 2)) -> None:
    lines = err.splitlines()
    assert status in allowed, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert all(line.startswith("ldpsim: ") for line in lines), err  # no raw warning or stray output
    errors = [line for line in lines if line.startswith("ldpsim: error: ")]
    if status == 2:
        assert len(errors) == 1 and lines[-1] == errors[0], err
    else:
        assert not errors, err


def write_config(directory: Path, mapping: dict) -> Path:
    path = directory / "c.yaml"
    path.write_text(yaml.safe_dump(mapping, allow_unicode=True, sort_keys=False))
    return path


COMMON = dict(deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=45, **COMMON)
@given(mappings())
def test_run_accepts_or_refuses_in_one_line(mapping):
    run_and_compare(mapping)


#: Tiny valid settings of the dpsgd and sagd studies (their keys are few among all studies' keys, so the
#: mixed mappings above seldom reach them): each example below is one of them with up to five keys drawn.
STUDY_BASE = {
    "dpsgd": {"n": 200, "reps": 2, "B": 50, "kappa": 1.5},
    "sagd_concentration": {"n": 200, "reps": 2, "T": 20, "nodes": 8},
    "sagd_generalization": {"n": 50, "reps": 2, "epochs": 3, "nodes": 8, "checkpoints": 2},
    "sagd_rate": {"n": [200, 400], "reps": 2, "nodes": 8},
}


@st.composite
def study_mappings(draw, study):
    keys = draw(st.lists(st.sampled_from(sorted(k.name for k in STUDIES[study].keys)), max_size=5, unique=True))
    mapping = {"study": study, **STUDY_BASE[study]}
    wild = draw(st.booleans())
    for key in keys:
        if key == "methods" and study in STUDY_METHODS:
            plausible = st.sampled_from(STUDY_METHODS[study])
            mapping[key] = draw(st.one_of(plausible, WILD) if wild else plausible)
        else:
            mapping[key] = draw(value_for(key, wild=wild))
    if wild and draw(st.booleans()):
        mapping[draw(UNKNOWN)] = draw(SCALAR)
    return mapping


@pytest.mark.parametrize("study", sorted(STUDY_BASE))
def test_dpsgd_and_sagd_configs_run_or_refuse_in_one_line(study):
    @settings(max_examples=7, **COMMON)
    @given(study_mappings(study))
    def check(mapping):
        run_and_compare(mapping)

    check()


def run_and_compare(mapping):
    """``run`` of the mapping as a config file: accepted, or one line; the Python API says the same."""
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(Path(tmp), mapping)
        status, err = run_cli(["run", str(config), "--out", str(Path(tmp) / "o"), "--quiet", "--n-jobs", "1"])
    check_outcome(status, err)
    # the Python API on the same mapping: a Result, or the CLI's line as a ConfigError
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ldpsim.ConfigWarning)
        try:
            ldpsim.run(dict(mapping), n_jobs=1, progress=False)
            assert status == 0, err
        except ldpsim.ConfigError as exc:
            cli_line = re.sub(r" in config file '[^']*'", " in config", err.splitlines()[-1])
            assert status == 2 and cli_line == f"ldpsim: error: {exc}", (err, str(exc))


@settings(max_examples=30, **COMMON)
@given(mappings(tame=True))
def test_check_accepts_or_refuses_in_one_line(mapping):
    with tempfile.TemporaryDirectory() as tmp:
        status, err = run_cli(["check", str(write_config(Path(tmp), mapping))])
    check_outcome(status, err, allowed=(0, 1, 2))


#: The dpsgd and sagd studies' and the online models' size and budget keys and values (run, then table): each
#: combination is refused in one line before any work (runs of years, paths of one step, budgets that contradict
#: or overflow) or runs tiny and redraws its tables.
SIZE_AND_BUDGET = {
    # (n, kappa) together: n = 200000 at kappa 2 is an hour, accepted; at 3 (8e15 steps) years, refused
    "dpsgd": ({"study": "dpsgd", "n": 100, "kappa": 1.2, "reps": 2, "B": 50, "methods": ["plugin", "BM"]},
              {"size": [(100, 3), (200000, 3), (200000, 2.999), (100, 1.2)], "batch_size": [1, 2]}),
    "sagd_concentration": ({"study": "sagd_concentration", "n": 200, "reps": 2, "nodes": 8, "mu": [1, 2]},
                           {"T": [20, 4e13, 1e15, "theorem"], "oracle": ["lap", "sparse"], "batch_size": [None, 1],
                            "sigma": [0.5, 1]}),
    "sagd_rate": ({"study": "sagd_rate", "n": [200, 400], "reps": 2, "nodes": 8},
                  {"T_factor": [1, 1e-9, 3e4, 1e4, None], "oracle": ["lap", "sparse"]}),
    "sagd_generalization": ({"study": "sagd_generalization", "n": 20, "d": 3, "reps": 2, "nodes": 4},
                            {"epochs": [3, 2e4], "checkpoints": [2, 1e4], "methods": [["rmsprop"], ["sagd_lap"]]}),
    "online": ({"study": "trajectory", "n": 2000, "reps": 2, "seed": 1, "gamma": 0.6, "c": 0.2},
               {"model": ["logistic_clip", "huber_clip", "logistic_mallows"], "dim": [5, 20, 200],
                "clip": [1, 0.1], "theta0": [0, 1e300], "mu": [1, "inf"],
                "budget": [None, "1e0", "1.0e-310", "uniform(1, 2)", {"uniform": [1e-300, 1]}, "inf"]}),
}


@st.composite
def size_and_budget_mappings(draw, study):
    base, choices = SIZE_AND_BUDGET[study]
    mapping = dict(base)
    for key in draw(st.lists(st.sampled_from(sorted(choices)), min_size=1, max_size=len(choices), unique=True)):
        value = draw(st.sampled_from(choices[key]))
        if key == "size":
            mapping["n"], mapping["kappa"] = value
        elif value is not None:
            mapping[key] = value
    return mapping


# online: 39 s cold of 004's kernels at every key, which the slow tier's every-model checks compile: slow
@pytest.mark.parametrize("study", [pytest.param(s, marks=pytest.mark.slow) if s == "online" else s
                                   for s in sorted(SIZE_AND_BUDGET)])
def test_size_and_budget_keys_run_or_refuse_in_one_line_and_read_back(study):
    @settings(max_examples=6, **COMMON)
    @given(size_and_budget_mappings(study))
    def check(mapping):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "o"
            status, err = run_cli(["run", str(write_config(Path(tmp), mapping)), "--out", str(out), "--quiet",
                                   "--n-jobs", "1"])
            check_outcome(status, err)
            if status == 0:  # the tables and figures are redrawn from the files
                status, err = run_cli(["table", str(out)])
                check_outcome(status, err, allowed=(0,))

    check()


#: ``fit``, the command that meets a user's data: hostile files (collinear, separable, a byte-order mark, a
#: column named twice, a covariate near 1e300, a constant column, a blank or text cell, one row, no rows)
#: under flags drawn from valid, edge and invalid values.
FIT_FILES = {
    "linear": lambda g, n: "y,x1,x2\n" + "".join(f"{2 + a - b + g.normal()},{a},{b}\n" for a, b in
                                                 zip(g.normal(size=n), g.exponential(size=n))),
    "logistic": lambda g, n: "y,x1,x2\n" + "".join(f"{int(g.random() < 1 / (1 + math.exp(-a)))},{a},{b}\n"
                                                   for a, b in zip(g.normal(size=n), g.normal(size=n))),
    "collinear": lambda g, n: "y,x1,x2,x3\n" + "".join(f"{a + g.normal()},{a},{b},{a + b}\n" for a, b in
                                                       zip(g.normal(size=n), g.normal(size=n))),
    "separable": lambda g, n: "y,x1,x2\n" + "".join(f"{int(a > 0)},{a},{g.normal()}\n" for a in g.normal(size=n)),
    "bom": lambda g, n: "\ufeff" + FIT_FILES["linear"](g, n),
    "twice": lambda g, n: FIT_FILES["linear"](g, n).replace("y,x1,x2", "y,x1,x1", 1),
    "huge": lambda g, n: "y,x1,x2\n" + "".join(f"{g.normal()},{1e300 * (1 + 0.1 * g.normal())},{g.normal()}\n"
                                               for _ in range(n)),
    "constant": lambda g, n: "y,x1,x2\n" + "".join(f"{g.normal()},{a},7\n" for a in g.normal(size=n)),
    "blank": lambda g, n: FIT_FILES["linear"](g, n).replace("\n", "\n,,\n", 1),
    "text": lambda g, n: FIT_FILES["linear"](g, n) + "1,abc,2\n",
    "one row": lambda g, n: "y,x1,x2\n1,2,3\n",
    "no rows": lambda g, n: "y,x1,x2\n",
}
FIT_FLAGS = {
    "--model": ["linear", "logistic", "probit"],
    "--epsilon": ["3", "0.5", "0", "-1", "inf", "nan", "1e300", "1e-300", "x"],
    "--mu": ["1", "1e-300", "inf"],
    "--delta": ["1e-5", "1e-9", "0", "1", "0.5", "nan"],
    "--accountant": ["rdp", "pld", "gdp", "clt"],
    "--sampling": ["swor", "poisson", "cyclic"],
    "--share-moments": ["0.1", "0", "0.5", "1", "-0.1"],
    "--share-scaling": ["0.1", "0", "0.9", "nan"],
    "--bounds": [["x1=-5:5"], ["x1=5:-5"], ["x1=0:0"], ["x9=0:1"], ["x1"], ["x1=a:b"], ["x1=-inf:inf"]],
    "--clip": ["1", "0", "-1", "inf", "1e-300", "1e300"],
    "--kappa": ["1.2", "1", "0", "3", "1e300", "nan"],
    "--max-steps": ["1e3", "0", "1e300", "x", "100.5"],
    "--batch-size": ["1", "5", "0", "-3", "100000"],
    "--c": ["0.2", "0", "1e10", "-1", "inf", "1e-300"],
    "--level": ["0.9", "0.001", "1", "0", "0.99999"],
    "--seed": ["1", "-1", "2"],
    "--covariates": [["x1"], ["x1", "x1"], ["x9"], ["y"], ["x1", "x2"]],
    "--no-scaling": [None], "--nonprivate-scaling": [None], "--show-nonprivate": [None],
}


@st.composite
def fit_commands(draw, path):
    kind = draw(st.sampled_from(sorted(FIT_FILES)))
    g = np.random.default_rng(draw(st.integers(0, 2**16)))
    path.write_text(FIT_FILES[kind](g, 150), encoding="utf-8")
    flags = draw(st.lists(st.sampled_from(sorted(FIT_FLAGS)), max_size=4, unique=True))
    # the budget: --epsilon 2 unless --mu is drawn, and then sometimes both (refused: one or the other)
    args = ["fit", str(path), "--response", "y", "--kappa", "1.2", "--seed", "0"]
    if "--mu" not in flags or draw(st.booleans()):
        args += ["--epsilon", "2"]
    for flag in flags:
        value = draw(st.sampled_from(FIT_FLAGS[flag]))
        args += [flag] if value is None else [flag, *value] if isinstance(value, list) else [flag, value]
    return args


def test_fit_accepts_or_refuses_in_one_line(tmp_path):
    @settings(max_examples=60, **COMMON)
    @given(st.data())
    def check(data):
        status, err = run_cli(data.draw(fit_commands(tmp_path / "d.csv")))
        if err.startswith("usage: "):  # a flag's type or choice, refused by argparse: its usage, then one error
            *usage, last = err.splitlines()
            assert status == 2 and last.startswith("python -m ldpsim fit: error: argument --"), err
            assert all(line.startswith(("usage: ", " ")) for line in usage), err
            return
        check_outcome(status, err)

    check()
