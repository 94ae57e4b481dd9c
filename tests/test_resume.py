"""``--resume``: a run reuses the chunks it saved when they are whole and its own, recomputes the others, and
states the compute time of every invocation.

No timing is asserted: compute times come from a clock the test controls.
"""

from __future__ import annotations

import json
import math
import shutil
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ldpsim
from ldpsim.engine.runs import chunks as store

from run_helpers import SMALL, TINY, api_run, checked_cli, cli, write


# --- the chunks a run saved are reused, and said to be ------------------------------------------------------


def test_same_run_again_and_resume_say_what_they_reuse(earlier, capsys):
    out, config, before = earlier
    status, _, err = cli(capsys, "run", config, "--out", out, "--quiet", "--n-jobs", "1", "--resume")
    assert status == 0 and "ldpsim: resume: reusing 1 of 1 chunks saved in" in err
    assert (out / "summary.csv").read_bytes() == before["summary.csv"][0]
    status, _, err = cli(capsys, "run", config, "--out", out, "--quiet", "--n-jobs", "1")  # its own directory
    assert status == 0 and (out / "summary.csv").read_bytes() == before["summary.csv"][0]


def test_resume_of_an_empty_directory_says_nothing_was_reused(tmp_path, capsys):
    (tmp_path / "c.yaml").write_text(TINY)
    status, _, err = cli(capsys, "run", tmp_path / "c.yaml", "--out", tmp_path / "new", "--quiet", "--n-jobs", "1",
                         "--resume")
    assert status == 0 and "resume: reusing 0 of 1 chunks" in err


# --- a damaged, altered or foreign chunk is set aside and recomputed ----------------------------------------


def _damage(path: Path, how: str):
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "garbage":
        path.write_bytes(b"not a chunk")
    elif how == "foreign arrays":
        np.savez(path, x=np.zeros(3))
    elif how == "wrong shapes":
        with np.load(path) as z:
            arrays = {k: z[k] for k in z.files}
        arrays["bounds"] = arrays["bounds"][:, :2]
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)
    elif how == "wrong reps":
        with np.load(path) as z:
            arrays = {k: np.concatenate([z[k], z[k][:1]]) if z[k].ndim else z[k] for k in z.files}
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)
    elif how == "bare array":
        with open(path, "wb") as fh:
            np.save(fh, np.zeros(3))
    elif how == "directory":
        path.unlink()
        path.mkdir()


@pytest.mark.parametrize("how", ["truncated", "empty", "garbage", "foreign arrays", "wrong shapes", "wrong reps",
                                 "bare array", "directory"])
def test_a_damaged_chunk_is_reported_moved_aside_and_recomputed(earlier, capsys, how):
    out, config, before = earlier
    chunk = next((out / "chunks").glob("*.npz"))
    _damage(chunk, how)
    status, _, err = cli(capsys, "run", config, "--out", out, "--quiet", "--n-jobs", "1", "--resume")
    assert status == 0 and "Traceback" not in err, err
    assert f"ldpsim: chunk {chunk.name} " in err and "moved to chunks/damaged/, its replications are recomputed" in err
    assert (out / "chunks" / "damaged" / chunk.name).exists()
    assert (out / "summary.csv").read_bytes() == before["summary.csv"][0]
    assert store.read_chunk(chunk, 3)[1] is None  # recomputed, whole


def test_a_chunk_that_is_a_link_to_a_device_is_set_aside(earlier, capsys):
    out, config, before = earlier
    chunk = next((out / "chunks").glob("*.npz"))
    chunk.unlink()
    chunk.symlink_to("/dev/zero")
    status, _, err = cli(capsys, "run", config, "--out", out, "--quiet", "--n-jobs", "1", "--resume")
    assert status == 0 and "moved to chunks/damaged/" in err
    assert (out / "summary.csv").read_bytes() == before["summary.csv"][0]


def _rewrite(path, change):
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    change(arrays)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def test_a_chunk_whose_numbers_were_altered_is_recomputed(tmp_path, capsys):
    config = write(tmp_path, SMALL)
    status, _, _ = checked_cli(capsys, "run", config, "--out", tmp_path / "o", "--quiet", "--n-jobs", "1")
    before = (tmp_path / "o" / "summary.csv").read_bytes()
    chunk = sorted((tmp_path / "o" / "chunks").glob("*.npz"))[0]

    def tamper(arrays):  # same arrays, same shapes, same name: other numbers
        arrays["bounds"] = arrays["bounds"] * 30.0

    _rewrite(chunk, tamper)
    status, _, err = checked_cli(capsys, "run", config, "--out", tmp_path / "o", "--quiet", "--n-jobs", "1", "--resume")
    assert status == 0
    assert f"chunk {chunk.name} fails its checksum (its numbers changed after it was saved): moved to " \
           "chunks/damaged/, its replications are recomputed" in err
    assert (tmp_path / "o" / "summary.csv").read_bytes() == before


