"""ldpsim's command line: python -m ldpsim COMMAND (run, table, compare, trace, check, kernels, keys, audit, fit).

A thin layer over the Python API (:mod:`ldpsim.api`). ``run`` flags are the
config keys: ``--reps``, ``--n`` and ``--seed`` directly, every key through
``--set KEY=VALUE``; command-line values win over the file.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import warnings
from pathlib import Path

from .engine.runs.backends import BACKENDS
from .engine.errors import ConfigError, ConfigWarning, MissingExtra
from .engine.runs.outdir import read_meta, write_text

PROG = "ldpsim"


class _Once(argparse.Action):
    """A flag given once: a second ``--n`` would silently replace the first (argparse keeps the last)."""

    def __call__(self, parser, namespace, values, option_string=None):
        earlier = getattr(namespace, self.dest, None)
        if earlier is not None:
            namespace.repeated = getattr(namespace, "repeated", None) or (option_string, earlier, values)
        setattr(namespace, self.dest, values)


def _check_repeated(args) -> None:
    repeated = getattr(args, "repeated", None)
    if repeated:
        flag, first, second = repeated
        show = (lambda v: " ".join(v) if isinstance(v, list) else v)
        raise ConfigError(f"{flag} is given twice ({flag} {show(first)} and {flag} {show(second)}): give it once"
                          + (", with every value after it" if isinstance(first, list) else ""))


class _Parser(argparse.ArgumentParser):
    """argparse with its refusals in one line, as every other refusal (not the whole usage before it)."""

    def error(self, message):
        self.exit(2, f"{PROG}: error: {message} ({self.prog} --help lists the flags)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=f"python -m {PROG}", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a config and write summary.csv, tables, figures and meta.json")
    run.add_argument("config", help="YAML config file (keys as in configs/quantile.yaml; 'study' picks the study)")
    run.add_argument("--reps", action=_Once, help="Monte Carlo replications per setting")
    run.add_argument("--n", nargs="+", action=_Once, metavar="N", help="sample sizes (e.g. 1e6 1e7)")
    run.add_argument("--seed", action=_Once, help="root seed")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="set any config key; VALUE is YAML, so lists give grids (--set tau=[0.5,0.9])")
    run.add_argument("--n-jobs", type=int, default=-1, help="parallel workers (default: all cores)")
    run.add_argument("--backend", choices=BACKENDS, default="auto",
                     help="joblib backend: auto (threads where the study's replications are nogil kernels, else "
                          "loky's processes), loky or threading on this machine, dask or ray on a cluster "
                          "(dask alone starts a local cluster)")
    run.add_argument("--scheduler", metavar="ADDRESS",
                     help="dask scheduler to run on (tcp://host:8786 or a scheduler file); needs --backend dask")
    run.add_argument("--out", help="output directory (default: results/<config name>); one holding another run is "
                                    "refused")
    run.add_argument("--resume", action="store_true", help="reuse replications saved by an interrupted run")
    run.add_argument("--force", action="store_true",
                     help="replace the outputs and chunks of another run in --out (otherwise refused)")
    run.add_argument("--quiet", action="store_true", help="no progress bar, no table on stdout")
    run.add_argument("--allow-long", action="store_true",
                     help="run even if the run is estimated to take more than 7 days (otherwise refused before any "
                          "work, with the estimate)")
    run.add_argument("--lanes", type=_lanes, metavar="L",
                     help="replications a kernel call advances side by side, in SIMD vectors (default: one vector "
                          "register of doubles, 8 with AVX-512, 4 with AVX2; 1: one at a time); never changes the "
                          "numbers")

    table = sub.add_parser("table", help="re-render a run's tables and figures from its CSV files")
    table.add_argument("dir", help="run output directory")

    comp = sub.add_parser("compare", help="compare a run with a published table")
    comp.add_argument("dir", help="run output directory")
    comp.add_argument("--table", help="reference table name (default: the paper's table of the run's model)")

    trace = sub.add_parser("trace", help="one path with its intervals at log-spaced checkpoints (Figure 1 of Dette & "
                                         "Graw 2024)")
    trace.add_argument("config", help="YAML config file (keys as in configs/trace_quantile.yaml)")
    trace.add_argument("--n", action=_Once, metavar="N", help="path length, the last checkpoint (e.g. 1e6)")
    trace.add_argument("--seed", action=_Once, help="root seed")
    trace.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="set any trace config key (one value each: a trace is one path)")
    trace.add_argument("--out", help="output directory (default: results/<config name>)")
    trace.add_argument("--force", action="store_true", help="replace the outputs of another run in --out")
    trace.add_argument("--allow-long", action="store_true",
                       help="trace even if the path is estimated to take more than 7 days (otherwise refused)")

    check = sub.add_parser("check", help="which assumptions of Theorem 3.2 of Dette & Graw (2024) each setting meets "
                                         "(exit 1 if one fails)")
    check.add_argument("config", help="YAML config file")
    check.add_argument("--n", nargs="+", action=_Once, metavar="N", help="sample sizes (e.g. 1e6 1e7)")
    check.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="set any config key, as for run")

    kern = sub.add_parser("kernels", help="the kernels a run of a config compiles (model record, lanes, zoo pass) "
                                          "and whether each is in numba's cache; nothing is compiled")
    kern.add_argument("config", help="YAML config file")
    kern.add_argument("--n", nargs="+", action=_Once, metavar="N", help="sample sizes, as for run")
    kern.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="set any config key, as for run")
    kern.add_argument("--lanes", type=_lanes, metavar="L", help="the lanes of the run, as for run")
    kern.add_argument("--compile", action="store_true",
                      help="compile the missing kernels now, side by side on all cores, and say how long it took")

    keys = sub.add_parser("keys", help="the config keys of a model, built-in or a user's file (path.py:Class)")
    keys.add_argument("model", help="a built-in model's name, or a user's model as path/to/file.py:Class")

    audit = sub.add_parser("audit", help="audit a user's mechanism (path.py:Class): an empirical lower bound on its "
                                         "epsilon, drawn through its kernel code")
    audit.add_argument("mechanism", help="a user's mechanism as path/to/file.py:Class")
    audit.add_argument("--epsilon", default="1", help="budget the mechanism is built with (default 1)")
    audit.add_argument("--delta", default=None, help="its delta, for a mechanism that takes one")
    audit.add_argument("--bounds", default="1", help="the gradient's bound per coordinate, e.g. 1 or 1,0.5 (default 1)")
    audit.add_argument("--draws", default="1e6", help="draws per input (default 1e6)")
    audit.add_argument("--seed", default="20240501", help="seed of the draws")

    fit = sub.add_parser("fit", help="DP-SGD estimates and private confidence intervals on a CSV file (Xia, Zhang "
                                     "& Cai 2025)",
                         description="The budget covers the whole release: the DP-SGD path, the private A~ and S~ "
                                     "of the intervals, and the private scaling of the columns. Where the release "
                                     "would be unreliable (too few rows for the budget, a path that cannot move or "
                                     "did not settle, a scaling that found nothing above its noise) fit refuses "
                                     "in one line, decided from public or private quantities only. Numbers are "
                                     "decimal (digits, at most one '.', an optional exponent).")
    fit.add_argument("data", nargs="?", help="CSV file with a header row; numeric columns")
    fit.add_argument("--model", choices=("linear", "logistic"), default="linear")
    fit.add_argument("--response", required=True, help="response column (logistic: 0/1)")
    fit.add_argument("--covariates", nargs="+", action=_Once, metavar="COLUMN",
                     help="covariate columns (default: all others); put the data file before this flag (a file "
                          "named last here is taken as the data when none was given)")
    budget = fit.add_mutually_exclusive_group()
    budget.add_argument("--epsilon", type=_decimal, help="budget of the whole release as (epsilon, --delta)-DP")
    budget.add_argument("--mu", type=_decimal, help="budget of the whole release as mu-GDP, read at --delta")
    fit.add_argument("--delta", type=_decimal, default=1e-5,
                     help="delta of the budget and of the guarantee (1e-5; keep it well below 1/n)")
    fit.add_argument("--accountant", choices=("rdp", "pld", "gdp", "clt"),
                     help="default the valid one for --sampling: rdp (swor), pld (poisson, replace-one "
                          "neighbours); clt (swor only) is Xia, Zhang & Cai (2025)'s approximation, not a bound")
    fit.add_argument("--sampling", choices=("swor", "poisson", "cyclic"), default="swor",
                     help="mini-batches without replacement (default) or Poisson; cyclic passes are refused (with "
                          "noise each pass costs budget and the intervals do not cover)")
    fit.add_argument("--share-moments", type=_decimal, default=0.1,
                     help="share of the GDP budget mu^2 for A~ and S~ (default 0.1)")
    fit.add_argument("--share-scaling", type=_decimal, default=0.1,
                     help="share of mu^2 for the private scaling (default 0.1; used and checked only if a column is "
                          "scaled privately)")
    fit.add_argument("--bounds", nargs="+", action=_Once, metavar="COLUMN=LOW:HIGH",
                     help="public bounds of columns, each once (values clipped to them; spends nothing), e.g. "
                          "age=18:100")
    scaling = fit.add_mutually_exclusive_group()
    scaling.add_argument("--no-scaling", "--no-standardize", dest="no_scaling", action="store_true",
                         help="use the columns without bounds as they are (their scale is taken as public)")
    scaling.add_argument("--nonprivate-scaling", action="store_true",
                         help="scale by the sample means and SDs: NOT private, and the output opens by saying so")
    fit.add_argument("--clip", type=_decimal,
                     help="per-example gradient clip (default 3 sqrt(d) linear, 1.5 sqrt(d) logistic)")
    fit.add_argument("--kappa", type=_decimal, default=2.0, help="T = min(n^kappa, --max-steps) steps (default 2)")
    fit.add_argument("--max-steps", default="1e8", help="cap on T (default 1e8)")
    fit.add_argument("--batch-size", type=_whole, default=1, help="m (default 1)")
    fit.add_argument("--c", type=_decimal, default=0.2, help="step size eta_t = c t^-0.501 (default 0.2)")
    fit.add_argument("--level", type=_decimal, default=0.95, help="confidence level (default 0.95)")
    fit.add_argument("--seed", type=_whole,
                     help="seed of the noise. Default: a fresh random seed, never printed unless --show-seed. A "
                          "fixed seed makes the guarantee hold only while the seed is secret: whoever has it can "
                          "redraw the noise and subtract it (reproducible simulations belong to `run`)")
    fit.add_argument("--show-seed", action="store_true",
                     help="print the fresh seed drawn, to reproduce the run (keep it as secret as the data)")
    fit.add_argument("--show-nonprivate", action="store_true", help="also print the full-sample fit (NOT private)")
    fit.add_argument("--show-values", action="store_true",
                     help="put data values and row numbers into error messages (default: left out, so that a log "
                          "of errors carries no data; use only at your own terminal)")
    return parser


def _lanes(text: str) -> int:
    """``--lanes``: an integer, checked against its range by the API (:func:`ldpsim.api.run`)."""
    from .engine.runs.run import MAX_LANES

    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer; allowed: 1 to {MAX_LANES}, or leave --lanes "
                                         "out (the fastest measured)") from None


def _decimal(text: str) -> float:
    """A fit option's number under the one rule of fit's numbers (``1_000`` and hex refused, as in cells)."""
    from .fit.read import parse_number

    try:
        return parse_number(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _whole(text: str) -> int:
    """A fit option's integer: decimal digits only (``int`` alone reads ``1_000``)."""
    if not text.strip().isascii() or not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number in decimal digits")
    return int(text)


