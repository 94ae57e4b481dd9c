"""The method zoo in the coverage study (issue 20): kernel = twin, the same streams, known answers, the table."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ldpsim
from ldpsim.engine.config import ConfigError
from ldpsim.engine.rng import replication_generator
from ldpsim.inference.intervals import normal_quantile
from ldpsim.inference.streaming import StreamLayout
from ldpsim.inference.zoo import ZOO_METHODS, HiGradLayout, HulCLayout, OBMLayout, hulc_coverage
from ldpsim.models import MODELS
from ldpsim.recursion.kernels import run_paths_lanes
from ldpsim.recursion.twins import path_twin
from ldpsim.recursion.zoo import STREAM_CODES, ZooSpec
from ldpsim.studies import resolve
from ldpsim.studies.coverage import CoverageStudy
from ldpsim.studies.coverage.zoo import method_generator

ALL = ["BB", "BM", "SN", "oracle", *ZOO_METHODS]


def _spec(model, split, n, gamma, paths=4, theta0=0.1):
    return ZooSpec(HulCLayout.build(n, 5), HiGradLayout.build(n), True, True, paths, split, OBMLayout.build(n, gamma),
                   True, theta0)


def _gens(count, seed):
    return [replication_generator(seed, 0, r) for r in range(count)]


def _same(a, b):
    if isinstance(a, tuple):
        return all(_same(x, y) for x, y in zip(a, b))
    return np.array_equal(a, b, equal_nan=True)


def _check_kernel_twin(model, split, lanes, count, n=1500, gamma=0.51):
    spec = _spec(model, split, n, gamma)
    layouts = [StreamLayout.build(n, 0.75, gamma)]

    def zoo_gens(gens):
        return {m: [method_generator(g, m) for g in gens] for m in STREAM_CODES}

    gens = _gens(count, 7)
    states, zoo = run_paths_lanes(model, gens, n, 1.0, gamma, 0.1, layouts, 1, width=lanes, zoo=spec,
                                  zoo_gens=zoo_gens(gens))
    twins = _gens(count, 7)
    twin_zoo = zoo_gens(twins)
    for r in range(count):
        want, _, arrays = path_twin(model, twins[r], n, 1.0, gamma, 0.1, layouts, 1, spec,
                                    {m: g[r] for m, g in twin_zoo.items()})
        assert np.array_equal(states[r][0].theta_bar, want[0].theta_bar)
        assert set(arrays) == set(zoo[r]) == set(ZOO_METHODS)
        for method in arrays:
            assert _same(zoo[r][method], arrays[method]), (model.name, lanes, r, method)
        assert np.isfinite(arrays["HulC"]).all() and np.isfinite(arrays["HiGrad"]).all()


@pytest.mark.parametrize("lanes, count", [(1, 1)])  # 8 lanes: the slow test below (134 s of compilation, cold)
def test_every_zoo_method_in_the_kernel_equals_its_twin(lanes, count):
    # count < lanes: a chunk's remainder in a padded call; OB_split's answers at epsilon / (B + 1)
    _check_kernel_twin(MODELS["quantile"](0.5, 1.0), MODELS["quantile"](0.5, 1.0 / 5), lanes, count)


def _zoo_models():
    return {
        "quantile": (MODELS["quantile"](0.5, 1.0), MODELS["quantile"](0.5, 1.0 / 5)),
        "quantile_regression": (MODELS["quantile_regression"](0.5, epsilon=1.0),
                                MODELS["quantile_regression"](0.5, epsilon=0.2)),
        "huber_mallows": (MODELS["huber_mallows"](dim=3, mechanism="laplace", epsilon=2.0),
                          MODELS["huber_mallows"](dim=3, mechanism="laplace", epsilon=0.4)),
        "mean_gaussian": (MODELS["mean"](epsilon=1.0, mechanism="gaussian", delta=1e-5),
                          MODELS["mean"](epsilon=0.2, mechanism="gaussian", delta=1e-5)),
        # (at epsilon 0.2 OB_split's paths grow until the twin's math.exp overflows; the kernel gives inf)
        "logistic": (MODELS["logistic"](epsilon=2.0), MODELS["logistic"](epsilon=1.0)),
    }


@pytest.mark.slow
# 8 lanes with 5 replications (a chunk's remainder, padded): each width compiles the all-method kernel of every
# model for minutes, so this width alone here; one lane is the quantile's in the fast tier, and every method's
# kernel at 8 lanes equals its twin on the committed zoo configs (tests/test_lanes.py), which run the quantile
# regression and the Huber model: their all-method kernels (minutes each, vector models) are left out here
@pytest.mark.parametrize("lanes, count", [(8, 5)])
@pytest.mark.parametrize("name", [m for m in _zoo_models() if m not in ("quantile_regression", "huber_mallows")])
def test_every_zoo_method_in_the_kernel_equals_its_twin_every_model(name, lanes, count):
    model, split = _zoo_models()[name]
    _check_kernel_twin(model, split, lanes, count)


def test_the_observation_is_shared_by_every_path_that_privatizes_it():
    # OB_split's record at another epsilon reads the covariates the main path's draw wrote
    from ldpsim.models.base import sharing_observation

    main = MODELS["quantile_regression"](0.5, epsilon=1.0).kernel_params()
    other = sharing_observation(MODELS["quantile_regression"](0.5, epsilon=0.1).kernel_params(), main)
    assert other.x is main.x and other.noise != main.noise
    plain = MODELS["quantile"](0.5, 1.0).kernel_params()
    assert sharing_observation(plain, plain) is plain


# --- through the study ----------------------------------------------------------------

def _rows(result, methods):
    return [r for r in result.rows if r["method"] in methods]


@pytest.mark.parametrize("methods", [
    # 72 s of compilation on a cold cache; "all" holds these methods too: both in the slow tier
    pytest.param(["BB", "BM", "SN", "oracle", "HulC", "OB"], marks=pytest.mark.slow, id="methods0"),
    # every method: a kernel pass each, 204 s of compilation on a cold cache, so in the slow tier
    pytest.param(ALL, marks=pytest.mark.slow, id="all")])
def test_zoo_methods_leave_the_main_path_and_the_classic_intervals_alone(tmp_path, methods):
    base = {"model": "quantile", "tau": 0.5, "n": 6000, "reps": 10, "seed": 3, "B": 60, "epsilon": [1, "inf"]}
    classic = ldpsim.run({**base, "methods": ["BB", "BM", "SN", "oracle"]}, out=tmp_path / "a", n_jobs=1,
                         progress=False)
    zoo = ldpsim.run({**base, "methods": methods, "ob_paths": 5}, out=tmp_path / "b", n_jobs=1, progress=False)
    assert _rows(zoo, ["BB", "BM", "SN", "oracle"]) == classic.rows
    assert {r["method"] for r in zoo.rows} == set(methods)
    assert not (tmp_path / "a" / "zoo.csv").exists()
    for name in ("zoo.csv", "zoo.md", "zoo.png"):
        assert (tmp_path / "b" / name).is_file()
    table = zoo.tables["zoo"]
    assert len(table) == 2 * len(methods)
    for row in table:
        # measured in the run, every method (the classic ones: the main pass and their interval)
        assert math.isfinite(row["seconds_per_rep"]) and row["seconds_per_rep"] > 0, row
        assert row["privacy_cost"] == (6 if row["method"] == "OB" else 1)
        assert row["reps"] + row["n_failed"] == 10
    oracle = [r for r in table if r["method"] == "oracle"]
    assert all(abs(r["length_ratio"] - 1.0) < 1e-12 for r in oracle)
    assert all(r["length_ratio_se"] == 0.0 for r in oracle)  # a number: its spread is the rounding of the ends


# slow (40 s cold for the quantile): the fast tier keeps every zoo method's kernel against its twin at one lane
@pytest.mark.slow
@pytest.mark.parametrize("model", ["quantile", "quantile_regression"])
def test_a_zoo_chunk_is_the_same_through_the_twin_and_in_groups(model):
    study = CoverageStudy()
    config = resolve({"model": model, "n": 3000, "reps": 3, "seed": 5, "B": 60,
                      "level": [0.8, 0.9], "beta": [0.6, 0.7], "methods": ["BB", "SN", "HulC", "OB", "OBM"],
                      "ob_paths": 3})
    settings = list(config.settings)
    assert len({study.group_key(s) for s in settings}) == 1 and len(settings) == 4
    # HulC's segments depend on the level: the group runs one pass per level, each as a run of its own
    together = study.run_group(settings, config.options, config.seed, 1, 3)
    twins = study.run_group(settings, config.options, config.seed, 1, 3, twin=True)
    for setting, got, twin in zip(settings, together, twins):
        alone = study.run_chunk(setting, config.options, config.seed, 1, 3)
        for key in alone:
            if key != "seconds":  # measured
                np.testing.assert_array_equal(got[key], alone[key], err_msg=f"{setting} {key}")
                np.testing.assert_array_equal(twin[key], alone[key], err_msg=f"{setting} {key} (twin)")
        assert np.isnan(alone["seconds"]).all()  # replication 0 is not in 1..2: not timed


@pytest.mark.slow  # 17 s, 500 replications: CI's slow tier
def test_hulc_covers_at_its_known_level_for_a_median_unbiased_average():
    # the median of N(0, 1) from theta0 = 0 under randomized response: every segment's average is symmetric
    # about 0, so HulC covers with probability 1 - 2^(1 - B) = 0.9375 (B = 5 at level 0.9) at any n
    reps = 500
    result = ldpsim.run({"model": "quantile", "tau": 0.5, "theta0": 0, "epsilon": 1, "n": 2000, "reps": reps,
                         "seed": 11, "methods": ["HulC"]}, n_jobs=1, progress=False)
    (row,) = result.rows
    want = hulc_coverage(5)
    se = math.sqrt(want * (1 - want) / reps)
    assert want == 0.9375 and row["reps"] == reps
    assert abs(row["coverage"] - want) <= 3 * se, (row["coverage"], want, se)


@pytest.mark.slow
def test_ob_bootstrap_sd_through_the_kernel_matches_the_true_sd():
    # the mean model without privacy (with it, OB counts the privacy noise twice: docs/zoo_methods.md);
    # n = 80000: the finite-n excess of the perturbed paths' spread is below the Monte Carlo SE there
    reps, n = 200, 80_000
    result = ldpsim.run({"model": "mean", "epsilon": "inf", "n": n, "reps": reps, "seed": 13, "theta0": 0,
                         "methods": ["oracle", "OB"], "ob_paths": 100}, n_jobs=1, progress=False)
    row = [r for r in result.rows if r["method"] == "OB"][0]
    z = normal_quantile(0.9)
    model = MODELS["mean"](epsilon=math.inf)
    true_sd = math.sqrt(model.sigma()[0, 0] / n)
    mean_sd = row["length"] / (2 * z)
    se = row["length_se"] / (2 * z)
    assert abs(mean_sd - true_sd) <= 3 * se, (mean_sd, true_sd, se)


@pytest.mark.parametrize("mapping, message", [
    ({"batch_size": 2, "methods": ["HulC"]}, r"^batch_size = 2: the zoo's methods \(HulC\) run one observation a step"),
    ({"n": 40, "methods": ["HiGrad"], "higrad_splits": 5}, r"HiGrad"),
    ({"n": 8, "methods": ["HulC"]}, r"^n = 8 is too small for HulC's B = 5 segments"),
    ({"model": "huber_mallows", "mechanism": "gdp", "budget": {"uniform": [1, 2]}, "methods": ["OB_split"]},
     r"^methods OB_split split or multiply a budget per answer"),
    ({"methods": ["OB"], "ob_paths": 1}, r"^ob_paths = 1 is outside"),
    ({"methods": ["OBM"], "gamma": 1.0}, r"OBM"),
])
def test_zoo_keys_are_checked_in_one_line(mapping, message):
    with pytest.raises(ConfigError, match=message):
        ldpsim.load_config({"model": "quantile", "n": 10_000, **mapping})


def test_check_states_the_online_bootstraps_privacy():
    from ldpsim.studies.coverage.checks import check_config

    config = ldpsim.load_config({"model": "quantile", "n": 10_000, "epsilon": 1, "methods": ["SN", "OB", "OB_split"],
                                 "ob_paths": 9})
    (check,) = check_config(config)
    details = {v.name: v.detail for v in check.verdicts}
    assert "(epsilon = 10, delta = 0) LDP per user" in details["privacy (OB)"]
    assert "at epsilon = 0.1: (epsilon = 1, delta = 0) LDP per user" in details["privacy (OB_split)"]


def test_the_online_bootstraps_budgets_compose_by_their_accountant():
    from ldpsim.studies.coverage.zoo import privacy_factor, split_setting

    options = {"ob_paths": 15}
    gdp = ldpsim.load_config({"model": "huber_mallows", "mechanism": "gdp", "mu": 2, "dim": 3, "n": 1e4,
                              "methods": ["OB", "OB_split"], **options}).settings[0]
    assert split_setting(gdp, options).mu == 0.5 and privacy_factor("OB", options, gdp) == 4.0
    pure = ldpsim.load_config({"model": "quantile", "epsilon": 2, "n": 1e4, "methods": ["OB", "OB_split"],
                               **options}).settings[0]
    assert split_setting(pure, options).epsilon == 0.125 and privacy_factor("OB", options, pure) == 16
    assert privacy_factor("OB_split", options, pure) == privacy_factor("HulC", options, gdp) == 1
