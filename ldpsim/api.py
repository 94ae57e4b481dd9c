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

import contextlib
import json
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .engine.errors import ConfigError
from .engine.runs.config import Config, show
from .engine.runs.outdir import RunIdentity, check_path, identity_of_meta, open_output, read_meta, write_text
from .engine.runs.run import Run
from .reporting.csvio import read_csv, write_csv

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
    ldpsim.engine.runs.config.Config

    Raises
    ------
    ldpsim.engine.errors.ConfigError
        On a bad key or value (one line).
    """
    from .studies import load  # the studies, their models and kernels: on a config's first load

    if isinstance(source, Config):
        if overrides:
            raise ConfigError(f"overrides {', '.join(overrides)} given with a resolved Config: "
                              "give the config as a file or a dict to change keys")
        return source
    if isinstance(source, dict):
        return load(None, {**source, **overrides}, overrides_from="config")
    if source is not None and not isinstance(source, (str, os.PathLike)):
        raise ConfigError(f"config = {show(source)} is not a YAML file, a dict of config keys or a Config")
    if isinstance(source, (str, os.PathLike)):
        check_path(source, "config")  # not empty, no NUL byte
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
        from .studies import DEFAULT_STUDY, get_study

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

    def save(self, out: str | Path | None = None, force: bool = False) -> list[str]:
        """Write the CSV tables, the study's tables and figures and ``meta.json`` into ``out``.

        A directory that holds another run is refused (:class:`ConfigError`)
        unless ``force`` replaces it. Returns the names of the files written.
        """
        if out is None and self.out is None:
            raise ConfigError("out = None: give a directory to save into: result.save('results/my_run')")
        identity = identity_of_meta(self.meta) or RunIdentity.of("unknown", {})
        with open_output(out if out is not None else self.out, identity, force=force, lock=False) as handle:
            return self._write(handle.path)

    def _write(self, out: Path) -> list[str]:
        try:
            files = []
            for name, rows in self.tables.items():
                write_csv(rows, out / f"{name}.csv")
                files.append(f"{name}.csv")
            with quiet_drawing():
                files += self.study.write_outputs(out, self.tables, self.meta)
            self.meta["outputs"] = files
            self.meta["status"] = "complete"
            write_text(out / "meta.json", json.dumps(self.meta, indent=2, allow_nan=True) + "\n")
        except OSError as exc:
            raise ConfigError(f"out = {str(out)!r}: cannot write {exc.filename or 'its files'}: "
                              f"{exc.strerror or exc}") from None
        self.out, self.files = Path(out), files
        return files

    def figures(self, out: str | Path | None = None) -> list[str]:
        """Redraw the study's tables and figures into ``out`` (default: the run's directory)."""
        out = Path(out) if out is not None else self.out
        if out is None:
            raise ConfigError("out = None: give a directory to draw into: result.figures('results/my_run')")
        out.mkdir(parents=True, exist_ok=True)
        with quiet_drawing():
            return self.study.write_outputs(out, self.tables, self.meta)


@contextlib.contextmanager
def quiet_drawing():
    """No raw numpy or matplotlib warnings while tables and figures are drawn.

    Values that overflow a log axis (a noise variance of 1e300) or a panel
    with nothing to show make matplotlib warn in lines the user cannot act
    on; the tables carry the numbers (NaN, inf) and the run's own messages
    say what went wrong.
    """
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=RuntimeWarning)
        warnings.filterwarnings("ignore", module="matplotlib")
        warnings.filterwarnings("ignore", message=".*(ylim|xlim|log-scaled|no artists|Legend|legend).*")
        yield


def run(source=None, *, out=DEFAULT_OUT, n_jobs: int = -1, backend: str = "auto", scheduler: str | None = None,
        resume: bool = False, force: bool = False, progress: bool = True, name: str | None = None,
        command: list[str] | None = None, overrides_from: str = "overrides", log=None, allow_long: bool = False,
        lanes: int | None = None, **overrides) -> Result:
    """Run a config and return its result (and write its outputs, if it has an output directory).

    Everything that can be checked is checked before any work: the config,
    the backend, the memory the replications need, and the output directory
    (created, written to, locked, and refused if it holds another run).

    Parameters
    ----------
    source : str, Path, dict, Config or None
        A YAML config file, a mapping of config keys, a resolved config, or
        ``None`` with keys given as keywords (the defaults with them); ``None``
        alone is refused.
    out : str or Path or None
        Output directory; default ``results/<file stem>`` for a file and
        none (in memory) for a dict. Chunks of finished replications are
        saved in ``out/chunks/`` as they arrive, so that ``resume=True``
        continues an interrupted run. ``meta.json`` records which run the
        directory holds before the simulation starts.
    n_jobs : int
        Parallel workers (-1: all cores). Never changes the numbers.
    backend : {'auto', 'loky', 'threading', 'dask', 'ray'}
        Where the replications run (:mod:`ldpsim.engine.runs.backends`): ``auto``
        runs threads for the studies whose replications are kernels that
        release the GIL, processes for the others; ``meta.json`` records
        which.
    scheduler : str, optional
        Dask scheduler address or scheduler file (``backend='dask'``).
    resume : bool
        Reuse the chunks an earlier run of the same config saved in ``out``.
    force : bool
        Replace the outputs and chunks of another run in ``out``; without it
        such a directory is refused.
    progress : bool
        Show a progress bar.
    name : str, optional
        Run name for table titles; default the file stem (``run`` for a dict).
    command : list of str, optional
        The command line, recorded in ``meta.json``.
    overrides_from : str
        What error messages call the overrides (the CLI says ``--set``).
    log : callable, optional
        Called with each line for the user (chunks resumed, a damaged chunk
        set aside); default: printed to stderr after ``ldpsim: ``.
    allow_long : bool
        Run even if the run is estimated to take more than a week (refused
        otherwise, before any work: a run of years is a typo).
    lanes : int, optional
        Replications a kernel call advances side by side in SIMD vectors, 1 to
        64 (default: the doubles of one vector register of this machine, 8 with
        AVX-512 and 4 with AVX2, for the studies with a lanes kernel; 1 for the
        others). Never changes the numbers (:mod:`ldpsim.engine.dialect.lanes`).
    **overrides
        Config keys that win over ``source``: ``reps=50``, ``n=[1e6, 1e7]``,
        ``tau=[0.5, 0.9]``.

    Returns
    -------
    Result

    Raises
    ------
    ConfigError
        One line, before any work, for anything that cannot run.
    """
    if source is None and not overrides:  # the defaults alone are hours of work nobody asked for
        raise ConfigError("config = None: give a config to run (a YAML file, a dict of config keys or a Config), "
                          "e.g. ldpsim.run('configs/quantile.yaml', reps=50, n=1e6)")
    config = load_config(source, overrides_from=overrides_from, **overrides)
    from_file = isinstance(source, (str, os.PathLike))
    if out is DEFAULT_OUT:
        out = Path("results") / Path(source).stem if from_file else None
    plan = Run(config, out=out, name=name, default_name=Path(source).stem if from_file else "run", n_jobs=n_jobs,
               backend=backend, scheduler=scheduler, resume=resume, force=force, progress=progress,
               command=command, log=log, allow_long=allow_long, lanes=lanes)

    def write(tables, meta, path):
        result = Result(config, tables, meta, path)
        if path is not None:
            result._write(path)
        return result

    return plan.execute(write)


def open_result(out: str | Path) -> Result:
    """Read a finished run's directory back: its CSV tables and ``meta.json``.

    Raises
    ------
    ldpsim.engine.errors.ConfigError
        One line naming the file if ``out`` holds no ``summary.csv``, or a
        ``meta.json`` or table that cannot be read or is not this study's.
    """
    out = check_path(out, "dir")
    if not out.is_dir():
        raise ConfigError(f"dir = {str(out)!r} is not a directory" if out.exists() else f"dir = {str(out)!r} not found")
    if not (out / "summary.csv").is_file():
        if (out / "trace.csv").is_file():
            raise ConfigError(f"dir = {str(out)!r} holds a trace (trace.csv, no summary.csv): its figure is drawn "
                              "by `ldpsim trace`")
        raise ConfigError(f"dir = {str(out)!r} has no summary.csv")
    meta, problem = read_meta(out / "meta.json")
    if problem is not None:
        raise ConfigError(f"{str(out / 'meta.json')!r} cannot be read: {problem}")
    meta = meta if meta is not None else {"name": out.name}
    config = meta.get("config", {})
    if not isinstance(config, dict):
        raise ConfigError(f"{str(out / 'meta.json')!r} has a config that is not a mapping of keys to values")
    if not isinstance(meta.get("varied", []), list) or not all(isinstance(k, str) for k in meta.get("varied", [])):
        raise ConfigError(f"{str(out / 'meta.json')!r} has a 'varied' entry that is not a list of keys")
    from .studies import DEFAULT_STUDY, get_study

    study = get_study(config.get("study", meta.get("study", DEFAULT_STUDY)))
    tables = {}
    required = study.required_tables(config)
    for name in study.tables:
        path = out / f"{name}.csv"
        if path.is_file():
            tables[name] = read_csv(path, columns=study.table_columns.get(name))
        elif name in required:
            raise ConfigError(f"dir = {str(out)!r} has no {name}.csv, which {required[name]} writes")
    return Result(None, tables, meta, out)


__all__ = ["Result", "load_config", "open_result", "run"]