def _fit(args) -> int:
    from .engine.runs.config import as_int
    from .fit import fit
    from .fit.read import NUMBER_RULE, parse_number

    data, covariates, bounds = args.data, args.covariates, args.bounds
    if data is None:
        # argparse gives --covariates and --bounds everything after them, the data file too
        if covariates and Path(covariates[-1]).is_file():
            data, covariates = covariates[-1], covariates[:-1] or None
        elif bounds and "=" not in bounds[-1] and Path(bounds[-1]).is_file():
            data, bounds = bounds[-1], bounds[:-1] or None
        else:
            swallowed = [flag for flag, given in (("--covariates", covariates), ("--bounds", bounds)) if given]
            raise ConfigError("give the data file (fit DATA.csv --response Y ...)"
                              + (f", before {' and '.join(swallowed)} (which take every value after them)"
                                 if swallowed else ""))
    elif covariates and Path(covariates[-1]).is_file():
        if Path(covariates[-1]).resolve() != Path(data).resolve():
            raise ConfigError(f"{covariates[-1]!r} after --covariates is a file, and the data file is {data!r}: give "
                              "one data file")
        covariates = covariates[:-1] or None  # the data file named twice
    scaling = "none" if args.no_scaling else "nonprivate" if args.nonprivate_scaling else "private"
    try:
        steps = parse_number(args.max_steps)
    except ValueError:
        raise ConfigError(f"max_steps = {args.max_steps!r} is not {NUMBER_RULE}") from None
    max_steps = as_int("max_steps", steps)
    from .engine.dialect.interrupt import in_worker_thread

    # in a worker thread: the path's kernel polls the stop flag, and the main thread stays free for Ctrl-C (a path
    # of --max-steps 1e10 ignored it for minutes)
    result = in_worker_thread(fit, data, args.model, args.response, covariates, epsilon=args.epsilon, mu=args.mu,
                              delta=args.delta, accountant=args.accountant, sampling=args.sampling,
                              share_moments=args.share_moments, share_scaling=args.share_scaling, scaling=scaling,
                              bounds=bounds, clip=args.clip, kappa=args.kappa, max_steps=max_steps,
                              batch_size=args.batch_size, c=args.c, level=args.level, seed=args.seed,
                              show_nonprivate=args.show_nonprivate, show_values=args.show_values,
                              show_seed=args.show_seed)
    print(result.render())
    return 0