@pytest.mark.parametrize("seconds", [np.float64(-50.0), np.array(["x"]), np.float64(1e300)])
def test_a_chunk_with_impossible_compute_seconds_reports_them_unknown(tmp_path, seconds):
    api_run(SMALL, out=tmp_path)
    chunk = sorted((tmp_path / "chunks").glob("*.npz"))[0]
    _rewrite(chunk, lambda arrays: arrays.update({store.SECONDS: seconds}))
    result = api_run(SMALL, out=tmp_path, resume=True)
    assert result.meta["chunks_reused"] == 3 and result.meta["compute_time_s"] is None  # not a negative time


def test_a_chunk_without_a_checksum_is_recomputed(tmp_path):
    api_run(SMALL, out=tmp_path)
    chunk = sorted((tmp_path / "chunks").glob("*.npz"))[0]
    _rewrite(chunk, lambda arrays: arrays.pop(store.CHECKSUM))
    lines = []
    result = api_run(SMALL, out=tmp_path, resume=True, log=lines.append)
    assert any("has no checksum" in line for line in lines) and result.meta["chunks_reused"] == 2


def test_a_chunk_of_another_run_renamed_to_this_runs_name_is_not_reused(tmp_path):
    # the name held the run's identity, the file did not: another run's chunk under this name was resumed as this run's
    from ldpsim.engine.runs import chunks as store

    base = {"model": "quantile", "n": 2000, "reps": 16, "methods": ["SN", "oracle"]}
    mine = ldpsim.run({**base, "seed": 1}, out=tmp_path / "mine", n_jobs=1, progress=False)
    other = ldpsim.run({**base, "seed": 2}, out=tmp_path / "other", n_jobs=1, progress=False)
    assert mine.rows != other.rows
    (target,) = (tmp_path / "mine" / "chunks").glob("*.npz")
    (source,) = (tmp_path / "other" / "chunks").glob("*.npz")
    assert store.read_chunk(target)[1] is None
    shutil.copyfile(source, target)
    lines = []
    again = ldpsim.run({**base, "seed": 1}, out=tmp_path / "mine", n_jobs=1, progress=False, resume=True,
                       log=lines.append)
    assert again.rows == mine.rows and again.meta["chunks_reused"] == 0
    assert any(f"chunk {target.name} was saved as {source.name!r}: the chunk of another run" in line for line in lines)


# --- the chunk store under SIGKILL --------------------------------------------------------------------------


KILLER = textwrap.dedent("""
    import os, signal, sys
    import ldpsim.engine.runs.chunks as chunks
    from ldpsim.cli import main

    chunks.MAX_CHUNK_REPS = 2  # three chunks of a tiny run
    real, saved = os.replace, []

    def replace(src, dst):  # SIGKILL between writing the second chunk and renaming it
        if str(dst).endswith(".npz"):
            saved.append(dst)
            if len(saved) == 2:
                os.kill(os.getpid(), signal.SIGKILL)
        return real(src, dst)

    os.replace = replace
    sys.exit(main(sys.argv[1:]))
""")


