"""The Python API and the study interface the engine runs every study through."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ldpsim
from ldpsim.engine.runs import chunks as store
from ldpsim.engine.errors import ConfigError
from ldpsim.studies import STUDIES, resolve

from run_helpers import api_run

TINY = {"model": "quantile", "tau": [0.5, 0.9], "n": 20_000, "reps": 6, "seed": 3, "B": 100}

#: A small config per study for the interface tests (keys differ between studies).
SMALL = {
    "coverage": {"model": "quantile_regression", "n": 1500},
    "trajectory": {"model": "quantile_regression", "n": 1500},
    "dpsgd": {"model": "logistic", "n": 40, "kappa": 1.6, "B": 50, "sampling": "poisson", "batch_size": 2,
              "methods": ["plugin", "plugin_raw", "RS", "RS_raw", "RS_paper", "oracle", "BB", "BM", "DPGD"],
              "T2_max": 2},
    "sagd_concentration": {"n": 200, "sigma": 1.0, "T": 30, "nodes": 6},
    "sagd_rate": {"n": 300, "T_factor": 3000, "nodes": 6, "oracle": "sparse"},
    "sagd_generalization": {"n": 60, "d": 6, "epochs": 15, "checkpoints": 3, "nodes": 6},
}
#: Configs with a short path per study, for the chunk-format test.
SHORT = {
    "coverage": {"model": "quantile", "n": 5000},
    "trajectory": {"model": "quantile", "n": 5000},
    "dpsgd": {"model": "linear", "n": 60, "kappa": 1.5},
}
SHORT.update({name: SMALL[name] for name in ("sagd_concentration", "sagd_rate", "sagd_generalization")})


def test_api_from_a_dict_gives_the_cli_summary(tmp_path):
    config = tmp_path / "tiny.yaml"
    config.write_text("model: quantile\ntau: [0.5, 0.9]\nn: 2e4\nreps: 6\nseed: 3\nB: 100\n")
    cli = tmp_path / "cli"
    subprocess.run([sys.executable, "-m", "ldpsim", "run", str(config), "--out", str(cli), "--quiet",
                    "--n-jobs", "1"], check=True, capture_output=True)
    result = ldpsim.run(dict(TINY), n_jobs=1, progress=False)
    assert result.out is None and not (tmp_path / "results").exists()  # a dict run stays in memory
    saved = tmp_path / "api"
    result.save(saved)
    assert (saved / "summary.csv").read_bytes() == (cli / "summary.csv").read_bytes()
    assert (saved / "table.md").read_text().split("\n", 1)[1] == (cli / "table.md").read_text().split("\n", 1)[1]
    assert result.rows == ldpsim.open_result(cli).rows
    assert result.config.reps == 6 and len(result.config.settings) == 2
    assert result.render().splitlines()[0].startswith("# run: model = quantile")


def test_api_overrides_win_and_files_go_to_results(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "q.yaml").write_text("model: quantile\nn: 1e4\nreps: 50\nB: 100\n")
    result = ldpsim.run("q.yaml", reps=3, tau=[0.5, 0.8], n_jobs=1, progress=False)
    assert result.out.resolve() == tmp_path / "results" / "q"
    assert {r["tau"] for r in result.rows} == {0.5, 0.8} and result.rows[0]["reps"] == 3
    meta = json.loads((result.out / "meta.json").read_text())
    assert meta["config"]["reps"] == 3 and meta["study"] == "coverage"
    assert "summary.csv" in meta["outputs"]
    again = ldpsim.open_result(result.out)
    assert again.rows == result.rows and again.render() == result.render()


def test_api_errors_are_config_errors():
    with pytest.raises(ldpsim.ConfigError, match=r"^unknown key 'tua' in overrides \(did you mean 'tau'\?\)"):
        ldpsim.run(None, tua=0.5)
    with pytest.raises(ldpsim.ConfigError, match=r"^unknown key 'tua' in config"):
        ldpsim.run({"tua": 0.5})
    with pytest.raises(ldpsim.ConfigError, match=r"^study = 'coverag' is not one of: coverage, trajectory"):
        ldpsim.load_config({"study": "coverag"})
    with pytest.raises(ValueError, match="give a directory"):
        ldpsim.Result(None, {"summary": []}, {"config": {}}).save()


def test_to_pandas_when_pandas_is_there():
    pd = pytest.importorskip("pandas")
    result = ldpsim.run({**TINY, "tau": 0.5, "reps": 2}, n_jobs=1, progress=False)
    frame = result.to_pandas()
    assert isinstance(frame, pd.DataFrame) and list(frame["method"]) == ["BB", "BM", "SN", "oracle"]


def test_to_pandas_without_pandas_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    result = ldpsim.Result(None, {"summary": [{"method": "BB"}]}, {"config": {}})
    with pytest.raises(ldpsim.MissingExtra, match="to_pandas needs pandas"):
        result.to_pandas()


@pytest.mark.parametrize("name", sorted(STUDIES))
def test_every_study_runs_its_kernel_and_its_twin_to_the_same_numbers(name):
    # the interface's promise: what a replication computes exists twice, jitted and in plain Python
    study = STUDIES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ldpsim.ConfigWarning)  # small configs sit outside theorems
        config = resolve({"study": name, **SMALL[name], "reps": 2, "seed": 4})
    setting = config.settings[0]
    kernel = study.run_chunk(setting, config.options, config.seed, 0, 2)
    twin = study.run_chunk(setting, config.options, config.seed, 0, 2, twin=True)
    assert set(kernel) == set(twin) and "ok" in kernel and kernel["ok"].all()
    for key in kernel:
        np.testing.assert_array_equal(kernel[key], twin[key], err_msg=key)


@pytest.mark.parametrize("name", sorted(STUDIES))
@pytest.mark.filterwarnings("ignore::ldpsim.engine.errors.ConfigWarning")
def test_chunks_of_an_older_format_are_recomputed_not_read(name, tmp_path, monkeypatch):
    mapping = {"study": name, **SHORT[name], "reps": 4, "seed": 2}
    monkeypatch.setattr(store, "CHUNK_FORMAT", 1)  # as an earlier version of ldpsim wrote them
    old = ldpsim.run(mapping, out=tmp_path, n_jobs=1, progress=False)
    old_files = {p: p.stat().st_mtime_ns for p in (tmp_path / "chunks").glob("*.npz")}
    monkeypatch.undo()
    new = ldpsim.run(mapping, out=tmp_path, n_jobs=1, progress=False, resume=True)
    files = set((tmp_path / "chunks").glob("*.npz"))
    assert len(files) == 2 * len(old_files)  # none of the old ones was taken for this run's
    assert all(p.stat().st_mtime_ns == t for p, t in old_files.items())
    assert new.rows == old.rows  # same numbers: only the file format differs


# --- the options of ldpsim.run and of a result --------------------------------------------------------------


@pytest.mark.parametrize("kwargs,fragment", [
    ({"out": ""}, "out = '' is empty"),
    ({"out": 5}, "out = 5 is not a path"),
    ({"out": "a\0b"}, "contains a NUL byte"),
    ({"n_jobs": "2"}, "n_jobs = '2' is not an integer"),
    ({"n_jobs": 10 ** 6}, "n_jobs = 1000000 is more than 8 workers per core"),
    ({"resume": "yes"}, "resume = 'yes' is not True or False"),
    ({"resume": True, "out": None}, "resume = True needs out"),
])
def test_api_run_options_are_checked(tmp_path, kwargs, fragment):
    with pytest.raises(ldpsim.ConfigError) as info:
        ldpsim.run({"model": "quantile", "n": 4000, "reps": 2, "B": 50}, progress=False, **kwargs)
    assert fragment in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ldpsim.ConfigError, match="config = 5 is not a YAML file, a dict of config keys or a Config"):
        ldpsim.run(5)


@pytest.mark.parametrize("lanes", [1.5, "8", True, float("nan"), 0, 65])
def test_the_apis_refusal_of_lanes_names_the_accepted_values_once(lanes):
    with pytest.raises(ConfigError) as info:
        ldpsim.run({"model": "quantile", "n": 1000, "reps": 2}, out=None, lanes=lanes, progress=False)
    text = str(info.value)
    assert "\n" not in text and text.count("allowed: 1 to 64, or none (the fastest measured)") == 1, text


def test_numpy_integers_and_floats_are_taken_by_the_api():
    result = api_run({"model": "mean", "n": np.int64(2000), "reps": np.int32(3), "c": np.float32(0.5),
                      "gamma": np.array([0.6, 0.7]), "seed": np.uint64(9)}, n_jobs=np.int64(1),
                      progress=np.bool_(False))
    values = result.config.values
    assert (values["n"], values["reps"], values["c"], values["gamma"], values["seed"]) == (2000, 3, 0.5,
                                                                                           [0.6, 0.7], 9)
    json.dumps(result.meta)  # plain Python numbers, also n_jobs
    same = api_run({"model": "mean", "n": 2000, "reps": 3, "c": 0.5, "gamma": [0.6, 0.7], "seed": 9})
    assert result.rows == same.rows
    with pytest.raises(ldpsim.ConfigError, match=r"n = 2000\.5 is not an integer"):
        api_run({"model": "mean", "n": np.float32(2000.5)})


@pytest.mark.parametrize("flag", ["resume", "force", "progress"])
def test_numpy_bools_are_flags(tmp_path, flag):
    kw = {"resume": {"out": tmp_path}, "force": {"out": tmp_path}, "progress": {}}[flag]
    api_run({"model": "mean", "n": 2000, "reps": 2}, **{**kw, flag: np.bool_(flag != "progress")})


def test_a_two_dimensional_array_of_n_is_one_line():
    with pytest.raises(ldpsim.ConfigError, match=r"n = \[2000, 3000\] is not an integer"):
        api_run({"model": "mean", "n": np.array([[2000, 3000]])})


def test_a_log_that_cannot_be_called_is_refused():
    with pytest.raises(ldpsim.ConfigError, match="log = 'no' is not a function"):
        api_run({"model": "mean", "n": 2000, "reps": 2}, log="no")


def test_saving_an_in_memory_result_needs_a_directory():
    result = api_run({"model": "mean", "n": 2000, "reps": 2})
    with pytest.raises(ldpsim.ConfigError, match="give a directory to save into"):
        result.save()
    with pytest.raises(ldpsim.ConfigError, match="give a directory to draw into"):
        result.figures()


def test_run_without_a_config_is_refused_in_one_line():
    # ldpsim.run(None) ran the defaults, hours of work (issue 44, section 5)
    with pytest.raises(ldpsim.ConfigError, match=r"^config = None: give a config to run \(a YAML file, a dict") as info:
        ldpsim.run(None)
    assert "\n" not in str(info.value)
    with pytest.raises(ldpsim.ConfigError, match=r"^config = None"):
        ldpsim.run()
    assert ldpsim.load_config(None).settings  # validating the defaults is still fine
