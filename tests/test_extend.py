"""The extension API (ldpsim.extend): users' models and mechanisms in files of their own.

What a user relies on: a model file runs in every study with the numbers of
the kernels (twin = kernel, any lanes, workers, backends, without numba);
its keys validate and make grids; its truth is estimated (within its stated
Monte Carlo error of the closed forms where they are known) or checked; every
mistake in it is one line (a compile error a few); numba's cache never runs
stale code for it and survives its deletion (subprocess tests, each with a
cache folder of its own).
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import ldpsim
from ldpsim.api import load_config
from ldpsim.cli import main
from ldpsim.engine.runs import usercode
from ldpsim.engine.errors import ConfigError
from ldpsim.models import MODELS, build_model, canonical_model, model_class
from ldpsim.models.truth import Z_CHECK, raw_sums, truth_of

from run_helpers import one_error_line

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
MY_QUANTILE = (EXAMPLES / "my_quantile.py").read_text()
QUICK = dict(n=4000, reps=8, methods=["BB", "BM", "SN", "oracle"])


def write(tmp_path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def variant(tmp_path, name: str, old: str, new: str) -> Path:
    """examples/my_quantile.py with one piece of code replaced."""
    assert old in MY_QUANTILE
    return write(tmp_path, name, MY_QUANTILE.replace(old, new))


# --- the example my_quantile.py runs unchanged, with the built-in's numbers ---------------------------------

def test_the_example_is_the_builtin_quantile_on_common_random_numbers():
    spec = f"{EXAMPLES / 'my_quantile.py'}:MyQuantile"
    cfg = dict(QUICK, tau=[0.5, 0.9], epsilon=1.0)
    user = ldpsim.run(dict(cfg, model=spec, streams="quantile"), progress=False).rows
    builtin = ldpsim.run(dict(cfg, model="quantile"), progress=False).rows
    for a, b in zip(user, builtin):
        if a["method"] != "oracle":  # the oracle's Sigma is estimated for the example
            assert a == b
        else:
            assert a["length"] == pytest.approx(b["length"], rel=0.02)
    assert len(user) == len(builtin) == 8


def test_the_examples_own_streams_are_not_the_builtins():
    spec = f"{EXAMPLES / 'my_quantile.py'}:MyQuantile"
    user = load_config(dict(QUICK, model=spec)).settings[0]
    builtin = load_config(dict(QUICK, model="quantile")).settings[0]
    assert user.seed_key != builtin.seed_key
    moved = load_config(dict(QUICK, model=spec, streams="quantile")).settings[0]
    assert moved.seed_key == builtin.seed_key


def test_a_model_file_in_a_config_is_found_from_the_configs_folder(tmp_path):
    relative = os.path.relpath(EXAMPLES / "my_quantile.py", tmp_path)  # from the config's folder, not the cwd
    config = write(tmp_path, "c.yaml", f"model: {relative}:MyQuantile\nn: 4000\nreps: 8\n")
    s = load_config(str(config)).settings[0]
    assert s.model.startswith(str((EXAMPLES / "my_quantile.py").resolve()) + ":MyQuantile#")


def test_the_api_takes_the_class_itself():
    module = usercode.load_file(EXAMPLES / "my_quantile.py")
    by_class = load_config(dict(QUICK, model=module.MyQuantile)).settings[0]
    by_text = load_config(dict(QUICK, model=f"{EXAMPLES / 'my_quantile.py'}:MyQuantile")).settings[0]
    assert by_class == by_text


@pytest.mark.slow  # kernels compiled for new records: CI's slow tier
def test_a_model_of_an_importable_module(tmp_path, monkeypatch):
    write(tmp_path, "userpkg_quantile.py", MY_QUANTILE)
    monkeypatch.syspath_prepend(str(tmp_path))
    s = load_config(dict(QUICK, model="userpkg_quantile:MyQuantile")).settings[0]
    assert s.model.startswith("userpkg_quantile:MyQuantile#")
    assert build_model(s).theta_star()[0] == 0.0


def test_a_model_a_package_re_exports_is_hashed_where_it_is_defined(tmp_path, monkeypatch):
    # the setting's hash is the defining module's (canonical); resolve compared the package's own file with it and
    # refused every re-exported class as "differs from the one the run was started with" (issue 44)
    from ldpsim.extend import Model

    (tmp_path / "userpkg_reexport").mkdir()
    write(tmp_path / "userpkg_reexport", "inner.py", MY_QUANTILE)
    write(tmp_path / "userpkg_reexport", "__init__.py", "from .inner import MyQuantile\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    s = load_config(dict(QUICK, model="userpkg_reexport:MyQuantile")).settings[0]
    assert s.model.startswith("userpkg_reexport:MyQuantile#")
    assert usercode.resolve(s.model, Model).__module__ == "userpkg_reexport.inner"


@pytest.mark.parametrize("key, value", [("model", "ldpsim.extend:Model"), ("mechanism", "ldpsim.extend:Mechanism")])
def test_naming_the_extension_base_class_itself_is_one_line(key, value):
    with pytest.raises(ConfigError, match=rf"^{key} = '{value}': \w+ is ldpsim.extend's base class itself, which "
                       r"computes nothing; give a subclass of it that you wrote"):
        load_config(dict(QUICK, **{key: value}))


# --- keys -------------------------------------------------------------------------------------------

def test_keys_of_a_user_model_validate_make_grids_and_take_the_models_defaults():
    spec = f"{EXAMPLES / 'clipped_mean.py'}:ClippedMean"
    config = load_config(dict(QUICK, model=spec, rate=[0.5, 2.0]))
    assert [s.rate for s in config.settings] == [0.5, 2.0] and config.varied == ("rate",)
    assert {s.clip for s in config.settings} == {3.0}  # the model's default, not the built-in clip's 1.0
    with pytest.raises(ConfigError, match=r"^rate = -1.0 is outside \(0, inf\)$"):
        load_config(dict(QUICK, model=spec, rate=-1))
    with pytest.raises(ConfigError, match=r"^rate = 'x' is not a number$"):
        load_config(dict(QUICK, model=spec, rate="x"))
    with pytest.raises(ConfigError, match=r"unknown key 'rat'.*did you mean 'rate'"):
        load_config(dict(QUICK, model=spec, rat=1.0))
    # a grid over a built-in and a user's model: each setting holds only its own model's keys
    mixed = load_config(dict(QUICK, model=["quantile", spec]))
    assert [(s.tau, s.rate) for s in mixed.settings] == [(0.5, None), (None, 1.0)]


def test_the_keys_command_lists_a_user_models_keys(capsys):
    from ldpsim.cli import main

    assert main(["keys", str(EXAMPLES / "clipped_mean.py") + ":ClippedMean"]) == 0
    out = capsys.readouterr().out
    assert "| rate  |         1 | a number in (0, inf) | rate of the exponential law of X" in out
    assert "clip" in out and "(a user's file)" not in out and "a user's file" in out


def test_check_shows_a_user_models_file_keys_truth_and_declared_privacy(capsys, tmp_path):
    from ldpsim.cli import main

    config = write(tmp_path, "c.yaml", f"model: {EXAMPLES / 'my_quantile.py'}:MyQuantile\ntau: 0.9\nn: 1e6\n")
    assert main(["check", str(config)]) == 0
    out = capsys.readouterr().out
    assert "[info] model: " in out and "tau = 0.9" in out and "oracle estimated (G and S by Monte Carlo" in out
    assert "[info] privacy: epsilon = 1 LDP, declared by model 'my_quantile', not verified" in out


# --- the truth -------------------------------------------------------------------------------------

def _within(truth_value, se, exact, what):
    value, exact = np.asarray(truth_value), np.asarray(exact)
    se = np.maximum(np.asarray(se), 1e-9 * np.maximum(np.abs(value), np.abs(exact)))  # exact differences: SE 0
    z = np.abs(value - exact) / se
    assert (z <= Z_CHECK).all(), f"{what}: {truth_value} vs {exact}, {z} SE"


@pytest.mark.parametrize("tau", [0.5, 0.9])
def test_the_estimated_truth_of_the_example_is_the_quantiles_closed_form(tau):
    cls = model_class(canonical_model("model", f"{EXAMPLES / 'my_quantile.py'}:MyQuantile"))
    assert cls.estimated == ("G", "S")
    truth = truth_of(cls(epsilon=1.0, tau=tau))
    exact = MODELS["quantile"](tau=tau, epsilon=1.0)
    _within(truth.G, truth.G_se, exact.hessian(), "G")
    _within(truth.S, truth.S_se, exact.gradient_covariance(), "S")
    _within(truth.sigma, truth.sigma_se, exact.sigma(), "Sigma")
    _within(truth.mean, truth.mean_se, 0.0, "mean gradient")
    assert truth.sigma_se[0, 0] / truth.sigma[0, 0] < 0.01  # the oracle's length to half of that


def test_the_estimated_truth_of_the_clipped_mean_is_its_closed_form():
    cls = model_class(canonical_model("model", f"{EXAMPLES / 'clipped_mean.py'}:ClippedMean"))
    for rate, clip, epsilon in [(1.0, 3.0, 1.0), (0.5, 2.0, 4.0)]:
        truth = truth_of(cls(epsilon=epsilon, rate=rate, clip=clip))
        e = math.exp(-rate * clip)
        mean = (1 - e) / rate
        second = 2 / rate ** 2 * (1 - e * (1 + rate * clip))
        _within(truth.G, truth.G_se, [[1.0]], "G")  # the gradient is linear in theta: G_se is 0 up to rounding
        _within(truth.S, truth.S_se, [[second - mean ** 2 + 2 * (clip / epsilon) ** 2]], "S")


def test_the_estimated_truth_of_a_vector_model_is_its_quadrature():
    # label-LDP logistic regression: G = E[s(1 - s) x x'], S = E[(s(1 - s) + v) x x'] with v the variance
    # randomized response adds to the debiased label; x = (1, z1, z2), z uniform: Gauss-Legendre in (z1, z2)
    cls = model_class(canonical_model("model", f"{EXAMPLES / 'label_logistic.py'}:LabelLogistic"))
    epsilon = 1.0
    truth = truth_of(cls(epsilon=epsilon))
    nodes, weights = np.polynomial.legendre.leggauss(48)
    z1, z2 = np.meshgrid(nodes, nodes, indexing="ij")
    w = np.outer(weights, weights) / 4.0
    x = np.stack([np.ones_like(z1), z1, z2])
    s = 1.0 / (1.0 + np.exp(-(0.5 * x[0] + x[1] - x[2])))
    v = math.exp(epsilon) / math.expm1(epsilon) ** 2
    G = np.einsum("ab,iab,jab->ij", w * s * (1 - s), x, x)
    S = np.einsum("ab,iab,jab->ij", w * (s * (1 - s) + v), x, x)
    _within(truth.G, truth.G_se, G, "G")
    _within(truth.S, truth.S_se, S, "S")
    _within(truth.mean, truth.mean_se, np.zeros(3), "mean gradient")


def test_the_estimator_twin_is_the_kernel():
    for spec in ("my_quantile.py:MyQuantile", "clipped_mean.py:ClippedMean", "label_logistic.py:LabelLogistic"):
        model = build_model(load_config(dict(QUICK, model=f"{EXAMPLES}/{spec}")).settings[0])
        record, theta = model.kernel_params(), model.theta_star()
        kernel = raw_sums(record, theta, 512)
        twin = raw_sums(record, theta, 512, twin=True)
        for a, b in zip(kernel[:4], twin[:4]):
            np.testing.assert_array_equal(a, b)


def declared(tmp_path, name: str, g_factor: float = 1.0, shift: float = 0.0) -> Path:
    """The example with hessian() (times ``g_factor``), gradient_covariance() and theta* (plus ``shift``)."""
    path = variant(tmp_path, name, "    def theta_star(self):", textwrap.indent(textwrap.dedent(f"""\
        def hessian(self):
            return np.array([[{g_factor} * stats.norm.pdf(stats.norm.ppf(self.tau))]])
        def gradient_covariance(self):
            return np.array([[self.tau * (1 - self.tau) + math.exp(self.epsilon) / math.expm1(self.epsilon) ** 2]])
        def theta_star(self):"""), "    "))
    path.write_text(path.read_text().replace("stats.norm.ppf(self.tau)])", f"stats.norm.ppf(self.tau) + {shift}])"))
    return path


def test_declared_truth_that_disagrees_is_refused_with_the_numbers(tmp_path):
    wrong = declared(tmp_path, "wrong.py", g_factor=2.0)
    with pytest.raises(ConfigError, match=r"^model = '.*wrong.py:MyQuantile': G \(hessian\(\)\) is 0.7979 as declared "
                                          r"but 0.39\d+ \+- .* measured \(.* SE apart; .*\): fix the model, or set "
                                          r"truth_check: false to run it anyway$"):
        load_config(dict(QUICK, model=f"{wrong}:MyQuantile"))
    result = ldpsim.run(dict(QUICK, model=f"{wrong}:MyQuantile", truth_check=False), progress=False)
    assert "NOT checked (truth_check: false)" in result.meta["truth"][0]["check"]


def test_declared_truth_that_is_right_passes_and_an_off_theta_star_is_refused(tmp_path):
    right = declared(tmp_path, "right.py")
    model = build_model(load_config(dict(QUICK, model=f"{right}:MyQuantile")).settings[0])
    assert model.estimated_parts() == () and model.sigma()[0, 0] == pytest.approx(7.35555913, rel=1e-8)
    off = declared(tmp_path, "off.py", shift=0.05)
    with pytest.raises(ConfigError, match=r"the mean privatized gradient at theta\* is 0 as declared but 0.0\d+"):
        load_config(dict(QUICK, model=f"{off}:MyQuantile"))


def test_meta_and_the_table_state_the_estimated_oracle_and_its_error(tmp_path):
    result = ldpsim.run(dict(QUICK, model=f"{EXAMPLES / 'my_quantile.py'}:MyQuantile"), out=tmp_path / "r",
                        progress=False)
    meta = json.loads((tmp_path / "r" / "meta.json").read_text())
    (truth,) = meta["truth"]
    assert truth["estimated"] == ["G", "S"] and truth["samples"] > 10 ** 6
    assert truth["sigma_se"][0][0] > 0 and truth["G_se"][0][0] > 0
    assert "oracle estimated: for model " in (tmp_path / "r" / "table.md").read_text()
    assert "relative standard error of" in result.render()


# --- identity: lanes, workers, backends, no numba ------------------------------------------------------

@pytest.mark.slow  # subprocesses, workers or kernels compiled for new records: CI's slow tier
def test_a_vector_user_model_gives_the_same_numbers_at_any_lanes_and_its_twins():
    from ldpsim.studies import STUDIES

    cfg = dict(QUICK, model=f"{EXAMPLES / 'label_logistic.py'}:LabelLogistic", epsilon=2.0, reps=5, n=2000)
    base = ldpsim.run(cfg, progress=False, n_jobs=1, lanes=1).rows
    assert ldpsim.run(cfg, progress=False, n_jobs=1, lanes=4).rows == base
    config = load_config(cfg)
    s, study = config.settings[0], STUDIES["coverage"]
    kernel = study.run_chunk(s, config.options, config.seed, 0, 3, lanes=4)
    twin = study.run_chunk(s, config.options, config.seed, 0, 3, twin=True)
    for name in kernel:
        np.testing.assert_array_equal(kernel[name], twin[name])
    assert build_model(s).guarantee.endswith("(randomized response on y; the covariates are public); declared, "
                                             "not verified")


@pytest.mark.slow  # subprocesses, workers or kernels compiled for new records: CI's slow tier
def test_a_user_model_gives_the_same_numbers_at_any_lanes_and_workers():
    cfg = dict(QUICK, model=f"{EXAMPLES / 'clipped_mean.py'}:ClippedMean", rate=[0.5, 2.0], reps=20)
    base = ldpsim.run(cfg, progress=False, n_jobs=1, lanes=1).rows
    for kw in (dict(lanes=3), dict(n_jobs=2, lanes=8), dict(n_jobs=2, backend="threading", lanes=8)):
        assert ldpsim.run(cfg, progress=False, **kw).rows == base, kw


def test_the_twin_of_a_user_model_is_the_kernel():
    from ldpsim.studies import STUDIES

    config = load_config(dict(QUICK, model=f"{EXAMPLES / 'my_quantile.py'}:MyQuantile", reps=3))
    s, study = config.settings[0], STUDIES["coverage"]
    kernel = study.run_chunk(s, config.options, config.seed, 0, 3, lanes=1)
    twin = study.run_chunk(s, config.options, config.seed, 0, 3, twin=True)
    for name in kernel:
        np.testing.assert_array_equal(kernel[name], twin[name])


def _run_script(code: str, env_extra: dict, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, **env_extra}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.slow  # subprocesses, workers or kernels compiled for new records: CI's slow tier
def test_without_numba_a_user_model_runs_as_plain_python_with_the_same_numbers(tmp_path):
    spec = f"{EXAMPLES / 'my_quantile.py'}:MyQuantile"
    code = textwrap.dedent(f"""
        import json, sys, ldpsim
        rows = ldpsim.run(dict(model={spec!r}, n=2000, reps=4, methods=["BB", "BM", "SN", "oracle"]),
                          progress=False, n_jobs=1).rows
        print(json.dumps(rows))
    """)
    cache = {"LDPSIM_CACHE": str(tmp_path / "cache")}  # the truth, estimated once by the kernel, is shared
    jitted = _run_script(code, cache, tmp_path)
    plain = _run_script(code, {**cache, "NUMBA_DISABLE_JIT": "1"}, tmp_path)
    assert jitted.returncode == 0 and plain.returncode == 0, jitted.stderr + plain.stderr
    assert json.loads(jitted.stdout) == json.loads(plain.stdout)


# --- numba's cache --------------------------------------------------------------------------------

_SUMS = textwrap.dedent("""
    import json, sys, ldpsim
    from ldpsim.models import build_model
    from ldpsim.api import load_config
    from ldpsim.models.truth import raw_sums
    out = []
    for spec in sys.argv[1:]:
        if spec == "builtin":
            spec = "quantile"
        model = build_model(load_config(dict(model=spec, n=1000, reps=2, methods=["BM"], truth_check=False)
                                        if spec != "quantile" else dict(model=spec, n=1000, reps=2)).settings[0])
        sums = raw_sums(model.kernel_params(), model.theta_star(), 256 * 4, twin="twin" in sys.argv[0])
        out.append(sums[0].sum())
    print(json.dumps(out))