def test_sigkill_between_write_and_rename_then_resume_is_byte_identical(tmp_path, capsys, monkeypatch):
    (tmp_path / "k.yaml").write_text(TINY.replace("reps: 3", "reps: 6"))
    killed = tmp_path / "killed"
    proc = subprocess.run([sys.executable, "-c", KILLER, "run", str(tmp_path / "k.yaml"), "--out", str(killed),
                           "--quiet", "--n-jobs", "1"], capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    names = sorted(p.name for p in (killed / "chunks").iterdir() if p.name != ".lock")
    assert len(names) == 2 and names[1].endswith(".npz") and names[0].endswith(".tmp")  # one chunk, one half
    assert json.loads((killed / "meta.json").read_text())["status"] == "running"  # identified, not finished
    monkeypatch.setattr(store, "MAX_CHUNK_REPS", 2)
    status, _, err = cli(capsys, "run", tmp_path / "k.yaml", "--out", killed, "--quiet", "--n-jobs", "1", "--resume")
    assert status == 0 and "resume: reusing 1 of 3 chunks" in err
    assert not list((killed / "chunks").glob("*.tmp"))
    whole = tmp_path / "whole"
    assert cli(capsys, "run", tmp_path / "k.yaml", "--out", whole, "--quiet", "--n-jobs", "1")[0] == 0
    assert (killed / "summary.csv").read_bytes() == (whole / "summary.csv").read_bytes()


# --- resumed runs report honestly ---------------------------------------------------------------------------


class FakeClock:
    """A clock that advances one second a reading: every task's compute time is exactly one second."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        self.now += 0.5
        return self.now


def test_a_resumed_run_states_the_compute_time_of_every_chunk(tmp_path, monkeypatch):
    monkeypatch.setattr("ldpsim.engine.runs.driver.clock", FakeClock())
    whole = api_run(SMALL, out=tmp_path / "whole")
    assert whole.meta["chunks"] == 3 and whole.meta["compute_time_s"] == 1.5  # 3 chunks, 0.5 s each

    saves, real_save = [], store.save_chunk

    def interrupted_after_two(path, arrays, seconds=math.nan):
        if len(saves) == 2:
            raise KeyboardInterrupt
        saves.append(path)
        real_save(path, arrays, seconds)

    monkeypatch.setattr("ldpsim.engine.runs.driver.store.save_chunk", interrupted_after_two)
    with pytest.raises(KeyboardInterrupt):
        api_run(SMALL, out=tmp_path / "part")
    meta = json.loads((tmp_path / "part" / "meta.json").read_text())
    assert meta["status"] == "interrupted" and meta["invocations"][0]["chunks_computed"] == 2
    monkeypatch.setattr("ldpsim.engine.runs.driver.store.save_chunk", real_save)

    resumed = api_run(SMALL, out=tmp_path / "part", resume=True)
    meta = resumed.meta
    # the acceptance: within 10% of the uninterrupted run's (here exactly: the same chunks, the same clock)
    assert abs(meta["compute_time_s"] - whole.meta["compute_time_s"]) <= 0.1 * whole.meta["compute_time_s"]
    assert meta["compute_time_s"] == 1.5
    first, second = meta["invocations"]
    assert (first["status"], first["chunks_computed"], first["chunks_reused"]) == ("interrupted", 2, 0)
    assert (second["status"], second["chunks_computed"], second["chunks_reused"]) == ("complete", 1, 2)
    assert second["compute_time_s"] == 0.5 and meta["chunks_reused"] == 2
    assert meta["wall_time_s"] == pytest.approx(first["wall_time_s"] + second["wall_time_s"], abs=2e-3)
    assert (tmp_path / "part" / "summary.csv").read_bytes() == (tmp_path / "whole" / "summary.csv").read_bytes()


def test_compute_time_is_the_sum_of_the_seconds_saved_with_the_chunks(tmp_path):
    api_run(SMALL, out=tmp_path)
    seconds = [store.read_chunk(p)[2] for p in sorted((tmp_path / "chunks").glob("*.npz"))]
    assert len(seconds) == 3 and all(s >= 0 for s in seconds)
    resumed = api_run(SMALL, out=tmp_path, resume=True)  # everything reused: nothing computed now
    assert resumed.meta["compute_time_s"] == round(math.fsum(seconds), 3)
    assert resumed.meta["invocations"][-1]["chunks_computed"] == 0
    assert len(resumed.meta["invocations"]) == 2


def test_a_killed_invocation_is_named_and_a_rerun_without_resume_starts_afresh(tmp_path):
    api_run(SMALL, out=tmp_path)
    meta = json.loads((tmp_path / "meta.json").read_text())
    meta["invocations"].append({"started_utc": "x", "status": "running"})  # as a kill -9 leaves it
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    statuses = [i["status"] for i in api_run(SMALL, out=tmp_path, resume=True).meta["invocations"]]
    assert statuses == ["complete", "ended unrecorded (killed?)", "complete"]
    assert len(api_run(SMALL, out=tmp_path).meta["invocations"]) == 1  # recomputed: the earlier work is not this


@pytest.mark.parametrize("invocations", ["garbage", [1, None, {"wall_time_s": "a"}], [{"wall_time_s": 1e308}] * 2])
def test_a_damaged_record_of_invocations_is_read_without_trouble(tmp_path, invocations):
    api_run(SMALL, out=tmp_path)
    meta = json.loads((tmp_path / "meta.json").read_text())
    meta["invocations"] = invocations
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    result = api_run(SMALL, out=tmp_path, resume=True)
    assert math.isfinite(result.meta["wall_time_s"]) and result.meta["wall_time_s"] < 1e6


def test_the_progress_bar_says_estimating_until_it_knows(monkeypatch):
    # a 9-minute run said 24 hours before its estimate settled (compiling counted as steps; issue 44, section 5)
    import io
    import time

    from tqdm.auto import tqdm

    from ldpsim.engine.runs.driver import ETA_FORMAT, Estimate

    clock = {"now": 0.0}
    monkeypatch.setattr(time, "perf_counter", lambda: clock["now"])
    out = io.StringIO()
    bar = tqdm(total=1000, unit="step", file=out, bar_format=ETA_FORMAT, desc="SGD steps", mininterval=0)
    eta = Estimate(bar, workers=2)
    bar.refresh()
    assert out.getvalue().rstrip().endswith("estimating]")
    clock["now"] = 3600.0  # an hour of compiling: no part of the steps' speed
    eta.start()
    clock["now"] = 3610.0
    eta.update(100)  # one chunk of two workers' first: not yet an estimate
    bar.refresh()
    assert out.getvalue().rstrip().endswith("estimating]")
    clock["now"] = 3620.0
    eta.update(100)  # 200 steps in 20 s: 800 left at 10 per s
    bar.refresh()
    bar.close()
    assert "01:20 left, 10.0step/s]" in out.getvalue() and "hour" not in out.getvalue()
