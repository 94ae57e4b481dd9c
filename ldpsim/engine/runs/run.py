"""One run of a config, from its checks to its ``meta.json``: what ``ldpsim.run`` and ``ldpsim run`` do.

A :class:`Run` is made in two steps:

* ``Run(config, ...)`` checks every flag, the backend, the memory the
  replications need and the time they take (a run of weeks is refused), and
  prepares the run's record (``meta.json``: config, seed, versions, machine,
  users' files): all before any work;
* :meth:`Run.execute` opens and locks the output directory (refusing one that
  holds another run), copies users' files into it, records which run it
  holds, simulates the replications (resuming saved chunks), summarises them
  with the study and hands the tables to a writer; on a failure or Ctrl-C it
  leaves the directory as ``--resume`` wants it and records what this
  invocation did.

:func:`ldpsim.api.run` is a facade over it: the config loaded, the result
written.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import ConfigError
from .backends import LOCAL, check_backend, local_workers, resolve_backend
from .chunks import chunk_key, chunk_size
from .config import Config, check_run_memory, plain, show
from .outdir import RunIdentity, open_output, read_meta, write_text
from .pilot import check_run_time
from .provenance import git_commit, machine, versions


def simulate(config: Config, **options) -> list[dict]:
    """:func:`ldpsim.engine.runs.driver.simulate`, loaded on a run's first call (joblib with it)."""
    from .driver import simulate as run_chunks  # lazy: import ldpsim <= 1 s (issue 41)

    return run_chunks(config, **options)


def identity(config: Config) -> RunIdentity:
    """Which run a config is, as an output directory records it (the study and every other key's value)."""
    return RunIdentity.of(config.study.name, {k: v for k, v in config.values.items() if k != "study"})


#: The widest lanes a run may ask for (a kernel's per-lane state is O(lanes d); beyond a few vector registers
#: nothing is gained, and each width is compiled anew).
MAX_LANES = 64


def _check_lanes(lanes):
    """``lanes`` as an int in [1, MAX_LANES], or None (each study's default); a ConfigError otherwise."""
    lanes = plain(lanes)
    if lanes is None:
        return None
    if isinstance(lanes, bool) or not isinstance(lanes, (int, float)) or lanes != lanes or lanes % 1:
        raise ConfigError(f"lanes = {show(lanes)} is not an integer; allowed: 1 to {MAX_LANES}, or none "
                          "(the fastest measured)")
    if not 1 <= lanes <= MAX_LANES:
        raise ConfigError(f"lanes = {show(lanes)} is outside [1, {MAX_LANES}]; allowed: 1 to {MAX_LANES}, or none "
                          "(the fastest measured)")
    return int(lanes)


