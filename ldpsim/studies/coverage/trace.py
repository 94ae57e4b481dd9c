"""Interval trajectories along one LDP-SGD path (Figure 1 of 000).

One path of a scalar model runs once; at log-spaced checkpoints
``k_1 < ... < k_C = n`` the kernel records what each method needs to build its
interval *as if the path ended at k*:

* ``theta_bar_k`` and the random-scaling ``V_k``: read off the three centred
  sums of :mod:`ldpsim.recursion.kernels` (``sn_read``), which are valid at any step;
* the block sums of checkpoint ``k``: blocks of length ``l_k = floor(k^beta)``,
  ``m_k = floor(k / l_k)`` of them;
* the batch sums of checkpoint ``k``: Chen et al.'s batches for ``k`` steps,
  ``batch_ends(k, gamma)``.

Blocks and batches of different checkpoints do not nest, so each checkpoint
has two *streams* of its own (its blocks, its batches): an accumulator that,
at each end listed for the stream, writes its sum into a flat preallocated
buffer and restarts at zero. All ends live in one flat array with offsets per
stream, so the memory is ``sum_k (m_k + M_k + 1) = O(C n^(1 - beta) + C
n^((1 - gamma) / 2))`` numbers, never ``O(n)``: about 4 000 for ``C = 200`` at
``n = 1e6``, under 10 000 at ``n = 1e8``.

Updating every open stream at every step would cost ``O(C)`` per step. Instead
the iterates between two consecutive ends of *any* stream (an event) lie in
one block or batch of every stream, so they are summed once, into a segment
sum, which is added to each open stream at the event. A step costs one
addition more than :func:`ldpsim.recursion.kernels.run_path`; an event costs one per
open stream, and there are at most as many events as buffer entries. The
sums are exact sums of the iterates, grouped differently (rounding differs
from a left-to-right sum by ~1e-15 relative). The last checkpoint's two
streams add every iterate, as ``run_path`` does, so its state equals
``run_path``'s bit for bit and its row is replication 0 of ``run``.

The intervals are then computed per checkpoint by the functions of
:mod:`ldpsim.inference.intervals` on a :class:`~ldpsim.inference.streaming.PathState` and
:class:`~ldpsim.inference.streaming.StreamLayout` built for that checkpoint.
"""

from __future__ import annotations

import csv
import json
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ...engine.runs import config as cfg
from ...engine.errors import MissingExtra  # noqa: F401  (figure_class raises it; tests import it from here)
from ...engine.runs.resources import FLOAT, check_memory
from ...inference import intervals as inference
from ...inference.streaming import checkpoint_grid, floor_power
from ...inference.methods import REGISTRY, RELEASE_METHODS, ZOO_METHODS, names
from ...inference.user_methods import is_user_method
from ...models import MODELS, build_model, model_class
from ...engine.dialect.rng import replication_generator
from ...reporting.figures import figure_class as _figure_class
from ...engine.runs.provenance import git_commit, machine, versions
# the kernel and its layout live in .checkpoints (the looks of a coverage run use them too); re-exported here
from .checkpoints import Trace, TraceLayout, run_trace, stream_counts, trace_intervals  # noqa: F401
from .study import CoverageStudy
from .looks import LOOK_KEY_NAMES
from .zoo import ZOO_KEY_NAMES

#: Keys only ``trace`` takes, with their defaults.
TRACE_DEFAULTS = {"checkpoints": 200, "k_min": 10}
#: ``checkpoints``: as many as the trajectory study allows (each keeps its own blocks and batches).
CHECKPOINTS_KEY = cfg.Key("checkpoints", "int", 200, grid=False, range=cfg.Range("[2, 10000]"),
                          help="log-spaced checkpoints from k_min to n (fewer if k rounds to repeats)")