#: Flags of ``run`` and ``trace`` that are not config keys: ``--set n_jobs=2`` is refused with the flag to use.
_RUN_FLAGS = {"n_jobs": "--n-jobs", "backend": "--backend", "scheduler": "--scheduler", "out": "--out",
              "resume": "--resume", "force": "--force", "quiet": "--quiet", "progress": "--quiet",
              "allow_long": "--allow-long", "lanes": "--lanes",
              "name": None, "command": None, "overrides_from": None, "log": None, "source": "the config file"}


def _overrides(args) -> dict:
    overrides = _assignments(args.set)
    for key in overrides:
        if key in _RUN_FLAGS:
            flag = _RUN_FLAGS[key]
            raise ConfigError(f"--set {key}=...: {key} is not a config key" + (f"; run takes it as {flag}" if flag else ""))
    flags = {"reps": getattr(args, "reps", None), "seed": getattr(args, "seed", None), "n": args.n}
    for key, value in flags.items():
        if value is None:
            continue
        if key in overrides:
            raise ConfigError(f"{key} is given twice: --{key} and --set {key}=...; give it once")
        overrides[key] = value if isinstance(value, str) or len(value) > 1 else value[0]
    return overrides


def _assignments(items) -> dict:
    """``--set`` arguments as a mapping; a key set twice is refused (which one was meant?)."""
    from .engine.runs.config import parse_assignment, show

    overrides = {}
    for item in items:
        key, value = parse_assignment(item)
        if key in overrides:
            raise ConfigError(f"{key} is set twice in --set ({show(overrides[key])} and {show(value)}); give it once")
        overrides[key] = value
    return overrides


