"""The trace kernel (Figure 1): per-checkpoint states, the last checkpoint, config and CLI."""

from __future__ import annotations

import csv
import math
import re
import sys

import numpy as np
import pytest

from ldpsim import studies as cfg
from ldpsim.cli import main
from ldpsim.studies.coverage import CoverageStudy
from ldpsim.models import QuantileModel
from ldpsim.recursion import run_path
from ldpsim.engine.dialect.rng import as_generator
from ldpsim.inference.streaming import StreamLayout
from ldpsim.studies.coverage.trace import (TraceLayout, checkpoint_grid, compute_trace, resolve_trace, run_trace,
                          trace_intervals)
from ldpsim.recursion.twins import path_twin, state_from_definitions
from ldpsim.engine.errors import ConfigError

from run_helpers import ROOT

CASES = [
    # tau, epsilon, c, gamma, theta0, beta
    (0.5, 1.0, 1.0, 0.51, 0.0, 0.75),
    (0.3, 0.5, 2.0, 0.7, -1.0, 0.6),
    (0.9, math.inf, 0.5, 0.9, 3.0, 0.95),
]


def _trace_and_path(tau, epsilon, c, gamma, theta0, beta, n=3000, count=15, seed=11):
    model = QuantileModel(tau, epsilon)
    layout = TraceLayout.build(checkpoint_grid(n, count, 10), beta, gamma)
    trace = run_trace(model, as_generator(seed), c, gamma, theta0, layout)
    _, path = path_twin(model, as_generator(seed), n, c, gamma, theta0, StreamLayout.build(n, beta, gamma))
    return model, layout, trace, path


@pytest.mark.parametrize("tau,epsilon,c,gamma,theta0,beta", CASES)
def test_every_checkpoint_state_equals_definitions_on_truncated_path(tau, epsilon, c, gamma, theta0, beta):
    _, layout, trace, path = _trace_and_path(tau, epsilon, c, gamma, theta0, beta)
    assert trace.steps == path.shape[0]
    assert len(layout.checkpoints) == 15
    for q, k in enumerate(layout.checkpoints):
        got, want = trace.state(q), state_from_definitions(path[:k], layout.layouts[q])
        scale = np.abs(path[:k]).max() + 1.0
        assert got.steps == k and got.finite(int(k))
        # the layout is the one run_path would use for k steps (a method k is too short for is off)
        full = StreamLayout.build(int(k), beta, gamma)
        assert layout.layouts[q].block_len in (0, full.block_len)
        np.testing.assert_allclose(got.theta_bar, want.theta_bar, rtol=0, atol=1e-12 * scale)
        np.testing.assert_allclose(got.sn_v, want.sn_v, rtol=1e-12)
        np.testing.assert_allclose(got.blocks, want.blocks, rtol=0, atol=1e-12 * scale)
        np.testing.assert_allclose(got.batches, want.batches, rtol=0, atol=1e-12 * scale)
        assert got.blocks.shape == (layout.layouts[q].n_blocks, 1)
        assert got.batches.shape == (len(layout.layouts[q].batch_ends), 1)


@pytest.mark.parametrize("tau,epsilon,c,gamma,theta0,beta", CASES)
def test_last_checkpoint_equals_run_path_bit_for_bit(tau, epsilon, c, gamma, theta0, beta):
    n = 20_000  # > 4096: ratio step sizes and several recentrings
    model = QuantileModel(tau, epsilon)
    layout = TraceLayout.build(checkpoint_grid(n, 30, 10), beta, gamma)
    g1, g2 = as_generator(4), as_generator(4)
    got = run_trace(model, g1, c, gamma, theta0, layout).state(len(layout.checkpoints) - 1)
    # the checkpoint's own layout: StreamLayout.build(n, ...) unless n is too short for a method
    # (beta = 0.95, gamma = 0.9 give one block and one batch at n = 20 000, so BB and BM are off)
    want = run_path(model, g2, n, c, gamma, theta0, layout.layouts[-1])
    full = StreamLayout.build(n, beta, gamma)
    if full.enough_batches:
        np.testing.assert_array_equal(layout.layouts[-1].batch_ends, full.batch_ends)
    if full.enough_blocks:
        assert (layout.layouts[-1].block_len, layout.layouts[-1].n_blocks) == (full.block_len, full.n_blocks)
    assert got.steps == want.steps == n
    for field in ("theta_bar", "sn_v", "blocks", "batches"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=field)
    assert g1.random() == g2.random()  # the same draws, so the bootstrap after it draws the same