K_MIN_KEY = cfg.Key("k_min", "int", 10, grid=False, range=cfg.Range("[2, inf)"), help="first checkpoint")
#: Methods of the figure unless the config says otherwise (declared with each method: ``default_in`` trace).
TRACE_METHODS = names("trace", default=True)
#: Keys a trace config may hold: the coverage study's keys but ``reps`` (one path), the zoo's (whose methods a
#: trace does not draw) and the looks (a trace is one path's looks), plus ``study`` (``coverage``, the only one)
#: and the trace keys.
TRACE_KEYS = tuple(k.name for k in CoverageStudy.keys if k.name not in ZOO_KEY_NAMES + LOOK_KEY_NAMES) + (
    "seed", "study") + tuple(TRACE_DEFAULTS)


def check_trace_keys(mapping: dict, where: str, context: dict | None = None) -> None:
    """Refuse, in one line, what a trace cannot draw: another study, the zoo's keys, a key it does not know.

    ``context``: the config's ``model`` when ``mapping`` holds the overrides only (a user's model declares keys).
    """
    study = mapping.get("study", "coverage")
    if study != "coverage":
        raise cfg.ConfigError(f"study = {cfg.show(study)} in {where}: trace draws the coverage study's intervals along "
                              "one path (Dette & Graw's Figure 1); run this config with `ldpsim run`")
    zoo = [k for k in mapping if k in ZOO_KEY_NAMES]
    if zoo:
        raise cfg.ConfigError(f"{zoo[0]} = {cfg.show(mapping[zoo[0]])} in {where} is a key of the method zoo, whose "
                              "methods trace does not draw; remove it (the zoo runs in `ldpsim run`)")
    cfg.check_keys(mapping, where, trace_keys({**(context or {}), **mapping}))


#: The left panel of the figure ends, and the right one starts, at this fraction of n
#: (000's Figure 1: 200000 of 1e6).
PANEL_SPLIT = 0.2


# ---------------------------------------------------------------------------
# configuration


@dataclass(frozen=True)
class TraceConfig:
    """A validated trace: one setting, one path.

    Attributes
    ----------
    setting : ldpsim.config.Setting
        The path's keys (``n`` is the last checkpoint).
    seed : int
        Root seed; the path is replication 0 of ``setting`` in ``run``.
    methods : tuple of str
        Interval methods, in :data:`~ldpsim.inference.METHODS` order.
    checkpoints : int
        Number of log-spaced checkpoints asked for (fewer if ``k`` rounds to repeats).
    k_min : int
        First checkpoint.
    values : dict
        Resolved key -> value mapping, as recorded in meta.json.
    """

    setting: cfg.Setting
    seed: int
    methods: tuple[str, ...]
    checkpoints: int
    k_min: int
    values: dict