def _run(args) -> int:
    from . import api

    overrides = _overrides(args)
    result = api.run(args.config, out=args.out if args.out is not None else api.DEFAULT_OUT, n_jobs=args.n_jobs,
                     backend=args.backend, scheduler=args.scheduler, resume=args.resume, force=args.force,
                     progress=not args.quiet, command=[PROG, *sys.argv[1:]], overrides_from="--set",
                     allow_long=args.allow_long, lanes=args.lanes, **overrides)
    # the run's outputs are complete: a SIGTERM from here on (a batch system's limit) no longer interrupts it, and
    # loky's workers are stopped now, before the interpreter's exit, which a signal would cut short (leaked
    # semaphores, raw warnings)
    _outputs_complete()
    if not args.quiet:
        print(result.render())
    failed = result.meta["n_failed"]
    if failed:
        print(f"{PROG}: {failed} replication(s) diverged, gave non-finite results or lost their precision; "
              "they are excluded and counted in n_failed", file=sys.stderr)
    print(f"{PROG}: wrote {result.out}/: {', '.join(result.files)}, meta.json", file=sys.stderr)
    return 0


def _table(args) -> int:
    from .api import open_result

    result = open_result(args.dir)
    try:
        result.figures()
        text = result.render()
    except OSError as exc:
        raise ConfigError(f"dir = {args.dir!r}: cannot write {exc.filename or 'its tables'}: "
                          f"{exc.strerror or exc}") from None
    except ConfigError:  # the study's own check of its tables, one line already
        raise
    except (KeyError, ValueError, TypeError, IndexError) as exc:  # tables that pass their checks but disagree
        raise ConfigError(f"dir = {args.dir!r}: its tables cannot be drawn ({type(exc).__name__}: {exc}); "
                          "are its CSV tables (summary.csv, and zoo.csv for the zoo) and meta.json from one run?") from None
    print(text)
    return 0


