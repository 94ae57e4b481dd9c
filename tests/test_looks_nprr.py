"""NPRR's confidence sequences and intervals as methods of a run with looks.

The kernel streams each step's NPRR release (the mean model's own, the one its SGD step reads) into
the states of ldpsim.inference.nprr_cs; the twin stores the releases and applies the plain-numpy
reference, which tests/test_nprr_cs.py holds to the authors' code (WannabeSmith/nprr at 36edeca).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ldpsim
from ldpsim.engine.runs.config import ConfigError
from ldpsim.engine.dialect.rng import as_generator
from ldpsim.inference import nprr_cs as cs
from ldpsim.inference.methods.nprr import release_reference
from ldpsim.models.mean import MeanModel
from ldpsim.recursion.twins import path_twin
from ldpsim.inference.streaming import StreamLayout
from ldpsim.studies import STUDIES
from ldpsim.studies.coverage.checkpoints import TraceLayout, run_trace
from ldpsim.studies.coverage.releases import ReleaseTap

NPRR_METHODS = ["NPRR_H", "NPRR_EB", "NPRR_H_CI", "NPRR_EB_CI"]
SMALL = {"model": "mean", "mechanism": "nprr", "epsilon": 2.0, "law": "beta(50, 50)", "n": 3000, "reps": 4,
         "gamma": 0.6, "methods": ["SN", "AsympCS"] + NPRR_METHODS, "looks": 5, "first_look": 100}


def _releases(model, seed, n):
    """The twin's releases of one path (z of X), and the model's G and r."""
    z = []
    layout = StreamLayout.build(n, 0.75, 0.6, blocks=False, batches=False)
    mech = model.mechanism
    path_twin(model, as_generator(seed), n, 1.0, 0.6, 0.0, layout,
              tap=lambda params: z.append(cs.released_value(float(params.noise.t[0]), float(mech.G), float(mech.r))))
    return np.array(z), float(mech.G), float(mech.r)


def test_the_recovered_releases_are_nprrs_grid_values_with_its_mean():
    # each z is exactly k / G; E z = r mu + (1 - r) / 2 (mu = 1/2 for Beta(50, 50)) within 4 SE
    model = MeanModel(2.0, "nprr", law="beta(50, 50)")
    z, grid, keep = _releases(model, 11, 20_000)
    k = z * grid
    np.testing.assert_array_equal(k, np.round(k))
    assert np.all((z >= 0.0) & (z <= 1.0))
    se = z.std() / math.sqrt(z.size)
    assert abs(z.mean() - (keep * 0.5 + (1.0 - keep) / 2.0)) < 4.0 * se


def test_the_release_methods_draw_nothing_and_leave_the_path_as_it_was():
    model = MeanModel(2.0, "nprr", law="beta(50, 50)")  # the law of every test here: one kernel to compile
    layout = TraceLayout.build(np.array([40, 400, 2000]), 0.75, 0.6)
    bare = run_trace(model, as_generator(5), 1.0, 0.6, 0.0, layout)
    tap = ReleaseTap.build(model, NPRR_METHODS, 0.9, 2000)
    tapped = run_trace(model, as_generator(5), 1.0, 0.6, 0.0, layout, tap)
    np.testing.assert_array_equal(bare.theta_bar, tapped.theta_bar)
    np.testing.assert_array_equal(bare.sums, tapped.sums)
    assert np.isfinite(tapped.released).all() and bare.released.shape == (3, 0, 2)


def test_the_kernels_bounds_are_the_authors_on_the_same_releases():
    # the kernel's streamed states at each look against the reference (= the authors' code) on the releases
    # the twin recorded of the same path: the CIs at n are the authors' nprr_hoeffding_ci / nprr_empbern_ci
    model, n = MeanModel(2.0, "nprr", law="beta(50, 50)"), 2000
    grid_looks = np.array([10, 100, 1000, n])
    tap = ReleaseTap.build(model, NPRR_METHODS, 0.9, n)
    trace = run_trace(model, as_generator(8), 1.0, 0.6, 0.0, TraceLayout.build(grid_looks, 0.75, 0.6), tap)
    z, _, keep = _releases(model, 8, n)
    for j, name in enumerate(NPRR_METHODS):
        lower, upper = release_reference(name, z, keep, 0.9, n)
        np.testing.assert_allclose(trace.released[:, j, 0], lower[grid_looks - 1], rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(trace.released[:, j, 1], upper[grid_looks - 1], rtol=1e-13, atol=1e-15)
    alpha = 1.0 - 0.9
    np.testing.assert_allclose(trace.released[-1, 2], cs.hoeffding_ci(z, keep, alpha), rtol=1e-13)
    np.testing.assert_allclose(trace.released[-1, 3], cs.empbern_ci(z, keep, alpha), rtol=1e-13)
    running = cs.running_intersection(*cs.empbern_cs(z, keep, alpha))
    np.testing.assert_allclose(trace.released[:, 1, 0], running[0][grid_looks - 1], rtol=1e-13)


def test_the_kernels_looks_are_the_twins_with_release_methods():
    config = ldpsim.load_config(SMALL)
    study, s = STUDIES["coverage"], config.settings[0]
    kernel = study.run_chunk(s, config.options, config.seed, 0, 3)
    twin = study.run_chunk(s, config.options, config.seed, 0, 3, twin=True)
    np.testing.assert_allclose(kernel["look_bounds"], twin["look_bounds"], rtol=1e-12, atol=1e-14)
    assert np.isfinite(kernel["look_bounds"]).all()


def test_a_run_reports_the_release_methods_and_their_uniform_coverage():
    result = ldpsim.run(SMALL, n_jobs=1, progress=False)
    methods = {r["method"] for r in result.tables["uniform"]}
    assert set(NPRR_METHODS) <= methods
    for row in result.tables["uniform"]:
        if row["method"] in NPRR_METHODS:  # a running intersection narrows as t grows
            assert 0.0 < row["length"] < 1.0


@pytest.mark.parametrize("change,match", [
    ({"looks": False, "first_look": 0}, r"NPRR_H, NPRR_EB, NPRR_H_CI, NPRR_EB_CI stream each user's release .* set looks"),
    ({"mechanism": "duchi"}, r"mechanism = 'duchi': NPRR_H, .* model mean with mechanism nprr"),
])
def test_release_methods_without_their_release_are_refused_in_one_line(change, match):
    with pytest.raises(ConfigError, match=match):
        ldpsim.load_config({**SMALL, **change})


def test_release_methods_on_another_model_are_refused():
    config = {"model": "quantile", "tau": 0.5, "epsilon": 1.0, "n": 3000, "looks": 5, "methods": ["SN", "NPRR_EB"]}
    with pytest.raises(ConfigError, match=r"model = 'quantile'.*NPRR_EB read each user's NPRR release"):
        ldpsim.load_config(config)


def test_trace_refuses_the_release_methods_in_one_line():
    from ldpsim.studies.coverage.trace import resolve_trace

    with pytest.raises(ConfigError, match=r"NPRR's \(NPRR_H\) run in `ldpsim run` with looks"):
        resolve_trace({"model": "mean", "mechanism": "nprr", "epsilon": 2.0, "n": 5000, "methods": ["SN", "NPRR_H"]})


@pytest.mark.parametrize("change", [{"level": 0.001, "n": 10000, "reps": 8}, {"epsilon": 1e-6, "reps": 8}],
                         ids=["level-0.001", "epsilon-1e-6"])
def test_an_empty_nprr_set_has_length_zero_and_does_not_cover(change):
    # NPRR's sets are [max(0, a), min(1, b)] for a mean in [0, 1]: empty (lo > hi) once they leave [0, 1] or
    # their running intersection crosses; hi - lo was reported as their length (-0.10 at level 0.001, -9658 at
    # epsilon 1e-6; issue 44, section 4)
    config = {**SMALL, "methods": NPRR_METHODS, **change}
    result = ldpsim.run(config, n_jobs=1, progress=False)
    for table in ("summary", "looks", "uniform"):
        lengths = [row["length"] for row in result.tables[table]]
        assert all(0.0 <= v <= 1.0 for v in lengths), (table, lengths)
    assert all(row["se_ratio"] >= 0.0 for row in result.tables["summary"])
    assert any(row["coverage"] < 1.0 for row in result.tables["summary"])  # the empty sets (lo > hi) miss


def test_the_length_of_an_empty_set_is_zero():
    from ldpsim.reporting.stats import set_length

    np.testing.assert_array_equal(set_length([0.2, 0.7, 1.0, math.nan], [0.5, 0.3, 0.0, 0.4]), [0.3, 0.0, 0.0, math.nan])


def test_nprr_methods_without_privacy_are_refused_in_one_line():
    with pytest.raises(ConfigError, match=r"^methods = .* with epsilon = inf: NPRR_H read each user's NPRR release, "
                                          r"and without privacy there is none; allowed: a finite epsilon") as info:
        ldpsim.load_config({**SMALL, "epsilon": math.inf, "methods": ["SN", "NPRR_H"]})
    assert "null" not in str(info.value) and "\n" not in str(info.value)