def resolve_trace(mapping: dict, where: str = "config") -> TraceConfig:
    """Validate a raw trace mapping (defaults filled in) into a :class:`TraceConfig`.

    Parameters
    ----------
    mapping : dict
        Keys from :data:`TRACE_KEYS`, one value each.
    where : str
        Where the mapping came from, for error messages.

    Raises
    ------
    ConfigError
        On the first bad key or value, or on a list value (a trace follows one path).
    """
    if "reps" in mapping and mapping.get("study", "coverage") == "coverage":
        raise cfg.ConfigError(f"reps = {cfg.show(mapping['reps'])} does not apply in {where}: trace follows one path")
    check_trace_keys(mapping, where)
    raw = {**TRACE_DEFAULTS, "methods": list(TRACE_METHODS), **mapping}
    raw.pop("study", None)
    methods = raw["methods"] if isinstance(raw["methods"], (list, tuple)) else [raw["methods"]]
    users = [m for m in methods if is_user_method(m)]
    if users:
        raise cfg.ConfigError(f"methods names {users[0]!r}, a user's method: trace draws "
                              f"{', '.join(inference.METHODS)} along one path; a user's method runs in `ldpsim run`")
    zoo = [m for m in methods if m in ZOO_METHODS]
    nprr = [m for m in methods if m in RELEASE_METHODS]
    if zoo or nprr:
        raise cfg.ConfigError(f"methods = {cfg.show(list(methods))}: trace draws {', '.join(inference.METHODS)} along "
                              + (f"one path; the zoo's methods ({', '.join(zoo)}) run in `ldpsim run`" if zoo else
                                 f"one path; NPRR's ({', '.join(nprr)}) run in `ldpsim run` with looks"))
    for key, value in raw.items():
        if key != "methods" and isinstance(value, (list, tuple)):
            raise cfg.ConfigError(f"{key} = {cfg.show(value)} is a list; trace follows one path, so give one value")
    count = CHECKPOINTS_KEY.parse(raw.pop("checkpoints"))
    k_min = K_MIN_KEY.parse(raw.pop("k_min"))
    config = cfg.resolve({**raw, "reps": 1}, CoverageStudy(), where)
    setting = config.settings[0]

    # the trace kernel is the scalar kernel with checkpoints, for one observation a step
    if model_class(setting.model).dimension(setting) != 1:
        scalar = ", ".join(k for k, m in MODELS.items() if getattr(m, "dim", None) == 1)
        raise cfg.ConfigError(f"model = {setting.model!r} has {model_class(setting.model).dimension(setting)} coordinates; "
                              f"trace draws scalar models: {scalar}")
    cfg.check_range("batch_size", setting.batch_size, setting.batch_size == 1, "{1} (trace draws plain LDP-SGD)")
    cfg.check_range("k_min", k_min, 2 <= k_min < setting.n, f"[2, n) = [2, {setting.n})")
    check_memory(trace_memory(setting, config.methods, count, k_min), per="for the trace")
    values = {k: v for k, v in config.values.items() if k not in ("reps", "study")}
    values.update(checkpoints=count, k_min=k_min)
    return TraceConfig(setting, config.seed, config.methods, count, k_min, values)


def trace_memory(setting, methods, count: int, k_min: int) -> list[tuple[float, str]]:
    """Memory of a trace, as ``(bytes, what)`` terms: every checkpoint's blocks and batches, one bootstrap.

    Computed from the checkpoint grid (at most 10 000 points) without building
    the layout, whose size it bounds.
    """
    grid = checkpoint_grid(setting.n, count, k_min)
    m, big_m = stream_counts(grid, setting.beta, setting.gamma, methods)
    entries = float(m.sum() + big_m.sum() + 1)
    out = [(3 * FLOAT * entries, f"{entries:.0f} block and batch sums over {len(grid)} checkpoints "
                                 f"(checkpoints = {count}, n = {setting.n}, beta = {setting.beta})")]
    if inference.uses_blocks(methods):
        out.append((FLOAT * setting.B * (float(m.max()) * 2 + 4),
                    f"B x m = {setting.B} x {int(m.max())} bootstrap numbers (B = {setting.B}, beta = {setting.beta})"))
    return out


def trace_keys(mapping: dict) -> tuple[str, ...]:
    """:data:`TRACE_KEYS` and the keys of a user's model that ``mapping`` names."""
    extra = [k.name for k in CoverageStudy().config_keys(mapping) if k.name not in TRACE_KEYS]
    return TRACE_KEYS + tuple(extra)


def load_trace(path: str | Path | None = None, overrides: dict | None = None) -> TraceConfig:
    """Load a trace config file, apply command-line overrides (which win) and validate."""
    mapping = cfg.load_yaml(path) if path is not None else {}
    where = f"config file {str(path)!r}" if path is not None else "config"
    if path is not None:
        from .. import anchor_user_files

        mapping = anchor_user_files(mapping, Path(path).parent)
    mapping.update(overrides or {})
    return resolve_trace(mapping, where)




