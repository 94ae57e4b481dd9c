"""Time-uniform coverage (issue 31): every method at K log-spaced looks along each replication's path.

A pointwise 90% interval looked at again and again as the data arrive is no
longer a 90% statement. With ``looks: K`` a coverage run follows each
replication's path with the checkpoint kernel (:func:`.checkpoints.run_trace`), which
keeps every look's own blocks and batches (memory ``O(K n^(1 - beta) + K
n^((1 - gamma) / 2))`` numbers, never ``O(n)``), and builds every method's
interval at every look ``t_1 < ... < t_K = n`` as if the path ended there
(:func:`.checkpoints.trace_intervals`). The last look is ``n``: its intervals are,
to the bit, those of the same replication in a run without looks, so the
summary table does not change. Beside it the run writes

* ``looks.csv``: per setting x method x look, the pointwise coverage at ``t_k``
  and the mean length, with their Monte Carlo SEs;
* ``uniform.csv``: per setting x method, ``coverage_uniform``, the share of
  replications whose interval holds theta* at *every* look, with its SE
  (the time-uniform coverage a confidence sequence promises);
* ``looks.png``: pointwise coverage against ``t``, the time-uniform coverage as
  a level line per method.

The zoo's methods (HulC, HiGrad, OB, OBM, ...) are designed for the run's
length: at a look ``t`` each gives the interval of a run of ``n = t`` on the
same replication's draws (:meth:`.study.CoverageStudy._zoo_looks`).

A look whose interval is missing (a path that diverged before it) counts as
not covering; a look too early for a method is refused before the run.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from ...engine.runs.config import ConfigError, Key, Range, check_range, show
from ...engine.errors import MissingExtra
from ...engine.runs.resources import FLOAT
from ...engine.runs.usercode import display
from ...inference import intervals as inference
from ...inference.streaming import StreamLayout, checkpoint_grid
from ...models import build_model, model_class
from ...recursion.twins import path_twin, state_from_definitions
from ...reporting.stats import mean_se, proportion, set_length
from ...inference.methods import ZOO_METHODS
from ...inference.user_methods import is_user_method, label
from ...inference.methods.nprr import release_reference
from ...inference.nprr_cs import released_value
from .checkpoints import TraceLayout, run_trace, stream_counts, trace_intervals
from .releases import ReleaseTap
from .zoo import validate_zoo

#: Looks of ``looks: true``.
DEFAULT_LOOKS = 20
#: The first look of ``first_look: 0``: this fraction of ``n`` (a user looks once 1% of the data are in).
FIRST_LOOK_FRACTION = 0.01


def _parse_looks(name: str, value) -> int:
    # false / 0: off; true: DEFAULT_LOOKS; an integer K >= 2
    if value is False:
        return 0
    if value is True:
        return DEFAULT_LOOKS
    if isinstance(value, int) and (value == 0 or 2 <= value <= 1000):
        return int(value)
    raise ConfigError(f"{name} = {show(value)} is not one of: false, true ({DEFAULT_LOOKS} looks), "
                      "an integer in [2, 1000]")


LOOK_KEYS = (
    Key("looks", "any", False, grid=False, convert=_parse_looks, label="false, true or an integer in [2, 1000]",
        help=f"time-uniform coverage at K log-spaced looks (true: {DEFAULT_LOOKS}); docs/sequential.md"),
    Key("first_look", "int", 0, grid=False, range=Range("[0, inf)"),
        help=f"first look t_1 (0: {FIRST_LOOK_FRACTION:g} n)"),
)
LOOK_KEY_NAMES = tuple(k.name for k in LOOK_KEYS)


def look_grid(setting, options) -> np.ndarray:
    """The looks ``t_1 < ... < t_K = n`` of ``setting`` (``int64``; fewer than K where rounding repeats).

    ``first_look: 0`` starts at :data:`FIRST_LOOK_FRACTION` of ``n``, or later where a method needs it
    (two blocks, two batches after the burn-in batch, a zoo design that fits).
    """
    first = options["first_look"] or _earliest(setting, options,
                                               max(2, math.ceil(FIRST_LOOK_FRACTION * setting.n)))
    return checkpoint_grid(setting.n, options["looks"], min(first, setting.n - 1))


def _look_layout(s, methods, t: int) -> StreamLayout:
    """The blocks and batches of a path that ends at look ``t``."""
    return StreamLayout.build(t, s.beta, s.gamma, blocks=inference.uses_blocks(methods),
                              batches=inference.uses_batches(methods))


def _too_early(s, methods, t: int) -> list[str]:
    """The methods with no interval at look ``t`` (fewer than two blocks or batches)."""
    return inference.unavailable(methods, _look_layout(s, methods, t))


def _zoo_misfit(s, options, t: int) -> str | None:
    """Why the zoo's methods of ``options`` cannot run a run of ``n = t`` (their interval at look ``t``); None if they can.

    The reason ends with its advice: the run's ``n`` is the look's ``t``, so raising ``n`` is raising ``first_look``.
    """
    if not any(m in ZOO_METHODS for m in options["methods"]):
        return None
    try:
        validate_zoo(s.replace(n=t), options)
    except ConfigError as exc:
        text = str(exc).replace("raise n", "raise first_look")
        return text + ("" if "raise first_look" in text else "; raise first_look")
    return None


def _earliest(s, options, t: int) -> int:
    """``t``, or the first of ``t``, 1.25 t, ... at which every method has an interval (at most ``n - 1``)."""
    while t < s.n - 1 and (_too_early(s, options["methods"], t) or _zoo_misfit(s, options, t)):
        t = min(s.n - 1, math.ceil(1.25 * t))
    return t


def validate_looks(s, options) -> None:
    """Refuse, in one line, what the looks cannot follow: before any path runs."""
    if not options["looks"]:
        if options["first_look"]:
            raise ConfigError(f"first_look = {options['first_look']} without looks: set looks (true, or a number)")
        return
    methods = options["methods"]
    d = model_class(s.model).dimension(s)
    if d != 1:
        raise ConfigError(f"looks = {options['looks']} with model = {s.model!r} of {d} coordinates: the looks "
                          "follow scalar models")
    check_range("batch_size", s.batch_size, s.batch_size == 1, "{1} with looks (one observation a step)")
    first = options["first_look"]
    if first:
        check_range("first_look", first, 2 <= first < s.n, f"[2, n) = [2, {s.n})")
    t1 = int(look_grid(s, options)[0])
    short = _too_early(s, methods, t1)
    if short:
        raise ConfigError(f"first_look = {t1} is too early for {short[0]} (fewer than two "
                          f"{'blocks' if short[0] in inference.BLOCK_METHODS else 'batches'} at t = {t1}); "
                          "raise first_look")
    misfit = _zoo_misfit(s, options, t1)  # the zoo runs a run of n = t at each look t: its designs must fit t_1
    if misfit:
        raise ConfigError(f"first_look = {t1} is too early for the zoo's run of n = {t1} at that look: {misfit}")


def look_memory(s, options) -> list[tuple[float, str]]:
    """Memory of the looks: every look's blocks and batches (one path at a time), each replication's bounds."""
    if not options["looks"]:
        return []
    grid = look_grid(s, options)
    m, big_m = stream_counts(grid, s.beta, s.gamma, options["methods"])
    entries = int(m.sum() + big_m.sum())
    return [(3 * FLOAT * entries, f"{entries} block and batch sums over {len(grid)} looks "
                                  f"(looks = {options['looks']}, n = {s.n})")]


def look_replication(job, gen: np.random.Generator) -> list[dict]:
    """One replication with looks: per setting of ``job``, its chunk entries (those of a run without looks too).

    The settings of a group share the path but not necessarily its blocks
    (``beta``) or looks: the path runs once per distinct ``(beta, looks)``,
    and each setting draws its bootstrap multipliers from where the path left
    the generator, as without looks.
    """
    before = gen.bit_generator.state
    s0 = job.settings[0]
    # the zoo's and users' methods: a run of n = t at each look (CoverageStudy._zoo_looks)
    own = [j for j, m in enumerate(job.methods) if not (m in ZOO_METHODS or is_user_method(m))]
    methods = [job.methods[j] for j in own]
    traces = {}  # (beta, looks) -> (trace, the generator's state after its path)
    out = []
    for j, setting in enumerate(job.settings):
        if j:
            gen.bit_generator.state = before
        grid = look_grid(setting, job.options)
        tap = ReleaseTap.build(job.model, job.methods, setting.level, setting.n)
        if job.twin:
            path_bounds, theta_bar, steps = _twin_looks(job, setting, methods, grid, gen, tap)
        else:
            key = (setting.beta, tuple(grid.tolist()), setting.level if tap.methods else None)
            if key in traces:
                trace, after = traces[key]
                gen.bit_generator.state = after
            else:
                layout = TraceLayout.build(grid, setting.beta, setting.gamma, blocks=inference.uses_blocks(methods),
                                           batches=inference.uses_batches(methods))
                trace = run_trace(job.model, gen, s0.c, s0.gamma, s0.theta0, layout, tap)
                traces[key] = trace, gen.bit_generator.state
            path_bounds = trace_intervals(trace, setting, methods, gen, sigma=job.sigma)
            theta_bar, steps = trace.theta_bar[-1], trace.steps
        # ok: the path and its own methods' intervals at n, as `ok` of a run without looks
        ok = steps == setting.n and bool(np.isfinite(theta_bar)) and bool(np.isfinite(path_bounds[-1]).all())
        bounds = np.full((grid.shape[0], len(job.methods), 2), np.nan)
        bounds[:, own] = path_bounds
        out.append({"theta_bar": np.array([theta_bar]), "bounds": bounds[-1][:, None, :].copy(), "ok": ok,
                    "look_bounds": bounds})
    return out


def _twin_looks(job, setting, methods, grid, gen, tap):
    """The plain-Python twin of a replication with looks: one stored path, each look's state by definition.

    The bootstrap draws follow :func:`.checkpoints.trace_intervals`' order (the last look first). The
    release methods read the stored releases through the plain-numpy reference of
    :mod:`ldpsim.inference.nprr_cs` (whole arrays, not the kernel's streamed sums).
    """
    s = setting
    releases = []

    def record(params):  # after each step's gradient the mechanism's scratch holds its release
        releases.append(released_value(float(params.noise.t[0]), tap.grid, tap.keep))

    state, path = path_twin(job.model, gen, s.n, s.c, s.gamma, s.theta0, _look_layout(s, methods, s.n),
                            tap=record if tap.methods else None)[:2]
    released = {m: release_reference(m, releases, tap.keep, s.level, s.n) for m in tap.methods}
    path_methods = [m for m in methods if m not in released]
    bounds = np.full((grid.shape[0], len(methods), 2), np.nan)
    for q in range(grid.shape[0] - 1, -1, -1):
        k = int(grid[q])
        if state.steps < k:
            continue
        look = _look_layout(s, methods, k)
        # the last look: the twin's own streamed state, summed as the kernels sum (their state at n to the bit)
        at = state if k == s.n else state_from_definitions(path[:k], look)
        if not at.finite(k):
            continue
        with np.errstate(all="ignore"):
            got = dict(zip(path_methods, inference.intervals(
                path_methods, at, look, gen, n_boot=s.B, law=s.multiplier, level=s.level, sigma=job.sigma,
                t_opt=s.n)[:, 0]))
        for j, m in enumerate(methods):
            if m in released:
                bounds[q, j] = released[m][0][k - 1], released[m][1][k - 1]
            elif np.isfinite(got[m]).all() and inference.resolved(got[m]):
                bounds[q, j] = got[m]
    theta_bar = float(state.theta_bar[0]) if state.steps == s.n else math.nan
    return bounds, theta_bar, state.steps


# ---------------------------------------------------------------------------
# tables

#: Columns of the two tables after the varied config keys, with what ``ldpsim table`` reads them as.
LOOKS_COLUMNS = {"method": "text", "look": "count", "t": "positive", "reps": "count", "n_missing": "count",
                 "coverage": "number", "coverage_se": "number", "length": "number", "length_se": "number"}
UNIFORM_COLUMNS = {"method": "text", "n": "positive", "reps": "count", "looks": "count", "first_look": "positive",
                   "coverage_uniform": "number", "coverage_uniform_se": "number", "coverage": "number",
                   "coverage_se": "number", "length": "number", "length_ratio_oracle": "number"}


def look_tables(config, chunks) -> dict[str, list[dict]]:
    """``looks`` and ``uniform`` rows of a finished run with looks (see the module's docstring).

    Every replication whose path ran to ``n`` (``ok``) counts; a look with no
    interval (NaN) counts as not covering and is counted in ``n_missing``.
    """
    keys = [k for k in config.varied if k != "n"]
    looks, uniform = [], []
    for setting, res in zip(config.settings, chunks):
        grid = look_grid(setting, config.options)
        truth = float(build_model(setting).theta_star()[0])
        ok = res["ok"].astype(bool)
        reps = int(ok.sum())
        head = {k: display(getattr(setting, k)) for k in keys}
        lengths_n = {}
        for j, method in enumerate(config.methods):
            b = res["look_bounds"][ok, :, j, :]  # (R, K, 2)
            lo, hi = b[..., 0], b[..., 1]
            with np.errstate(invalid="ignore"):
                covered = (lo <= truth) & (truth <= hi)  # NaN: not covering
            length = set_length(lo, hi)  # an empty set (NPRR's, lo > hi) has length 0
            for q, t in enumerate(grid):
                finite = np.isfinite(length[:, q])
                row = dict(head, method=label(method), look=q + 1, t=int(t), reps=reps,
                           n_missing=int((~finite).sum()))
                row.update(proportion("coverage", covered[:, q]))
                row["length"], row["length_se"] = mean_se(length[finite, q])
                looks.append(row)
            lengths_n[method] = float(np.nanmean(length[:, -1])) if reps else math.nan
            row = dict(head, method=label(method), n=setting.n, reps=reps, looks=int(grid.shape[0]),
                       first_look=int(grid[0]))
            row.update(proportion("coverage_uniform", covered.all(axis=1)))
            row.update(proportion("coverage", covered[:, -1]))
            row["length"] = lengths_n[method]
            uniform.append(row)
        oracle = lengths_n.get("oracle", math.nan)
        for row in uniform[len(uniform) - len(config.methods):]:
            row["length_ratio_oracle"] = row["length"] / oracle if oracle > 0 else math.nan
    return {"looks": looks, "uniform": uniform}


def render_uniform(rows: list[dict], title: str | None = None) -> str:
    """``uniform`` rows as a markdown table: time-uniform and pointwise coverage at ``n``, with SEs."""
    from tabulate import tabulate

    if not rows:
        return ""
    keys = [k for k in rows[0] if k not in UNIFORM_COLUMNS]
    head = keys + ["method", "looks", "t_1..n", "uniform coverage", "coverage at n", "length at n",
                   "length / oracle"]
    body = [[r[k] for k in keys] + [r["method"], r["looks"], f"{r['first_look']}..{r['n']}",
                                    f"{r['coverage_uniform']:.3f} ({r['coverage_uniform_se']:.3f})",
                                    f"{r['coverage']:.3f} ({r['coverage_se']:.3f})", f"{r['length']:.4g}",
                                    f"{r['length_ratio_oracle']:.3f}"] for r in rows]
    text = tabulate(body, headers=head, tablefmt="github")
    return (f"## {title}: time-uniform coverage\n\n" if title else "") + text + "\n"


def write_look_outputs(out: Path, tables: dict, title: str | None, level) -> list[str]:
    """``looks.md`` and ``looks.png`` of a run with looks (nothing without); the file names written."""
    looks, uniform = tables.get("looks"), tables.get("uniform")
    if not looks or not uniform:
        return []
    (out / "looks.md").write_text(render_uniform(uniform, title))
    try:
        plot_looks(looks, uniform, out / "looks.png", level)
    except MissingExtra as exc:
        print(f"ldpsim: looks.png skipped: {exc}", file=sys.stderr)
        return ["looks.md"]
    return ["looks.md", "looks.png"]


#: A figure shows at most this many settings (panels).
MAX_LOOK_PANELS = 24


def plot_looks(looks: list[dict], uniform: list[dict], path: Path, level=None) -> None:
    """Pointwise coverage against ``t`` (log axis), per method; its time-uniform coverage as a dashed level."""
    from ...reporting.figures import figure_class
    from .figures import _STYLE
    from .zoo_tables import nominal_level

    Figure = figure_class("looks.png")
    keys = [k for k in uniform[0] if k not in UNIFORM_COLUMNS]
    panels = list(dict.fromkeys(tuple(r[k] for k in keys) for r in uniform))[:MAX_LOOK_PANELS]
    cols = min(3, len(panels))
    rows_ = math.ceil(len(panels) / cols)
    fig = Figure(figsize=(4.2 * cols, 3.3 * rows_), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows_, cols, squeeze=False)).ravel()
    for ax, panel in zip(axes, panels):
        mine = [r for r in looks if tuple(r[k] for k in keys) == panel]
        for u in (r for r in uniform if tuple(r[k] for k in keys) == panel):
            colour, marker = _STYLE.get(u["method"], ("tab:cyan", "."))
            pts = [r for r in mine if r["method"] == u["method"]]
            ax.plot([r["t"] for r in pts], [r["coverage"] for r in pts], color=colour, marker=marker, markersize=3,
                    linewidth=1, label=u["method"])
            ax.axhline(u["coverage_uniform"], color=colour, linestyle="--", linewidth=0.9)
        nominal = nominal_level(mine, level)  # a grid over level: each panel's own
        if nominal is not None:
            ax.axhline(nominal, color="black", linewidth=0.8, alpha=0.6)
        ax.set_xscale("log")
        ax.set_ylim(max(0.0, min([r["coverage_uniform"] for r in uniform] + [0.5]) - 0.05), 1.0)
        ax.set_xlabel("t (observations so far)")
        ax.set_title(", ".join(f"{k} = {v:.4g}" if isinstance(v, float) else f"{k} = {v}" for k, v in zip(keys, panel))
                     or "coverage at each look", fontsize=8)
        ax.grid(alpha=0.3)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    axes[0].set_ylabel("coverage at the look (dashed: at every look)")
    axes[0].legend(fontsize=7, loc="lower left")
    if level is not None:
        one = nominal_level([{}], level)
        said = "each panel's level" if one is None else f"the level {one:g}"
        fig.suptitle(f"pointwise coverage at each look and, dashed, the share of replications covered at every look; "
                     f"black: {said}", fontsize=8)
    fig.savefig(path, dpi=120)


__all__ = ["DEFAULT_LOOKS", "FIRST_LOOK_FRACTION", "LOOK_KEYS", "LOOK_KEY_NAMES", "LOOKS_COLUMNS", "UNIFORM_COLUMNS",
           "look_grid", "look_memory", "look_replication", "look_tables", "plot_looks", "render_uniform",
           "validate_looks", "write_look_outputs"]
