"""Output folders: a run never replaces another run's results, and a bad ``--out`` is refused before any work.

Each refusal is exit status 2 and ONE line ``ldpsim: error: ...`` naming the path, and leaves the earlier run's
directory byte for byte (and mtime for mtime) as it was; the Python API raises the same one-line ConfigError.
"""

from __future__ import annotations

import errno
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

import ldpsim

from run_helpers import TINY, cli, one_line_error, snapshot


# --- another run's results are never replaced ---------------------------------------------------------------


@pytest.mark.parametrize("change,shown", [
    (["--seed", "4"], "(seed = 3), not this one"),
    (["--n", "5000"], "(n = 4000), not this one"),
    (["--reps", "4"], "(reps = 3), not this one"),
    (["--set", "tau=0.7"], "(tau = 0.5), not this one"),
    (["--set", "methods=[BB]"], "(methods = ['BB', 'BM', 'SN', 'oracle']), not this one"),
])
@pytest.mark.parametrize("resume", [False, True])
def test_another_runs_directory_is_refused_with_both_runs_named(earlier, capsys, change, shown, resume):
    out, config, before = earlier
    theirs = json.loads((out / "meta.json").read_text())["run_id"]
    status, _, err = cli(capsys, "run", config, "--out", out, "--quiet", "--n-jobs", "1", *change,
                         *(["--resume"] if resume else []))
    line = one_line_error(status, err, f"out = '{out}' holds another run, {theirs} ", shown, "--force")
    assert len(set(re.findall(r"\b[0-9a-f]{12}\b", line))) == 2  # both runs, by their ids
    assert snapshot(out) == before


def test_force_replaces_the_other_run_and_its_chunks(earlier, capsys):
    out, config, before = earlier
    old_chunks = sorted(p.name for p in (out / "chunks").glob("*.npz"))
    status, _, _ = cli(capsys, "run", config, "--out", out, "--quiet", "--n-jobs", "1", "--seed", "4", "--force")
    assert status == 0
    meta = json.loads((out / "meta.json").read_text())
    assert meta["root_seed"] == 4 and meta["status"] == "complete"
    assert not {p.name for p in (out / "chunks").glob("*.npz")} & set(old_chunks)
    assert (out / "summary.csv").read_bytes() != before["summary.csv"][0]


def test_force_removes_only_what_a_run_writes(earlier, capsys):
    out, config, _ = earlier
    meta = json.loads((out / "meta.json").read_text())
    meta["outputs"] += ["notes.txt", "../tiny.yaml", "c.yaml"]  # a meta.json is not trusted to name other files
    (out / "meta.json").write_text(json.dumps(meta))
    (out / "notes.txt").write_text("mine")
    (out / "c.yaml").write_text(TINY)
    status, _, _ = cli(capsys, "run", config, "--out", out, "--quiet", "--n-jobs", "1", "--seed", "5", "--force")
    assert status == 0 and (out / "notes.txt").exists() and (out / "c.yaml").exists() and config.exists()


def test_the_api_refuses_and_forces_alike(earlier):
    out, config, before = earlier
    with pytest.raises(ldpsim.ConfigError, match=r"^out = .* holds another run, .*\(seed = 3\), not this one") as info:
        ldpsim.run(str(config), out=out, seed=4, n_jobs=1, progress=False)
    assert "\n" not in str(info.value) and snapshot(out) == before
    result = ldpsim.run(str(config), out=out, seed=4, n_jobs=1, progress=False, force=True)
    assert result.meta["root_seed"] == 4
    with pytest.raises(ldpsim.ConfigError, match=r"holds another run, .*\(study = 'coverage'.*\(study = 'trajectory'"):
        ldpsim.run({"study": "trajectory", "model": "quantile", "n": 4000, "reps": 2}, out=out, progress=False)
    memory = ldpsim.run({"model": "quantile", "n": 4000, "reps": 2, "B": 50, "seed": 9}, n_jobs=1, progress=False)
    with pytest.raises(ldpsim.ConfigError, match="holds another run"):
        memory.save(out)
    memory.save(out, force=True)
    assert ldpsim.open_result(out).meta["root_seed"] == 9


