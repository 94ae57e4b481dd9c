"""What the three SAGD studies share: config keys, the model of a setting, schedules, seeds.

Keys carry 001's symbols where it has them (``sigma``, ``mu``, ``beta``,
``eta``, ``nu``, ``beta2``, ``T``, ``delta``; ``budget`` is C_s,
``threshold`` is DPG-Sparse's tau in units of sigma). The model keys describe
the sphere design of :mod:`ldpsim.models.erm`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from dataclasses import dataclass, replace

import numpy as np

from ...engine.runs.config import ConfigError, Key, Range, as_float, as_int, show
from ...engine.runs.resources import FLOAT
from ...inference.methods import get, names
from ...models.erm import ERM_MODELS, ErmModel, sphere_plane_rule
from ...recursion.keys import MAX_STEPS
from ..base import Study
from .accounting import accounting_problem
from .kernel import LAP, SPARSE, PathParams

#: The oracles of the concentration and rate studies, as configs spell them.
ORACLES = {"lap": LAP, "sparse": SPARSE}
#: The methods of the generalization study: name -> the kernel's code (each declared in the registry,
#: :mod:`ldpsim.inference.methods.sagd`).
METHODS = {name: get(name).code for name in names("sagd_generalization")}
#: Keys only the Welsch model reads (blank in logistic settings).
WELSCH_KEYS = ("noise", "scale")


@dataclass(frozen=True)
class ListKey(Key):
    """A per-run key whose value is a list of numbers (``mu: [0.5, 1, 2]``), kept as a tuple."""

    def values(self, raw) -> list:
        items = list(raw) if isinstance(raw, (list, tuple)) else [raw]
        if not items:
            raise ConfigError(f"{self.name} = [] is empty")
        parsed = []
        for item in items:
            value = as_float(self.name, item)
            if self.range is not None and value not in self.range:
                raise ConfigError(f"{self.name} contains {show(item)}, outside {self.range}")
            parsed.append(value)
        return [tuple(sorted(set(parsed)))]


def positive_or(*words, high: float = math.inf):
    """Converter for keys that take a number in ``(0, high]`` (finite) or one of ``words``."""
    allowed = "a number > 0" if math.isinf(high) else f"a number in (0, {high:.0e}]".replace("e+", "e")

    def convert(name, value):
        if isinstance(value, str) and value in words:
            return value
        try:
            number = as_float(name, value)
        except ConfigError:
            raise ConfigError(f"{name} = {show(value)} is not {allowed} or one of: {', '.join(words)}") from None
        if not (0 < number <= high and math.isfinite(number)):
            raise ConfigError(f"{name} = {show(value)} is not {allowed} or one of: {', '.join(words)}")
        return number

    return convert


def count_or(*words):
    """Converter for keys that take an integer in ``[1, 2^53]`` (counts the kernels hold exactly) or one of ``words``."""

    def convert(name, value):
        if isinstance(value, str) and value in words:
            return value
        try:
            number = as_int(name, value)
        except ConfigError:
            number = None
        if number is None or not 1 <= number <= MAX_STEPS:
            raise ConfigError(f"{name} = {show(value)} is not an integer in [1, 2^53] or one of: {', '.join(words)}")
        return number

    return convert


#: The data: model and the sphere design (grid keys).
MODEL_KEYS = (
    Key("model", "choice", "logistic", choices=tuple(ERM_MODELS), help="logistic (convex) or welsch (non-convex)"),
    Key("d", "int", 5, range=Range("[3, 1000]"), help="dimension of x and w, intercept included"),
    # within 1e+-100, G1^2, L = r^2 / p, beta = signal / r and the losses' c^2 + s^2 are floats
    Key("radius", "float", 1.0, range=Range("[1e-100, 1e100]"), help="x = (1, r S), S uniform on the unit sphere"),
    Key("signal", "float", 2.0, range=Range("[0, 1e100]"), help="standard deviation of x'beta"),
    Key("noise", "float", 0.5, range=Range("[1e-100, 1e100]"), help="welsch: sd of the errors"),
    Key("scale", "float", 1.0, range=Range("[1e-100, 1e100]"), help="welsch: c of the loss"),
)
#: The adaptive update (grid keys).
UPDATE_KEYS = (
    Key("eta", "any", "theorem", convert=positive_or("theorem"),
        help="step size; 'theorem': nu / (2 L), the largest of Theorems 2 and 7"),
    Key("nu", "float", 0.1, range=Range("(0, inf)"), help="nu of the update w -= eta g / (sqrt(v) + nu)"),
    Key("beta2", "float", 0.9, range=Range("[0, 1)"), help="weight of v_t = beta2 v + (1 - beta2) g^2"),
    Key("w0", "float", 0.0, range=Range("(-inf, inf)", "the finite reals"), help="starting value, every coordinate"),
)
#: DPG-Sparse (grid keys).
SPARSE_KEYS = (
    Key("threshold", "float", 4.0, range=Range("[0, inf)"),
        help="DPG-Sparse's tau in units of sigma; 4 (Thresholdout's) is a design choice: Zhou et al.'s proof reads 0, "
             "with which Theorem 3's smallest budget runs out near step 310 of 445 (logistic, sigma = 1)"),
)
#: Privacy accounting (grid key: it changes the reported epsilon, not the paths).
DELTA_KEY = Key("delta", "float", 1e-5, range=Range("[1e-300, 1)"),  # ln(1 / delta) is finite
                help="delta of the (epsilon, delta) guarantees")
#: Per-run key: accuracy of the population integrals.
NODES_KEY = Key("nodes", "int", 32, grid=False, range=Range("[4, 512]"),
                help="Gauss-Jacobi nodes per axis of the population integrals")
#: Size of the training set; the last grid key.
N_KEY = Key("n", "int", 2000, range=Range(f"[4, {MAX_STEPS}]", "[4, 2^53]"), help="size of the training set S")


def with_default(key: Key, default) -> Key:
    """``key`` with another default (studies differ in what a sensible one is)."""
    return replace(key, default=default)


def budget_key(default):
    """C_s: an integer, ``theorem`` (Theorem 3's smallest, n sigma^2 / (2 G1^2)) or ``T`` (never halts)."""
    return Key("budget", "any", default, convert=count_or("theorem", "T"),
               help="C_s of DPG-Sparse: integer, 'theorem' (n sigma^2 / (2 G1^2)) or 'T'")


BATCH_KEY = Key("batch_size", "int", None, nullable=True, range=Range("[1, inf)"),
                help="mini-batch size m (blank: the whole of S); DPG-Lap and the baselines only")


def model_values(values: dict) -> dict:
    """Blank the keys the model does not read."""
    if values["model"] != "welsch":
        values = {**values, **{k: None for k in WELSCH_KEYS}}
    return values


def data_seed_key(values: dict) -> int:
    """Identity of a replication's random streams: the keys that shape the training set.

    Settings that differ in anything else (oracle, sigma, T, ...) draw the
    same training sets (common random numbers across the grid).
    """
    identity = {k: values[k] for k in ("model", "d", "radius", "signal", "noise", "scale", "n")}
    return int(hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16], 16)


