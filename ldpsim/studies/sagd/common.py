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

from ...engine.config import ConfigError, Key, Range, as_float, as_int, show
from ...models.erm import ERM_MODELS, ErmModel
from .kernel import LAP, METHOD_NAMES, SPARSE, PathParams

#: The oracles of the concentration and rate studies, as configs spell them.
ORACLES = {"lap": LAP, "sparse": SPARSE}
#: The methods of the generalization study.
METHODS = {name: code for code, name in METHOD_NAMES.items()}
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


def positive_or(*words):
    """Converter for keys that take a positive number or one of ``words``."""

    def convert(name, value):
        if isinstance(value, str) and value in words:
            return value
        try:
            number = as_float(name, value)
        except ConfigError:
            raise ConfigError(f"{name} = {show(value)} is not a number > 0 or one of: {', '.join(words)}") from None
        if not (number > 0 and math.isfinite(number)):
            raise ConfigError(f"{name} = {show(value)} is not a number > 0 or one of: {', '.join(words)}")
        return number

    return convert


def count_or(*words):
    """Converter for keys that take an integer >= 1 or one of ``words``."""

    def convert(name, value):
        if isinstance(value, str) and value in words:
            return value
        try:
            number = as_int(name, value)
        except ConfigError:
            raise ConfigError(f"{name} = {show(value)} is not an integer >= 1 or one of: {', '.join(words)}") from None
        if number < 1:
            raise ConfigError(f"{name} = {show(value)} is not an integer >= 1 or one of: {', '.join(words)}")
        return number

    return convert


#: The data: model and the sphere design (grid keys).
MODEL_KEYS = (
    Key("model", "choice", "logistic", choices=tuple(ERM_MODELS), help="logistic (convex) or welsch (non-convex)"),
    Key("d", "int", 5, range=Range("[3, 1000]"), help="dimension of x and w, intercept included"),
    Key("radius", "float", 1.0, range=Range("(0, inf)"), help="x = (1, r S), S uniform on the unit sphere"),
    Key("signal", "float", 2.0, range=Range("[0, inf)"), help="standard deviation of x'beta"),
    Key("noise", "float", 0.5, range=Range("(0, inf)"), help="welsch: sd of the errors"),
    Key("scale", "float", 1.0, range=Range("(0, inf)"), help="welsch: c of the loss"),
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
        help="DPG-Sparse's tau in units of sigma (Thresholdout: 4)"),
)
#: Privacy accounting (grid key: it changes the reported epsilon, not the paths).
DELTA_KEY = Key("delta", "float", 1e-5, range=Range("(0, 1)"), help="delta of the (epsilon, delta) guarantees")
#: Per-run key: accuracy of the population integrals.
NODES_KEY = Key("nodes", "int", 32, grid=False, range=Range("[4, 512]"),
                help="Gauss-Jacobi nodes per axis of the population integrals")
#: Size of the training set; the last grid key.
N_KEY = Key("n", "int", 2000, range=Range("[4, inf)"), help="size of the training set S")


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


def validate_batches(setting, oracle_names) -> None:
    """Mini-batches are DPG-Lap's (Theorem 5) and the baselines': refuse them with DPG-Sparse."""
    m = getattr(setting, "batch_size", None)
    if m is not None and m < setting.n and "sparse" in oracle_names:
        raise ConfigError(f"batch_size = {m} with DPG-Sparse: mini-batch SAGD is defined for DPG-Lap (001, Theorem 5); "
                          "drop batch_size or the sparse oracle")


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


__all__ = ["BATCH_KEY", "DELTA_KEY", "ListKey", "METHODS", "MODEL_KEYS", "NODES_KEY", "N_KEY", "ORACLES",
           "SPARSE_KEYS", "UPDATE_KEYS", "budget_key", "build_model", "count_or", "positive_or", "with_default", "data_seed_key", "model_values", "n_batches",
           "path_params", "pooled_frequency", "resolve_budget", "shown_keys", "step_size", "validate_batches"]