def test_the_run_is_identified_before_any_work(tmp_path, capsys, monkeypatch):
    (tmp_path / "c.yaml").write_text(TINY)
    out = tmp_path / "o"
    seen = {}

    def interrupted(config, **kw):  # the moment the simulation would start
        seen.update(json.loads((out / "meta.json").read_text()))
        raise KeyboardInterrupt

    monkeypatch.setattr("ldpsim.engine.runs.run.simulate", interrupted)
    status, _, _ = cli(capsys, "run", tmp_path / "c.yaml", "--out", out, "--quiet")
    assert status == 130
    assert seen["status"] == "running" and len(seen["run_id"]) == 12 and seen["config"]["seed"] == 3
    assert not out.exists()  # nothing was saved: the directory it made is gone again


@pytest.mark.parametrize("files,what", [
    ({"summary.csv": "a,b\n1,2\n"}, "results without a meta.json (summary.csv)"),
    ({"meta.json": "{not json"}, "a meta.json that is not a run's (not valid JSON"),
    ({"meta.json": "[1, 2]"}, "a meta.json that is not a run's (it does not hold a JSON object)"),
])
def test_a_directory_of_unknown_results_is_refused(tmp_path, capsys, files, what):
    (tmp_path / "c.yaml").write_text(TINY)
    out = tmp_path / "o"
    out.mkdir()
    for name, text in files.items():
        (out / name).write_text(text)
    before = snapshot(out)
    status, _, err = cli(capsys, "run", tmp_path / "c.yaml", "--out", out, "--quiet", "--n-jobs", "1")
    one_line_error(status, err, f"out = '{out}' holds {what}")
    assert snapshot(out) == before and not (out / "chunks").exists()


def test_a_directory_with_other_files_only_is_fine(tmp_path, capsys):
    (tmp_path / "c.yaml").write_text(TINY)
    out = tmp_path / "o"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    status, _, _ = cli(capsys, "run", tmp_path / "c.yaml", "--out", out, "--quiet", "--n-jobs", "1")
    assert status == 0 and (out / "notes.txt").read_text() == "mine" and (out / "summary.csv").exists()


def test_a_trace_directory_and_a_run_directory_are_told_apart(tmp_path, capsys):
    (tmp_path / "c.yaml").write_text(TINY)
    out = tmp_path / "trace"
    out.mkdir()  # as `trace` wrote it before run ids existed
    (out / "meta.json").write_text(json.dumps({"name": "trace", "replication": 0, "config": {"n": 4000, "seed": 3}}))
    (out / "trace.csv").write_text("checkpoint\n10\n")
    before = snapshot(out)
    status, _, err = cli(capsys, "run", tmp_path / "c.yaml", "--out", out, "--quiet")
    one_line_error(status, err, "holds another run", "(study = 'trace'), not this one", "(study = 'coverage')")
    assert snapshot(out) == before


def test_the_readme_quick_look_never_replaces_the_committed_table(capsys, monkeypatch):
    root = Path(__file__).parents[1]
    monkeypatch.chdir(root)
    before = snapshot(root / "results" / "quantile")
    monkeypatch.setattr("ldpsim.engine.runs.run.simulate", lambda *a, **k: pytest.fail("the simulation started"))
    status, _, err = cli(capsys, "run", "configs/quantile.yaml", "--reps", "50", "--n", "1e6")
    one_line_error(status, err, "out = 'results/quantile' holds another run", "(n = [1000000, 10000000, 100000000], "
                   "reps = 500), not this one")
    assert snapshot(root / "results" / "quantile") == before


# --- the output directory is checked (created, written to) before any work ----------------------------------


