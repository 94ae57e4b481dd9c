"""Issue 18, parts 3 and 5: resumed runs report honestly; runs that cannot be stopped or never end; the hostile
inputs of this round (and the hunt's own). Each input ends in a result, or in one line ``ldpsim: error: ...``
(exit status 2; the API raises ConfigError) before any work: no traceback, no hang, nothing lost.

No timing is asserted: stopping is checked by a kernel returning at all (a guard of minutes against a run of
hours), compute times by a clock the test controls.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml

import ldpsim
from ldpsim.cli import main
from ldpsim.engine import chunks as store
from ldpsim.engine import interrupt
from ldpsim.engine.rng import as_generator

ROOT = Path(__file__).parents[1]

#: A tiny coverage run of 120 replications: three chunks of 50, 50 and 20 (the chunk size caps at 50).
SMALL = {"model": "mean", "n": 20000, "reps": 120, "seed": 3}


def cli(capsys, *args):
    """``python -m ldpsim ARGS`` in this process, warnings printed as the CLI prints them: (status, out, err)."""
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("default")  # a raw (non-ldpsim) warning line then fails the checks
        status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    assert all(line.startswith("ldpsim: ") for line in err.splitlines()), err
    return status, out, err


def one_line_error(status, err, *fragments):
    lines = [line for line in err.strip().splitlines() if not line.startswith("ldpsim: warning: ")]
    assert status == 2, err
    assert len(lines) == 1 and lines[0].startswith("ldpsim: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def write(tmp_path, mapping, name="c.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(mapping, sort_keys=False))
    return path


def api_run(mapping, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ldpsim.ConfigWarning)
        return ldpsim.run(mapping, n_jobs=kw.pop("n_jobs", 1), progress=kw.pop("progress", False), **kw)


def no_work(monkeypatch):
    """Make the simulation fail the test if it starts."""
    monkeypatch.setattr("ldpsim.api.simulate", lambda *a, **k: pytest.fail("the simulation started"))


# --- part 3: resumed runs report honestly ------------------------------------------------------------------


# --- runs that never end -------------------------------------------------------------------------------------


# --- kernels stop when asked ---------------------------------------------------------------------------------


def _online(model="huber_mallows", **keys):
    from ldpsim.models import build_model

    return build_model(_setting(model, **keys))


def _setting(model="huber_mallows", **keys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ldpsim.ConfigWarning)
        config = ldpsim.load_config({"study": "trajectory", "model": model, "n": 1000, "reps": 1, **keys})
    return config.settings[0]


# --- valid inputs that crashed --------------------------------------------------------------------------------


@pytest.mark.parametrize("dim,clip", [(20, 1.0), (200, 1.0), (5, 0.1), (1000, 1.0), (5, 1e-6)])
def test_the_clipped_limit_of_logistic_clip_is_found(dim, clip):
    model = _online("logistic_clip", dim=dim, clip=clip, mu="inf")
    limit = model.limit()
    # the root of the mean clipped gradient (what solve_root requires of every coordinate)
    assert np.abs(model.mean_bounded_gradient(limit)).max() < 1e-12
    assert np.isfinite(limit).all()


def test_a_logistic_clip_run_at_dim_20_writes_its_bias_table(tmp_path, capsys):
    mapping = {"study": "trajectory", "model": "logistic_clip", "dim": 20, "clip": 1, "n": 2000, "reps": 2,
               "seed": 1, "c": 0.2, "gamma": 0.6}
    status, _, err = cli(capsys, "run", write(tmp_path, mapping), "--out", tmp_path / "o", "--quiet",
                         "--n-jobs", "1")
    assert status == 0 and (tmp_path / "o" / "bias.csv").exists()


# --- silent nonsense ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("factor", [1, 1e-9])
def test_sagd_rate_refuses_paths_of_one_step(tmp_path, capsys, monkeypatch, factor):
    no_work(monkeypatch)
    status, _, err = cli(capsys, "run", write(tmp_path, {"study": "sagd_rate", "T_factor": factor}), "--out",
                         tmp_path / "o", "--quiet")
    one_line_error(status, err, f"T_factor = {float(factor)!r}", "= 1 step at n = 1000", "needs T >= 2",
                   "raise T_factor")


def test_sagd_rate_by_default_runs_paths_of_many_steps():
    from ldpsim.studies.sagd.common import build_model
    from ldpsim.studies.sagd.rate import schedule

    config = ldpsim.load_config({"study": "sagd_rate"})
    assert min(schedule(s, build_model(s))[1] for s in config.settings) >= 100


def test_a_budget_law_with_mu_inf_is_refused(tmp_path, capsys, monkeypatch):
    no_work(monkeypatch)
    status, _, err = cli(capsys, "run", ROOT / "configs" / "shi_budgets.yaml", "--set", "mu=inf", "--set",
                         "budget=uniform(1, 2)", "--out", tmp_path / "o", "--quiet")
    one_line_error(status, err, "budget = uniform(1, 2) draws each user's mu, but mu = inf asks for no privacy")


# --- misleading messages --------------------------------------------------------------------------------------


def test_a_budget_written_like_a_number_is_one(capsys):
    warnings.simplefilter("ignore", ldpsim.ConfigWarning)  # (gamma = 0.5; pytest restores the filters)
    for text in ("1e0", "1.0", "1"):
        config = ldpsim.load_config(ROOT / "configs" / "shi_budgets.yaml", budget=text)
        assert {s.mu for s in config.settings} == {1.0} and {s.budget for s in config.settings} == {None}
    status, _, err = cli(capsys, "check", ROOT / "configs" / "shi_budgets.yaml", "--set", "budget=1e0")
    assert "not a budget" not in err
    assert ldpsim.load_config(ROOT / "configs" / "shi_budgets.yaml", budget="inf").settings[0].mechanism is None


@pytest.mark.parametrize("value", ["1.0e-310", "1e-200"])
def test_a_tiny_budget_is_named_as_the_budget(tmp_path, capsys, value):
    status, _, err = cli(capsys, "run", ROOT / "configs" / "shi_budgets.yaml", "--set", f"budget={value}",
                         "--out", tmp_path / "o")
    line = one_line_error(status, err, "budget = ", "is too small", "at least 1e-150")
    assert "mu =" not in line


@pytest.mark.slow  # a per-user-budget trajectory run and its figure (28 s of kernels, cold): CI's slow tier
def test_drawing_a_run_whose_noise_overflows_prints_no_raw_warning(tmp_path, capsys):
    # a per-user budget from 1e-300: a noise variance of 1e300 on the figure's log axis (matplotlib warned)
    status, _, err = cli(capsys, "run", ROOT / "configs" / "shi_budgets.yaml", "--reps", "2", "--n", "2000",
                         "--set", "budget=[null, {uniform: [1e-300, 1]}]", "--set", "mu=1", "--out", tmp_path / "o",
                         "--quiet", "--n-jobs", "1")
    assert status == 0  # and cli() checked that every stderr line is ldpsim's


def test_a_generalization_figure_of_many_checkpoints_draws_without_warnings(tmp_path):
    from ldpsim.studies.sagd.figures import generalization_figure

    epochs = np.arange(0, 100001, 5)  # 20001 checkpoints a method, as epochs = 1e6, checkpoints = 1e5 gives
    rows = [{"method": m, "epoch": int(e), "train_loss": 0.5 + 1 / (e + 1), "train_loss_se": 0.01,
             "test_loss": 0.6 + 1 / (e + 1), "test_loss_se": 0.01, "f_star": 0.5} for m in ("sagd_lap", "adam")
            for e in epochs]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert generalization_figure(tmp_path, {"summary": rows}) == ["generalization.png"]


def test_an_empty_theorem_range_is_called_empty():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ldpsim.load_config({"study": "sagd_concentration", "n": 200, "sigma": 0.5, "T": 20, "mu": [1, 2],
                            "reps": 2, "nodes": 8, "oracle": "lap"})
    text = " ".join(str(w.message) for w in caught)
    assert "Theorem 1's range of T is empty at sigma = 0.5, n = 200, beta = 0.01" in text, text
    assert "[11.11, 0.3102]" not in text


@pytest.mark.slow  # 36 s (a huber_mallows trajectory kernel compiled for it): CI's slow tier
def test_the_noise_free_path_from_1e300_gives_up_instead_of_running_for_hours(tmp_path, capsys):
    # the kernel diverges at once; summarising used to integrate the ODE from 1e300 for more than 10 minutes
    mapping = {"study": "trajectory", "model": "huber_mallows", "dim": 2, "theta0": 1e300, "n": 2000, "reps": 2,
               "seed": 1}
    status, _, err = cli(capsys, "run", write(tmp_path, mapping), "--out", tmp_path / "o", "--quiet",
                         "--n-jobs", "1")
    assert status == 0 and "2 replication(s) diverged" in err
    rows = ldpsim.open_result(tmp_path / "o").rows
    assert all(r["transient"] in (None, "") for r in rows)  # blank: no noise-free path from there
    status, _, err = cli(capsys, "table", tmp_path / "o")  # its figure: panels with nothing to show (was an error)
    assert status == 0


def test_the_noise_free_path_gives_up_after_its_budget_of_evaluations(monkeypatch):
    from ldpsim.studies.trajectory import theory
    from ldpsim.studies.trajectory.study import setting_checkpoints

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ldpsim.ConfigWarning)
        config = ldpsim.load_config(ROOT / "configs" / "shi_linear.yaml", dim=5, mu=1, gamma=0.6, n=20000)
    s = config.settings[0]
    model = _online(dim=5, mu=1, gamma=0.6)
    assert theory.mean_field(model, s, setting_checkpoints(s, config.options)) is not None
    monkeypatch.setattr(theory, "MEAN_FIELD_CALLS", 10)
    assert theory.mean_field(model, s, setting_checkpoints(s, config.options)) is None


# --- the hunt: more hostile inputs --------------------------------------------------------------------------