def test_last_row_is_replication_zero_of_run():
    config = resolve_trace({"n": 5000, "checkpoints": 12, "seed": 3, "B": 100,
                            "methods": ["BB", "BM", "SN", "oracle"]})
    result = compute_trace(config)
    rep0 = CoverageStudy().run_chunk(config.setting, {"methods": config.methods}, config.seed, 0, 1)
    np.testing.assert_array_equal(result.trace.theta_bar[-1:], rep0["theta_bar"][0])
    np.testing.assert_array_equal(result.bounds[-1], rep0["bounds"][0, :, 0, :])


def test_intervals_nan_only_where_a_checkpoint_is_too_short():
    config = resolve_trace({"n": 3000, "checkpoints": 15, "seed": 1, "B": 50})
    result = compute_trace(config)
    layouts = result.trace.layout.layouts
    for q, layout in enumerate(layouts):
        bb, bm, sn = result.bounds[q]
        assert np.isfinite(bb).all() == layout.enough_blocks
        assert np.isfinite(bm).all() == layout.enough_batches
        assert np.isfinite(sn).all() and sn[0] <= result.trace.theta_bar[q] <= sn[1]
    assert layouts[-1].enough_blocks and layouts[-1].enough_batches
    assert not layouts[0].enough_batches  # k = 10 has a single batch after burn-in


def test_diverging_path_keeps_earlier_checkpoints():
    # c = 1e152: the random-scaling sums overflow after ~100 steps (checked at powers of two)
    model = QuantileModel(0.9, 1.0)
    layout = TraceLayout.build(checkpoint_grid(5000, 20, 10), 0.75, 0.51)
    trace = run_trace(model, as_generator(1), 1e152, 0.51, 0.0, layout)
    assert trace.steps < 5000
    reached = layout.checkpoints < trace.steps
    assert reached.any() and not reached.all()
    assert np.isfinite(trace.theta_bar[reached]).all() and np.isnan(trace.theta_bar[~reached]).all()
    bounds = trace_intervals(trace, resolve_trace({"n": 5000}).setting, ("SN",), as_generator(2))
    assert np.isfinite(bounds[reached]).all() and np.isnan(bounds[~reached]).all()


def test_memory_of_trace_grows_like_n_to_the_quarter():
    # sum over checkpoints of m_k + M_k + 1: O(C n^0.25), not O(n)
    sizes = {n: TraceLayout.build(checkpoint_grid(n, 200, 10), 0.75, 0.51).size for n in (10**6, 10**8)}
    assert sizes[10**8] < 10_000
    assert sizes[10**8] / sizes[10**6] < 3  # n grew 100-fold


def test_checkpoint_grid_is_log_spaced_and_exact_at_ends():
    grid = checkpoint_grid(10**6, 200, 10)
    assert grid[0] == 10 and grid[-1] == 10**6 and (np.diff(grid) > 0).all()
    assert 190 <= len(grid) <= 200
    ratios = grid[1:] / grid[:-1]
    assert ratios[-50:].max() / ratios[-50:].min() < 1.01  # geometric where rounding does not bite


def test_layout_rejects_ends_that_would_stall_the_kernel():
    layout = TraceLayout.build(np.array([100, 200]), 0.75, 0.51)
    bad = TraceLayout(layout.checkpoints, layout.layouts, layout.ends.copy(), layout.offsets)
    bad.ends[0] = 0
    with pytest.raises(ValueError, match="stream 0"):
        run_trace(QuantileModel(0.5, 1.0), as_generator(0), 1.0, 0.51, 0.0, bad)


@pytest.mark.parametrize("mapping,message", [
    ({"tau": [0.5, 0.9]}, "tau = [0.5, 0.9] is a list; trace follows one path"),
    ({"reps": 500}, "reps = 500 does not apply"),
    ({"checkpoints": 1}, "checkpoints = 1 is outside [2, 10000]"),
    ({"k_min": 5000, "n": 5000}, "k_min = 5000 is outside [2, n) = [2, 5000)"),
    ({"k_min": 1.5}, "k_min = 1.5 is not an integer"),
    ({"checkpoint": 10}, "unknown key 'checkpoint'"),
])
def test_trace_config_errors_are_one_line(mapping, message):
    with pytest.raises(cfg.ConfigError, match=re.escape(message)) as err:
        resolve_trace(mapping)
    assert "\n" not in str(err.value)


