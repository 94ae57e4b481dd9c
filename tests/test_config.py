"""Config parsing, validation (one-line errors), grids and seed identities."""

from __future__ import annotations

import math
import os
import re
import time
import warnings

import pytest

import ldpsim
from ldpsim import studies as cfg
from ldpsim.cli import main
from ldpsim.engine.runs.config import RUN_KEYS, parse_assignment
from ldpsim.engine.errors import ConfigError, ConfigWarning
from ldpsim.studies.coverage import CoverageStudy
from ldpsim.studies.coverage.study import min_bootstrap_draws, stream_layout

from run_helpers import (ROOT, SMALL, TINY, TINY_STUDIES, api_run, checked_cli, cli, one_error_line, one_line_error,
                         one_line_error_after_warnings, snapshot, write)

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
        cfg.resolve(mapping)  # a key that no setting reads is refused, not dropped
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


# --- bad values are refused before any work, by run, check and trace ----------------------------------------


@pytest.mark.parametrize("args,fragments", [
    # B too small for the bootstrap quantiles
    (["--set", "B=1"], ["B = 1 is outside [50, inf)"]),
    (["--set", "B=2"], ["B = 2 is outside [50, inf)"]),
    (["--set", "B=100", "--set", "level=0.99"], ["B = 100 bootstrap draws are too few for level = 0.99",
                                                  "B >= max(50, 2 / (1 - level)) = 200"]),
    # found only after the work, before
    (["--set", "level=1e-300"], ["level = 1e-300 is outside [0.001, 0.99999]"]),
    # extreme values that passed validation, then crashed (or took 43.7 TiB)
    (["--n", "1e19"], ["n = 10000000000000000000 is outside [2, 2^53]"]),
    (["--n", "1e30"], ["n = 1e+30 is outside [2, 2^53]"]),
    (["--set", "epsilon=1e-160"], ["model 'quantile' cannot be computed in floating point at epsilon = 1e-160",
                                   "variance is not a positive finite number"]),
    (["--set", "epsilon=1e300"], ["cannot be computed in floating point at epsilon = 1e+300"]),
    (["--set", "tau=1e-300"], ["cannot be computed in floating point", "tau = 1e-300"]),
    (["--set", "B=1e12"], ["this needs about", "TiB per replication", "B = 1000000000000"]),
    (["--set", "beta=0.001", "--n", "1e12"], ["this needs about", "per replication", "beta = 0.001"]),
    (["--reps", "1e12"], ["for the results", "reps = 1000000000000"]),
    # keys a setting does not read are still checked; null values are named
    (["--set", "model=linear", "--set", "tau=5"], ["tau = 5.0 is outside (0, 1)"]),
    (["--set", "model=linear", "--set", "clip=-1"], ["clip = -1.0 is outside (0, inf]"]),
    (["--set", "model=mean", "--set", "delta=5"], ["delta = 5.0 is outside (0, 1)"]),
    (["--set", "methods="], ["methods = null has no value; give a list of: BB, BBjoint, BM, SN, oracle"]),
    (["--set", "tau="], ["tau = null has no value; give a number in (0, 1)"]),
    (["--set", "methods=[BB, null]"], ["methods contains null; allowed: BB"]),
])
def test_bad_values_are_refused_before_any_work(earlier, capsys, monkeypatch, args, fragments):
    out, config, before = earlier
    monkeypatch.setattr("ldpsim.engine.runs.run.simulate", lambda *a, **k: pytest.fail("the simulation started"))
    status, _, err = cli(capsys, "run", config, "--out", out, "--quiet", "--n-jobs", "1", *args)
    one_line_error(status, err, *fragments)
    assert snapshot(out) == before


