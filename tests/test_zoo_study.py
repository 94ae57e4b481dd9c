"""The method zoo in the coverage study: kernel = twin, the same streams, known answers, the table."""

from __future__ import annotations

import math
import re
import time
from pathlib import Path

import numpy as np
import pytest

import ldpsim
from ldpsim.cli import main
from ldpsim.engine.runs.config import ConfigError
from ldpsim.engine.dialect.rng import replication_generator
from ldpsim.inference.intervals import normal_quantile
from ldpsim.inference.streaming import StreamLayout
from ldpsim.inference.methods import ZOO_METHODS
from ldpsim.inference.zoo import HiGradLayout, HulCLayout, OBMLayout, hulc_coverage
from ldpsim.models import MODELS
from ldpsim.recursion.kernels import run_paths_lanes
from ldpsim.recursion.twins import path_twin
from ldpsim.recursion.zoo import STREAM_CODES, ZooSpec
from ldpsim.studies import resolve
from ldpsim.studies.coverage import CoverageStudy
from ldpsim.studies.coverage.zoo import method_generator

from run_helpers import ROOT, one_error_line

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


# --- the zoo's keys: refused naming the key that makes them impossible --------------------------------------


@pytest.mark.parametrize("command", ["check", "run"])
def test_an_obm_constant_whose_schedule_cannot_be_listed_is_refused_at_once(command, tmp_path, capsys, monkeypatch):
    # obm_constant = 1e-300 hung run and check (the schedule floor(C m^beta) was listed for m up to 1e76)
    monkeypatch.chdir(ROOT)
    argv = [command, "configs/zoo_quantile.yaml", "--set", "obm_constant=1e-300"]
    if command == "run":
        argv += ["--out", str(tmp_path / "r")]
    start = time.monotonic()
    assert main(argv) == 2
    assert time.monotonic() - start < 30  # (not a timing assertion on speed: the hang took forever)
    err = one_error_line(capsys)
    assert re.search(r"obm_constant = 1e-300 is too small for n = \d+ .* use obm_constant >= [0-9.e+-]+$", err)


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


@pytest.mark.parametrize("mapping, message", [
    # "HiGrad needs at least 2 final threads for its t interval", naming no key
    ({"methods": ["HiGrad"], "higrad_threads": 1, "higrad_splits": 3},
     r"^a HiGrad tree of higrad_splits = 3 into higrad_threads = \[1, 1, 1\] has 1 final thread: its t interval needs "
     r"at least 2; raise higrad_threads$"),
    # gamma or obm_constant put OBM's second batch beyond n, and the message blamed n alone
    ({"methods": ["OBM"], "gamma": 0.99}, r"^n = 100000 is too small for OBM with gamma = 0\.99 and obm_constant = 1: "
                                          r"one batch only .* the second at 1\.61e\+60\); raise n, or lower gamma"),
    ({"methods": ["OBM"], "obm_constant": 1e300}, r"obm_constant = 1e\+300: one batch only"),
    # gamma = 0.9999 with OBM: m^(2 / (1 - gamma)) overflowed, an internal error (OverflowError)
    ({"methods": ["OBM"], "gamma": 0.9999}, r"^n = 100000 is too small for OBM .* the second at 10\^6021\)"),
    # OB_split's answers at epsilon / (B + 1) = 1e-155: their model's variance is inf, and every replication
    # of OB_split failed without a word
    ({"methods": ["OB_split"], "epsilon": 1e-150, "ob_paths": 100_000},
     r"^OB_split's answers, each at 1 / \(ob_paths \+ 1\) = 1 / 100001 of the budget: model 'quantile' cannot be "
     r"computed in floating point at epsilon = 9\.9999\d*e-156.*; lower ob_paths or raise the budget$"),
])
def test_zoo_keys_are_refused_naming_the_key_that_makes_them_impossible(mapping, message):
    with pytest.raises(ConfigError, match=message):
        ldpsim.load_config({"model": "quantile", "n": 100_000, **mapping})


