"""Cluster backends: a real dask cluster on loopback gives loky's bytes; bad backends fail in one line."""

from __future__ import annotations

import json
import sys

import pytest

from ldpsim.engine.runs import backends
from ldpsim.engine.runs.backends import BackendError
from ldpsim.cli import main
from ldpsim.engine.runs.driver import _chunk_task
from ldpsim.engine.runs.chunks import code_identity

from run_helpers import TINY, cli, one_line_error

SMALL_YAML = """\
model: quantile
tau: [0.5, 0.9]
n: 2000
reps: 6
seed: 3
B: 100
"""


@pytest.fixture
def small_yaml(tmp_path):
    path = tmp_path / "small.yaml"
    path.write_text(SMALL_YAML)
    return path


@pytest.fixture
def loky_summary(small_yaml, tmp_path):
    out = tmp_path / "loky"
    assert main(["run", str(small_yaml), "--out", str(out), "--quiet", "--n-jobs", "2"]) == 0
    return (out / "summary.csv").read_bytes()


def test_dask_scheduler_gives_loky_bytes_and_resumes(small_yaml, tmp_path, monkeypatch, loky_summary):
    distributed = pytest.importorskip("distributed")
    monkeypatch.setattr("ldpsim.engine.runs.chunks.MAX_CHUNK_REPS", 2)  # three chunks (tasks) per setting
    out = tmp_path / "dask"
    run = ["run", str(small_yaml), "--out", str(out), "--quiet", "--backend", "dask"]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tcp://127.0.0.1:")
        assert main([*run, "--scheduler", address]) == 0
        assert (out / "summary.csv").read_bytes() == loky_summary
        meta = json.loads((out / "meta.json").read_text())
        assert meta["backend"] == "dask" and meta["scheduler"] == address

        # chunks came back to this process and were saved here; lose half, resume on the cluster
        chunks = sorted((out / "chunks").glob("*.npz"))
        assert len(chunks) == 6
        for path in chunks[::2]:
            path.unlink()
        kept = {p: p.stat().st_mtime_ns for p in chunks[1::2]}
        (out / "summary.csv").unlink()
        assert main([*run, "--scheduler", address, "--resume"]) == 0
    assert (out / "summary.csv").read_bytes() == loky_summary
    assert sorted((out / "chunks").glob("*.npz")) == chunks
    assert all(p.stat().st_mtime_ns == t for p, t in kept.items())  # reused, not recomputed


def test_dask_alone_starts_and_closes_a_local_cluster(small_yaml, tmp_path, loky_summary):
    pytest.importorskip("distributed")
    out = tmp_path / "local"
    assert main(["run", str(small_yaml), "--out", str(out), "--quiet", "--backend", "dask", "--n-jobs", "2"]) == 0
    assert (out / "summary.csv").read_bytes() == loky_summary


@pytest.mark.slow  # a local Ray instance takes about 20 s to start and stop on 2 cores
def test_ray_gives_loky_bytes(small_yaml, tmp_path, loky_summary, monkeypatch):
    pytest.importorskip("ray.util.joblib")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)  # a private local instance
    monkeypatch.setattr("ldpsim.engine.runs.chunks.MAX_CHUNK_REPS", 2)  # six tasks: more than one wave of four
    out = tmp_path / "ray"
    assert main(["run", str(small_yaml), "--out", str(out), "--quiet", "--backend", "ray", "--n-jobs", "2"]) == 0
    assert (out / "summary.csv").read_bytes() == loky_summary


def _error_of(args, capsys, small_yaml, tmp_path):
    out = tmp_path / "never"
    status = main(["run", str(small_yaml), "--out", str(out), "--quiet", *args])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()  # failed before creating anything
    return err.rstrip("\n")


@pytest.mark.parametrize(
    "args,message",
    [
        (["--scheduler", "tcp://127.0.0.1:8786"], "ldpsim: error: --scheduler needs --backend dask (got --backend auto)"),
        (["--backend", "threading", "--scheduler", "x:1"], "ldpsim: error: --scheduler needs --backend dask"),
        (["--n-jobs", "0"], "ldpsim: error: n_jobs = 0 is not allowed"),
    ],
)
def test_bad_backend_flags_one_line(args, message, small_yaml, tmp_path, capsys):
    assert _error_of(args, capsys, small_yaml, tmp_path).startswith(message)


@pytest.mark.parametrize(
    "backend,module,message",
    [
        ("dask", "distributed", "ldpsim: error: --backend dask needs the 'cluster' extra: pip install 'ldpsim[cluster]'"),
        ("ray", "ray", "ldpsim: error: --backend ray needs the 'ray' extra: pip install 'ldpsim[ray]'"),
    ],
)
def test_missing_extra_one_line(backend, module, message, small_yaml, tmp_path, capsys, monkeypatch):
    for name in [m for m in sys.modules if m == module or m.startswith(module + ".")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    assert _error_of(["--backend", backend], capsys, small_yaml, tmp_path) == message


def test_unreachable_scheduler_one_line(small_yaml, tmp_path, capsys, monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setattr(backends, "CONNECT_TIMEOUT", 1)
    out = tmp_path / "x"
    status = main(["run", str(small_yaml), "--out", str(out), "--quiet", "--backend", "dask",
                   "--scheduler", "tcp://127.0.0.1:1"])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1
    assert err.startswith("ldpsim: error: cannot reach the dask scheduler at 'tcp://127.0.0.1:1'")
    missing = tmp_path / "nope.json"
    assert main(["run", str(small_yaml), "--out", str(out), "--quiet", "--backend", "dask",
                 "--scheduler", str(missing)]) == 2
    assert capsys.readouterr().err == f"ldpsim: error: scheduler file {str(missing)!r} not found\n"


def test_worker_with_other_code_refuses_to_compute(tiny_config):
    setting, study, options = tiny_config.settings[0], tiny_config.study, tiny_config.options
    other = {**code_identity(study), "ldpsim": "0123456789abcdef"}
    with pytest.raises(BackendError, match=r"^worker on .* runs other code .* install the same ldpsim"):
        _chunk_task([0], study, [setting], options, tiny_config.seed, 0, 1, other)
    [((index, start), result, seconds)] = _chunk_task([0], study, [setting], options, tiny_config.seed, 0, 1,
                                                      code_identity(study))
    assert (index, start) == (0, 0) and result["ok"].shape == (1,) and seconds >= 0


def test_a_scheduler_error_leaves_no_empty_directory(tmp_path, capsys):
    pytest.importorskip("distributed")
    (tmp_path / "c.yaml").write_text(TINY)
    out = tmp_path / "o"
    status, _, err = cli(capsys, "run", tmp_path / "c.yaml", "--out", out, "--quiet", "--backend", "dask",
                         "--scheduler", str(tmp_path / "nowhere.json"))
    one_line_error(status, err, "scheduler file", "not found")
    assert not out.exists()