def _compare(args) -> int:
    from .api import load_config, open_result
    from .reporting.reference import DEFAULT_TABLES, compare, mismatch, paper_tables, render_comparison, setting_text
    from .studies import STUDIES

    # the study first: another study's tables need not parse as this one's
    meta = read_meta(Path(args.dir) / "meta.json")[0] or {}
    config = meta.get("config") if isinstance(meta.get("config"), dict) else {}
    study = config.get("study", meta.get("study", "coverage"))
    if study != "coverage" and study in STUDIES:
        raise ConfigError(f"dir = {args.dir!r} holds a {study} run: compare scores the coverage "
                          "study's intervals against the paper's tables")
    result = open_result(args.dir)
    recorded = result.meta.get("config", {})
    try:  # the run's config as this ldpsim resolves it (keys added since it ran get their values)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConfigWarning)
            fixed = load_config(dict(recorded)).values if recorded else {}
    except ConfigError:
        fixed = dict(recorded)
    tables = paper_tables()
    names = [k for k, v in tables.items() if isinstance(v, dict) and "rows" in v]
    models = fixed.get("model") if isinstance(fixed.get("model"), list) else [fixed.get("model")]
    table = args.table or next((DEFAULT_TABLES[m] for m in models if isinstance(m, str) and m in DEFAULT_TABLES),
                               "table1_quantile")
    if table not in names:
        raise ConfigError(f"table = {table!r} is not one of: {', '.join(names)}")
    entries = compare(result.rows, table, fixed)
    columns = {int(n) for n in tables[table]["columns"]}
    reasons = [why for row in result.rows if row["n"] in columns
               and (why := mismatch(row, tables[table], fixed)) is not None]
    if not entries:
        why = reasons[0] if reasons else (
            f"none of its n ({', '.join(sorted({str(r['n']) for r in result.rows}))}) is a column of the table "
            f"({', '.join(f'{n:.0e}' for n in sorted(columns))}) with the paper's methods")
        raise ConfigError(f"dir = {args.dir!r}: no setting matches {table} ({setting_text(table)}): {why}")
    if reasons:
        print(f"{PROG}: {len(reasons)} row(s) left out of the comparison (first: {reasons[0]})",
              file=sys.stderr)
    text = render_comparison(entries)
    try:
        write_text(Path(args.dir) / f"compare_{table}.md", text)
    except OSError as exc:
        raise ConfigError(f"dir = {args.dir!r}: cannot write compare_{table}.md: {exc.strerror or exc}") from None
    print(text)
    return 0


