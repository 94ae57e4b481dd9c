"""A whole run: simulate, summarise, write ``summary.csv``, tables and ``meta.json``."""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from . import __version__
from .backends import check_backend
from .config import Config, GRID_KEYS
from .driver import simulate
from .summary import read_csv, summarize, write_csv
from .tables import render_latex, render_markdown


def _versions() -> dict:
    import joblib
    import numba
    import numpy
    import scipy

    return {
        "ldpsim": __version__,
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "numba": numba.__version__,
        "joblib": joblib.__version__,
    }


def _git_commit() -> str | None:
    """The commit of the ldpsim checkout that ran, if it is one (with ``+dirty`` if modified)."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "ldpsim"], cwd=root, capture_output=True,
                               text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def _machine() -> dict:
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
    }


def title_of(name: str, values: dict, varied) -> str:
    """Table title: run name and the settings every row shares."""
    fixed = ", ".join(f"{k} = {values[k]}" for k in GRID_KEYS
                      if k not in varied and k != "n" and values.get(k) is not None)  # None: does not apply
    return f"{name}: {fixed}, reps = {values['reps']}"


def write_tables(out: Path, rows: list[dict], title: str | None) -> str:
    """Write ``table.md`` and ``table.tex`` from summary rows; return the markdown."""
    markdown = render_markdown(rows, title)
    (out / "table.md").write_text(markdown)
    (out / "table.tex").write_text(render_latex(rows))
    return markdown


def write_sweep_maps(out: Path, rows: list[dict]) -> list[str]:
    """Heat maps (:mod:`ldpsim.plots`) if ``gamma`` and ``beta`` both vary; file names written.

    Without matplotlib prints one line to stderr saying the maps were skipped
    and returns ``[]``; a run without a gamma x beta grid writes none.
    """
    from .plots import is_sweep, write_heatmaps
    from .trace import MissingExtra

    if not is_sweep(rows):
        return []
    try:
        return [p.name for p in write_heatmaps(rows, out)]
    except MissingExtra as exc:
        print(f"ldpsim: heat maps skipped: {exc}", file=sys.stderr)
        return []


def run_experiment(config: Config, out: Path, *, name: str, n_jobs: int = -1, backend: str = "loky",
                   scheduler: str | None = None, resume: bool = False, progress: bool = True,
                   command: list[str] | None = None) -> list[dict]:
    """Run ``config`` and write its outputs into ``out``.

    Parameters
    ----------
    config : Config
        Validated run.
    out : Path
        Output directory (created).
    name : str
        Run name for the table title.
    n_jobs, backend, scheduler, resume, progress
        Passed to :func:`ldpsim.driver.simulate`.
    command : list of str, optional
        Command line, recorded in ``meta.json``.

    Returns
    -------
    list of dict
        The summary rows.
    """
    check_backend(backend, scheduler, n_jobs)  # a bad backend leaves no empty output directory
    out.mkdir(parents=True, exist_ok=True)
    started = datetime.now(timezone.utc)
    commit = _git_commit()  # the code that computes, not whatever is checked out at the end
    tic = time.perf_counter()
    results = simulate(config, n_jobs=n_jobs, backend=backend, scheduler=scheduler, chunk_dir=out / "chunks",
                       resume=resume, progress=progress)
    wall = time.perf_counter() - tic
    rows = summarize(config, results)
    write_csv(rows, out / "summary.csv")
    write_tables(out, rows, title_of(name, config.values, config.varied))
    maps = write_sweep_maps(out, rows)
    failed = int(sum((~r.ok).sum() for r in results))
    meta = {
        "name": name,
        "config": config.values,
        "root_seed": config.seed,
        "settings": len(config.settings),
        "varied": list(config.varied),
        "n_failed": failed,
        "wall_time_s": round(wall, 3),
        "n_jobs": n_jobs,
        "backend": backend,
        "scheduler": scheduler,
        "resume": resume,
        "started_utc": started.isoformat(timespec="seconds"),
        "command": command or sys.argv,
        "versions": _versions(),
        "git_commit": commit,
        "machine": _machine(),
        "heatmaps": maps,
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=2, allow_nan=True) + "\n")
    return rows


def rerender(out: Path) -> str:
    """Re-render ``table.md``, ``table.tex`` (and a sweep's heat maps) in ``out`` from its ``summary.csv``."""
    rows = read_csv(out / "summary.csv")
    title = None
    meta_path = out / "meta.json"
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        title = title_of(meta.get("name", out.name), meta["config"], meta.get("varied", []))
    markdown = write_tables(out, rows, title)
    write_sweep_maps(out, rows)
    return markdown
