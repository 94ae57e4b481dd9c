"""Config parsing, validation (one-line errors), grids and seed identities."""

from __future__ import annotations

import math
import re
import warnings

import pytest

from ldpsim import studies as cfg
from ldpsim.engine.config import RUN_KEYS, parse_assignment
from ldpsim.engine.errors import ConfigError, ConfigWarning
from ldpsim.studies.coverage import CoverageStudy
from ldpsim.studies.coverage.study import stream_layout

#: Every key a coverage config takes.
ALL_KEYS = tuple(k.name for k in CoverageStudy.keys + RUN_KEYS)


def resolve(**kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)
        return cfg.resolve({"n": 10_000, **kw})


@pytest.mark.parametrize(
    "mapping,message",
    [
        ({"tua": 0.5}, "unknown key 'tua' in config (did you mean 'tau'?); allowed: model, tau"),
        ({"tau": 1.5}, "tau = 1.5 is outside (0, 1)"),
        ({"tau": [0.5, 0.0]}, "tau = 0.0 is outside (0, 1)"),
        ({"epsilon": 0}, "epsilon = 0.0 is outside (0, inf]"),
        ({"epsilon": -1}, "epsilon = -1.0 is outside (0, inf]"),
        ({"gamma": 1.2}, "gamma = 1.2 is outside (0, 1]"),
        ({"gamma": 0}, "gamma = 0.0 is outside (0, 1]"),
        ({"c": 0}, "c = 0.0 is outside (0, inf)"),
        ({"B": 0}, "B = 0 is outside [50, inf)"),
        ({"level": 1}, "level = 1.0 is outside [0.001, 0.99999]"),
        ({"level": 0.01}, "level = 0.01 is outside [0.05, 0.9999] (SN critical values)"),
        ({"n": 3}, "n = 3 is too small for two bootstrap blocks with beta = 0.75"),
        ({"n": 10, "methods": ["BM"]}, "n = 10 is too small for two batch-means batches with gamma = 0.51"),
        ({"n": 1}, "n = 1 is outside [2, 2^53]"),
        ({"gamma": 1.0, "methods": ["BM"]}, "gamma = 1.0 leaves no batch-means batches; BM needs gamma < 1"),
        ({"n": 1.5e4}, None),
        ({"n": "1e4.5"}, "n = '1e4.5' is not an integer"),
        ({"n": 12345.5}, "n = 12345.5 is not an integer"),
        ({"reps": True}, "reps = True is not an integer"),
        ({"reps": [1, 2]}, "reps = [1, 2] must be a single integer, not a list"),
        ({"tau": "half"}, "tau = 'half' is not a number"),
        ({"multiplier": "cauchy"}, "multiplier = 'cauchy' is not one of: uniform, rademacher, gaussian, mammen"),
        ({"model": "median"}, "model = 'median' is not one of: quantile"),
        ({"methods": ["BB", "bootstrap"]}, "methods contains 'bootstrap'; allowed: BB, BBjoint, BM, SN, oracle"),
        ({"methods": []}, "methods = [] is empty"),
    ],
)
def test_bad_values_give_one_line_errors(mapping, message):
    if message is None:
        resolve(**mapping)
        return
    with pytest.raises(ConfigError) as info:
        resolve(**mapping)
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(message)