def test_a_zoo_key_whose_methods_do_not_run_is_named():
    # ob_paths, hulc_delta, ... given without their methods changed nothing, silently
    with pytest.warns(ldpsim.ConfigWarning, match=r"^hulc_delta = 0\.1 \(read by HulC\), ob_paths = 5 \(read by OB, "
                                                   r"OB_split\) change nothing: methods lists no method that reads "
                                                   r"them$"):
        ldpsim.load_config({"model": "quantile", "n": 1e5, "methods": ["SN", "HiGrad"], "ob_paths": 5,
                            "hulc_delta": 0.1})
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ldpsim.load_config({"model": "quantile", "n": 1e5, "methods": ["SN", "OB"], "ob_paths": 5})


def test_the_zoo_state_is_in_the_memory_check(monkeypatch):
    # OB's state (2 B d floats a lane) was not in the memory check: huber_mallows at dim = 1000 with
    # ob_paths = 100000 (12 GiB a replication at 8 lanes) was accepted on this 23.5 GiB machine. Here on a machine
    # of 4 MiB, with the quantile's d = 1: 2 B + B + 2 = 300002 floats a lane
    from ldpsim.engine.runs import resources
    from ldpsim.engine.dialect.lanes import vector_width

    monkeypatch.setattr(resources, "physical_memory", lambda: 4 * 2 ** 20)
    with pytest.raises(ConfigError, match=rf"^this needs about .* per replication \(mostly OB's state of 300002 floats x "
                                          rf"{vector_width()} lanes \(d = 1, ob_paths = 100000\)\), more than 50% of "
                                          r"this machine's 4\.0 MiB"):
        ldpsim.load_config({"model": "quantile", "n": 1e5, "methods": ["OB"], "ob_paths": 100_000})
    assert ldpsim.load_config({"model": "quantile", "n": 1e5, "methods": ["OB"], "ob_paths": 100})


# --- the privacy of the online bootstraps, in one place -----------------------------------------------------


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


def test_a_per_user_budget_has_the_zoo_tables_privacy_factor_of_its_own_budget():
    # (a regression of user_privacy: a budget drawn per user has no mu; HulC's factor is 1)
    from ldpsim.studies.coverage.zoo import privacy_factor

    config = ldpsim.load_config({"model": "huber_mallows", "dim": 2, "mechanism": "gdp", "budget": {"uniform": [1, 2]},
                                 "methods": ["HulC"], "n": 1e5})
    assert privacy_factor("HulC", config.options, config.settings[0]) == 1


# --- what bias, sd and se_ratio mean for the zoo's methods --------------------------------------------------


def test_hulc_has_no_se_ratio_and_the_zoo_methods_are_judged_on_their_own_estimates():
    from ldpsim.studies.coverage.summary import summarize
    from ldpsim.studies.coverage.tables import render_markdown

    config = ldpsim.load_config({"model": "quantile", "n": 1000, "reps": 4, "methods": ["BB", "HulC", "HiGrad"]})
    r, m = 4, 3
    rng = np.random.default_rng(0)
    theta_bar = rng.normal(0, 0.1, (r, 1))
    own = rng.normal(0, 0.3, (r, m, 1))  # each method's own estimate, spread unlike theta_bar
    bounds = np.stack([own - 0.5, own + 0.5], axis=-1)
    res = {"ok": np.ones(r, bool), "theta_bar": theta_bar, "bounds": bounds,
           "method_ok": np.ones((r, m), bool), "estimate": own}
    rows = {row["method"]: row for row in summarize(config, [res])}
    z = 1.6448536269514722
    assert rows["BB"]["sd"] == pytest.approx(theta_bar[:, 0].std(ddof=1))
    assert rows["HiGrad"]["sd"] == pytest.approx(own[:, 2, 0].std(ddof=1))
    assert rows["HiGrad"]["se_ratio"] == pytest.approx(1.0 / (2 * z) / own[:, 2, 0].std(ddof=1))
    assert rows["HulC"]["sd"] == pytest.approx(own[:, 1, 0].std(ddof=1)) and np.isnan(rows["HulC"]["se_ratio"])
    text = render_markdown(list(rows.values()))
    assert "HulC's interval is the range of its segment averages" in text
    assert re.search(r"\| HulC +\| SE ratio \| - +\|", text)


# --- a zoo chunk: its compute sources, its plug-in's Hessian, its numbers without numba ---------------------


def test_every_studies_file_a_zoo_chunk_runs_is_a_compute_source():
    # studies/coverage/zoo.py computes the zoo's intervals in every chunk but was not a compute source: after an
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
