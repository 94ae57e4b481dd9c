"""Issue 32 (all but `fit`): the mishandled inputs of round 4 and the hunt's, each with its test."""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import ldpsim
from ldpsim.cli import main
from ldpsim.engine.config import ConfigError
from ldpsim.inference.zoo import ZOO_METHODS, HiGradLayout

ROOT = Path(__file__).resolve().parents[1]
ALL = ["BB", "BM", "SN", "oracle", *ZOO_METHODS]


def _copy(name: str, tmp_path: Path) -> Path:
    """A committed run's directory, copied (``table`` rewrites its tables)."""
    out = tmp_path / name
    shutil.copytree(ROOT / "results" / name, out)
    return out


# --- the zoo's tables and figure ---------------------------------------------------------------------------------

@pytest.mark.slow  # 16 s (a zoo kernel for a figure test): CI's slow tier
def test_a_zoo_run_with_a_level_grid_draws_a_nominal_line_per_level(tmp_path):
    # zoo_tables drew the nominal line with the list [0.8, 0.95]: matplotlib refused, the run ended in exit 70
    # one zoo method draws the zoo's figure (every method would compile a kernel of its own for minutes)
    result = ldpsim.run({"model": "quantile", "n": 2000, "reps": 4, "seed": 1, "level": [0.8, 0.95], "B": 60,
                         "methods": ["BB", "SN", "OBM"]}, out=tmp_path / "run", n_jobs=1, progress=False)
    assert result.meta["status"] == "complete"
    assert (tmp_path / "run" / "zoo.png").is_file()
    text = (tmp_path / "run" / "zoo.md").read_text()
    assert "## level = 0.8, n = 2000" in text and "## level = 0.95, n = 2000" in text
    assert "Nominal coverage: each table's level" in text


def test_the_zoo_figure_draws_each_panels_own_level(tmp_path, monkeypatch):
    from ldpsim.studies.coverage import zoo_tables

    drawn = []
    real = zoo_tables.figure_class

    def spy(name):
        Figure = real(name)

        class Spy(Figure):
            def subplots(self, *args, **kwargs):
                axes = super().subplots(*args, **kwargs)
                for ax in axes.flat:
                    original = ax.axhline
                    ax.axhline = lambda y, *a, _o=original, **k: (drawn.append(y), _o(y, *a, **k))[1]
                return axes
        return Spy

    monkeypatch.setattr(zoo_tables, "figure_class", spy)
    rows = [{"level": level, "epsilon": eps, "method": m, "n": 100, "reps": 4, "n_failed": 0, "coverage": 0.9,
             "coverage_se": 0.1, "length_ratio": 1.0, "length_ratio_se": 0.0, "privacy_cost": 1, "state_floats": 0,
             "seconds_per_rep": 0.1} for level in (0.8, 0.95) for eps in (1.0, math.inf) for m in ("SN", "HulC")]
    zoo_tables.write_zoo_figure(tmp_path, rows, "t", [0.8, 0.95])
    assert sorted(y for y in drawn if y != 1.0) == [0.8, 0.95]


def test_check_and_the_zoo_table_leave_out_the_mechanism_where_there_is_none(tmp_path, capsys):
    # `check` printed "mechanism = None" at epsilon = inf; `table` re-rendered the run's "mechanism = None" as
    # "mechanism = " (zoo.csv holds a blank)
    assert main(["check", str(ROOT / "configs" / "zoo_quantile.yaml")]) == 0
    out = capsys.readouterr().out
    assert "epsilon = inf (n = 1e5)" in out and "None" not in out
    out = _copy("zoo_quantile", tmp_path)
    from ldpsim.studies.coverage.zoo_tables import render_zoo_markdown

    run = render_zoo_markdown([{"epsilon": math.inf, "mechanism": None, "method": "SN", "n": 10, "reps": 1,
                                "n_failed": 0, "coverage": 1.0, "coverage_se": 0.0, "length_ratio": 1.0,
                                "length_ratio_se": 0.0, "privacy_cost": 1, "state_floats": 3,
                                "seconds_per_rep": 0.1}], "t", 0.9)
    assert "## epsilon = inf, n = 10" in run
    assert main(["table", str(out)]) == 0
    text = (out / "zoo.md").read_text()
    assert "## epsilon = inf, n = 100000" in text and "mechanism = ," not in text and "None" not in text