def test_numbers_written_as_yaml_strings_parse(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("n: [1e6, 2.5e6]\nreps: 1e2\nepsilon: inf\ntau: 5e-1\n")
    config = cfg.load(path)
    assert [s.n for s in config.settings] == [1_000_000, 2_500_000]
    assert config.reps == 100
    assert config.settings[0].epsilon == math.inf
    assert config.settings[0].tau == 0.5


def test_lists_expand_into_grid_with_n_fastest():
    config = resolve(tau=[0.5, 0.9], gamma=[0.51, 0.6], n=[10_000, 20_000])
    assert len(config.settings) == 8
    assert [(s.tau, s.gamma, s.n) for s in config.settings[:3]] == [
        (0.5, 0.51, 10_000), (0.5, 0.51, 20_000), (0.5, 0.6, 10_000)]
    assert config.varied == ("tau", "gamma", "n")
    assert config.methods == ("BB", "BM", "SN", "oracle")


def test_methods_kept_in_canonical_order():
    assert resolve(methods=["SN", "BB"]).methods == ("BB", "SN")


@pytest.mark.parametrize(
    "mapping,fragment",
    [
        ({"gamma": 0.5, "beta": 0.75}, "gamma = 0.5 <= 1/2"),
        ({"gamma": 0.7, "beta": 0.6}, "beta = 0.6 <= gamma = 0.7"),
        ({"multiplier": "gaussian"}, "multiplier = 'gaussian' is unbounded"),
    ],
)
def test_warnings_outside_theory(mapping, fragment):
    with pytest.warns(ConfigWarning, match=fragment):
        cfg.resolve({"n": 100_000, **mapping})


def test_no_warning_inside_theory():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cfg.resolve({"n": 100_000})


def test_yaml_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("tau: [0.5\n")
    with pytest.raises(ConfigError, match="is not valid YAML"):
        cfg.load(bad)
    with pytest.raises(ConfigError, match="not found"):
        cfg.load(tmp_path / "missing.yaml")
    lst = tmp_path / "list.yaml"
    lst.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="must hold a mapping"):
        cfg.load(lst)