@dataclass
class TraceResult:
    """A finished trace: checkpoints, estimates, intervals and what produced them.

    Attributes
    ----------
    config : TraceConfig
    trace : Trace
        The recorded states.
    bounds : numpy.ndarray
        ``(C, n_methods, 2)`` interval ends (see :func:`trace_intervals`).
    theta_star : float
        True parameter.
    seconds_path, seconds_intervals : float
        Wall times of the path (including loading or compiling the kernel)
        and of the intervals.
    """

    config: TraceConfig
    trace: Trace
    bounds: np.ndarray
    theta_star: float
    seconds_path: float
    seconds_intervals: float

    @property
    def checkpoints(self) -> np.ndarray:
        return self.trace.layout.checkpoints


def compute_trace(config: TraceConfig) -> TraceResult:
    """Run the trace of ``config``: the path, then every checkpoint's intervals.

    The path draws from replication 0's generator of ``run``
    (``replication_generator(seed, setting.seed_key, 0)``), so the last
    checkpoint is replication 0 of ``python -m ldpsim run`` with the same keys.
    """
    s = config.setting
    model = build_model(s)
    grid = checkpoint_grid(s.n, config.checkpoints, config.k_min)
    split = round(PANEL_SPLIT * s.n)
    if config.k_min < split < s.n:  # the figure's panels meet at a checkpoint
        grid = np.union1d(grid, [split])
    layout = TraceLayout.build(grid, s.beta, s.gamma, blocks=inference.uses_blocks(config.methods), batches=inference.uses_batches(config.methods))
    gen = replication_generator(config.seed, s.seed_key, 0)
    tic = time.perf_counter()
    trace = run_trace(model, gen, s.c, s.gamma, s.theta0, layout)
    toc = time.perf_counter()
    bounds = trace_intervals(trace, s, config.methods, gen, sigma=model.sigma())
    return TraceResult(config, trace, bounds, float(model.theta_star()[0]), toc - tic, time.perf_counter() - toc)


# ---------------------------------------------------------------------------
# outputs