def _trace(args) -> int:
    import numpy as np

    from .engine.dialect.interrupt import in_worker_thread
    from .engine.runs.outdir import RunIdentity, open_output
    from .engine.runs.resources import check_time
    from .recursion.keys import path_seconds
    from .studies.coverage.trace import (check_trace_keys, compute_trace, figure_class, load_trace, write_trace,
                                         write_trace_meta)

    overrides = _assignments(args.set)
    check_trace_keys(overrides, "--set", context=_config_model(args.config))  # a user's model: its keys too
    for key in ("n", "seed"):
        if getattr(args, key) is not None:
            if key in overrides:
                raise ConfigError(f"{key} is given twice: --{key} and --set {key}=...; give it once")
            overrides[key] = getattr(args, key)
    config = load_trace(args.config, overrides)
    check_time([(path_seconds(config.setting), 1)], 1, allow_long=args.allow_long)
    out = args.out if args.out is not None else Path("results") / Path(args.config).stem
    try:
        figure_class()  # before the path, which may run for minutes
    except MissingExtra as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    command = [PROG, *sys.argv[1:]]
    identity = RunIdentity.of("trace", config.values)
    with open_output(out, identity, force=args.force, lock=False) as handle:
        try:
            if not handle.holds_this_run:
                write_trace_meta(config, handle.path, identity, command)  # which run, before the path runs
            result = in_worker_thread(compute_trace, config)  # Ctrl-C stops the path (ldpsim.engine.dialect.interrupt)
            write_trace(result, handle.path, command=command)
        except BaseException as exc:
            handle.discard()
            if isinstance(exc, OSError):
                raise ConfigError(f"out = {str(handle.path)!r}: cannot write {exc.filename or 'its files'}: "
                                  f"{exc.strerror or exc}") from None
            raise
    out = handle.path
    if np.isnan(result.bounds[-1]).any():
        print(f"{PROG}: some intervals at n = {config.setting.n} are missing: the path diverged or its numbers lost "
              "their precision (trace.csv holds nan there)", file=sys.stderr)
    last = ", ".join(f"{m} [{lo:.6g}, {hi:.6g}]" for m, (lo, hi) in zip(config.methods, result.bounds[-1]))
    print(f"n = {config.setting.n}: theta_bar {result.trace.theta_bar[-1]:.6g}; {last}")
    print(f"{PROG}: wrote {out / 'trace.csv'}, figure1.png, meta.json "
          f"({len(result.checkpoints)} checkpoints, path {result.seconds_path:.1f} s)", file=sys.stderr)
    return 0


def _keys(args) -> int:
    """The keys a model reads besides the common path keys, with their defaults and what they allow."""
    from tabulate import tabulate

    from .engine.runs.config import show
    from .engine.runs.usercode import shown
    from .models import canonical_model, model_class
    from .recursion.keys import PATH_KEYS, with_model_keys
    from .reporting.papers import cite

    value = canonical_model("model", args.model)
    cls = model_class(value)
    keys = {k.name: k for k in with_model_keys(PATH_KEYS, {"model": value})}
    rows = []
    for name in cls.keys:
        if name not in keys:
            continue
        key = keys[name]
        default = cls.key_defaults.get(name, key.default)
        allowed = key.allowed()
        if name == "mechanism":  # this model's mechanisms, not every model's
            default = cls.mechanisms[0] if cls.mechanisms else None
            users = getattr(cls, "user_mechanisms", False)
            allowed = ("one of: " + ", ".join(cls.mechanisms) + (", or path/to/file.py:Class" if users else "")
                       if len(cls.mechanisms) > 1 or users else f"{cls.mechanisms[0]} (the only one)")
        text = key.help
        if name == "mechanism" and not getattr(cls, "user_mechanisms", False):
            text = "privacy mechanism"
        mine = [part for part in allowed.split("; ") if f"(model {cls.name})" in part]
        if len(mine) == 1:  # a key several models read, each its own values (law: the mean's, the quantile's)
            allowed = mine[0].replace(f" (model {cls.name})", "")
        rows.append([name, show(default), allowed, cite(text)])
    common = ", ".join(dict.fromkeys(k for k in ("epsilon", *cls.path_keys) if k not in cls.keys and k != "n"))

    print(f"model {shown(value)} ({cls.name}, {'a user' + chr(39) + 's file' if cls.declared else 'built-in'})")
    print(tabulate(rows, ["key", "default", "allowed", "what"], tablefmt="github") if rows else "no keys of its own")
    print(f"and the keys of every path: {common}, n, batch_size (all keys: the documentation's Reference, Config keys)")
    return 0