@functools.lru_cache(maxsize=64)
def _model(model, d, radius, signal, noise, scale, nodes):
    return ErmModel(model, d, radius, signal, 0.5 if noise is None else noise, 1.0 if scale is None else scale,
                    nodes)


def build_model(setting, nodes: int = NODES_KEY.default) -> ErmModel:
    """The model of a setting (cached: the quadrature rule is built once per process)."""
    return _model(setting.model, setting.d, setting.radius, setting.signal, setting.noise, setting.scale, nodes)


def checked_model(setting, nodes: int) -> ErmModel:
    """:func:`build_model`, or a one-line ConfigError naming ``nodes`` if its quadrature rule cannot be built."""
    try:
        return build_model(setting, nodes)
    except ValueError:
        pass
    fewest, most = 4, nodes  # the largest count that works, by bisection (a handful of rules)
    while most - fewest > 1:
        middle = (fewest + most) // 2
        try:
            sphere_plane_rule(setting.d - 1, middle)
            fewest = middle
        except ValueError:
            most = middle
    raise ConfigError(f"nodes = {nodes} is too many for d = {setting.d}: scipy's Gauss-Jacobi rule for the sphere of "
                      f"R^{setting.d - 1} is not finite; allowed here: nodes <= {fewest}")


def step_size(setting, model) -> float:
    """``eta``: the setting's, or ``nu / (2 L)`` (Theorem 2's largest, ``L`` the model's smoothness)."""
    return setting.nu / (2.0 * model.smoothness) if setting.eta == "theorem" else float(setting.eta)


