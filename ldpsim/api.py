"""The Python API: run a config (a YAML file or a dict) and get its results back.

For notebooks and scripts; the command line (:mod:`ldpsim.cli`) is a thin
layer over it::

    import ldpsim

    result = ldpsim.run("configs/quantile.yaml", reps=50, n=1e6)
    result.rows              # summary rows (list of dict), as in summary.csv
    result.to_pandas()       # the same as a DataFrame (needs pandas)
    print(result.render())   # the table, in markdown
    result.config.settings   # the resolved grid

    result = ldpsim.run({"study": "trajectory", "model": "mean", "n": 1e5, "reps": 20})
    result.save("results/mean_trajectory")   # summary.csv, tables, figures, meta.json

A run from a file writes its outputs to ``results/<file stem>/`` (``out=``
changes it); a run from a dict keeps everything in memory unless ``out`` is
given. :func:`open_result` reads a finished run's directory back.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .engine.backends import check_backend
from .engine.config import Config
from .engine.driver import simulate
from .engine.errors import ConfigError
from .reporting.csvio import read_csv, write_csv
from .reporting.meta import git_commit, machine, versions
from .studies import DEFAULT_STUDY, get_study, load

#: Stands for "the default output directory" (``results/<file stem>`` for a file, none for a dict).
DEFAULT_OUT = object()


def load_config(source=None, overrides_from: str = "overrides", **overrides) -> Config:
    """Validate a config without running it.

    Parameters
    ----------
    source : str, Path, dict, Config or None
        A YAML file, a mapping of config keys, a resolved config (returned as
        is), or ``None`` for the defaults.
    overrides_from : str
        What error messages call the overrides.
    **overrides
        Config keys that win over ``source`` (``reps=50``, ``n=[1e6, 1e7]``).

    Returns
    -------
    ldpsim.engine.config.Config

    Raises
    ------
    ldpsim.engine.errors.ConfigError
        On a bad key or value (one line).
    """
    if isinstance(source, Config):
        if overrides:
            raise ConfigError(f"overrides {', '.join(overrides)} given with a resolved Config: "
                              "give the config as a file or a dict to change keys")
        return source
    if isinstance(source, dict):
        return load(None, {**source, **overrides}, overrides_from="config")
    return load(source, overrides, overrides_from=overrides_from)


@dataclass
class Result:
    """A finished run.

    Attributes
    ----------
    config : Config
        The resolved config (``None`` for a result read back from disk).
    tables : dict of str to list of dict
        The study's tables of rows: ``summary`` (``summary.csv``) and others
        (``rates`` for trajectory studies).
    meta : dict
        What ``meta.json`` holds: config values, seed, versions, timings.
    out : Path or None
        Where the outputs are (``None``: in memory only).
    """

    config: Config | None
    tables: dict[str, list[dict]]
    meta: dict
    out: Path | None = None
    files: list[str] = field(default_factory=list)

    @property
    def study(self):
        """The :class:`~ldpsim.studies.base.Study` that produced the result."""
        return get_study(self.meta.get("config", {}).get("study", DEFAULT_STUDY))

    @property
    def rows(self) -> list[dict]:
        """The summary rows, as in ``summary.csv``."""
        return self.tables["summary"]

    def to_pandas(self, table: str = "summary"):
        """A table as a ``pandas.DataFrame`` (pandas is optional: ``pip install pandas``)."""
        try:
            import pandas as pd
        except ImportError:
            from .engine.errors import MissingExtra

            raise MissingExtra("to_pandas needs pandas: pip install pandas") from None
        return pd.DataFrame(self.tables[table])

    def render(self) -> str:
        """The main table in markdown, as the run printed it."""
        return self.study.render(self.tables, self.meta)

    def save(self, out: str | Path | None = None) -> list[str]:
        """Write the CSV tables, the study's tables and figures and ``meta.json`` into ``out``.

        Returns the names of the files written.
        """
        out = Path(out) if out is not None else self.out
        if out is None:
            raise ValueError("give a directory to save into: result.save('results/my_run')")
        out.mkdir(parents=True, exist_ok=True)
        files = []
        for name, rows in self.tables.items():
            write_csv(rows, out / f"{name}.csv")
            files.append(f"{name}.csv")
        files += self.study.write_outputs(out, self.tables, self.meta)
        self.meta["outputs"] = files
        (out / "meta.json").write_text(json.dumps(self.meta, indent=2, allow_nan=True) + "\n")
        self.out, self.files = out, files
        return files

    def figures(self, out: str | Path | None = None) -> list[str]:
        """Redraw the study's tables and figures into ``out`` (default: the run's directory)."""
        out = Path(out) if out is not None else self.out
        if out is None:
            raise ValueError("give a directory to draw into: result.figures('results/my_run')")
        out.mkdir(parents=True, exist_ok=True)
        return self.study.write_outputs(out, self.tables, self.meta)


def run(source=None, *, out=DEFAULT_OUT, n_jobs: int = -1, backend: str = "loky", scheduler: str | None = None,
        resume: bool = False, progress: bool = True, name: str | None = None, command: list[str] | None = None,
        overrides_from: str = "overrides", **overrides) -> Result:
    """Run a config and return its result (and write its outputs, if it has an output directory).

    Parameters
    ----------
    source : str, Path, dict, Config or None
        A YAML config file, a mapping of config keys, a resolved config, or
        ``None`` (defaults).
    out : str or Path or None
        Output directory; default ``results/<file stem>`` for a file and
        none (in memory) for a dict. Chunks of finished replications are
        saved in ``out/chunks/`` as they arrive, so that ``resume=True``
        continues an interrupted run.
    n_jobs : int
        Parallel workers (-1: all cores). Never changes the numbers.
    backend : {'loky', 'threading', 'dask', 'ray'}
        Where the replications run (:mod:`ldpsim.engine.backends`).
    scheduler : str, optional
        Dask scheduler address or scheduler file (``backend='dask'``).
    resume : bool
        Reuse the chunks an earlier run of the same config saved in ``out``.
    progress : bool
        Show a progress bar.
    name : str, optional
        Run name for table titles; default the file stem (``run`` for a dict).
    command : list of str, optional
        The command line, recorded in ``meta.json``.
    overrides_from : str
        What error messages call the overrides (the CLI says ``--set``).
    **overrides
        Config keys that win over ``source``: ``reps=50``, ``n=[1e6, 1e7]``,
        ``tau=[0.5, 0.9]``.

    Returns
    -------
    Result
    """
    config = load_config(source, overrides_from=overrides_from, **overrides)
    from_file = isinstance(source, (str, Path))
    if out is DEFAULT_OUT:
        out = Path("results") / Path(source).stem if from_file else None
    out = Path(out) if out is not None else None
    name = name or (Path(source).stem if from_file else "run")
    study = config.study
    check_backend(backend, scheduler, n_jobs)  # a bad backend leaves no empty output directory
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    started = datetime.now(timezone.utc)
    commit = git_commit()  # the code that computes, not whatever is checked out at the end
    tic = time.perf_counter()
    chunks = simulate(config, n_jobs=n_jobs, backend=backend, scheduler=scheduler,
                      chunk_dir=out / "chunks" if out is not None else None, resume=resume, progress=progress)
    wall = time.perf_counter() - tic
    tables = study.summarize(config, chunks)
    meta = {
        "name": name,
        "study": study.name,
        "config": config.values,
        "root_seed": config.seed,
        "settings": len(config.settings),
        "varied": list(config.varied),
        "n_failed": int(sum((~c["ok"]).sum() for c in chunks)),
        "wall_time_s": round(wall, 3),
        "n_jobs": n_jobs,
        "backend": backend,
        "scheduler": scheduler,
        "resume": resume,
        "started_utc": started.isoformat(timespec="seconds"),
        "command": command or sys.argv,
        "versions": versions(),
        "git_commit": commit,
        "machine": machine(),
    }
    result = Result(config, tables, meta, out)
    if out is not None:
        result.save(out)
    return result


def open_result(out: str | Path) -> Result:
    """Read a finished run's directory back: its CSV tables and ``meta.json``.

    Raises
    ------
    ldpsim.engine.errors.ConfigError
        If ``out`` holds no ``summary.csv``.
    """
    out = Path(out)
    if not (out / "summary.csv").is_file():
        raise ConfigError(f"dir = {str(out)!r} has no summary.csv")
    meta_path = out / "meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {"name": out.name}
    study = get_study(meta.get("config", {}).get("study", DEFAULT_STUDY))
    tables = {name: read_csv(out / f"{name}.csv") for name in study.tables if (out / f"{name}.csv").is_file()}
    return Result(None, tables, meta, out)


__all__ = ["Result", "load_config", "open_result", "run"]