def _bad_out(t: Path, kind: str):
    if kind in ("file", "under a file"):
        (t / "file").write_text("x")
        return t / "file" if kind == "file" else t / "file" / "sub"
    if kind == "foreign chunks":
        (t / "d" / "chunks").mkdir(parents=True)
        np.savez(t / "d" / "chunks" / "abc_0000000_0000003.npz", ok=np.ones(3, bool))
        return t / "d"
    if kind == "chunks is a file":
        (t / "d").mkdir()
        (t / "d" / "chunks").write_text("")
        return t / "d"
    return {"empty": "", "blank": "   ", "uncreatable": "/proc/ldpsim-no/such"}[kind]


@pytest.mark.parametrize("kind,fragment", [
    ("empty", "out = '' is empty: give a directory"),
    ("blank", "out = '   ' is empty"),
    ("file", "out = '{t}/file' is a file, not a directory"),
    ("under a file", "out = '{t}/file/sub' cannot be created: '{t}/file' is a file"),
    ("uncreatable", "out = '/proc/ldpsim-no/such' cannot be created: No such file or directory"),
    ("foreign chunks", "out = '{t}/d' holds results without a meta.json (chunks/)"),
    ("chunks is a file", "out = '{t}/d' holds a file 'chunks'"),
])
def test_a_bad_out_is_refused_before_any_work(tmp_path, capsys, monkeypatch, kind, fragment):
    (tmp_path / "c.yaml").write_text(TINY)
    out = _bad_out(tmp_path, kind)
    monkeypatch.chdir(tmp_path)
    before = snapshot(tmp_path)
    monkeypatch.setattr("ldpsim.engine.runs.run.simulate", lambda *a, **k: pytest.fail("the simulation started"))
    status, _, err = cli(capsys, "run", tmp_path / "c.yaml", "--out", out, "--quiet")
    one_line_error(status, err, fragment.format(t=tmp_path))
    assert snapshot(tmp_path) == before  # in particular, nothing in the current directory


def test_a_read_only_file_system_is_found_before_any_work(tmp_path, capsys, monkeypatch):
    (tmp_path / "c.yaml").write_text(TINY)

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr("ldpsim.engine.runs.outdir.tempfile.mkstemp", read_only)
    monkeypatch.setattr("ldpsim.engine.runs.run.simulate", lambda *a, **k: pytest.fail("the simulation started"))
    status, _, err = cli(capsys, "run", tmp_path / "c.yaml", "--out", tmp_path / "ro", "--quiet")
    one_line_error(status, err, f"out = '{tmp_path / 'ro'}' is not writable: Read-only file system")
    assert not (tmp_path / "ro").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_an_unwritable_directory_is_found_before_any_work(tmp_path, capsys):  # pragma: no cover
    (tmp_path / "c.yaml").write_text(TINY)
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    status, _, err = cli(capsys, "run", tmp_path / "c.yaml", "--out", locked, "--quiet")
    one_line_error(status, err, "is not writable: Permission denied")


def test_a_full_disk_during_the_run_is_one_line(tmp_path, capsys, monkeypatch):
    (tmp_path / "c.yaml").write_text(TINY)

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("ldpsim.engine.runs.chunks.np.savez", full)
    status, _, err = cli(capsys, "run", tmp_path / "c.yaml", "--out", tmp_path / "o", "--quiet", "--n-jobs", "1")
    one_line_error(status, err, f"out = '{tmp_path / 'o'}': cannot write", "No space left on device")
    assert not (tmp_path / "o").exists()  # it made the directory and saved nothing: removed again