def n_batches(setting) -> int:
    """``B = floor(n / m)`` batches (1 without mini-batches)."""
    m = getattr(setting, "batch_size", None)
    return 1 if m is None or m >= setting.n else setting.n // m


def resolve_budget(budget, n: int, sigma: float, g1: float, T: int) -> int:
    """C_s from the key: an integer, Theorem 3's smallest ``ceil(n sigma^2 / (2 G1^2))``, or ``T``."""
    if budget == "T":
        return int(T)
    if budget == "theorem":
        return max(1, math.ceil(n * sigma * sigma / (2.0 * g1 * g1)))
    return int(budget)


def path_params(method: int, setting, model, sigma: float, T: int, budget: int, track: bool) -> PathParams:
    """The kernel's scalars of one path of ``setting``."""
    return PathParams(method=method, T=int(T), n_batches=n_batches(setting), n1=setting.n // 2,
                      eta=step_size(setting, model), nu=setting.nu, beta1=getattr(setting, "beta1", 0.9),
                      beta2=setting.beta2, sigma=float(sigma), threshold=float(setting.threshold or 0.0) * float(sigma),
                      budget=int(budget), track=bool(track))


def theorem_value(expression) -> float:
    """A count a theorem gives, as a float: ``inf`` where its formula overflows (``sigma ** 2`` of a huge sigma)."""
    try:
        return float(expression())
    except OverflowError:
        return math.inf


def check_steps(key: str, value, T: float, points: int, what: str) -> None:
    """Refuse ``T`` steps of ``points`` data points each unless ``T >= 1`` is finite and ``T x points <= 2^53``.

    The kernels count steps in int64 and their statistics in doubles;
    ``value`` is the key's (``theorem`` for a count derived from a theorem),
    ``what`` says how ``T`` came about.
    """
    if not (math.isfinite(T) and T * points <= MAX_STEPS):
        shown = f"{T:.4g}" if math.isfinite(T) else "beyond the largest float"
        raise ConfigError(f"{key} = {show(value)} gives {what} = {shown} steps over {points} points each; "
                          "T x points must be at most 2^53")


def check_eta(setting, model) -> None:
    """Refuse a step size ``nu / (2 L)`` that is not a positive float."""
    eta = step_size(setting, model)
    if not (0.0 < eta < math.inf):
        raise ConfigError(f"nu = {show(setting.nu)} gives eta = nu / (2 L) = {eta:g} (L = {model.smoothness:.4g}); "
                          "eta must be a positive float: lower nu or give eta")


def check_accounting(oracle: str, setting, model, sigma: float, T: int, budget: int) -> None:
    """Refuse a setting whose privacy accounting overflows (:func:`.accounting.accounting_problem`)."""
    problem = accounting_problem(oracle, model.g1, setting.n, sigma, T, n_batches(setting), budget)
    if problem is not None:
        raise ConfigError(f"sigma = {show(sigma)} {problem}")


def data_memory(setting, nodes: int) -> list[tuple[float, str]]:
    """Memory of a replication's training set, and of the model's quadrature rule (per process)."""
    n, d = setting.n, setting.d
    k = quadrature_nodes(d, nodes)
    return [(FLOAT * n * (d + 1), f"the training set of n x (d + 1) = {n} x {d + 1} numbers"),
            (FLOAT * 4 * k, f"{k} quadrature nodes (nodes = {nodes}, d = {d})")]


#: Nanoseconds per point and coordinate of a gradient over the data, and per quadrature node of the
#: population gradient (measured on a 2-core laptop under load: 36-48 ns per point of a step at d = 5,
#: 1150 ns per epoch and point of four methods at d = 50; 2026-11).
POINT_NS, NODE_NS = 8.0, 15.0


def quadrature_nodes(d: int, nodes: int) -> int:
    """Nodes of the population integrals' rule (:func:`ldpsim.models.erm.sphere_plane_rule`)."""
    return 2 * nodes if d == 3 else nodes * nodes