def test_cli_trace_writes_csv_and_png(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    yaml = tmp_path / "tiny_trace.yaml"
    yaml.write_text("model: quantile\ntau: 0.5\nn: 1e5\nseed: 5\nB: 100\ncheckpoints: 200\n")
    out = tmp_path / "out"
    status = main(["trace", str(yaml), "--n", "4000", "--seed", "9", "--set", "checkpoints=25", "--out", str(out)])
    assert status == 0
    assert (out / "figure1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open(out / "trace.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["checkpoint", "block_len", "n_blocks", "theta_bar", "BB_lower", "BB_upper",
                             "BM_lower", "BM_upper", "SN_lower", "SN_upper"]
    assert rows[0]["checkpoint"] == "10" and rows[-1]["checkpoint"] == "4000"
    assert any(r["checkpoint"] == "800" for r in rows)  # the panels meet at n / 5
    assert 20 <= len(rows) <= 26
    assert "n = 4000: theta_bar" in capsys.readouterr().out


def test_cli_trace_rejects_a_grid(tmp_path, capsys):
    yaml = tmp_path / "t.yaml"
    yaml.write_text("n: 4000\n")
    assert main(["trace", str(yaml), "--set", "tau=[0.5,0.9]", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "ldpsim: error: tau = [0.5, 0.9] is a list; trace follows one path, so give one value"
    assert not (tmp_path / "o").exists()


def test_cli_trace_without_matplotlib_says_so_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import fails as if not installed
    yaml = tmp_path / "t.yaml"
    yaml.write_text("n: 4000\n")
    assert main(["trace", str(yaml), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip()
    assert err == "ldpsim: error: figure1.png needs matplotlib, which is not installed: pip install 'matplotlib>=3.7'"
    assert not (tmp_path / "o").exists()


# --- what a trace refuses, and a path that lost its precision -----------------------------------------------


@pytest.mark.parametrize("args, message", [
    (["configs/dpsgd.yaml"], r"^ldpsim: error: study = 'dpsgd' in config file 'configs/dpsgd\.yaml': trace draws the "
                             r"coverage study's intervals along one path"),  # said "unknown key 'study'" or "reps"
    (["configs/sagd_rate.yaml"], r"^ldpsim: error: study = 'sagd_rate' in config file"),
    (["configs/trace_quantile.yaml", "--set", "ob_paths=5"],
     r"^ldpsim: error: ob_paths = 5 in --set is a key of the method zoo, whose methods trace does not draw"),
    (["configs/trace_quantile.yaml", "--set", "methods=[BB,HulC]"],
     r"^ldpsim: error: methods = \['BB', 'HulC'\]: trace draws BB, BBjoint, BM, SN, oracle, AsympCS, AsympCS_oracle "
     r"along one path; the zoo's methods \(HulC\) run in `ldpsim run`"),
])
def test_trace_refuses_other_studies_and_the_zoo_in_one_line(args, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["trace", *args, "--n", "1e3", "--out", str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "t").exists()


def test_a_trace_config_may_name_its_study_and_refuses_zoo_keys_in_its_file(tmp_path):
    from ldpsim.studies.coverage.trace import load_trace

    path = tmp_path / "t.yaml"
    path.write_text("study: coverage\nmodel: quantile\nn: 1000\nmethods: [BB, SN]\n")
    assert load_trace(path).methods == ("BB", "SN")
    path.write_text("model: quantile\nn: 1000\nhulc_delta: 0.1\n")
    with pytest.raises(ConfigError, match=r"^hulc_delta = 0\.1 in config file .* is a key of the method zoo"):
        load_trace(path)


def test_a_trace_whose_numbers_lost_their_precision_has_no_intervals():
    from ldpsim.studies.coverage.trace import compute_trace, resolve_trace

    config = resolve_trace({"n": 2000, "checkpoints": 8, "seed": 3, "B": 50, "theta0": 1e20})
    result = compute_trace(config)  # BB, BM, SN were [1e20, 1e20]: length 0, reported as intervals
    assert np.isnan(result.bounds).all() and (result.trace.theta_bar == 1e20).all()
