"""Monte Carlo driver: determinism, chunk independence, resume, failure accounting."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

import ldpsim
from ldpsim import studies as cfg
from ldpsim.engine.errors import ConfigWarning
from ldpsim.engine.runs.driver import simulate
from ldpsim.studies.coverage import CoverageStudy
from ldpsim.studies.coverage.study import RESOLVED_ULPS, resolved

from ldpsim.api import run as run_experiment
from ldpsim.engine.runs.backends import resolve_backend
from ldpsim.reporting.csvio import read_csv
from ldpsim.studies import STUDIES
from ldpsim.studies.coverage.summary import summarize

from run_helpers import TINY, TINY_STUDIES, checked_cli, cli, write


def run_replications(setting, methods, root_seed, start, stop):
    return CoverageStudy().run_chunk(setting, {"methods": methods}, root_seed, start, stop)


def test_same_seed_same_bytes_for_any_n_jobs_and_backend(tiny_config, tmp_path):
    outs = []
    for n_jobs, backend in [(1, "loky"), (2, "loky"), (2, "threading"), (2, "auto")]:
        out = tmp_path / f"{n_jobs}-{backend}"
        run_experiment(tiny_config, out=out, name="tiny", n_jobs=n_jobs, backend=backend, progress=False)
        outs.append((out / "summary.csv").read_bytes())
    assert outs[0] == outs[1] == outs[2] == outs[3]
    # auto: the coverage study's replications are nogil kernels, so threads; meta.json says which ran
    assert json.loads((tmp_path / "2-auto" / "meta.json").read_text())["backend"] == "threading"


def test_auto_backend_is_threads_for_kernel_studies_and_processes_for_the_others():
    chosen = {name: resolve_backend("auto", study) for name, study in STUDIES.items()}
    assert chosen["coverage"] == "threading" and chosen["dpsgd"] == "loky"  # (DP-SGD: threads 5% slower)
    assert set(chosen.values()) <= {"threading", "loky"}
    assert all(resolve_backend(b, STUDIES["coverage"]) == b for b in ("loky", "threading", "dask", "ray"))


def test_different_seed_different_numbers(tiny_mapping):
    a = simulate(cfg.resolve(tiny_mapping), n_jobs=1, progress=False)
    b = simulate(cfg.resolve({**tiny_mapping, "seed": 8}), n_jobs=1, progress=False)
    assert not np.array_equal(a[0]["theta_bar"], b[0]["theta_bar"])


def test_replication_does_not_depend_on_its_chunk(tiny_config):
    setting, methods = tiny_config.settings[1], tiny_config.methods
    whole = run_replications(setting, methods, tiny_config.seed, 0, 6)
    tail = run_replications(setting, methods, tiny_config.seed, 4, 6)
    np.testing.assert_array_equal(whole["theta_bar"][4:], tail["theta_bar"])
    np.testing.assert_array_equal(whole["bounds"][4:], tail["bounds"])


def test_setting_results_do_not_depend_on_the_rest_of_the_grid(tiny_mapping):
    alone = simulate(cfg.resolve({**tiny_mapping, "tau": 0.9}), n_jobs=1, progress=False)
    in_grid = simulate(cfg.resolve(tiny_mapping), n_jobs=1, progress=False)
    np.testing.assert_array_equal(alone[0]["bounds"], in_grid[1]["bounds"])


def test_inference_keys_share_paths(tiny_mapping):
    # common random numbers: settings differing only in beta see the same paths
    config = cfg.resolve({**tiny_mapping, "tau": 0.5, "beta": [0.6, 0.75]})
    res = simulate(config, n_jobs=1, progress=False)
    np.testing.assert_array_equal(res[0]["theta_bar"], res[1]["theta_bar"])
    assert not np.array_equal(res[0]["bounds"][:, 0], res[1]["bounds"][:, 0])  # BB differs


def test_resume_reuses_saved_chunks_and_gives_same_summary(tiny_mapping, tmp_path, monkeypatch):
    monkeypatch.setattr("ldpsim.engine.runs.chunks.MAX_CHUNK_REPS", 4)  # several chunks per setting
    config = cfg.resolve({**tiny_mapping, "reps": 12})
    full = tmp_path / "full"
    run_experiment(config, out=full, name="t", n_jobs=1, progress=False)
    # an interrupted run: only some chunks made it to disk
    part = tmp_path / "part"
    run_experiment(config, out=part, name="t", n_jobs=1, progress=False)
    chunks = sorted((part / "chunks").glob("*.npz"))
    assert len(chunks) >= 4
    for path in chunks[::2]:
        path.unlink()
    kept = {p: p.stat().st_mtime_ns for p in chunks[1::2]}
    (part / "summary.csv").unlink()
    run_experiment(config, out=part, name="t", n_jobs=1, progress=False, resume=True)
    assert (part / "summary.csv").read_bytes() == (full / "summary.csv").read_bytes()
    assert all(p.stat().st_mtime_ns == t for p, t in kept.items())  # reused, not recomputed


def test_corrupt_chunk_is_recomputed_on_resume(tiny_mapping, tmp_path):
    config = cfg.resolve(tiny_mapping)
    run_experiment(config, out=tmp_path, name="t", n_jobs=1, progress=False)
    before = (tmp_path / "summary.csv").read_bytes()
    victim = sorted((tmp_path / "chunks").glob("*.npz"))[0]
    victim.write_bytes(b"not a chunk")
    run_experiment(config, out=tmp_path, name="t", n_jobs=1, progress=False, resume=True)
    assert (tmp_path / "summary.csv").read_bytes() == before


def test_diverging_replications_are_counted_not_fatal(tiny_mapping):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)
        config = cfg.resolve({**tiny_mapping, "c": 1e300, "tau": 0.5})
    results = simulate(config, n_jobs=1, progress=False)
    assert not results[0]["ok"].any()
    rows = summarize(config, results)
    assert all(r["n_failed"] == config.reps and r["reps"] == 0 for r in rows)
    assert all(math.isnan(r["coverage"]) for r in rows)


def test_partly_failed_setting_excludes_failures_from_statistics(tiny_config):
    results = simulate(tiny_config, n_jobs=1, progress=False)
    results[0]["ok"][:3] = False  # as if three replications had diverged
    results[0]["bounds"][:3] = np.nan
    rows = summarize(tiny_config, results)
    first = [r for r in rows if r["tau"] == 0.5]
    assert all(r["n_failed"] == 3 and r["reps"] == tiny_config.reps - 3 for r in first)
    assert all(np.isfinite(r["coverage"]) and np.isfinite(r["length"]) for r in first)


def test_summary_columns(tiny_config, tmp_path):
    run_experiment(tiny_config, out=tmp_path, name="t", n_jobs=1, progress=False)
    rows = read_csv(tmp_path / "summary.csv")
    assert list(rows[0]) == ["tau", "method", "coord", "n", "reps", "n_failed", "coverage", "coverage_se",
                             "length", "length_se", "theta_star", "bias", "sd", "se_ratio"]
    assert [r["method"] for r in rows[:4]] == ["BB", "BM", "SN", "oracle"]
    assert {r["tau"] for r in rows} == {0.5, 0.9}
    assert all(r["coord"] == 0 for r in rows)
    for name in ("table.md", "table.tex", "meta.json"):
        assert (tmp_path / name).exists()


@pytest.mark.parametrize("level", [0.8, 0.95])
def test_level_changes_interval_width_as_it_should(tiny_mapping, level):
    base = summarize(c := cfg.resolve({**tiny_mapping, "tau": 0.5}), simulate(c, n_jobs=1, progress=False))
    other = summarize(d := cfg.resolve({**tiny_mapping, "tau": 0.5, "level": level}),
                      simulate(d, n_jobs=1, progress=False))
    oracle_base = [r for r in base if r["method"] == "oracle"][0]["length"]
    oracle_other = [r for r in other if r["method"] == "oracle"][0]["length"]
    from scipy import stats
    ratio = stats.norm.ppf(0.5 + level / 2) / stats.norm.ppf(0.95)
    assert math.isclose(oracle_other / oracle_base, ratio, rel_tol=1e-12)


# --- replications without numbers are counted as failed -----------------------------------------------------


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


@pytest.mark.parametrize("study,change,failed", [
    ("dpsgd", {"mu": 1e-100, "accountant": "clt", "budget_of": "path", "methods": ["plugin", "BM"]}, "all"),  # noise of 1e100 per step
    # the accuracy figure's log axis of NaN (was an internal error), a numpy warning about an empty mean
    ("dpsgd", {"theta0": 1e200, "kappa": [1.0, 1.5], "methods": ["plugin", "oracle"]}, "all"),
    # rate.png's log axis of NaN (was an internal error), a legend of nothing (was a raw warning)
    ("sagd_rate", {"model": "welsch", "eta": 1e300, "T_factor": 3e4}, "all"),
    ("sagd_concentration", {"model": "welsch", "eta": 1e300}, "all"),  # an empty mean (was a raw warning)
    ("sagd_generalization", {"methods": ["adam", "rmsprop"]}, "none"),  # no privacy.csv (was "no rows to write")
])
def test_replications_without_numbers_are_counted_and_the_run_reads_back(tmp_path, capsys, study, change, failed):
    out = tmp_path / "o"
    status, _, err = checked_cli(capsys, "run", write(tmp_path, {**TINY_STUDIES[study], **change}), "--out", out, "--quiet",
                         "--n-jobs", "1")
    assert status == 0 and "Traceback" not in err and "internal error" not in err, err
    meta = json.loads((out / "meta.json").read_text())
    total = meta["settings"] * meta["config"]["reps"]
    assert meta["n_failed"] == (total if failed == "all" else 0), err
    status, _, err = checked_cli(capsys, "table", out)
    assert status == 0, err