def _audit(args) -> int:
    """Audit a user's mechanism through its registered noise function; exit 1 if the audit refutes its claim."""
    from .engine.runs.config import as_float, as_int
    from .privacy.user_audit import audit_mechanism

    bounds = [as_float("--bounds", b) for b in str(args.bounds).split(",")]
    delta = None if args.delta is None else as_float("--delta", args.delta)
    text, refuted = audit_mechanism(args.mechanism, as_float("--epsilon", args.epsilon), bounds, delta,
                                    as_int("--draws", args.draws), as_int("--seed", args.seed))
    print(text)
    return 1 if refuted else 0


def _config_model(path) -> dict:
    """``{"model": ...}`` of a config file (a user's model declares keys that ``--set`` may give), or ``{}``."""
    from .engine.runs.config import load_yaml
    from .studies import anchor_user_files

    try:
        mapping = load_yaml(path)
    except ConfigError:
        return {}  # the config's own load says what is wrong with it
    return anchor_user_files({k: v for k, v in mapping.items() if k == "model"}, Path(path).parent)


def _check(args) -> int:
    """Exit status 0 if every assumption holds in every setting, 1 if one fails (2 on bad input)."""
    from .api import load_config
    from .studies.coverage.checks import check_config, render

    with warnings.catch_warnings():  # the table reports what the warnings would say
        warnings.simplefilter("ignore", ConfigWarning)
        config = load_config(args.config, overrides_from="--set", **_overrides(args))
    if config.study.name != "coverage":
        raise ConfigError(f"study = {config.study.name!r}: check covers the assumptions of the coverage study "
                          "(Dette & Graw 2024)")
    checks = check_config(config)
    print(render(checks))
    return 0 if all(c.holds for c in checks) else 1


def _kernels(args) -> int:
    """The kernels of a run of the config: a table, cached or not; with --compile, the missing ones compiled."""
    import time

    from tabulate import tabulate

    from .api import load_config
    from .engine.runs import compiling, usercode
    from .engine.runs.backends import local_workers
    from .engine.dialect.jit import DISABLED

    config = load_config(args.config, overrides_from="--set", **_overrides(args))
    if DISABLED:
        print("NUMBA_DISABLE_JIT is set: nothing is compiled, the kernels run as Python")
        return 0
    found = compiling.plan(config.study, config, args.lanes)
    rows = [[k.name, d["record"], d["lanes"], d["parts"], "yes" if k.cached else "no"]
            for k in found.kernels for d in [k.describe()]]
    print(tabulate(rows, headers=["kernel", "model record", "lanes", "zoo pass", "cached"]))
    missing = found.missing
    cores = local_workers(-1)
    print(f"\n{len(found.kernels) - len(missing)} of {len(found.kernels)} kernels cached in {_cache_dir()}"
          + (f"; a run compiles the other {len(missing)} first, side by side on up to {cores} cores" if missing else ""))
    if not found.complete:
        print(f"({len(found.unfinished)} part(s) of the run's warm-up needed the result of a kernel that is not "
              f"loaded ({found.problem}): what they call after it is not listed, and compiles when they run)")
    if args.compile and (missing or not found.complete):
        tic = time.perf_counter()
        with usercode.compile_errors("user code"):
            compiling.prepare(config.study, config, args.lanes, cores)
        print(f"compiled in {time.perf_counter() - tic:.1f} s on {min(cores, max(1, len(missing)))} core(s)")
    return 0


def _cache_dir() -> str:
    import numba

    return numba.config.CACHE_DIR or "numba's default cache folders"