def path_seconds(T: float, points: float, d: int, nodes: int, track: bool) -> float:
    """Estimated seconds of a SAGD path: ``T`` steps reading ``points`` points each (and the population gradient)."""
    return T * (POINT_NS * d * points + (NODE_NS * quadrature_nodes(d, nodes) if track else 0.0)) * 1e-9


def data_seconds(n: int, d: int) -> float:
    """Estimated seconds of drawing a training set."""
    return POINT_NS * n * d * 1e-9


def validate_batches(setting, oracle_names) -> None:
    """Mini-batches are DPG-Lap's (Theorem 5) and the baselines': refuse them with DPG-Sparse."""
    m = getattr(setting, "batch_size", None)
    if m is not None and m > setting.n:  # m = n is the full batch; a larger one is a typo, not a batch
        raise ConfigError(f"batch_size = {show(m)} is outside [1, n] = [1, {setting.n}]")
    if m is not None and m < setting.n and "sparse" in oracle_names:
        raise ConfigError(f"batch_size = {m} with DPG-Sparse: mini-batch SAGD is defined for DPG-Lap (Zhou et al. "
                          "2020, Theorem 5); drop batch_size or the sparse oracle")


def shown_keys(config, exclude=()) -> list[str]:
    """The varied keys a table shows: not ``exclude``, nor keys that vary only by being blank.

    DPG-Sparse's ``budget`` and ``threshold`` are blank in DPG-Lap settings;
    with one value for the sparse settings they do not tell rows apart.
    """
    shown = []
    for key in config.varied:
        if key in exclude:
            continue
        values = {getattr(s, key) for s in config.settings} - {None}
        if len(values) > 1:
            shown.append(key)
    return shown


def pooled_frequency(counts, steps) -> tuple[float, float]:
    """``sum counts / sum steps`` over replications, with a cluster (delta-method) standard error.

    Steps of one replication share its training set, so they are not
    independent; replications are. With ``F = C / S`` the ratio of totals,
    ``se^2 = sum_r (c_r - F s_r)^2 / (R (R - 1) sbar^2)``, which is the
    standard error of the mean of the per-replication frequencies when every
    replication has the same number of steps.
    """
    c = np.asarray(counts, dtype=float)
    s = np.asarray(steps, dtype=float)
    r = c.shape[0]
    if r == 0 or s.sum() <= 0:
        return math.nan, math.nan
    f = float(c.sum() / s.sum())
    if r < 2:
        return f, math.nan
    resid = c - f * s
    return f, float(math.sqrt(float(resid @ resid) / (r * (r - 1))) / s.mean())


__all__ = ["BATCH_KEY", "DELTA_KEY", "METHODS", "MODEL_KEYS", "NODES_KEY", "N_KEY", "ORACLES", "SPARSE_KEYS",
           "UPDATE_KEYS", "ListKey", "budget_key", "build_model", "check_accounting", "check_eta", "check_steps",
           "checked_model", "count_or", "data_memory", "data_seconds", "data_seed_key", "model_values", "n_batches", "path_params", "path_seconds",
           "pooled_frequency", "positive_or", "resolve_budget", "shown_keys", "step_size", "theorem_value",
           "validate_batches", "with_default"]


class SagdStudy(Study):
    """What the three SAGD studies share in their outputs: ``table.md`` from the study's
    ``markdown`` renderer, its ``figure``, and the privacy rows kept in ``meta.json``."""

    #: ``(tables, title) -> str``, from :mod:`.tables`.
    markdown: staticmethod
    #: ``(out, tables, title) -> list of file names``, from :mod:`.figures`.
    figure: staticmethod

    def warm_up_units(self, config, lanes=None):
        # one unit per kernel, i.e. per loss (each loss record of models/erm.py has its own): compiled side by side
        nodes = config.options["nodes"]
        return [functools.partial(self._warm, config, setting)
                for setting, _ in self.distinct_kernels(config, lambda s: build_model(s, nodes))]

    def _warm(self, config, setting):
        """Run ``setting``'s kernel once on a tiny input: compiles it, or loads it from numba's cache."""
        raise NotImplementedError

    def write_outputs(self, out, tables, meta):
        meta["privacy"] = tables.get("privacy", [])
        (out / "table.md").write_text(self.render(tables, meta))
        return ["table.md"] + self.figure(out, tables, self.table_title(meta))

    def render(self, tables, meta):
        return self.markdown(tables, self.table_title(meta))