def test_the_oracles_length_has_no_standard_error(tmp_path):
    # the oracle's length 2 z sqrt(Sigma / n) is a number: its spread over replications is the rounding of the ends
    from ldpsim.studies.coverage.zoo_tables import _rounding_only

    est = np.random.default_rng(0).normal(size=(50, 2)) * 1e3
    half = np.array([0.25, 3.0])
    assert _rounding_only(est - half, est + half)
    wider = half * (1.0 + 1e-9 * np.arange(50)[:, None])  # lengths that differ by 1e-9 relative: not rounding
    assert not _rounding_only(est - wider, est + wider)
    # (a run's zoo table: tests/test_zoo_study.py, test_zoo_methods_leave_the_main_path_and_the_classic_intervals_alone,
    # whose kernels this test compiled again, for minutes of the fast tier)
    # a zoo.csv of an earlier run holds the rounding (4.8e-18); its table shows 0
    out = _copy("zoo_quantile", tmp_path)
    assert main(["table", str(out)]) == 0
    rows = [line for line in (out / "zoo.md").read_text().splitlines() if line.startswith("| oracle ")]
    assert len(rows) == 4 and all(re.search(r"\| 1\.000 \+- 0 +\|", line) for line in rows), rows


def test_table_refuses_a_zoo_directory_without_its_zoo_csv(tmp_path, capsys):
    # zoo.md and zoo.png were left as they were, silently stale
    out = _copy("zoo_quantile", tmp_path)
    (out / "zoo.csv").unlink()
    before = (out / "zoo.md").read_text()
    assert main(["table", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"ldpsim: error: dir = {str(out)!r} has no zoo.csv, which a run with the zoo's methods writes"
    assert (out / "zoo.md").read_text() == before


@pytest.mark.parametrize("damage, message", [
    (lambda lines: [",".join(line.split(",")[:12]) for line in lines], r"zoo\.csv' has no 'seconds_per_rep' column"),
    (lambda lines: lines[:1] + [lines[1].replace(",1,17,", ",one,17,")] + lines[2:],
     r"zoo\.csv', line 2: privacy_cost = 'one' is not a number"),
    (lambda lines: lines[:1] + [lines[1].replace(",BB,", ",,")] + lines[2:], r"zoo\.csv', line 2: method = ''"),
])
def test_table_blames_a_damaged_zoo_csv_not_summary_csv(tmp_path, capsys, damage, message):
    out = _copy("zoo_quantile", tmp_path)
    lines = (out / "zoo.csv").read_text().splitlines()
    (out / "zoo.csv").write_text("\n".join(damage(lines)) + "\n")
    assert main(["table", str(out)]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and "summary.csv" not in err and len(err.strip().splitlines()) == 1, err


# --- the privacy of the online bootstraps, in one place ---------------------------------------------------------

@pytest.mark.parametrize("mapping, run_budget", [
    ({"model": "quantile", "epsilon": 2}, {"epsilon": 2.0, "delta": 0.0}),
    ({"model": "quantile_regression", "mechanism": "laplace", "epsilon": 1}, {"epsilon": 1.0, "delta": 0.0}),
    ({"model": "mean", "mechanism": "gaussian", "epsilon": 1, "delta": 1e-5}, {"epsilon": 1.0, "delta": 1e-5}),
    ({"model": "huber_mallows", "dim": 2, "mechanism": "gaussian", "epsilon": 1, "delta": 1e-6},
     {"epsilon": 1.0, "delta": 1e-6}),
    ({"model": "huber_mallows", "dim": 2, "mechanism": "gdp", "mu": 2}, {"mu": 2.0}),
])
def test_every_place_states_the_online_bootstraps_privacy_from_one_function(mapping, run_budget):
    # OB_split under the Gaussian mechanism's (epsilon, delta) cost each user (epsilon, (B + 1) delta) while the
    # docs and the zoo table said the run's budget: its answers now split delta too, and check, the table's factor
    # and docs/zoo.md say what user_privacy computes
    from ldpsim.studies.coverage.checks import check_config
    from ldpsim.studies.coverage.zoo import privacy_factor, split_setting, user_privacy

    b = 9
    config = ldpsim.load_config({**mapping, "n": 10_000, "methods": ["SN", "OB", "OB_split"], "ob_paths": b})
    setting, options = config.settings[0], config.options
    details = {v.name: v.detail for v in check_config(config)[0].verdicts}
    for method, factor in (("OB", math.sqrt(b + 1) if "mu" in run_budget else b + 1), ("OB_split", 1), ("SN", 1)):
        paid = user_privacy(method, setting, options)
        assert paid.factor == privacy_factor(method, options, setting) == factor
        for key, value in run_budget.items():  # the total is the factor times the run's budget, key by key
            assert paid.total[key] == pytest.approx(factor * value, rel=1e-12, abs=0), (method, key)
        if method != "SN":
            assert details[f"privacy ({method})"] == paid.describe()
            assert paid.answers == b + 1
    split = split_setting(setting, options)
    if "delta" in run_budget and run_budget["delta"]:
        assert split.delta == pytest.approx(run_budget["delta"] / (b + 1), rel=1e-15)
        assert f"delta = {run_budget['delta']:.6g}) LDP per user" in details["privacy (OB_split)"]
    text = (ROOT / "docs" / "zoo.md").read_text()
    assert "delta / (B + 1), so (epsilon, delta) in all" in " ".join(text.split())


def test_the_state_column_of_docs_zoo_methods_is_the_tables():
    # docs/zoo_methods.md gave OB's state as 3 B d + B where the table reports 2 B d + B + 2 d
    from ldpsim.studies.coverage.zoo import state_floats

    text = (ROOT / "docs" / "zoo_methods.md").read_text()
    formulas = dict(re.findall(r"^\| `(\w+)` \| [^|]* \| ([^|]*) \| [^|]* \|$", text, re.M))
    assert set(formulas) == set(ZOO_METHODS)
    for model, dim in (("quantile", 1), ("quantile_regression", 4)):
        config = ldpsim.load_config({"model": model, "n": 100_000, "methods": list(ZOO_METHODS), "ob_paths": 7})
        s, options = config.settings[0], config.options
        layout = HiGradLayout.build(s.n, options["higrad_splits"], options["higrad_threads"],
                                    options["higrad_step_ratio"])
        names = {"B": 5, "d": dim, "nodes": layout.nodes, "T": layout.final_threads}
        for method, formula in formulas.items():
            names["B"] = 5 if method == "HulC" else options["ob_paths"]
            expr = re.sub(r"([\w)])\s+(?=[\w(])", r"\1*", formula.split(",")[0].strip()).replace("^", "**")
            assert eval(expr, {}, dict(names)) == state_floats(method, dim, s, options), (method, formula)


# --- the accountant's on-disk cache ----------------------------------------------------------------------------


# --- the scripts ---------------------------------------------------------------------------------------------

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


# --- PLD at tiny delta; clt above epsilon 100 --------------------------------------------------------------


# --- trace ---------------------------------------------------------------------------------------------------


# --- the zoo's keys ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["percentile", "basic"])
def test_ob_quantile_intervals_need_as_many_paths_as_bbs_quantiles(kind):
    # ob_paths = 2 with a percentile interval at level 0.9 was accepted and covered 0.44
    base = {"model": "quantile", "n": 10_000, "methods": ["OB", "OB_split"], "ob_interval": kind}
    with pytest.raises(ConfigError, match=rf"^ob_paths = 2 bootstrap paths are too few for ob_interval = {kind} at "
                                          r"level = 0\.9: its quantiles need ob_paths >= max\(50, 2 / \(1 - level\)\) "
                                          r"= 50"):
        ldpsim.load_config({**base, "ob_paths": 2})
    with pytest.raises(ConfigError, match=r"= 200, as BB's B$"):
        ldpsim.load_config({**base, "ob_paths": 100, "level": 0.99})
    assert ldpsim.load_config({**base, "ob_paths": 50}).options["ob_paths"] == 50
    assert ldpsim.load_config({**base, "ob_paths": 2, "ob_interval": "normal"}).options["ob_paths"] == 2


@pytest.mark.slow  # 40 replications of the zoo's timed passes
def test_the_plugins_hessian_is_computed_once_per_chunk_not_per_replication(monkeypatch):
    # the logistic model's G is a quadrature: computed in every replication (and inside the timed interval), it made
    # the zoo's time column for logistic about 100 times too high
    from ldpsim.models.quantile import QuantileModel

    calls = []
    real = QuantileModel.hessian
    monkeypatch.setattr(QuantileModel, "hessian", lambda self: (calls.append(1), real(self))[1])

    def count(reps):
        calls.clear()
        # (plugin_oracle is the method that reads G; the others' kernels would only add minutes of compilation)
        ldpsim.run({"model": "quantile", "n": 2000, "reps": reps, "seed": 1, "B": 60,
                    "methods": ["BB", "SN", "plugin_oracle"]}, n_jobs=1, progress=False)
        return len(calls)

    assert count(8) == count(40)


@pytest.mark.slow  # every zoo method's kernels, compiled for minutes: CI's slow tier
def test_the_zoo_gives_the_same_numbers_without_numba(tmp_path):
    # with NUMBA_DISABLE_JIT=1 the hooks' stubs ran their empty bodies: every zoo method failed in every replication
    import os
    import subprocess
    import sys

    from ldpsim.reporting.csvio import read_csv

    mapping = {"model": "quantile", "n": 500, "reps": 3, "seed": 2, "B": 60, "methods": ALL, "ob_paths": 3}
    jit = ldpsim.run(mapping, n_jobs=1, progress=False)
    code = f"import ldpsim; ldpsim.run({mapping!r}, out={str(tmp_path / 'plain')!r}, n_jobs=1, progress=False)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=600,
                          env={**os.environ, "NUMBA_DISABLE_JIT": "1"})
    assert done.returncode == 0, done.stderr
    # (HulC's se_ratio is nan, which equals nothing: compared as None)
    same = (lambda rows: [{k: None if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()}
                          for r in rows])
    assert same(read_csv(tmp_path / "plain" / "summary.csv")) == same(jit.rows)
    plain = read_csv(tmp_path / "plain" / "zoo.csv")
    assert all(row["n_failed"] == 0 for row in plain)
    drop = (lambda rows: [{k: v for k, v in r.items() if k != "seconds_per_rep"} for r in rows])
    assert drop(plain) == drop(jit.tables["zoo"])


@pytest.mark.parametrize("mapping, message", [
    # was "n = 100000 is too small for a HiGrad tree of 2 splits into 2 threads"
    ({"n": 100_000, "higrad_step_ratio": 1e-300},
     r"^higrad_step_ratio = 1e-300 leaves the levels after the first of a HiGrad tree of higrad_splits = 2 into "
     r"higrad_threads = 2 without a step at n = 100000 .*; raise higrad_step_ratio \(or raise n\)$"),
    ({"n": 1000, "higrad_step_ratio": 100},
     r"^higrad_step_ratio = 100\.0 leaves level 0 of a HiGrad tree .*; lower higrad_step_ratio \(or raise n\)$"),
    # was "HiGrad's levels need n_k >= 1 steps and B_k >= 1 threads, got n = [1, 1, 0]", naming no key
    ({"n": 5}, r"^n = 5 is too small for a HiGrad tree of higrad_splits = 2 into higrad_threads = 2 "
               r"\(higrad_step_ratio = 1\.0\); raise n$"),
])
def test_an_impossible_higrad_tree_blames_the_key_that_made_it(mapping, message):
    with pytest.raises(ConfigError, match=message):
        ldpsim.load_config({"model": "quantile", "methods": ["HiGrad"], **mapping})


# --- signals -------------------------------------------------------------------------------------------------


# --- chunks --------------------------------------------------------------------------------------------------


# --- the run-time estimate: a pilot of the run's own kernels (its accuracy: scripts/pilot_accuracy.py) ---------


# --- committed outputs are what the code writes now -------------------------------------------------------------


# --- the hunt: ten more hostile inputs of the method zoo -------------------------------------------------------

def test_hunt_every_studies_file_a_zoo_chunk_runs_is_a_compute_source():
    # 1. studies/coverage/zoo.py computes the zoo's intervals in every chunk but was not a compute source: after an
    # edit to it, --resume reused chunks that the new code would not have written
    import sys

    from ldpsim.studies.coverage import CoverageStudy

    study = CoverageStudy()
    config = ldpsim.load_config({"model": "quantile", "n": 2000, "reps": 2, "B": 60, "methods": ALL, "ob_paths": 5})
    seen = set()
    package = Path(ldpsim.__file__).resolve().parent

    def profile(frame, event, arg):
        if event == "call":
            seen.add(frame.f_code.co_filename)

    sys.setprofile(profile)
    try:
        study.run_chunk(config.settings[0], config.options, config.seed, 0, 2, twin=True)
    finally:
        sys.setprofile(None)
    ran = {Path(f).resolve().relative_to(package).as_posix() for f in seen
           if Path(f).resolve().is_relative_to(package / "studies")}
    assert "studies/coverage/zoo.py" in ran
    assert all(any(f == s or f.startswith(s + "/") for s in study.compute_sources) for f in ran), ran


@pytest.mark.parametrize("mapping, message", [
    # 2. "HiGrad needs at least 2 final threads for its t interval", naming no key
    ({"methods": ["HiGrad"], "higrad_threads": 1, "higrad_splits": 3},
     r"^a HiGrad tree of higrad_splits = 3 into higrad_threads = \[1, 1, 1\] has 1 final thread: its t interval needs "
     r"at least 2; raise higrad_threads$"),
    # 3. gamma or obm_constant put OBM's second batch beyond n, and the message blamed n alone
    ({"methods": ["OBM"], "gamma": 0.99}, r"^n = 100000 is too small for OBM with gamma = 0\.99 and obm_constant = 1: "
                                          r"one batch only .* the second at 1\.61e\+60\); raise n, or lower gamma"),
    ({"methods": ["OBM"], "obm_constant": 1e300}, r"obm_constant = 1e\+300: one batch only"),
    # 4. gamma = 0.9999 with OBM: m^(2 / (1 - gamma)) overflowed, an internal error (OverflowError)
    ({"methods": ["OBM"], "gamma": 0.9999}, r"^n = 100000 is too small for OBM .* the second at 10\^6021\)"),
    # 5. OB_split's answers at epsilon / (B + 1) = 1e-155: their model's variance is inf, and every replication
    # of OB_split failed without a word
    ({"methods": ["OB_split"], "epsilon": 1e-150, "ob_paths": 100_000},
     r"^OB_split's answers, each at 1 / \(ob_paths \+ 1\) = 1 / 100001 of the budget: model 'quantile' cannot be "
     r"computed in floating point at epsilon = 9\.9999\d*e-156.*; lower ob_paths or raise the budget$"),
])
def test_hunt_zoo_keys_are_refused_naming_the_key_that_makes_them_impossible(mapping, message):
    with pytest.raises(ConfigError, match=message):
        ldpsim.load_config({"model": "quantile", "n": 100_000, **mapping})


def test_hunt_the_zoo_state_is_in_the_memory_check(monkeypatch):
    # 10. OB's state (2 B d floats a lane) was not in the memory check: huber_mallows at dim = 1000 with
    # ob_paths = 100000 (12 GiB a replication at 8 lanes) was accepted on this 23.5 GiB machine. Here on a machine
    # of 4 MiB, with the quantile's d = 1: 2 B + B + 2 = 300002 floats a lane
    from ldpsim.engine import resources
    from ldpsim.engine.lanes import vector_width

    monkeypatch.setattr(resources, "physical_memory", lambda: 4 * 2 ** 20)
    with pytest.raises(ConfigError, match=rf"^this needs about .* per replication \(mostly OB's state of 300002 floats x "
                                          rf"{vector_width()} lanes \(d = 1, ob_paths = 100000\)\), more than 50% of "
                                          r"this machine's 4\.0 MiB"):
        ldpsim.load_config({"model": "quantile", "n": 1e5, "methods": ["OB"], "ob_paths": 100_000})
    assert ldpsim.load_config({"model": "quantile", "n": 1e5, "methods": ["OB"], "ob_paths": 100})


def test_hunt_a_zoo_key_whose_methods_do_not_run_is_named():
    # 6. ob_paths, hulc_delta, ... given without their methods changed nothing, silently
    with pytest.warns(ldpsim.ConfigWarning, match=r"^hulc_delta = 0\.1 \(read by HulC\), ob_paths = 5 \(read by OB, "
                                                   r"OB_split\) change nothing: methods lists no method that reads "
                                                   r"them$"):
        ldpsim.load_config({"model": "quantile", "n": 1e5, "methods": ["SN", "HiGrad"], "ob_paths": 5,
                            "hulc_delta": 0.1})
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ldpsim.load_config({"model": "quantile", "n": 1e5, "methods": ["SN", "OB"], "ob_paths": 5})


def test_hunt_one_replication_has_no_standard_error_and_a_method_that_always_failed_no_number(tmp_path):
    # 7. with reps = 1 the zoo table gave every SE as 0 (the SD of one value), where summary.csv says NaN
    # 8. a method that failed in every replication was rendered " +- " in zoo.md
    from ldpsim.studies.coverage.zoo_tables import render_zoo_markdown

    result = ldpsim.run({"model": "quantile", "n": 2000, "reps": 1, "seed": 1, "B": 60,
                         "methods": ["BB", "SN", "OBM"]}, n_jobs=1, progress=False)
    for row in result.tables["zoo"]:
        assert math.isnan(row["coverage_se"]) and math.isnan(row["length_ratio_se"]), row
    assert all(math.isnan(r["length_se"]) for r in result.rows)
    row = dict(result.tables["zoo"][0], coverage=math.nan, coverage_se=math.nan, length_ratio=math.nan,
               length_ratio_se=math.nan, reps=0, n_failed=1)
    text = render_zoo_markdown([row], "t", 0.9)
    cells = [c.strip() for c in text.splitlines()[-1].split("|")]
    assert cells[2:4] == ["-", "-"], cells
    one = render_zoo_markdown(result.tables["zoo"][:1], "t", 0.9)
    assert " +- " not in one.splitlines()[-1]


@pytest.mark.parametrize("change, message", [
    (lambda lines: [",".join(line.split(",")[1:]) for line in lines],  # the epsilon column dropped
     r"zoo\.csv has the key columns \['mechanism'\], summary\.csv \['epsilon', 'mechanism'\]: they are not from one run"),
    (lambda lines: [line for line in lines if ",HulC," not in line],
     r"^ldpsim: error: zoo\.csv has the methods BB, BM, HiGrad, OB, OBM, OB_split, SN, oracle, plugin_oracle, "
     r"summary\.csv BB, BM, HiGrad, HulC, OB"),
])
def test_hunt_table_refuses_a_zoo_csv_of_another_run(tmp_path, capsys, change, message):
    # 9. a zoo.csv with other key columns or methods than summary.csv was drawn without a word (its four epsilons
    # in one table, or methods missing)
    out = _copy("zoo_quantile", tmp_path)
    lines = (out / "zoo.csv").read_text().splitlines()
    (out / "zoo.csv").write_text("\n".join(change(lines)) + "\n")
    assert main(["table", str(out)]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and len(err.strip().splitlines()) == 1, err


def test_a_per_user_budget_has_the_zoo_tables_privacy_factor_of_its_own_budget():
    # (a regression of user_privacy, caught in the hunt: a budget drawn per user has no mu; HulC's factor is 1)
    from ldpsim.studies.coverage.zoo import privacy_factor

    config = ldpsim.load_config({"model": "huber_mallows", "dim": 2, "mechanism": "gdp", "budget": {"uniform": [1, 2]},
                                 "methods": ["HulC"], "n": 1e5})
    assert privacy_factor("HulC", config.options, config.settings[0]) == 1