def _show_warning(message, category, filename, lineno, file=None, line=None):
    if issubclass(category, ConfigWarning):
        print(f"{PROG}: warning: {message}", file=sys.stderr)
    else:
        print(warnings.formatwarning(message, category, filename, lineno, line), file=sys.stderr, end="")


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (2 for bad input)."""
    args = _parser().parse_args(argv)
    warnings.showwarning = _show_warning
    _COMPLETE["set"] = False
    previous = _terminate_as_interrupt()
    try:
        _check_repeated(args)
        return {"run": _run, "table": _table, "compare": _compare, "trace": _trace, "check": _check,
                "fit": _fit, "keys": _keys, "audit": _audit, "kernels": _kernels}[args.command](args)
    except ConfigError as exc:
        text = str(exc).strip() if getattr(exc, "multiline", False) else _one_line(exc)  # a user's code: a few lines
        print(f"{PROG}: error: {text}", file=sys.stderr)
        return 2
    except MissingExtra as exc:
        print(f"{PROG}: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        what = "terminated" if isinstance(exc, Terminated) else "interrupted"
        if args.command == "run":
            print(f"{PROG}: {what}; finished chunks are saved, rerun with --resume to continue", file=sys.stderr)
        else:  # a trace is one path, kept nowhere until it ends; table, compare and check change nothing
            print(f"{PROG}: {what}", file=sys.stderr)
        return 143 if isinstance(exc, Terminated) else 130
    except MemoryError:
        print(f"{PROG}: error: out of memory: lower --n-jobs, reps or the size of the grid", file=sys.stderr)
        return 1
    except BrokenPipeError as exc:
        if not _stdout_closed():  # another pipe (a worker's): a bug, reported as one
            return _internal_error(exc)
        return 1  # `ldpsim fit ... | head`: the reader has all it wanted; quietly, as Python's docs recommend
    except Exception as exc:  # a bug: one line, and the traceback on request
        return _internal_error(exc)
    finally:
        # the process's own command line after a complete run: it only exits now, and a SIGTERM would cut its exit
        # short (killed, exit -15, joblib's temporary folder and loky's semaphores left behind)
        if previous is not None and not (argv is None and _COMPLETE["set"]):
            signal.signal(signal.SIGTERM, previous)


def _stdout_closed() -> bool:
    """Whether stdout's reader has gone (a closed pipe); if so, stdout is pointed at devnull for the exit's flush."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    except (OSError, ValueError):
        return False
    else:  # the failed write's data may be gone with it: ask the pipe itself
        try:
            import select

            poll = select.poll()
            poll.register(sys.stdout.fileno(), 0)  # (POLLERR, the reader gone, is always reported)
            if not any(event & select.POLLERR for _, event in poll.poll(0)):
                return False
        except (AttributeError, OSError, ValueError):  # no poll, or a stdout without a file descriptor
            return False
    try:  # Python flushes stdout at exit: that flush must not fail again ("Exception ignored ...")
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # a stdout without a file descriptor (a test's capture)
        pass
    return True


def _internal_error(exc: BaseException) -> int:
    """A bug: one line, and the traceback on request (``LDPSIM_TRACEBACK=1``); exit status 70."""
    if os.environ.get("LDPSIM_TRACEBACK"):
        raise exc
    print(f"{PROG}: internal error: {type(exc).__name__}: {_one_line(exc)} (a bug in ldpsim; please report it "
          "with the command; LDPSIM_TRACEBACK=1 shows where it happened)", file=sys.stderr)
    return 70


#: Set when a run's outputs are complete (:func:`_outputs_complete`): SIGTERM no longer interrupts it.
_COMPLETE = {"set": False}


def _outputs_complete() -> None:
    """A run's outputs are written: SIGTERM is ignored from now on (:func:`main` restores it), loky's workers stop."""
    _COMPLETE["set"] = True
    try:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    except (ValueError, OSError):  # not the main thread: main() did not install its handler either
        pass
    from joblib.externals.loky import reusable_executor

    executor = reusable_executor._executor  # (None if no loky worker ran; getting one would start it)
    if executor is not None:
        executor.shutdown(wait=True)


class Terminated(KeyboardInterrupt):
    """SIGTERM (a batch system's time limit, ``kill``), handled as Ctrl-C: chunks kept, one line, exit 143."""


def _terminate_as_interrupt():
    def handler(signum, frame):
        raise Terminated()

    try:
        return signal.signal(signal.SIGTERM, handler)
    except (ValueError, OSError):  # not the main thread (main() called from a thread): leave it
        return None


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return " ".join(text.splitlines()) if text else type(exc).__name__