@pytest.mark.parametrize("command,args,fragments", [
    ("check", ["--set", "epsilon=1e-160"], ["cannot be computed in floating point at epsilon = 1e-160"]),
    ("check", ["--set", "B=1"], ["B = 1 is outside [50, inf)"]),
    ("trace", ["--n", "1e19"], ["n = 10000000000000000000 is outside [2, 2^53]"]),
    ("trace", ["--set", "checkpoints=1e9"], ["checkpoints = 1000000000 is outside [2, 10000]"]),
    ("trace", ["--set", "checkpoints=10000", "--set", "beta=0.01", "--n", "1e9"], ["this needs about"]),
    ("trace", ["--set", "epsilon=1e300"], ["cannot be computed in floating point"]),
])
def test_check_and_trace_refuse_them_too(earlier, capsys, command, args, fragments):
    out, config, before = earlier
    config.write_text(TINY.replace("reps: 3\n", ""))
    extra = ["--out", out] if command == "trace" else []
    status, _, err = cli(capsys, command, config, *extra, *args)
    one_line_error(status, err, *fragments)
    assert snapshot(out) == before


@pytest.mark.parametrize("args,fragment", [
    (["--set", "tau=0.5", "--set", "tau=0.9"], "tau is set twice in --set (0.5 and 0.9); give it once"),
    (["--n", "5000", "--set", "n=6000"], "n is given twice: --n and --set n=...; give it once"),
    (["--set", "batch_size=1e30"], "makes n x batch_size = 4e+33 observations, more than 2^53"),
    (["--set", "tau=[" + ",".join(str(0.01 + i / 1e4) for i in range(500)) + "]",
      "--set", "gamma=[" + ",".join(str(0.6 + i / 1e4) for i in range(201)) + "]"],
     "the grid has 100500 settings (500 tau x 201 gamma); at most 100000 in one run"),
    (["--set", "level=0.99999"], "level = 0.99999 is outside [0.05, 0.9999] (SN critical values)"),
    (["--set", "methods={BB: 1}"], "methods = {'BB': 1} is a mapping; give a list of: BB"),
    (["--n-jobs", "100000"], "n_jobs = 100000 is more than 8 workers per core"),
    (["--set", "study="], "study = null is not one of: coverage, trajectory"),
    (["--set", "n_jobs=1"], "--set n_jobs=...: n_jobs is not a config key; run takes it as --n-jobs"),
    (["--set", "out=elsewhere"], "--set out=...: out is not a config key; run takes it as --out"),
])
def test_bad_overrides_grids_and_run_options_are_refused_in_one_line(earlier, capsys, monkeypatch, args, fragment):
    out, config, before = earlier
    monkeypatch.setattr("ldpsim.engine.runs.run.simulate", lambda *a, **k: pytest.fail("the simulation started"))
    status, _, err = cli(capsys, "run", config, "--out", out, "--quiet", "--n-jobs", "1", *args)
    one_line_error(status, err, fragment)
    assert snapshot(out) == before


def test_a_huge_reps_is_printed_short(tmp_path, capsys):
    status, _, err = checked_cli(capsys, "run", write(tmp_path, SMALL), "--reps", "1e300", "--out", tmp_path / "o")
    line = one_line_error_after_warnings(status, err, "reps = 1e+300 replications", "EiB")
    assert len(line) < 300


@pytest.mark.parametrize("level,draws", [(0.9, 50), (0.95, 50), (0.99, 200), (0.999, 2000), (0.9999, 20000)])
def test_fewest_bootstrap_draws(level, draws):
    # B (1 - level) / 2 >= 1: the level's quantiles of the draws are not their extremes (B >= 2 / (1 - level))
    assert min_bootstrap_draws(level) == draws


# --- config files that are not configs ----------------------------------------------------------------------


@pytest.mark.parametrize("text,fragment", [
    (b"tau: 0.5\nmodel: \"\xff\xfe\"\n", "is not UTF-8 text (byte 0xff at line 2)"),
    (b"tau: 0.5\ntau: 0.9\n", "is not valid YAML: key 'tau' is given twice at line 2"),
    (b"tau: " + b"[" * 3000 + b"]" * 3000 + b"\n", "is not valid YAML: nested too deeply"),
    (b"seed: 1" + b"0" * 5000 + b"\n", "is not valid YAML: an integer with more than 4300 digits"),
    (b"- 1\n- 2\n", "must hold a mapping of keys to values"),
    (b"x" * (2 << 20), "is larger than 1 MiB: not a config"),
])
def test_config_files_that_are_not_configs(tmp_path, capsys, text, fragment):
    path = tmp_path / "bad.yaml"
    path.write_bytes(text)
    status, _, err = cli(capsys, "run", path, "--out", tmp_path / "o")
    one_line_error(status, err, f"config file '{path}' ", fragment)
    assert not (tmp_path / "o").exists()


