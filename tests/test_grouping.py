"""Settings that share a path run it once, and get what they would get alone, to the bit."""

from __future__ import annotations

import numpy as np
import pytest

from ldpsim.engine.runs.driver import simulate
from ldpsim.engine.dialect.rng import as_generator
from ldpsim.inference.streaming import StreamLayout
from ldpsim.models import MODELS
from ldpsim.recursion.kernels import run_path, run_paths
from ldpsim.recursion.twins import path_twin
from ldpsim.studies import resolve
from ldpsim.studies.coverage import CoverageStudy

CASES = [("quantile", dict(tau=0.7, epsilon=1.0)), ("quantile_regression", dict(tau=0.5, epsilon=1.0)),
         ("mean", dict(epsilon=2.0, mechanism="gaussian", delta=1e-5))]


@pytest.mark.parametrize("batch_size", [1, 3])
@pytest.mark.parametrize("name,kwargs", CASES, ids=[c[0] for c in CASES])
def test_one_pass_for_several_block_lengths_equals_separate_runs(name, kwargs, batch_size):
    model = MODELS[name](**kwargs)
    n, gamma = 4500, 0.55  # past 4096: the ratio step sizes run
    layouts = [StreamLayout.build(n, beta, gamma) for beta in (0.6, 0.75, 0.7, 0.75)]  # a repeat too
    together = run_paths(model, as_generator(3), n, 1.0, gamma, 0.1, layouts, batch_size)
    twins, _ = path_twin(model, as_generator(3), n, 1.0, gamma, 0.1, layouts, batch_size)
    for layout, got, twin in zip(layouts, together, twins):
        alone = run_path(model, as_generator(3), n, 1.0, gamma, 0.1, layout, batch_size)
        for field in ("theta_bar", "sn_v", "blocks", "batches"):
            np.testing.assert_array_equal(getattr(got, field), getattr(alone, field), err_msg=field)
            np.testing.assert_array_equal(getattr(twin, field), getattr(alone, field), err_msg=field)
        assert got.blocks.shape == (layout.n_blocks, model.dim)


@pytest.mark.parametrize("name,kwargs", CASES[:2], ids=[c[0] for c in CASES[:2]])
def test_state_a_run_does_not_need_changes_nothing_else(name, kwargs):
    # the kernel compiled without blocks, or without batches, keeps the same path and sums
    model = MODELS[name](**kwargs)
    n = 6000
    full = run_path(model, as_generator(8), n, 1.0, 0.51, 0.0, StreamLayout.build(n, 0.75, 0.51))
    for blocks, batches in ((False, True), (True, False), (False, False)):
        part = run_path(model, as_generator(8), n, 1.0, 0.51, 0.0,
                        StreamLayout.build(n, 0.75, 0.51, blocks=blocks, batches=batches))
        np.testing.assert_array_equal(part.theta_bar, full.theta_bar)
        np.testing.assert_array_equal(part.sn_v, full.sn_v)
        if blocks:
            np.testing.assert_array_equal(part.blocks, full.blocks)
        if batches:
            np.testing.assert_array_equal(part.batches, full.batches)


def test_group_chunks_equal_the_chunks_of_each_setting_alone():
    study = CoverageStudy()
    config = resolve({"model": "quantile_regression", "n": 8000, "reps": 3, "seed": 5,
                      "beta": [0.6, 0.7], "B": [50, 80], "multiplier": ["uniform", "rademacher"],
                      "methods": ["BB", "BBjoint", "BM", "SN", "oracle"]})
    settings = list(config.settings)
    assert len({study.group_key(s) for s in settings}) == 1 and len(settings) == 8
    together = study.run_group(settings, config.options, config.seed, 1, 3)
    twins = study.run_group(settings, config.options, config.seed, 1, 3, twin=True)
    for setting, got, twin in zip(settings, together, twins):
        alone = study.run_chunk(setting, config.options, config.seed, 1, 3)
        for key in alone:
            np.testing.assert_array_equal(got[key], alone[key], err_msg=f"{setting} {key}")
            np.testing.assert_array_equal(twin[key], alone[key], err_msg=f"{setting} {key} (twin)")


def test_grouped_run_gives_the_ungrouped_summary(tmp_path, monkeypatch):
    import ldpsim

    mapping = {"model": "quantile", "tau": [0.5, 0.9], "n": 20_000, "reps": 6, "seed": 2, "B": 100,
               "beta": [0.6, 0.7, 0.8], "gamma": [0.51, 0.55]}
    grouped = ldpsim.run(mapping, out=tmp_path / "grouped", n_jobs=2, progress=False)
    monkeypatch.setattr(CoverageStudy, "group_key", lambda self, setting: None)
    alone = ldpsim.run(mapping, out=tmp_path / "alone", n_jobs=2, progress=False)
    assert (tmp_path / "grouped" / "summary.csv").read_bytes() == (tmp_path / "alone" / "summary.csv").read_bytes()
    assert grouped.rows == alone.rows


def test_resume_with_part_of_a_group_saved(tmp_path, monkeypatch):
    import ldpsim

    monkeypatch.setattr("ldpsim.engine.runs.chunks.MAX_CHUNK_REPS", 3)  # two ranges of replications
    mapping = {"model": "quantile", "n": 20_000, "reps": 6, "seed": 4, "B": 100, "beta": [0.6, 0.7, 0.8]}
    full = ldpsim.run(mapping, out=tmp_path / "full", n_jobs=1, progress=False)
    part = tmp_path / "part"
    ldpsim.run(mapping, out=part, n_jobs=1, progress=False)
    chunks = sorted((part / "chunks").glob("*.npz"))
    assert len(chunks) == 6
    for path in chunks[::2]:  # some members of each group lose their chunk
        path.unlink()
    again = ldpsim.run(mapping, out=part, n_jobs=1, progress=False, resume=True)
    assert again.rows == full.rows
    assert len(list((part / "chunks").glob("*.npz"))) == 6


def test_simulate_returns_every_setting_in_grid_order():
    config = resolve({"model": "quantile", "n": 20_000, "reps": 2, "seed": 1, "B": 60, "beta": [0.6, 0.7],
                      "tau": [0.5, 0.8]})
    results = simulate(config, n_jobs=1, progress=False)
    assert len(results) == 4
    np.testing.assert_array_equal(results[0]["theta_bar"], results[1]["theta_bar"])  # same tau, same path
    assert not np.array_equal(results[0]["theta_bar"], results[2]["theta_bar"])