def test_command_line_overrides_win(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("n: 1e6\ntau: 0.5\nreps: 500\n")
    overrides = dict(parse_assignment(a) for a in ["tau=[0.5, 0.9]", "epsilon=inf"])
    overrides.update(n="1e4", reps="3")
    config = cfg.load(path, overrides)
    assert [s.tau for s in config.settings] == [0.5, 0.9]
    assert config.settings[0].n == 10_000 and config.reps == 3
    assert config.settings[0].epsilon == math.inf


@pytest.mark.parametrize("text", ["tau", "=0.5"])
def test_bad_assignments(text):
    with pytest.raises(ConfigError):
        parse_assignment(text)


def test_unknown_override_keys_are_named_as_overrides(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("n: 1e4\n")
    with pytest.raises(ConfigError, match=r"^unknown key 'tua' in --set \(did you mean 'tau'\?\)"):
        cfg.load(path, dict([parse_assignment("tua=0.5")]))


def test_every_key_can_be_set():
    values = {"model": "quantile", "n": "2e4", "reps": 3, "seed": 1, "tau": 0.4, "epsilon": 2, "c": 0.5,
              "gamma": 0.6, "theta0": 0.1, "beta": 0.8, "B": 50, "level": 0.8, "multiplier": "mammen",
              "methods": "[BB, SN]", "batch_size": 2}
    linear = {"model": "linear", "mechanism": "gaussian", "delta": 1e-6, "covariates": "uniform", "clip": 2}
    online = {"model": "huber_mallows", "mechanism": "gdp", "dim": 3, "mu": 2, "budget": "{uniform: [1, 3]}"}
    zoo = {"hulc_delta": 0.1, "ob_paths": 70, "ob_interval": "percentile", "higrad_splits": 1, "higrad_threads": 3,
           "higrad_step_ratio": 1.5, "obm_constant": 2.0}
    user = {"streams": "quantile", "truth_check": "false"}  # keys of users' models (tests/test_extend.py)
    mean = {"model": "mean", "law": "beta(2,5)"}
    looks = {"looks": "true", "first_look": 300}
    assert set(values) | set(linear) | set(online) | set(zoo) | set(user) | set(mean) | set(looks) == set(ALL_KEYS)
    s = cfg.resolve({**dict(parse_assignment(f"{k}={v}") for k, v in mean.items()), "n": "2e4"}).settings[0]
    assert (s.model, s.law, s.dim) == ("mean", "beta(2, 5)", None)
    zoo_config = cfg.resolve({**dict(parse_assignment(f"{k}={v}") for k, v in zoo.items()), "n": "2e4",
                              "methods": ["HulC", "HiGrad", "OB", "OBM"]})
    assert {k: zoo_config.options[k] for k in zoo} == zoo
    looks_config = cfg.resolve({**dict(parse_assignment(f"{k}={v}") for k, v in looks.items()), "n": "2e4"})
    assert (looks_config.options["looks"], looks_config.options["first_look"]) == (20, 300)
    mapping = dict(parse_assignment(f"{k}={v}") for k, v in values.items())
    config = cfg.resolve(mapping)
    s = config.settings[0]
    assert (s.n, s.tau, s.epsilon, s.c, s.gamma, s.theta0, s.beta, s.B, s.level, s.multiplier, s.batch_size) == (
        20_000, 0.4, 2.0, 0.5, 0.6, 0.1, 0.8, 50, 0.8, "mammen", 2)
    assert (config.reps, config.seed, config.methods) == (3, 1, ("BB", "SN"))
    mapping.update(parse_assignment(f"{k}={v}") for k, v in linear.items())
    with pytest.raises(ConfigError, match=r"^tau = 0\.4 is read by no setting of this run \(model = 'linear'"):
        cfg.resolve(mapping)  # issue 29: a key that no setting reads is refused, not dropped
    mapping.pop("tau")
    s = cfg.resolve(mapping).settings[0]
    assert (s.model, s.mechanism, s.delta, s.covariates, s.clip, s.tau) == ("linear", "gaussian", 1e-6, "uniform", 2.0, None)
    mapping.update(parse_assignment(f"{k}={v}") for k, v in online.items())
    path_only = {k: v for k, v in mapping.items() if k not in ("beta", "B", "level", "multiplier", "methods",
                                                              "delta", "covariates", "clip", "epsilon", "mu")}
    s = cfg.resolve({**path_only, "study": "trajectory"}).settings[0]
    # a per-user law replaces the constant budget; keys the model does not read are blank
    assert (s.model, s.mechanism, s.dim, s.mu, s.budget, s.epsilon, s.clip) == (
        "huber_mallows", "gdp", 3, None, "uniform(1, 3)", None, None)


def test_keys_a_model_does_not_read_are_blank_and_do_not_repeat_runs():
    config = resolve(model=["quantile", "linear"], tau=[0.5, 0.9], epsilon=1)
    assert [(s.model, s.tau, s.mechanism, s.clip) for s in config.settings] == [
        ("quantile", 0.5, "rr", None), ("quantile", 0.9, "rr", None), ("linear", None, "laplace", 1.0)]
    assert resolve(model="mean", epsilon="inf").settings[0].mechanism is None  # non-private: no mechanism
    assert resolve(model="mean", mechanism="laplace").settings[0].delta is None  # delta is Gaussian's only


@pytest.mark.parametrize("mapping,message", [
    ({"model": "quantile", "mechanism": "laplace"}, "mechanism = 'laplace' is not available for model 'quantile'; allowed: rr"),
    ({"model": "linear", "clip": "inf"}, "clip = inf leaves the gradient unbounded"),
    ({"model": "linear", "mechanism": "gaussian", "delta": 1.5}, "delta = 1.5 is outside (0, 1)"),
    ({"batch_size": 0}, "batch_size = 0 is outside [1, inf)"),
    ({"covariates": "cauchy"}, "covariates = 'cauchy' is not one of: truncnorm, uniform"),
])
def test_model_key_errors(mapping, message):
    with pytest.raises(ConfigError, match="^" + re.escape(message)):
        resolve(**mapping)


def test_batch_size_one_keeps_the_seed_of_plain_sgd():
    assert resolve(batch_size=1).settings[0].seed_key == resolve().settings[0].seed_key
    assert resolve(batch_size=5).settings[0].seed_key != resolve().settings[0].seed_key


def test_seed_identity_follows_the_path_not_the_inference():
    base = resolve().settings[0]
    same_path = resolve(beta=0.6, B=50, level=0.8, multiplier="rademacher").settings[0]
    other_path = resolve(tau=0.6).settings[0]
    assert base.seed_key == same_path.seed_key
    assert base.seed_key != other_path.seed_key
    # stable across processes and versions of Python: a pure function of the values
    assert base.seed_key == resolve().settings[0].seed_key


def test_bbjoint_alone_gets_blocks_and_the_block_checks():
    # BBjoint needs the block sums as much as BB does
    s = resolve(methods=["BBjoint"]).settings[0]
    layout = stream_layout(s, ("BBjoint",))
    assert layout.n_blocks >= 2 and layout.n_blocks == s.n // layout.block_len
    with pytest.raises(ConfigError, match="too small for two bootstrap blocks"):
        resolve(methods=["BBjoint"], n=10, beta=0.9)