def test_a_config_path_that_is_not_a_file(tmp_path, capsys):
    status, _, err = cli(capsys, "run", tmp_path)
    one_line_error(status, err, f"config file '{tmp_path}' is a directory")
    status, _, err = cli(capsys, "check", "/dev/zero")
    one_line_error(status, err, "config file '/dev/zero' is not a regular file")


def test_a_config_with_a_byte_order_mark_and_from_a_pipe(tmp_path, capsys):
    (tmp_path / "bom.yaml").write_bytes(b"\xef\xbb\xbf" + TINY.encode())
    status, out, _ = cli(capsys, "check", tmp_path / "bom.yaml")
    assert status == 0
    read, write = os.pipe()
    os.write(write, TINY.encode())
    os.close(write)
    try:
        status, out, _ = cli(capsys, "check", f"/dev/fd/{read}")
    finally:
        os.close(read)
    assert status == 0


@pytest.mark.parametrize("text", ["", "# nothing but a comment\n", "\n\n"])
def test_an_empty_config_file_is_refused_not_run_with_every_default(text, tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=r"^config file '.*c\.yaml' holds no keys \(it is empty or all comments\): "
                                          r"give at least the model"):
        ldpsim.load_config(path)


def test_a_yaml_alias_bomb_is_refused_before_it_is_walked(tmp_path, capsys):
    # 1 kB of aliases of aliases stands for 10^9 values: check hung (killed after 90 s)
    lines = ["model: quantile", "a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    (tmp_path / "c.yaml").write_text("\n".join(lines) + "\n")
    start = time.monotonic()
    assert main(["check", str(tmp_path / "c.yaml")]) == 2
    assert time.monotonic() - start < 30  # (not a speed assertion: the walk never ended)
    assert re.search(r"c\.yaml' expands to more than 100000 values \(YAML aliases", one_error_line(capsys))
    from ldpsim.engine.runs.config import parse_assignment

    with pytest.raises(ConfigError, match=r"^--set epsilon=\.\.\. expands to more than"):  # 201 uses of 1000
        parse_assignment("epsilon=" + "[" + ", ".join(["&b [" + ", ".join(["1"] * 1000) + "]"] + ["*b"] * 200) + "]")


def test_a_set_of_values_is_refused_for_its_lost_order():
    # methods={'BB', 'SN'} read "methods contains {'BB', 'SN'}"; a set's order is the hash order
    with pytest.raises(ConfigError, match=r"^methods = \{.*\} is a set, which keeps no order: give a list$"):
        ldpsim.load_config({"model": "quantile", "methods": {"BB", "SN"}})


# --- a key that no setting reads is refused -----------------------------------------------------------------


@pytest.mark.parametrize("mapping, message", [
    # epsilon beside mechanism gdp (budget mu) ran at mu's default 1 and printed mu = 1.0 in the table
    ({"model": "huber_mallows", "dim": 2, "mechanism": "gdp", "epsilon": 0.5},
     r"^epsilon = 0\.5 is read by no setting of this run \(model = 'huber_mallows', mechanism = 'gdp'; its budget is "
     r"mu = 1\.0\): remove it"),
    ({"model": "huber_mallows", "dim": 2, "mechanism": "laplace", "mu": 1},
     r"^mu = 1 is read by no setting of this run \(model = 'huber_mallows', mechanism = 'laplace'; its budget is "
     r"epsilon = 1\.0\)"),
    ({"model": "quantile", "mechanism": "rr", "delta": 1e-5},  # a pure mechanism
     r"^delta = 1e-05 is read by no setting of this run \(model = 'quantile', mechanism = 'rr'\)"),
    ({"model": "linear", "tau": 0.9}, r"^tau = 0\.9 is read by no setting of this run \(model = 'linear'"),
])
def test_a_key_given_but_read_by_no_setting_is_refused(mapping, message):
    with pytest.raises(ConfigError, match=message):
        ldpsim.load_config({**mapping, "n": 1000, "reps": 2, "methods": ["SN"]})


@pytest.mark.slow  # runs a grid over several models (42 s of kernels, cold): CI's slow tier
def test_keys_read_by_some_settings_of_a_grid_and_infinite_budgets_are_accepted():
    # a grid over models blanks tau for linear: that is what a grid means
    ldpsim.load_config({"model": ["quantile", "linear"], "tau": 0.9, "n": 1000, "reps": 2, "methods": ["SN"]})
    # epsilon = inf is how any budget key says "non-private", mu's mechanisms included
    ldpsim.load_config({"model": "huber_mallows", "dim": 2, "epsilon": float("inf"), "n": 1000, "reps": 2,
                        "methods": ["SN"]})
    # the committed configs and examples all load
    for path in sorted((ROOT / "configs").glob("*.yaml")) + sorted((ROOT / "examples").glob("*.yaml")):
        if path.name.startswith("trace"):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConfigWarning)
            ldpsim.load_config(path)