class Run:
    """A config's run, checked before any work; :meth:`execute` runs it.

    Parameters
    ----------
    config : Config
        The resolved config.
    out : Path or None
        Output directory (``None``: in memory).
    name : str or None
        Run name for table titles (``None``: ``default_name``).
    default_name : str
        The name of a run not named.
    n_jobs, backend, scheduler, resume, force, progress, command, log, allow_long, lanes
        As :func:`ldpsim.api.run` documents them.

    Raises
    ------
    ConfigError
        One line, before any work, for anything that cannot run.
    """

    def __init__(self, config: Config, *, out: Path | None, name: str | None, default_name: str = "run", n_jobs: int = -1, backend: str = "auto",
                 scheduler: str | None = None, resume: bool = False, force: bool = False, progress: bool = True,
                 command: list[str] | None = None, log: Callable[[str], None] | None = None,
                 allow_long: bool = False, lanes: int | None = None):
        resume, force, progress, allow_long = (plain(v) for v in (resume, force, progress, allow_long))  # numpy's
        for flag, value in (("resume", resume), ("force", force), ("progress", progress), ("allow_long", allow_long)):
            if not isinstance(value, bool):
                raise ConfigError(f"{flag} = {show(value)} is not True or False")
        if log is not None and not callable(log):
            raise ConfigError(f"log = {show(log)} is not a function: give one that takes a line of text, or None")
        if resume and out is None:
            raise ConfigError("resume = True needs out, the directory whose chunks it continues")
        if name is not None and not isinstance(name, str):
            raise ConfigError(f"name = {show(name)} is not a string")
        name = name or default_name
        study = config.study
        lanes = _check_lanes(lanes)
        check_backend(backend, scheduler, n_jobs)  # a bad backend leaves no empty output directory
        backend = resolve_backend(backend, study)
        n_jobs = int(n_jobs)  # (numpy's integers are taken too)
        log = log if log is not None else _stderr
        if backend in LOCAL or (backend == "dask" and scheduler is None):
            workers = min(local_workers(n_jobs),
                          sum(-(-config.reps // chunk_size(study.steps(s))) for s in config.settings))
            check_run_memory(study, config.settings, config.options, config.reps, workers=workers)
            # (on a cluster of unknown size the time is not estimated)
            check_run_time(study, config, workers, allow_long, lanes, log=log)
        self.config, self.study, self.out, self.identity = config, study, out, identity(config)
        self.n_jobs, self.backend, self.scheduler, self.lanes = n_jobs, backend, scheduler, lanes
        self.resume, self.force, self.progress, self.log = resume, force, progress, log
        self.started = datetime.now(timezone.utc)
        self.meta = {
            "name": name,
            "study": study.name,
            "run_id": self.identity.run_id,
            "status": "running",
            "config": config.values,
            "root_seed": config.seed,
            "settings": len(config.settings),
            "varied": list(config.varied),
            "n_jobs": n_jobs,
            "lanes": lanes,
            "backend": backend,
            "scheduler": scheduler,
            "resume": resume,
            "started_utc": self.started.isoformat(timespec="seconds"),
            "command": command or sys.argv,
            "versions": versions(),
            "git_commit": git_commit(),  # the code that computes, not whatever is checked out at the end
            "machine": machine(),
        }
        from ...models.truth import deferred

        with deferred():  # an estimate not made yet is made beside the kernels' compilation, and recorded after it
            extra = study.run_meta(config)  # users' files (path, SHA-256) and the truths estimated for them
        self.truth_pending = extra.pop("truth_pending", False)
        self.meta.update(extra)

    def execute(self, write: Callable[[dict, dict, Path | None], object]):
        """Run the replications, summarise them and hand the tables to ``write``.

        Parameters
        ----------
        write : callable
            ``write(tables, meta, path)``, called with the study's tables, the
            finished run's record and the output directory (``None``: in
            memory); it writes the outputs and ``meta.json`` and returns the
            run's result, which this returns.
        """
        config, study, meta = self.config, self.study, self.meta
        handle = None
        if self.out is not None:
            keys = {chunk_key(study, s, config) for s in config.settings}
            handle = open_output(self.out, self.identity, force=self.force, chunk_keys=keys)
        tic = time.perf_counter()
        stats: dict = {}
        try:
            # the invocations of this run so far (an interrupted run being resumed), and this one
            earlier = read_meta(handle.path / "meta.json")[0] if self.resume and handle.holds_this_run else None
            meta["invocations"] = _invocations(earlier) + [{"started_utc": meta["started_utc"], "status": "running"}]
            if handle is not None:
                _copy_user_files(handle.path, meta)  # a result without its model's source cannot be reproduced
            if handle is not None and not handle.holds_this_run:
                # which run this directory holds, before any work: an interrupted run is identified, and resumed
                _write_meta(handle.path, meta)
            chunks = simulate(config, n_jobs=self.n_jobs, backend=self.backend, scheduler=self.scheduler,
                              chunk_dir=handle.chunks if handle is not None else None, resume=self.resume,
                              progress=self.progress, log=self.log, stats=stats, lanes=self.lanes)
            if self.truth_pending:
                meta.update(study.run_meta(config))
            _record_invocation(meta, stats, self.started, time.perf_counter() - tic, "complete")
            with np.errstate(all="ignore"):  # non-finite statistics are written as nan, not warned about
                tables = study.summarize(config, chunks)
            meta.update({
                "status": "complete",
                "n_failed": int(sum((~c["ok"]).sum() for c in chunks)),
            })
            return write(tables, meta, handle.path if handle is not None else None)
        except BaseException as exc:
            if handle is not None:
                handle.discard()  # a directory this run made and saved nothing in is removed again
                if stats and (handle.path / "meta.json").is_file():  # kept for --resume: say what this invocation did
                    _record_invocation(meta, stats, self.started, time.perf_counter() - tic,
                                       "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed")
                    meta["status"] = meta["invocations"][-1]["status"]
                    try:
                        write_text(handle.path / "meta.json", json.dumps(meta, indent=2, allow_nan=True) + "\n")
                    except OSError:
                        pass  # the disk that failed the run; the chunks are what matters
            if handle is not None and isinstance(exc, OSError) and _inside(exc.filename, handle.path):
                # the disk filled up, or the directory was taken away, during the run
                raise ConfigError(f"out = {str(handle.path)!r}: cannot write {exc.filename}: "
                                  f"{exc.strerror or exc}") from None
            raise
        finally:
            if handle is not None:
                handle.close()


def _copy_user_files(out: Path, meta: dict) -> None:
    """Copy each user's file of the run into ``out/user_files/`` and record the copy's name in ``meta``."""
    import shutil

    taken = set()
    for entry in meta.get("user_files", []):
        source = Path(entry["path"])
        name = source.name if source.name not in taken else f"{entry['sha256'][:8]}_{source.name}"
        taken.add(name)
        target = out / "user_files" / name
        try:
            (out / "user_files").mkdir(exist_ok=True)
            # a run rerun from its own copy (model: user_files/m.py, --out the same directory) has it already
            if not (target.exists() and os.path.samefile(source, target)):
                shutil.copyfile(source, target)
        except OSError as exc:
            raise ConfigError(f"out = {str(out)!r}: cannot copy {str(source)!r} into user_files/: "
                              f"{exc.strerror or exc}") from None
        entry["copy"] = f"user_files/{name}"


def _invocations(meta) -> list:
    """The invocations an earlier ``meta.json`` of this run records (a run interrupted and resumed)."""
    earlier = meta.get("invocations") if isinstance(meta, dict) else None
    if not isinstance(earlier, list):
        return [{"status": "not recorded (an earlier ldpsim)"}] if isinstance(meta, dict) else []
    out = []
    for entry in earlier:
        if not isinstance(entry, dict):
            continue
        entry = dict(entry)
        wall = entry.get("wall_time_s")
        if not (isinstance(wall, (int, float)) and not isinstance(wall, bool) and 0 <= wall < 1e12):
            entry.pop("wall_time_s", None)  # a damaged record is not summed
        if entry.get("status") == "running":  # ended without a word (killed): its chunks count, its time is unknown
            entry["status"] = "ended unrecorded (killed?)"
        out.append(entry)
    return out


def _record_invocation(meta: dict, stats: dict, started, wall: float, status: str) -> None:
    """Append this invocation to ``meta["invocations"]`` and total the run's times over all of them.

    ``wall_time_s`` sums the invocations' wall times (those recorded);
    ``compute_time_s`` sums the compute seconds saved with every chunk of the
    run, whichever invocation computed it (worker time: with several workers
    it exceeds the wall time).
    """
    this = {"started_utc": started.isoformat(timespec="seconds"), "wall_time_s": round(wall, 3),
            "chunks_computed": stats.get("computed", 0), "chunks_reused": stats.get("reused", 0),
            "compute_time_s": _seconds(stats.get("computed_s", 0.0)), "n_jobs": meta.get("n_jobs"),
            "backend": meta.get("backend"), "status": status}
    invocations = meta.get("invocations", [])[:-1] + [this]  # the last is this one, "running"
    walls = [i["wall_time_s"] for i in invocations if isinstance(i.get("wall_time_s"), (int, float))]
    meta.update({
        "invocations": invocations,
        "wall_time_s": round(sum(walls), 3),
        "compute_time_s": _seconds(stats.get("compute_s", math.nan)),
        "chunks": stats.get("chunks"),
        "chunks_reused": stats.get("reused"),
    })


def _seconds(value) -> float | None:
    return round(float(value), 3) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _inside(filename, directory: Path) -> bool:
    try:
        return filename is not None and Path(os.fsdecode(filename)).resolve().is_relative_to(directory.resolve())
    except (OSError, ValueError, TypeError):
        return False


def _stderr(line: str) -> None:
    print(f"ldpsim: {line}", file=sys.stderr)


def _write_meta(out: Path, meta: dict) -> None:
    try:
        write_text(out / "meta.json", json.dumps(meta, indent=2, allow_nan=True) + "\n")
    except OSError as exc:
        raise ConfigError(f"out = {str(out)!r}: cannot write meta.json: {exc.strerror or exc}") from None


__all__ = ["MAX_LANES", "Run", "identity", "simulate"]
