"""Looks: every method at log-spaced looks, time-uniform coverage, asymptotic confidence sequences."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ldpsim
from ldpsim.engine.runs.config import ConfigError
from ldpsim.engine.dialect.rng import as_generator
from ldpsim.inference import intervals as inference
from ldpsim.inference.streaming import PathState, StreamLayout
from ldpsim.studies import STUDIES
from ldpsim.studies.coverage.looks import look_grid, look_tables

METHODS = ["BB", "BM", "SN", "oracle", "AsympCS", "AsympCS_oracle"]
SMALL = {"model": "quantile", "n": 3000, "reps": 6, "tau": 0.3, "epsilon": 1.0, "methods": METHODS, "B": 60}


def test_looks_leave_the_summary_as_without_them_and_the_last_look_is_n():
    # the last look runs the trace kernel to n: the run's own intervals, to the bit, whatever lanes ran it
    with_looks = ldpsim.run({**SMALL, "looks": 6}, n_jobs=1, progress=False)
    without = ldpsim.run(SMALL, n_jobs=1, progress=False)
    assert with_looks.tables["summary"] == without.tables["summary"]
    assert "looks" not in without.tables and "uniform" not in without.tables
    rows = with_looks.tables["looks"]
    assert {r["t"] for r in rows} == set(look_grid(with_looks.config.settings[0], with_looks.config.options).tolist())
    last = {r["method"]: r["coverage"] for r in rows if r["t"] == SMALL["n"]}
    assert last == {r["method"]: r["coverage"] for r in without.tables["summary"]}


def test_the_kernels_looks_are_the_twins():
    # the twin runs a stored path and builds each look's state from its definition; the kernel streams
    # every look's blocks and batches in one pass: the sums group the iterates differently (1e-15 relative)
    config = ldpsim.load_config({**SMALL, "looks": 5, "first_look": 100})
    study, s = STUDIES["coverage"], config.settings[0]
    kernel = study.run_chunk(s, config.options, config.seed, 0, 3)
    twin = study.run_chunk(s, config.options, config.seed, 0, 3, twin=True)
    np.testing.assert_allclose(kernel["look_bounds"], twin["look_bounds"], rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(kernel["bounds"], twin["bounds"])
    assert kernel["look_bounds"].shape == (3, 5, len(METHODS), 2)


def test_coverage_uniform_counts_the_replications_inside_at_every_look():
    # three replications, two looks, theta* = 0.5 (the median of the quantile model's N(0,1)... at tau 0.5: 0)
    config = ldpsim.load_config({"model": "quantile", "tau": 0.5, "n": 1000, "reps": 3, "looks": 2,
                                 "first_look": 100, "methods": ["SN", "oracle"]})
    inside, outside, missing = [-1.0, 1.0], [0.5, 1.0], [math.nan, math.nan]
    look_bounds = np.array([[[inside, inside], [inside, inside]],      # both methods inside at both looks
                            [[outside, inside], [inside, inside]],     # SN outside at the first look
                            [[missing, inside], [inside, outside]]])   # SN missing first; oracle out at n
    chunk = {"look_bounds": look_bounds, "ok": np.array([True, True, True])}
    tables = look_tables(config, [chunk])
    uniform = {r["method"]: r for r in tables["uniform"]}
    assert uniform["SN"]["coverage_uniform"] == pytest.approx(1 / 3)
    assert uniform["oracle"]["coverage_uniform"] == pytest.approx(2 / 3)
    assert uniform["oracle"]["coverage"] == pytest.approx(2 / 3) and uniform["SN"]["coverage"] == 1.0
    first = {r["method"]: r for r in tables["looks"] if r["look"] == 1}
    assert first["SN"]["coverage"] == pytest.approx(1 / 3) and first["SN"]["n_missing"] == 1
    assert first["SN"]["coverage_se"] == pytest.approx(math.sqrt(2 / 9 / 3))


def test_the_mixture_boundary_is_crossed_at_most_alpha_of_the_time():
    # Robbins' two-sided normal mixture, tuned at t_opt = 1000: over 1..4000 steps of i.i.d. N(0, 1) sums the
    # boundary is crossed by at most alpha = 0.1 of 3000 paths (allowed: 3 SE above); the pointwise z interval,
    # checked at every step, is crossed far more often (the failure the confidence sequence prevents)
    rng = np.random.default_rng(31)
    paths, t_max, level = 3000, 4000, 0.9
    t = np.arange(1, t_max + 1)
    margin = inference.mixture_margin(t.astype(float), inference.mixture_rho2(1000.0, level), level)
    crossed = np.zeros(paths, bool)
    pointwise = np.zeros(paths, bool)
    z = inference.normal_quantile(level)
    for part in np.array_split(np.arange(paths), 6):
        means = np.cumsum(rng.standard_normal((part.size, t_max)), axis=1) / t
        crossed[part] = (np.abs(means) > margin).any(axis=1)
        pointwise[part] = (np.abs(means[:, 99:]) > z / np.sqrt(t[99:])).any(axis=1)
    se = math.sqrt(0.1 * 0.9 / paths)
    assert crossed.mean() <= 0.1 + 3 * se, crossed.mean()
    assert pointwise.mean() > 0.3, pointwise.mean()
    # the tuning: rho^2 of Waudby-Smith et al. (-2 log a + log(1 - 2 log a)) / t_opt, a = 0.1 ...
    assert inference.mixture_rho2(1000.0, level) == pytest.approx((2 * math.log(10) + math.log(1 + 2 * math.log(10)))
                                                                    / 1000)
    # ... is close to the narrowest boundary at t_opt
    grid = np.geomspace(1e-5, 1e-1, 4001)
    best = grid[np.argmin(inference.mixture_margin(1000.0, grid, level))]
    assert inference.mixture_margin(1000.0, inference.mixture_rho2(1000.0, level), level) <= \
        1.01 * float(inference.mixture_margin(1000.0, best, level))


def test_the_asymptotic_cs_is_the_average_plus_minus_its_margin():
    layout = StreamLayout.build(4000, 0.5, 0.3)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4000, 1))
    from ldpsim.recursion.twins import state_from_definitions

    state = state_from_definitions(x, layout)
    sigma = np.array([[2.0]])
    got = inference.intervals(["AsympCS", "AsympCS_oracle", "BM"], state, layout, rng, n_boot=50, law="uniform",
                              level=0.9, sigma=sigma, t_opt=10_000.0)[:, 0]
    margin = inference.mixture_margin(4000.0, inference.mixture_rho2(10_000.0, 0.9), 0.9)
    bm = inference.batch_means_variance(state, layout)[0]
    assert got[0] == pytest.approx([state.theta_bar[0] - math.sqrt(bm) * margin,
                                    state.theta_bar[0] + math.sqrt(bm) * margin], rel=1e-12)
    assert got[1] == pytest.approx([state.theta_bar[0] - math.sqrt(2.0) * margin,
                                    state.theta_bar[0] + math.sqrt(2.0) * margin], rel=1e-12)
    # wider than BM's pointwise interval from the same variance
    assert got[0, 1] - got[0, 0] > got[2, 1] - got[2, 0]


@pytest.mark.parametrize("change,match", [
    ({"looks": 1}, r"looks = 1 is not one of: false, true \(20 looks\), an integer in \[2, 1000\]"),
    ({"looks": "often"}, r"looks = 'often' is not one of"),
    ({"first_look": 100}, r"first_look = 100 without looks"),
    ({"looks": 5, "first_look": 3000}, r"first_look = 3000 is outside \[2, n\) = \[2, 3000\)"),
    ({"looks": 5, "first_look": 4}, r"first_look = 4 is too early for BM \(fewer than two batches at t = 4\)"),
    ({"looks": 5, "model": "linear"}, r"model = 'linear' of 4 coordinates: the looks follow scalar models"),
    ({"looks": 5, "batch_size": 2}, r"batch_size = 2 is outside \{1\} with looks"),
])
def test_what_the_looks_cannot_follow_is_refused_in_one_line(change, match):
    config = {k: v for k, v in SMALL.items() if not (change.get("model") and k in ("tau",))}
    with pytest.raises(ConfigError, match=match):
        ldpsim.load_config({**config, **change})


def test_a_run_with_looks_writes_its_tables_and_figure(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "run"
    result = ldpsim.run({**SMALL, "looks": True, "methods": ["SN", "AsympCS_oracle"]}, out=out, n_jobs=1,
                        progress=False)
    for name in ("looks.csv", "uniform.csv", "looks.md", "looks.png", "summary.csv"):
        assert (out / name).exists(), name
    assert len({r["t"] for r in result.tables["looks"]}) == 20
    assert "time-uniform coverage" in (out / "looks.md").read_text()
    assert "uniform coverage" in result.render()


def test_a_run_with_looks_over_a_grid_of_levels_draws_each_panels_level(tmp_path):
    # configs/cs_quantile.yaml runs level [0.9, 0.95]: the figure drew the list as one line and raised
    pytest.importorskip("matplotlib")
    out = tmp_path / "run"
    result = ldpsim.run({**SMALL, "reps": 3, "looks": 4, "level": [0.9, 0.95], "methods": ["SN", "AsympCS_oracle"]},
                        out=out, n_jobs=1, progress=False)
    assert (out / "looks.png").exists()
    assert {r["level"] for r in result.tables["uniform"]} == {0.9, 0.95}


def test_the_oracle_cs_holds_at_every_look_and_the_oracle_interval_does_not():
    # 300 replications of the median at n = 2e4, 10 looks from 200: the confidence sequence with the true
    # variance holds theta* at every look in at least level - 3 SE of them; the pointwise oracle interval,
    # looked at 10 times, falls 3 SE below the level (the failure the looks measure)
    result = ldpsim.run({"model": "quantile", "tau": 0.5, "epsilon": 2.0, "gamma": 0.6, "n": 20_000, "reps": 300,
                         "looks": 10, "methods": ["oracle", "AsympCS_oracle"], "seed": 7}, n_jobs=1, progress=False)
    uniform = {r["method"]: r for r in result.tables["uniform"]}
    se = math.sqrt(0.9 * 0.1 / 300)
    assert uniform["AsympCS_oracle"]["coverage_uniform"] >= 0.9 - 3 * se, uniform["AsympCS_oracle"]
    assert uniform["oracle"]["coverage_uniform"] <= 0.9 - 3 * se, uniform["oracle"]