def test_the_zoo_configs_refuse_an_epsilon_their_gdp_mechanism_would_ignore(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)  # zoo_huber --set epsilon=0.5 ran with the file's mu grid, silently
    assert main(["check", "configs/zoo_huber.yaml", "--set", "epsilon=0.5"]) == 2
    assert "epsilon = 0.5 is read by no setting of this run" in one_error_line(capsys)


# --- the dpsgd and sagd studies' bad or extreme values ------------------------------------------------------


REFUSED = [
    # the known failures: OverflowError (70), segfault (139), OOM (1) before
    ("sagd_concentration", {"sigma": 1e-9}, ["sigma = 1e-09 is too small for the privacy accounting",
                                             "allowed here: sigma >= "]),
    ("sagd_generalization", {"sigma": 1e-9}, ["sigma = 1e-09 is too small", "allowed here: sigma >= "]),
    ("sagd_generalization", {"d": 1000, "n": 1e9}, ["this needs about", "n x (d + 1) = 1000000000 x 1001"]),
    ("sagd_rate", {"T_factor": 1e300}, ["T_factor = 1e+300 gives T", "must be at most 2^53"]),
    ("dpsgd", {"n": 1e10, "kappa": 2}, ["kappa = 2.0 gives T = floor(n^kappa) = 1e+20", "T m must lie in [2, 2^53]"]),
    ("dpsgd", {"n": 1e10, "kappa": 1}, ["this needs about", "the sample of n = 10000000000 points"]),
    ("sagd_rate", {"n": 1e12, "T_factor": 1}, ["this needs about", "n x (d + 1) = 1000000000000 x 6"]),
    ("sagd_concentration", {"n": 1e12, "T": 1}, ["this needs about", "n x (d + 1) = 1000000000000 x 6"]),
    # every other key at its extremes
    ("dpsgd", {"B": 1e12, "methods": ["BB"]}, ["this needs about", "(B = 1000000000000"]),
    ("dpsgd", {"mu": 1e-300}, ["mu = 1e-300 is outside [1e-100, 1e100] or inf"]),
    ("dpsgd", {"mu_var": 1e300}, ["mu_var = 1e+300 is outside [1e-100, 1e100] or inf"]),
    ("dpsgd", {"clip": 1e300}, ["clip = 1e+300", "beyond the largest float"]),
    ("dpsgd", {"mu": "nan"}, ["mu = 'nan' is not a number"]),
    ("dpsgd", {"batch_size": 1e30}, ["batch_size = 1e+30 is outside [1, n] = [1, 100]"]),
    ("dpsgd", {"kappa": 1e-300}, ["kappa = 1e-300 gives T = floor(n^kappa) = 1 steps"]),
    ("dpsgd", {"methods": ["BB"], "beta": 0.999999}, ["T = 1000 is too small for two bootstrap blocks",
                                                      "beta = 0.999999"]),
    ("dpsgd", {"theta0": math.inf}, ["theta0 = inf is outside the finite reals"]),
    ("sagd_concentration", {"sigma": 1e100, "T": "theorem"}, ["T = 'theorem' gives T = ceil(2 n sigma^2 / G1^2)",
                                                               "must be at most 2^53"]),
    ("sagd_concentration", {"sigma": 1e101}, ["sigma = 1e+101 is outside (0, 1e100]"]),
    ("sagd_concentration", {"T": 1e15}, ["T = 1000000000000000 gives T = 1e+15 steps"]),
    ("sagd_concentration", {"T": 0}, ["T = 0 is not an integer in [1, 2^53] or one of: theorem"]),
    ("sagd_concentration", {"radius": 1e100}, ["sigma = 0.5 is too small for the privacy accounting",
                                               "G1 = 2e+100"]),
    ("sagd_concentration", {"radius": 1e101}, ["radius = 1e+101 is outside [1e-100, 1e100]"]),
    ("sagd_concentration", {"batch_size": 1e30}, ["batch_size = 1e+30 is outside [1, n] = [1, 200]"]),
    ("sagd_concentration", {"mu": [1, math.inf]}, ["mu contains inf, outside (0, inf)"]),
    ("sagd_concentration", {"delta": 1e-320}, ["delta = 1e-320 is outside [1e-300, 1)"]),
    ("sagd_concentration", {"d": 1000, "nodes": 512}, ["nodes = 512 is too many for d = 1000",
                                                       "allowed here: nodes <= "]),
    ("sagd_generalization", {"sigma": 1e-100}, ["sigma = 1e-100 is too small for the privacy accounting"]),
    ("sagd_generalization", {"checkpoints": 1e9}, ["checkpoints = 1000000000 is outside [1, 100000]"]),
    ("sagd_rate", {"fit_decades": 1e300}, ["fit_decades = 1e+300 is outside (0, 16] or inf"]),
    ("sagd_rate", {"n": [200, 1e20]}, ["n = 1e+20 is outside [4, 2^53]"]),
    ("sagd_rate", {"reps": 1e15}, ["this needs about", "reps = 1000000000000000"]),
]