""")


def _sums(tmp_path, specs, cache, twin=False, extra_env=None):
    script = tmp_path / ("twin_sums.py" if twin else "sums.py")
    script.write_text(_SUMS)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "LDPSIM_CACHE": "off", **(extra_env or {})}
    done = subprocess.run([sys.executable, str(script), *specs], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.mark.slow  # two runs in subprocesses, each compiling the user's kernel: 8-10 s of the fast tier
def test_editing_a_constant_of_a_user_file_changes_the_next_runs_numbers(tmp_path):
    cache = tmp_path / "numba"
    path = write(tmp_path, "edited.py", MY_QUANTILE)
    first = _sums(tmp_path, [f"{path}:MyQuantile"], cache)
    path.write_text(MY_QUANTILE.replace("return normal(gen)", "return normal(gen) + 0.3"))
    second = _sums(tmp_path, [f"{path}:MyQuantile"], cache)
    assert second != first
    assert second == _sums(tmp_path, [f"{path}:MyQuantile"], cache, twin=True)  # the edited code's own numbers


@pytest.mark.slow
def test_editing_an_importable_model_module_changes_the_next_runs_numbers(tmp_path):
    # a module imported by name keeps its name when edited: numba's key must hold its source hash
    cache = tmp_path / "numba"
    write(tmp_path, "edited_module.py", MY_QUANTILE)
    env = {"PYTHONPATH": str(tmp_path)}
    first = _sums(tmp_path, ["edited_module:MyQuantile"], cache, extra_env=env)
    (tmp_path / "edited_module.py").write_text(MY_QUANTILE.replace("return normal(gen)", "return normal(gen) + 0.3"))
    second = _sums(tmp_path, ["edited_module:MyQuantile"], cache, extra_env=env)
    assert second != first
    assert second == _sums(tmp_path, ["edited_module:MyQuantile"], cache, twin=True, extra_env=env)


@pytest.mark.slow  # kernels compiled for new records: CI's slow tier
def test_an_edited_file_run_again_in_the_same_process_runs_its_new_code(tmp_path):
    # numba's dispatcher tells NamedTuple records apart by class name: the edited file's record must get its own
    path = write(tmp_path, "again.py", MY_QUANTILE)
    first = model_class(canonical_model("model", f"{path}:MyQuantile"))(epsilon=1.0)
    path.write_text(MY_QUANTILE.replace("return normal(gen)", "return normal(gen) + 0.3"))
    second = model_class(canonical_model("model", f"{path}:MyQuantile"))(epsilon=1.0)
    sums = [raw_sums(m.kernel_params(), m.theta_star(), 1024)[0].sum() for m in (first, second)]
    assert sums[0] != sums[1]
    assert sums[1] == raw_sums(second.kernel_params(), second.theta_star(), 1024, twin=True)[0].sum()
    assert type(first.kernel_params()).__name__ != type(second.kernel_params()).__name__
    assert type(first.kernel_params()).__qualname__ == "MyQuantileRR"


@pytest.mark.slow  # subprocesses, workers or kernels compiled for new records: CI's slow tier
def test_two_files_with_records_of_one_name_do_not_collide(tmp_path):
    cache = tmp_path / "numba"
    a = write(tmp_path, "a.py", MY_QUANTILE)
    (tmp_path / "b").mkdir()
    b = write(tmp_path / "b", "a.py", MY_QUANTILE.replace("return normal(gen)", "return normal(gen) - 0.2"))
    both = _sums(tmp_path, [f"{a}:MyQuantile", f"{b}:MyQuantile"], cache)
    assert both[0] != both[1]
    assert both == _sums(tmp_path, [f"{a}:MyQuantile", f"{b}:MyQuantile"], cache, twin=True)
    assert _sums(tmp_path, [f"{b}:MyQuantile"], cache) == both[1:]  # from the cache, in another process


@pytest.mark.slow  # subprocesses, workers or kernels compiled for new records: CI's slow tier
def test_deleting_user_files_never_breaks_later_runs(tmp_path):
    cache = tmp_path / "numba"
    gone = write(tmp_path, "gone.py", MY_QUANTILE.replace("return normal(gen)", "return normal(gen) + 0.1"))
    write(tmp_path, "gone_module.py", MY_QUANTILE)
    other = write(tmp_path, "other.py", MY_QUANTILE.replace("return normal(gen)", "return normal(gen) - 0.4"))
    env = {"PYTHONPATH": str(tmp_path)}
    before = _sums(tmp_path, [f"{gone}:MyQuantile", "gone_module:MyQuantile", "builtin"], cache, extra_env=env)
    gone.unlink()
    (tmp_path / "gone_module.py").unlink()
    after = _sums(tmp_path, ["builtin", f"{other}:MyQuantile"], cache, extra_env=env)
    assert after[0] == before[2]
    assert after[1:] == _sums(tmp_path, [f"{other}:MyQuantile"], cache, twin=True)


# --- what a run records --------------------------------------------------------------------------------

@pytest.mark.slow  # kernels compiled for new records: CI's slow tier
def test_a_run_records_and_copies_each_user_file_and_an_edited_file_is_another_run(tmp_path):
    path = write(tmp_path, "m.py", MY_QUANTILE)
    cfg = dict(QUICK, model=f"{path}:MyQuantile", methods=["BM"])
    out = tmp_path / "run"
    first = ldpsim.run(cfg, out=out, progress=False)
    meta = json.loads((out / "meta.json").read_text())
    (entry,) = meta["user_files"]
    assert entry["path"] == str(path.resolve()) and entry["copy"] == "user_files/m.py"
    assert entry["sha256"] == usercode.file_digest(path.resolve())
    assert (out / "user_files" / "m.py").read_text() == MY_QUANTILE
    path.write_text(MY_QUANTILE.replace("return normal(gen)", "return 2.0 * normal(gen)"))  # the same median
    # another run: neither resumed into nor replaced without force, the first run's files left as they were
    with pytest.raises(ConfigError, match="a user's file was edited since"):
        ldpsim.run(dict(cfg, model=f"{path}:MyQuantile"), out=out, resume=True, progress=False)
    assert (out / "user_files" / "m.py").read_text() == MY_QUANTILE
    second = ldpsim.run(dict(cfg, model=f"{path}:MyQuantile"), out=out, force=True, progress=False)
    assert second.rows != first.rows
    assert (out / "user_files" / "m.py").read_text() == path.read_text()


def test_a_worker_with_another_copy_of_the_file_refuses():
    spec = canonical_model("model", f"{EXAMPLES / 'my_quantile.py'}:MyQuantile")
    other = spec[:-16] + "0" * 16
    with pytest.raises(ConfigError, match=r"differs from the one the run was started with .*: copy the same file"):
        model_class(other)


# --- a user's mechanism -------------------------------------------------------------------------------

def test_a_user_mechanism_runs_in_the_builtin_models_and_declares_its_guarantee():
    spec = f"{EXAMPLES / 'staircase.py'}:Staircase"
    config = load_config(dict(QUICK, model="mean", mechanism=spec, epsilon=2.0))
    model = build_model(config.settings[0])
    assert model.guarantee == "epsilon = 2 LDP (staircase; declared, not verified)"
    assert model.estimated_parts() == ()
    with pytest.raises(ConfigError, match=r"^mechanism = '.*staircase.py:Staircase' is not available for model "
                                          r"'quantile'; a user's mechanism runs with .*mean"):
        load_config(dict(QUICK, model="quantile", mechanism=spec))


def test_the_staircase_variance_is_the_estimated_one(tmp_path):
    # the same mechanism without its variance: S estimated, against the closed form the example gives
    text = (EXAMPLES / "staircase.py").read_text()
    path = write(tmp_path, "stair_novar.py", text.replace("    @property\n    def variance(self):",
                                                         "    @property\n    def exact_variance(self):"))
    for epsilon in (1.0, 4.0):
        model = build_model(load_config(dict(QUICK, model="mean", mechanism=f"{path}:Staircase",
                                             epsilon=epsilon)).settings[0])
        assert model.estimated_parts() == ("S",)
        truth = truth_of(model)
        exact = 1 / 12 + model.mechanism.exact_variance
        _within(truth.S, truth.S_se, [[exact]], f"S at epsilon {epsilon}")


def test_the_audit_of_a_user_mechanism(tmp_path, capsys):
    from ldpsim.cli import main

    assert main(["audit", f"{EXAMPLES / 'staircase.py'}:Staircase", "--epsilon", "2", "--draws", "2e5"]) == 0
    assert "verdict: not refuted" in capsys.readouterr().out
    leaky = write(tmp_path, "leaky.py", """
        from typing import NamedTuple
        from ldpsim.extend import Mechanism, laplace, register_noise, sensitivity

        class LeakyNoise(NamedTuple):
            scale: float

        @register_noise(LeakyNoise)
        def draw(noise, gen):
            return laplace(gen, noise.scale)

        class Leaky(Mechanism):
            variance = None
            def kernel_params(self):
                return LeakyNoise(sensitivity(self.bounds, "l1") / (3 * self.epsilon))  # the scale of 3 epsilon
    """)
    assert main(["audit", f"{leaky}:Leaky", "--epsilon", "1", "--draws", "2e5"]) == 1
    assert "verdict: REFUTED" in capsys.readouterr().out


# --- errors ---------------------------------------------------------------------------------------

BAD = {
    "missing file": ("nowhere.py:MyQuantile", r"file '.*nowhere.py' not found$"),
    "missing class": ("{good}:Nope", r"my_quantile.py has no class 'Nope'; it defines MyQuantile$"),
    "not a model": ("{good}:MyQuantileRR", r"MyQuantileRR is a class, not a subclass of ldpsim.extend.Model$"),
    "not a spec": ("quantil", r"is not one of: .*\(did you mean 'quantile'\?\)"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_model_names_are_one_line(case):
    text, pattern = BAD[case]
    with pytest.raises(ConfigError, match=pattern) as info:
        load_config(dict(QUICK, model=text.format(good=EXAMPLES / "my_quantile.py")))
    assert "\n" not in str(info.value)


CODE_ERRORS = {
    "syntax": ("    def theta_star(self):", "    def theta_star(self)", r"line \d+: SyntaxError: expected ':'"),
    "import": ("import math\n", "import math\nraise ValueError('boom')\n", r"failed to load: ValueError: boom \("),
    "init": ("self.tau, self.epsilon = float(tau), float(epsilon)", "self.tau = 1 / 0",
             r"MyQuantile\(epsilon=1.0, tau=0.5\) failed: ZeroDivisionError: division by zero \(bad.py, line"),
    "no theta_star": ("    def theta_star(self):", "    def theta_star_(self):", r"does not define theta_star\(\)$"),
    "dim": ("    dim = 1", "    dim = 2", r"dim = 2 but theta_star\(\) has 1 coordinate\(s\)$"),
    "record": ("return MyQuantileRR(1.0 - self.p,", "return (1.0 - self.p,",
               r"kernel_params\(\) returned a tuple, not a NamedTuple record"),
    "bool gradient": ("return where(randomized_response(obs <= theta, gen, params.flip_prob), params.high, params.low)",
                      "return randomized_response(obs <= theta, gen, params.flip_prob)",
                      r"the gradient returned a bool \(.*\); a float is expected"),
    "tuple gradient": ("return where(randomized_response(obs <= theta, gen, params.flip_prob), params.high, params.low)",
                       "return (params.high, params.low)", r"the gradient returned a tuple"),
    "unregistered": ("@register_scalar(MyQuantileRR)", "", r"no gradient is registered for MyQuantileRR records"),
    "vector for dim 1": ("@register_scalar(MyQuantileRR)\ndef gradient(params, obs, theta, gen):",
                         "from ldpsim.extend import register_vector\n\n@register_vector(MyQuantileRR)\n"
                         "def gradient(params, obs, theta, gen, out):",
                         r"dim = 1, so the gradient is a number: register it with @register_scalar"),
    "gradient raises": ("return where(randomized_response", "return params.nothing + where(randomized_response",
                        r"failed in plain Python: AttributeError: .*nothing.* \(bad.py, line 19\)"),
    "a study's key": ("def __init__(self, epsilon, tau=0.5):", "def __init__(self, epsilon, tau=0.5, c=1.0):",
                      r"its parameter 'c' has the name of the config key c \(step size .*\); rename the parameter$"),
    "no epsilon": ("def __init__(self, epsilon, tau=0.5):\n        self.tau, self.epsilon = float(tau), float(epsilon)",
                   "def __init__(self, tau=0.5, **kw):\n        self.tau, self.epsilon = float(tau), 1.0",
                   r"__init__ takes \*\*kw; name each key"),
}


def test_a_vector_gradient_that_writes_beyond_dim_is_one_line(tmp_path):
    text = (EXAMPLES / "label_logistic.py").read_text()
    path = write(tmp_path, "beyond.py", text.replace("        out[j] += residual * x[j]",
                                                     "        out[j + 1] += residual * x[j]"))
    with pytest.raises(ConfigError, match=r"its observation or gradient failed in plain Python: IndexError: .*"
                                          r"\(beyond.py, line \d+\)$"):
        load_config(dict(QUICK, model=f"{path}:LabelLogistic"))


@pytest.mark.parametrize("case", list(CODE_ERRORS))
def test_mistakes_in_a_model_file_are_one_line(tmp_path, case):
    old, new, pattern = CODE_ERRORS[case]
    path = variant(tmp_path, "bad.py", old, new)
    with pytest.raises(ConfigError, match=pattern) as info:
        load_config(dict(QUICK, model=f"{path}:MyQuantile"))
    assert "\n" not in str(info.value)


def test_code_numba_cannot_compile_is_a_few_lines_naming_the_place(tmp_path):
    from ldpsim.cli import main

    path = variant(tmp_path, "bad.py", "@register_scalar(MyQuantileRR)",
                   "def helper(x):\n    return x * 1.0\n\n@register_scalar(MyQuantileRR)")
    path.write_text(path.read_text().replace("params.high, params.low)", "helper(params.high), params.low)"))
    config = write(tmp_path, "c.yaml", f"model: bad.py:MyQuantile\nn: 4000\nreps: 8\n")
    err = _cli_error(main, ["run", str(config), "--out", str(tmp_path / "o"), "--quiet"])
    assert 4 <= len(err) <= 15
    assert f"{path}, line 22 does not compile into the kernels (numba TypingError)" in err[0]
    assert any("Untyped global name 'helper'" in ln for ln in err)
    assert any("@kernel_function" in ln for ln in err) and "NUMBA_DISABLE_JIT=1" in err[-1]
    # the hint's fix: the helper compiled with the gradient
    path.write_text(path.read_text().replace("def helper(x):", "from ldpsim.extend import kernel_function\n\n\n"
                                                               "@kernel_function\ndef helper(x):"))
    assert main(["run", str(config), "--out", str(tmp_path / "o2"), "--quiet"]) == 0


def test_a_branch_on_a_comparison_compiles_at_one_lane_and_fails_at_several_with_a_hint(tmp_path):
    from ldpsim.cli import main

    path = variant(tmp_path, "iflanes.py",
                   "    return where(randomized_response(obs <= theta, gen, params.flip_prob), params.high, params.low)",
                   "    if randomized_response(obs <= theta, gen, params.flip_prob):\n        return params.high\n"
                   "    return params.low")
    config = write(tmp_path, "c.yaml", f"model: iflanes.py:MyQuantile\nn: 4000\nreps: 8\nmethods: [BM]\n")
    err = _cli_error(main, ["run", str(config), "--out", str(tmp_path / "o"), "--lanes", "2", "--quiet"])
    assert "iflanes.py, line 19 does not compile into the kernels" in err[0]
    assert any("where(cond, a, b), not if" in ln for ln in err) and len(err) <= 15
    assert not (tmp_path / "o").exists()  # nothing left behind
    assert main(["run", str(config), "--out", str(tmp_path / "o1"), "--lanes", "1", "--quiet"]) == 0


def _cli_error(main, argv) -> list[str]:
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stderr(buffer):
        status = main(argv)
    assert status == 2, buffer.getvalue()
    # (a long compilation or truth estimate is said first, "ldpsim: compiling ...": not part of the error)
    lines = [ln for ln in buffer.getvalue().strip().splitlines()
             if not ln.startswith(("ldpsim: compiling ", "ldpsim: still compiling ", "ldpsim: compiled ",
                                   "ldpsim: estimating ", "ldpsim: still estimating "))]
    assert lines[0].startswith("ldpsim: error: ")
    return [lines[0][len("ldpsim: error: "):]] + lines[1:]


@pytest.mark.slow  # kernels compiled for new records: CI's slow tier
def test_a_diverging_user_model_counts_its_failed_replications(tmp_path):
    path = declared(tmp_path, "diverge.py")
    old = "    return where(randomized_response(obs <= theta, gen, params.flip_prob), params.high, params.low)"
    path.write_text(path.read_text().replace(old, "    return where(obs > 2.5, math.inf, where(randomized_response("
                                                  "obs <= theta, gen, params.flip_prob), params.high, params.low))"))
    result = ldpsim.run(dict(QUICK, model=f"{path}:MyQuantile", truth_check=False, methods=["BM"]), progress=False)
    assert result.meta["n_failed"] == 8 and result.rows[0]["n_failed"] == 8


def test_models_of_examples_are_documented_and_tested():
    names = sorted(p.name for p in EXAMPLES.glob("*.py"))
    assert names == ["clipped_mean.py", "label_logistic.py", "my_batch_means.py", "my_duchi.py", "my_quantile.py",
                     "staircase.py", "t_batch_means.py"]
    docs = (ROOT / "docs" / "extending.md").read_text()
    assert all(name in docs for name in names)


@pytest.mark.slow  # subprocesses, workers or kernels compiled for new records: CI's slow tier
def test_dask_workers_load_the_user_file_by_path_and_give_lokys_bytes(tmp_path):
    pytest.importorskip("distributed")
    from ldpsim.cli import main

    config = write(tmp_path, "c.yaml", f"model: {EXAMPLES / 'my_quantile.py'}:MyQuantile\ntau: [0.5, 0.9]\n"
                                       "n: 2000\nreps: 6\nB: 100\n")
    loky, dask = tmp_path / "loky", tmp_path / "dask"
    assert main(["run", str(config), "--out", str(loky), "--quiet", "--n-jobs", "2"]) == 0
    assert main(["run", str(config), "--out", str(dask), "--quiet", "--n-jobs", "2", "--backend", "dask"]) == 0
    assert (dask / "summary.csv").read_bytes() == (loky / "summary.csv").read_bytes()


@pytest.mark.slow  # kernels compiled for new records: CI's slow tier
def test_a_user_model_runs_in_the_trajectory_study():
    spec = f"{EXAMPLES / 'clipped_mean.py'}:ClippedMean"
    result = ldpsim.run(dict(study="trajectory", model=spec, epsilon=[1, 4], n=4000, reps=8), progress=False)
    assert {row["epsilon"] for row in result.rows} == {1.0, 4.0}
    assert all(np.isfinite(float(row["slope"])) for row in result.tables["rates"] if row["metric"] == "parameter")


@pytest.mark.slow  # the trace kernel compiles for the user's record (about 20 s)
def test_a_user_model_runs_in_trace(tmp_path):
    from ldpsim.cli import main

    config = write(tmp_path, "t.yaml", f"model: {EXAMPLES / 'my_quantile.py'}:MyQuantile\ntau: 0.9\nn: 1e4\n")
    assert main(["trace", str(config), "--out", str(tmp_path / "t")]) == 0
    meta = json.loads((tmp_path / "t" / "meta.json").read_text())
    assert meta["config"]["tau"] == 0.9


@pytest.mark.slow  # the method zoo's kernel compiles for the user's records (about a minute)
@pytest.mark.parametrize("spec", ["clipped_mean.py:ClippedMean", "label_logistic.py:LabelLogistic"])
def test_every_zoo_method_runs_a_user_model_as_its_twin(spec):
    from test_zoo_study import _check_kernel_twin

    cls = model_class(canonical_model("model", f"{EXAMPLES / spec}"))
    _check_kernel_twin(cls(epsilon=2.0), cls(epsilon=2.0 / 5), 8, 3)


def test_finding_the_user_files_runs_no_other_modules_getattr_hook(monkeypatch):
    # it walked every module with getattr: mpmath's rational module warns on any attribute, and under the tests'
    # warnings-as-errors a compile error of a user's file became an internal error (exit 70) after mpmath was imported
    import types
    import warnings

    def hook(name):
        warnings.warn("a lazy module's attribute", DeprecationWarning)
        raise AttributeError(name)

    lazy = types.ModuleType("lazy_for_test")
    lazy.__getattr__ = hook
    monkeypatch.setitem(sys.modules, "lazy_for_test", lazy)
    module = usercode.load_file(EXAMPLES / "my_quantile.py")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        files = usercode._user_files()
    assert files[os.path.realpath(module.__ldpsim_path__)].endswith("my_quantile.py")


# --- the masked draws and lnot of ldpsim.extend, in a user's model -----------------------------------------------

MIXTURE = '''
import math
from typing import NamedTuple

import numpy as np

from ldpsim.extend import (Model, exponential_where, laplace, lnot, observe, register_scalar, uniform,
                           uniform_where)


class MixtureParams(NamedTuple):
    p: float
    clip: float
    scale: float


@observe.register(MixtureParams)
def draw(params, gen):
    # X ~ Exp(1) with probability p, U[0, 1) otherwise: each lane draws only the law it took
    heavy = uniform(gen) < params.p
    x = exponential_where(gen, heavy, 0.0)
    x = uniform_where(gen, lnot(heavy), x)
    return min(x, params.clip)


@register_scalar(MixtureParams)
def gradient(params, obs, theta, gen):
    return theta - obs + laplace(gen, params.scale)


class Mixture(Model):
    name = "mixture"
    dim = 1

    def __init__(self, epsilon, p=0.3, clip=3.0):
        self.epsilon, self.p, self.clip = float(epsilon), float(p), float(clip)

    def kernel_params(self, lanes=1):
        return MixtureParams(self.p, self.clip, 0.0 if math.isinf(self.epsilon) else self.clip / self.epsilon)

    def theta_star(self):
        return np.array([self.p * -math.expm1(-self.clip) + (1.0 - self.p) * 0.5])

    def hessian(self):
        return np.eye(1)

    def gradient_covariance(self):
        c, p = self.clip, self.p
        second = p * (2.0 - math.exp(-c) * (2.0 * c + 2.0)) + (1.0 - p) / 3.0
        scale = 0.0 if math.isinf(self.epsilon) else c / self.epsilon
        return np.array([[second - self.theta_star()[0] ** 2 + 2.0 * scale * scale]])
'''


def test_the_masked_draws_and_lnot_give_the_twins_numbers_at_every_width(tmp_path):
    # uniform_where, exponential_where and lnot are in ldpsim.extend's contract: a model using them runs at one
    # lane and several with the twin's numbers, and its declared truth is the law's (checked before the run)
    from ldpsim.studies import STUDIES

    path = write(tmp_path, "mixture.py", MIXTURE)
    config = load_config(dict(QUICK, model=f"{path}:Mixture", epsilon=2.0, reps=5, n=3000))
    s, study = config.settings[0], STUDIES["coverage"]
    twin = study.run_chunk(s, config.options, config.seed, 0, 5, twin=True)
    for lanes in (1, 8):
        kernel = study.run_chunk(s, config.options, config.seed, 0, 5, lanes=lanes)
        for name in kernel:
            np.testing.assert_array_equal(kernel[name], twin[name], err_msg=f"{name} at {lanes} lanes")
    theta = twin["theta_bar"][:, 0]
    assert np.all(np.abs(theta - build_model(s).theta_star()[0]) < 0.5)  # (a sanity bound: 5 short paths)


# --- a user's file that breaks the contract is refused in one line ------------------------------------------


_CLIPPED_MEAN = (ROOT / "examples" / "clipped_mean.py").read_text()


_STAIRCASE = (ROOT / "examples" / "staircase.py").read_text()


def _edited(tmp_path, text: str, cls: str, *changes) -> str:
    """``text`` with each ``(old, new)`` of ``changes`` made (each old present), written out; its spec."""
    for old, new in changes:
        assert old in text, old
        text = text.replace(old, new, 1)
    path = tmp_path / f"{cls.lower()}.py"
    path.write_text(text)
    return f"{path}:{cls}"


def test_a_users_model_drawing_outside_its_generator_is_refused(tmp_path):
    # np.random.* inside the draw ran, and two runs with one seed gave different tables
    spec = _edited(tmp_path, _CLIPPED_MEAN, "ClippedMean", ("return min(exponential(gen) / params.rate, params.clip)",
                                                            "return np.random.exponential() / params.rate"))
    with pytest.raises(ConfigError, match=r"its draws are not a function of the generator it is given: two runs "
                                          r"from one seed drew different values \(np\.random\.\*"):
        ldpsim.load_config({"model": spec, "n": 1000, "reps": 2, "methods": ["SN"]})


@pytest.mark.parametrize("change, message", [
    (("    u = uniform(gen)", "    u = np.random.random()"),
     r"its noise is not a function of the generator it is given"),
    (("    return sign * noise.width", "    return 1e308 * 10 * sign * noise.width"),
     r"its noise drew inf in plain Python \(64 of 64 draws\): a noise must be finite"),
])
def test_a_users_mechanism_drawing_outside_its_generator_or_infinities_is_refused(change, message, tmp_path, capsys):
    # both passed: the audit said "not refuted" (with numpy's RuntimeWarning for the infinities), the run ran
    spec = _edited(tmp_path, _STAIRCASE, "Staircase", change, ("import math\n", "import math\nimport numpy as np\n"))
    assert main(["audit", spec, "--draws", "1000"]) == 2
    assert re.search(message, one_error_line(capsys))
    # in a run, the same line (it read "model 'mean' cannot be computed in floating point ... ConfigError: ...")
    with pytest.raises(ConfigError, match=rf"^mechanism = '.*staircase\.py:Staircase': {message}"):
        ldpsim.load_config({"model": "mean", "mechanism": spec, "n": 1000, "reps": 2, "methods": ["SN"]})


def test_a_users_mechanism_refused_by_its_own_checks_is_not_called_a_floating_point_problem(tmp_path):
    spec = _edited(tmp_path, _STAIRCASE, "Staircase", (
        "        return self.width ** 2 * (self.p_low * low + (1.0 - self.p_low) * high)", "        return -1.0"))
    with pytest.raises(ConfigError, match=r"^mechanism = '.*staircase\.py:Staircase': variance = -1\.0 is not a "
                                          r"finite number >= 0 \(or None\)$"):
        ldpsim.load_config({"model": "mean", "mechanism": spec, "n": 1000, "reps": 2, "methods": ["SN"]})


def test_a_users_integer_default_is_named_when_a_fraction_is_refused(tmp_path):
    # rate=1 (Python style for a float) made rate an integer key: "rate = 0.5 is not an integer", nothing more
    spec = _edited(tmp_path, _CLIPPED_MEAN, "ClippedMean", ("def __init__(self, epsilon, rate=1.0, clip=3.0):",
                                                            "def __init__(self, epsilon, rate=1, clip=3.0):"))
    with pytest.raises(ConfigError, match=r"^rate = 0\.5 is not an integer \(ClippedMean\.__init__ gives rate the "
                                          r"integer default 1, which makes it an integer key: write 1\.0 there"):
        ldpsim.load_config({"model": spec, "rate": 0.5, "n": 1000, "reps": 2, "methods": ["SN"]})


def test_a_users_description_of_no_parameter_is_refused_as_its_range_is(tmp_path):
    # a misspelt key in descriptions was dropped silently (the same typo in ranges was refused)
    spec = _edited(tmp_path, _CLIPPED_MEAN, "ClippedMean", ('"rate": "rate of the exponential law of X"',
                                                            '"rat": "rate of the exponential law"'))
    with pytest.raises(ConfigError, match=r"descriptions names 'rat', which is not a parameter of "
                                          r"ClippedMean\.__init__ \(rate, clip\)$"):
        ldpsim.load_config({"model": spec, "n": 1000, "reps": 2, "methods": ["SN"]})


@pytest.mark.parametrize("argv, message", [
    # the example's variance divides by 1 - e^-epsilon: an internal error (ZeroDivisionError) at 1e-300
    (["--epsilon", "1e-300"], r"Staircase': its variance failed at epsilon = 1e-300: ZeroDivisionError"),
    (["--seed", "-1"], r"--seed = -1 is outside \[0, inf\)$"),  # was an internal error from SeedSequence
    (["--delta", "1e-5"], r"takes no delta \(its __init__ has none\), so the audit would test the pure epsilon "
                          r"claim it declares: drop --delta$"),  # was dropped silently
    (["--draws", "1e13"], r"--draws = 1e\+13 is more than 1e\+11 per input"),  # ran for days
])
def test_hostile_audit_flags_are_refused_in_one_line(argv, message, capsys):
    draws = [] if "--draws" in argv else ["--draws", "1000"]
    assert main(["audit", str(ROOT / "examples" / "staircase.py") + ":Staircase", *draws, *argv]) == 2
    assert re.search(message, one_error_line(capsys))


def test_a_run_from_its_own_copy_of_a_users_file_writes_into_its_own_directory(tmp_path):
    # `model: user_files/m.py` with --out the run's directory: "cannot copy ... PosixPath(...) and PosixPath(...)
    # are the same file", after the chunks directory was made
    (tmp_path / "user_files").mkdir()
    (tmp_path / "user_files" / "m.py").write_text(_CLIPPED_MEAN)
    (tmp_path / "c.yaml").write_text("model: user_files/m.py:ClippedMean\nepsilon: 1\nn: 200\nreps: 2\n"
                                     "methods: [SN]\n")
    result = ldpsim.run(tmp_path / "c.yaml", out=tmp_path, progress=False, n_jobs=1)
    assert (tmp_path / "user_files" / "m.py").read_text() == _CLIPPED_MEAN
    assert result.meta["user_files"][0]["copy"] == "user_files/m.py"