def test_a_second_run_into_a_directory_in_use_is_refused(earlier, capsys):
    out, config, before = earlier
    import fcntl

    with open(out / "chunks" / ".lock", "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a running ldpsim holds it
        status, _, err = cli(capsys, "run", config, "--out", out, "--quiet", "--n-jobs", "1", "--resume")
    one_line_error(status, err, f"out = '{out}' is in use by another ldpsim run")
    assert snapshot(out) == before


def test_an_output_directory_with_a_meta_json_directory_or_a_symlink_loop(tmp_path, capsys):
    (tmp_path / "c.yaml").write_text(TINY)
    (tmp_path / "m" / "meta.json").mkdir(parents=True)
    status, _, err = cli(capsys, "run", tmp_path / "c.yaml", "--out", tmp_path / "m", "--quiet")
    one_line_error(status, err, "holds a meta.json that is not a run's (it is a directory)")
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    status, _, err = cli(capsys, "run", tmp_path / "c.yaml", "--out", tmp_path / "loop1" / "x", "--quiet")
    one_line_error(status, err, "cannot be created: Too many levels of symbolic links")


def test_files_that_are_links_to_a_device_are_not_read_forever(earlier, capsys):
    out, config, before = earlier
    (out / "meta.json").unlink()
    (out / "meta.json").symlink_to("/dev/zero")
    status, _, err = cli(capsys, "run", config, "--out", out, "--quiet", "--resume")
    one_line_error(status, err, "holds a meta.json that is not a run's (it is not a regular file)")
    status, _, err = cli(capsys, "table", out)
    one_line_error(status, err, "meta.json' cannot be read: it is not a regular file")


# --- a user's file edited since is another run (issue 44, section 3) ----------------------------------------------


def test_an_edited_users_file_is_another_run_by_its_source_hash():
    from ldpsim.engine.runs.outdir import RunIdentity

    def identity(model, methods=("BM",)):
        return RunIdentity.of("coverage", {"model": model, "methods": list(methods), "n": 1000})

    first, edited = identity("/u/m.py:M#" + "a" * 16), identity("/u/m.py:M#" + "b" * 16)
    assert not first.same_run(edited) and first.run_id != edited.run_id
    assert edited.differences(first) == [("model", "/u/m.py:M#" + "a" * 16, "/u/m.py:M#" + "b" * 16)]
    method = identity("quantile", ["BM", "/u/bm.py:B#" + "a" * 16])
    assert not method.same_run(identity("quantile", ["BM", "/u/bm.py:B#" + "c" * 16]))  # a user's method's file too
    assert first.same_run(identity("/u/m.py:M#" + "a" * 16))
    # a meta.json written before values carried the hashes: the same file is the same run, as it was
    assert first.same_run(RunIdentity.of("coverage", {"model": "/u/m.py:M", "methods": ["BM"], "n": 1000}))


@pytest.mark.slow  # compiles a user's model's kernel
@pytest.mark.parametrize("resume", [False, True])
def test_a_run_after_the_users_model_file_was_edited_is_refused(tmp_path, capsys, resume):
    source = (Path(__file__).resolve().parents[1] / "examples" / "clipped_mean.py").read_text()
    (tmp_path / "clipped_mean.py").write_text(source)
    config = tmp_path / "c.yaml"
    config.write_text("model: clipped_mean.py:ClippedMean\nrate: 1.0\nclip: 3.0\nepsilon: 1\nn: 2000\nreps: 2\n"
                      "methods: [BM]\nseed: 3\n")
    out = tmp_path / "out"
    status, _, err = cli(capsys, "run", config, "--out", out, "--quiet", "--n-jobs", "1")
    assert status == 0, err
    before = snapshot(out)
    theirs = json.loads((out / "meta.json").read_text())["run_id"]
    (tmp_path / "clipped_mean.py").write_text(source.replace("params.clip)", "params.clip) + 0.0", 1))
    status, _, err = cli(capsys, "run", config, "--out", out, "--quiet", "--n-jobs", "1",
                         *(["--resume"] if resume else []))
    one_line_error(status, err, f"out = '{out}' holds another run, {theirs} ", "ClippedMean#",
                   "a user's file was edited since", "--force")
    assert snapshot(out) == before  # the first version's results and chunks, untouched