@pytest.mark.parametrize("study,change,fragments", REFUSED,
                         ids=[f"{s}-{'-'.join(f'{k}={v}' for k, v in c.items())}" for s, c, _ in REFUSED])
def test_a_bad_or_extreme_input_is_one_line_before_any_work(tmp_path, capsys, study, change, fragments):
    mapping = {**TINY_STUDIES[study], **change}
    out = tmp_path / "o"
    status, _, err = checked_cli(capsys, "run", write(tmp_path, mapping), "--out", out, "--quiet", "--n-jobs", "1")
    line = one_line_error(status, err, *fragments)
    assert not (out / "summary.csv").exists() and not list(out.glob("chunks/*.npz"))  # no work was done
    with pytest.raises(ldpsim.ConfigError) as info:  # the API says the same
        api_run(mapping)
    assert line.endswith(str(info.value))


def test_run_arguments_given_as_config_keys_are_one_line(tmp_path, capsys):
    config = write(tmp_path, TINY_STUDIES["dpsgd"])
    status, _, err = checked_cli(capsys, "run", config, "--set", "n_jobs=1", "--quiet", "--out", tmp_path / "o")
    one_line_error(status, err, "--set n_jobs=...: n_jobs is not a config key; run takes it as --n-jobs")
    status, _, err = checked_cli(capsys, "run", config, "--set", "log=x", "--quiet", "--out", tmp_path / "o")
    one_line_error(status, err, "--set log=...: log is not a config key")


def test_yaml_merge_keys_work_as_in_pyyaml(tmp_path):
    # `<<: *x` was "not valid YAML" (the unique-key check constructed the merge key; issue 44, section 5)
    path = tmp_path / "merged.yaml"
    path.write_text("<<: &tiny {model: quantile, tau: 0.5, n: 4000, reps: 3}\n"
                    "<<: [*tiny, {B: 50}]\n"
                    "tau: 0.7\n")  # a key given beside the merge wins
    config = ldpsim.load_config(str(path))
    s = config.settings[0]
    assert (s.model, s.tau, s.n, config.reps, s.B) == ("quantile", 0.7, 4000, 3, 50)
    path.write_text("<<: {model: quantile}\ntau: 0.5\ntau: 0.7\n")
    with pytest.raises(ConfigError, match=r"is not valid YAML: key 'tau' is given twice at line 3"):
        ldpsim.load_config(str(path))
