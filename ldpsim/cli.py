"""Command line: ``python -m ldpsim {run,table,compare,trace,check,fit} ...``.

A thin layer over the Python API (:mod:`ldpsim.api`). ``run`` flags are the
config keys: ``--reps``, ``--n`` and ``--seed`` directly, every key through
``--set KEY=VALUE``; command-line values win over the file.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from .engine.backends import BACKENDS
from .engine.errors import ConfigError, ConfigWarning, MissingExtra

PROG = "ldpsim"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m {PROG}", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a config and write summary.csv, tables, figures and meta.json")
    run.add_argument("config", help="YAML config file (keys as in configs/quantile.yaml; 'study' picks the study)")
    run.add_argument("--reps", help="Monte Carlo replications per setting")
    run.add_argument("--n", nargs="+", metavar="N", help="sample sizes (e.g. 1e6 1e7)")
    run.add_argument("--seed", help="root seed")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="set any config key; VALUE is YAML, so lists give grids (--set tau=[0.5,0.9])")
    run.add_argument("--n-jobs", type=int, default=-1, help="parallel workers (default: all cores)")
    run.add_argument("--backend", choices=BACKENDS, default="loky",
                     help="joblib backend: loky or threading on this machine, dask or ray on a cluster "
                          "(dask alone starts a local cluster)")
    run.add_argument("--scheduler", metavar="ADDRESS",
                     help="dask scheduler to run on (tcp://host:8786 or a scheduler file); needs --backend dask")
    run.add_argument("--out", type=Path, help="output directory (default: results/<config name>)")
    run.add_argument("--resume", action="store_true", help="reuse replications saved by an interrupted run")
    run.add_argument("--quiet", action="store_true", help="no progress bar, no table on stdout")

    table = sub.add_parser("table", help="re-render a run's tables and figures from its CSV files")
    table.add_argument("dir", type=Path, help="run output directory")

    comp = sub.add_parser("compare", help="compare a run with a published table")
    comp.add_argument("dir", type=Path, help="run output directory")
    comp.add_argument("--table", help="reference table name (default: the paper's table of the run's model)")

    trace = sub.add_parser("trace", help="one path with its intervals at log-spaced checkpoints (Figure 1)")
    trace.add_argument("config", help="YAML config file (keys as in configs/trace_quantile.yaml)")
    trace.add_argument("--n", metavar="N", help="path length, the last checkpoint (e.g. 1e6)")
    trace.add_argument("--seed", help="root seed")
    trace.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="set any trace config key (one value each: a trace is one path)")
    trace.add_argument("--out", type=Path, help="output directory (default: results/<config name>)")

    check = sub.add_parser("check", help="which assumptions of Theorem 3.2 each setting meets (exit 1 if one fails)")
    check.add_argument("config", help="YAML config file")
    check.add_argument("--n", nargs="+", metavar="N", help="sample sizes (e.g. 1e6 1e7)")
    check.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="set any config key, as for run")

    fit = sub.add_parser("fit", help="DP-SGD estimates and private confidence intervals on a CSV file (002)")
    fit.add_argument("data", help="CSV file with a header row; numeric columns")
    fit.add_argument("--model", choices=("linear", "logistic"), default="linear")
    fit.add_argument("--response", required=True, help="response column (logistic: 0/1)")
    fit.add_argument("--covariates", nargs="+", metavar="COLUMN", help="covariate columns (default: all others)")
    budget = fit.add_mutually_exclusive_group()
    budget.add_argument("--mu", type=float, help="GDP budget of the DP-SGD path (default 2)")
    budget.add_argument("--epsilon", type=float, help="budget as (epsilon, --delta)-DP, converted through GDP")
    fit.add_argument("--delta", type=float, default=1e-5, help="delta of --epsilon and of the reported guarantee")
    fit.add_argument("--mu-var", type=float, help="GDP budget of the private A~, S~ (default: the path's)")
    fit.add_argument("--clip", type=float, help="per-example gradient clip (default 3 sqrt(d) linear, 1.5 sqrt(d) logistic)")
    fit.add_argument("--kappa", type=float, default=2.0, help="T = min(n^kappa, --max-steps) steps (default 2)")
    fit.add_argument("--max-steps", type=float, default=1e8, help="cap on T (default 1e8)")
    fit.add_argument("--batch-size", type=int, default=1, help="m (default 1)")
    fit.add_argument("--c", type=float, default=0.2, help="step size eta_t = c t^-0.501 (default 0.2)")
    fit.add_argument("--level", type=float, default=0.95, help="confidence level (default 0.95)")
    fit.add_argument("--no-standardize", action="store_true",
                     help="use the columns as they are (the sample means and SDs are not private)")
    fit.add_argument("--seed", type=int, help="seed (default: fresh entropy; a fixed seed makes the noise reproducible)")
    fit.add_argument("--show-nonprivate", action="store_true", help="also print the full-sample fit (NOT private)")
    return parser


def _fit(args) -> int:
    from .studies.dpsgd.fit import fit

    result = fit(args.data, args.model, args.response, args.covariates, mu=args.mu, epsilon=args.epsilon,
                 delta=args.delta, mu_var=args.mu_var, clip=args.clip, kappa=args.kappa,
                 max_steps=int(args.max_steps), batch_size=args.batch_size, c=args.c, level=args.level,
                 standardize=not args.no_standardize, seed=args.seed, show_nonprivate=args.show_nonprivate)
    print(result.render())
    return 0


def _overrides(args) -> dict:
    from .engine.config import parse_assignment

    overrides = dict(parse_assignment(item) for item in args.set)
    for key in ("reps", "seed"):
        if getattr(args, key, None) is not None:
            overrides[key] = getattr(args, key)
    if args.n is not None:
        overrides["n"] = args.n if isinstance(args.n, str) or len(args.n) > 1 else args.n[0]
    return overrides


def _run(args) -> int:
    from . import api

    result = api.run(args.config, out=args.out if args.out is not None else api.DEFAULT_OUT, n_jobs=args.n_jobs,
                     backend=args.backend, scheduler=args.scheduler, resume=args.resume, progress=not args.quiet,
                     command=[PROG, *sys.argv[1:]], overrides_from="--set", **_overrides(args))
    if not args.quiet:
        print(result.render())
    failed = result.meta["n_failed"]
    if failed:
        print(f"{PROG}: {failed} replication(s) diverged or gave non-finite results; "
              "they are excluded and counted in n_failed", file=sys.stderr)
    print(f"{PROG}: wrote {result.out}/: {', '.join(result.files)}, meta.json", file=sys.stderr)
    return 0


def _table(args) -> int:
    from .api import open_result

    result = open_result(args.dir)
    result.figures()
    print(result.render())
    return 0


def _compare(args) -> int:
    from .api import open_result
    from .reporting.reference import DEFAULT_TABLES, compare, paper_tables, render_comparison

    result = open_result(args.dir)
    fixed = result.meta.get("config", {})
    table = args.table or DEFAULT_TABLES.get(fixed.get("model"), "table1_quantile")
    tables = paper_tables()
    if table not in tables or "rows" not in tables[table]:
        names = [k for k, v in tables.items() if isinstance(v, dict) and "rows" in v]
        raise ConfigError(f"table = {table!r} is not one of: {', '.join(names)}")
    text = render_comparison(compare(result.rows, table, fixed))
    (args.dir / f"compare_{table}.md").write_text(text)
    print(text)
    return 0


def _trace(args) -> int:
    from .engine.config import parse_assignment
    from .studies.coverage.trace import TRACE_KEYS, compute_trace, figure_class, load_trace, write_trace

    overrides = dict(parse_assignment(item) for item in args.set)
    from .engine.config import check_keys

    check_keys(overrides, "--set", TRACE_KEYS)
    for key in ("n", "seed"):
        if getattr(args, key) is not None:
            overrides[key] = getattr(args, key)
    config = load_trace(args.config, overrides)
    out = args.out or Path("results") / Path(args.config).stem
    try:
        figure_class()  # before the path, which may run for minutes
    except MissingExtra as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    result = compute_trace(config)
    write_trace(result, out, command=[PROG, *sys.argv[1:]])
    last = ", ".join(f"{m} [{lo:.6g}, {hi:.6g}]" for m, (lo, hi) in zip(config.methods, result.bounds[-1]))
    print(f"n = {config.setting.n}: theta_bar {result.trace.theta_bar[-1]:.6g}; {last}")
    print(f"{PROG}: wrote {out / 'trace.csv'}, figure1.png, meta.json "
          f"({len(result.checkpoints)} checkpoints, path {result.seconds_path:.1f} s)", file=sys.stderr)
    return 0


def _check(args) -> int:
    """Exit status 0 if every assumption holds in every setting, 1 if one fails (2 on bad input)."""
    from .api import load_config
    from .studies.coverage.checks import check_config, render

    with warnings.catch_warnings():  # the table reports what the warnings would say
        warnings.simplefilter("ignore", ConfigWarning)
        config = load_config(args.config, overrides_from="--set", **_overrides(args))
    if config.study.name != "coverage":
        raise ConfigError(f"study = {config.study.name!r}: check covers the assumptions of the coverage study (000)")
    checks = check_config(config)
    print(render(checks))
    return 0 if all(c.holds for c in checks) else 1


def _show_warning(message, category, filename, lineno, file=None, line=None):
    if issubclass(category, ConfigWarning):
        print(f"{PROG}: warning: {message}", file=sys.stderr)
    else:
        print(warnings.formatwarning(message, category, filename, lineno, line), file=sys.stderr, end="")


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (2 for bad input)."""
    args = _parser().parse_args(argv)
    warnings.showwarning = _show_warning
    try:
        return {"run": _run, "table": _table, "compare": _compare, "trace": _trace, "check": _check,
                "fit": _fit}[args.command](args)
    except ConfigError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; finished chunks are saved, rerun with --resume to continue",
              file=sys.stderr)
        return 130