def write_trace_csv(result: TraceResult, path: Path) -> None:
    """One row per checkpoint: ``checkpoint, block_len, n_blocks, theta_bar, <method>_lower, <method>_upper``.

    ``block_len`` and ``n_blocks`` are ``l_k = floor(k^beta)`` and ``m_k = floor(k / l_k)``.
    Floats are written as ``repr``; NaN marks a method a checkpoint is too
    short for (BB with ``m_k < 2``, BM with fewer than two batches after burn-in).
    """
    methods = result.config.methods
    header = ["checkpoint", "block_len", "n_blocks", "theta_bar"]
    header += [f"{m}_{side}" for m in methods for side in ("lower", "upper")]
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        for q, k in enumerate(result.checkpoints):
            block_len = floor_power(int(k), result.config.setting.beta)  # also where BB is off (m < 2)
            row = [int(k), block_len, int(k) // block_len, repr(float(result.trace.theta_bar[q]))]
            row += [repr(float(v)) for v in result.bounds[q].ravel()]
            writer.writerow(row)


def figure_class():
    """matplotlib's ``Figure`` (no pyplot, no global backend); :class:`MissingExtra` if not installed."""
    return _figure_class("figure1.png")


#: Line style of each method in the figure (declared with the method: its ``line``).
_STYLE = {name: {"color": m.line[0], "linestyle": m.line[1]} for name, m in REGISTRY.items() if m.line}


def plot_trace(result: TraceResult, path: Path) -> None:
    """Draw Figure 1 of 000: two panels, ``k <= n/5`` (log axis) and ``k >= n/5``.

    Each panel shows ``theta_bar_k`` (av. SGD), the lower and upper bounds of
    every method and the true parameter as a horizontal line.
    """
    Figure = figure_class()
    s = result.config.setting
    ks = result.checkpoints.astype(float)
    split = PANEL_SPLIT * s.n
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, keep, log in ((axes[0], ks <= split, True), (axes[1], ks >= split, False)):
        x = ks[keep]
        ax.axhline(result.theta_star, color="black", linewidth=0.8, alpha=0.5,
                   label=f"true value ({result.theta_star:.3g})")
        ax.plot(x, result.trace.theta_bar[keep], color="black", linewidth=1.2, label="av. SGD")
        for j, method in enumerate(result.config.methods):
            style = _STYLE[method]
            ax.plot(x, result.bounds[keep, j, 0], linewidth=1.1, label=method, **style)
            ax.plot(x, result.bounds[keep, j, 1], linewidth=1.1, **style)
        if log:
            ax.set_xscale("log")
        if x.size:
            ax.set_xlim(x[0], x[-1])
            ax.set_ylim(*_y_limits(result, keep, ks))
            ax.set_title(f"n = {int(x[0])} - {int(x[-1])}")
        ax.set_xlabel("n (observations so far)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"tau = {s.tau} quantile")
    axes[0].legend(loc="upper right", fontsize=8)
    fig.suptitle(f"LDP-SGD, {int(round(s.level * 100))}% intervals along one path: epsilon = {s.epsilon}, "
                 f"eta_i = {s.c:g} i^-{s.gamma}, beta = {s.beta}, B = {s.B}, {s.multiplier} multipliers",
                 fontsize=9)
    fig.savefig(path, dpi=130)


def _y_limits(result: TraceResult, keep: np.ndarray, ks: np.ndarray) -> tuple[float, float]:
    # The first few checkpoints have intervals far wider than the rest; frame
    # the panel on its later 95% of checkpoints (in log k) so the bands are visible.
    x = ks[keep]
    late = keep & (ks >= x[0] * (x[-1] / x[0]) ** 0.05)
    values = np.concatenate([result.bounds[late].ravel(), result.trace.theta_bar[late], [result.theta_star]])
    values = values[np.isfinite(values)]
    lo, hi = float(values.min()), float(values.max())
    pad = 0.05 * (hi - lo) if hi > lo else 1.0
    return lo - pad, hi + pad


def _meta(result: TraceResult, command) -> dict:
    from ...engine.runs.outdir import RunIdentity

    return {
        "name": "trace",
        "kind": "trace",
        "run_id": RunIdentity.of("trace", result.config.values).run_id,
        "status": "complete",
        "outputs": ["trace.csv", "figure1.png"],
        "config": result.config.values,
        "root_seed": result.config.seed,
        "replication": 0,
        "theta_star": result.theta_star,
        "checkpoints": len(result.checkpoints),
        "stream_entries": result.trace.layout.size,
        "steps": result.trace.steps,
        "path_s": round(result.seconds_path, 3),  # includes loading (or compiling) the kernel
        "intervals_s": round(result.seconds_intervals, 3),
        "written_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": command or sys.argv,
        "versions": versions(),
        "git_commit": git_commit(),
        "machine": machine(),
    }


def write_trace(result: TraceResult, out: Path, command=None) -> None:
    """Write ``trace.csv``, ``figure1.png`` and ``meta.json`` into ``out``."""
    from ...engine.runs.outdir import write_text

    figure_class()  # fail before writing anything if matplotlib is missing
    out.mkdir(parents=True, exist_ok=True)
    write_trace_csv(result, out / "trace.csv")
    plot_trace(result, out / "figure1.png")
    meta = _meta(result, command)
    write_text(out / "meta.json", json.dumps(meta, indent=2, allow_nan=True) + "\n")


def write_trace_meta(config: TraceConfig, out: Path, identity, command=None) -> None:
    """The ``meta.json`` of a trace that has not run yet: which run the directory holds."""
    from ...engine.runs.outdir import write_text

    meta = {"name": "trace", "kind": "trace", "run_id": identity.run_id, "status": "running",
            "config": config.values, "root_seed": config.seed, "command": command or sys.argv,
            "started_utc": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    write_text(out / "meta.json", json.dumps(meta, indent=2, allow_nan=True) + "\n")

