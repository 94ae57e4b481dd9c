"""Run configuration: YAML (or CLI) values validated into dataclasses.

Keys are named after the paper's symbols and double as CLI names
(``--set KEY=VALUE`` works for each). A list value of a grid key expands into
a Cartesian grid of settings; ``methods`` is a list but not a grid axis.
Bad input raises :class:`ConfigError` with one line naming the key, the
value and what is allowed. Conditions under which the theory does not hold
raise :class:`ConfigWarning` instead.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import itertools
import json
import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .inference import DEFAULT_METHODS, METHODS, MULTIPLIERS, uses_blocks
from .mechanisms import MECHANISMS
from .models import MODELS
from .models.covariates import COVARIATES
from .streaming import StreamLayout


class ConfigError(ValueError):
    """A config value that cannot be run; the message is one line."""


class ConfigWarning(UserWarning):
    """A config value that runs but lies outside what the theory covers."""


#: Keys whose values may be lists (grid axes), in the order the grid is
#: expanded (``n`` last, so it varies fastest, as the tables' columns).
GRID_KEYS = ("model", "tau", "epsilon", "mechanism", "delta", "covariates", "clip", "batch_size",
             "c", "gamma", "theta0", "beta", "B", "level", "multiplier", "n")
#: Keys that only some models read (``Model.keys``); blank in other models' settings.
MODEL_KEYS = ("tau", "mechanism", "delta", "covariates", "clip")
#: Keys that take one value per run.
RUN_KEYS = ("reps", "seed", "methods")
ALL_KEYS = GRID_KEYS + RUN_KEYS

DEFAULTS: dict[str, Any] = {
    "model": "quantile",
    "n": 1_000_000,
    "reps": 500,
    "seed": 20240501,
    "tau": 0.5,
    "epsilon": 1.0,
    "mechanism": None,  # the model's own default (its first)
    "delta": 1e-5,
    "covariates": "truncnorm",
    "clip": 1.0,
    "batch_size": 1,
    "c": 1.0,
    "gamma": 0.51,
    "theta0": 0.0,
    "beta": 0.75,
    "B": 500,
    "level": 0.9,
    "multiplier": "uniform",
    "methods": list(DEFAULT_METHODS),
}

_INT_KEYS = {"n", "reps", "seed", "B", "batch_size"}
_FLOAT_KEYS = {"tau", "epsilon", "delta", "clip", "c", "gamma", "theta0", "beta", "level"}
_CHOICES = {"model": tuple(MODELS), "multiplier": MULTIPLIERS, "mechanism": MECHANISMS, "covariates": COVARIATES}


def _show(value) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def _as_int(key: str, value) -> int:
    if isinstance(value, bool):
        raise ConfigError(f"{key} = {_show(value)} is not an integer")
    if isinstance(value, int):
        return value
    number = value
    if isinstance(value, str):  # PyYAML reads 1e8 as a string
        try:
            number = float(value)
        except ValueError:
            raise ConfigError(f"{key} = {_show(value)} is not an integer") from None
    if isinstance(number, float) and math.isfinite(number) and number.is_integer():
        return int(number)
    raise ConfigError(f"{key} = {_show(value)} is not an integer")


def _as_float(key: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ConfigError(f"{key} = {_show(value)} is not a number")
    try:
        number = float(value)
    except ValueError:
        raise ConfigError(f"{key} = {_show(value)} is not a number") from None
    if math.isnan(number):
        raise ConfigError(f"{key} = {_show(value)} is not a number")
    return number


def _as_choice(key: str, value) -> str:
    allowed = _CHOICES[key]
    if not isinstance(value, str) or value not in allowed:
        raise ConfigError(f"{key} = {_show(value)} is not one of: {', '.join(allowed)}")
    return value


def _coerce(key: str, value):
    if key == "mechanism" and value is None:
        return None
    if key in _INT_KEYS:
        return _as_int(key, value)
    if key in _FLOAT_KEYS:
        return _as_float(key, value)
    return _as_choice(key, value)


def _check_range(key: str, value, ok: bool, allowed: str) -> None:
    if not ok:
        raise ConfigError(f"{key} = {_show(value)} is outside {allowed}")


@dataclass(frozen=True)
class Setting:
    """One point of the grid: everything one replication needs but its index.

    Attributes mirror the config keys; see README for their meaning.
    """

    model: str
    tau: float | None
    epsilon: float
    mechanism: str | None
    delta: float | None
    covariates: str | None
    clip: float | None
    batch_size: int
    c: float
    gamma: float
    theta0: float
    beta: float
    B: int
    level: float
    multiplier: str
    n: int

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def seed_key(self) -> int:
        """Integer identity of the random path: a hash of the model's path keys.

        Replication ``r`` of this setting draws from
        ``SeedSequence(root, spawn_key=(seed_key, r))``: a setting's numbers do
        not depend on which other settings run, nor on their order, and
        settings that differ only in inference keys (``beta``, ``B``,
        ``level``, ``multiplier``) share their paths (common random numbers).
        """
        identity = {"model": self.model, **{k: getattr(self, k) for k in MODELS[self.model].path_keys}}
        if self.batch_size != 1:  # so that adding the key left every earlier seed as it was
            identity["batch_size"] = self.batch_size
        return int(_digest(identity)[:16], 16)

    def layout(self, methods) -> StreamLayout:
        return StreamLayout.build(self.n, self.beta, self.gamma, blocks=uses_blocks(methods), batches="BM" in methods)


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, allow_nan=True).encode()).hexdigest()


@dataclass(frozen=True)
class Config:
    """A validated run: the grid of settings and the per-run keys.

    Attributes
    ----------
    settings : tuple of Setting
        Grid points, ``n`` varying fastest.
    reps : int
        Monte Carlo replications per setting.
    seed : int
        Root seed.
    methods : tuple of str
        Interval methods, in :data:`~ldpsim.inference.METHODS` order.
    varied : tuple of str
        Grid keys with more than one value.
    values : dict
        The resolved key -> value (or list) mapping, as recorded in meta.json.
    """

    settings: tuple[Setting, ...]
    reps: int
    seed: int
    methods: tuple[str, ...]
    varied: tuple[str, ...]
    values: dict


def _model_setting(values: dict) -> Setting:
    """Blank the keys the model does not read and fill in its default mechanism.

    A grid over models then holds each distinct run once, and a setting
    shows only what applies to it (``tau`` is blank for ``linear``).
    """
    model = MODELS[values["model"]]
    values = {**values, **{k: None for k in MODEL_KEYS if k not in model.keys}}
    if "mechanism" in model.keys:
        if values["mechanism"] is not None and values["mechanism"] not in model.mechanisms:
            raise ConfigError(f"mechanism = {values['mechanism']!r} is not available for model {model.name!r}; "
                              f"allowed: {', '.join(model.mechanisms)}")
        values["mechanism"] = None if math.isinf(values["epsilon"]) else values["mechanism"] or model.mechanisms[0]
    if values.get("mechanism") != "gaussian":
        values["delta"] = None
    return Setting(**values)


def _validate_setting(s: Setting, methods) -> None:
    if s.tau is not None:
        _check_range("tau", s.tau, 0.0 < s.tau < 1.0, "(0, 1)")
    _check_range("epsilon", s.epsilon, s.epsilon > 0.0, "(0, inf]")
    if s.delta is not None:
        _check_range("delta", s.delta, 0.0 < s.delta < 1.0, "(0, 1)")
    if s.clip is not None:
        _check_range("clip", s.clip, s.clip > 0.0, "(0, inf]")
        if math.isinf(s.clip) and s.mechanism is not None:
            raise ConfigError(f"clip = inf leaves the gradient unbounded: a private run (epsilon = {s.epsilon}) "
                              "needs a finite clip")
    _check_range("batch_size", s.batch_size, s.batch_size >= 1, "[1, inf)")
    _check_range("c", s.c, 0.0 < s.c < math.inf, "(0, inf)")
    _check_range("gamma", s.gamma, 0.0 < s.gamma <= 1.0, "(0, 1]")
    _check_range("theta0", s.theta0, math.isfinite(s.theta0), "the finite reals")
    _check_range("beta", s.beta, 0.0 < s.beta < 1.0, "(0, 1)")
    _check_range("B", s.B, s.B >= 1, "[1, inf)")
    _check_range("level", s.level, 0.0 < s.level < 1.0, "(0, 1)")
    _check_range("n", s.n, s.n >= 2, "[2, inf)")
    if "SN" in methods:
        _check_range("level", s.level, 0.05 <= s.level <= 0.9999, "[0.05, 0.9999] (SN critical values)")
    if "BM" in methods and s.gamma >= 1.0:
        raise ConfigError(f"gamma = {s.gamma} leaves no batch-means batches; BM needs gamma < 1")
    layout = s.layout(methods)
    if uses_blocks(methods) and not layout.enough_blocks:
        raise ConfigError(
            f"n = {s.n} is too small for two bootstrap blocks with beta = {s.beta} "
            f"(block length {layout.block_len}); raise n or lower beta"
        )
    if "BM" in methods and not layout.enough_batches:
        raise ConfigError(f"n = {s.n} is too small for two batch-means batches with gamma = {s.gamma}; raise n")


#: Per kind of warning: what the condition is called when it holds in several
#: settings (one line names them all), and why it matters.
_WARNING_KINDS = {
    "gamma_low": ("gamma <= 1/2", "the average of the iterates has no central limit theorem"),
    "gamma_high": ("gamma >= 1", "the theory needs gamma in (1/2, 1)"),
    "beta": ("beta <= gamma", "Theorem 3.2 (block bootstrap) needs gamma < beta"),
    "gaussian": ("multiplier = 'gaussian'", "unbounded; Theorem 3.2 asks bounded multipliers"),
}


def _warnings_for(s: Setting, methods) -> list[tuple[str, str]]:
    """The (kind, message) pairs of one setting outside the theory; kinds as in :data:`_WARNING_KINDS`."""
    out = []
    if s.gamma <= 0.5:
        out.append(("gamma_low", f"gamma = {s.gamma} <= 1/2: the average of the iterates has no central limit theorem"))
    elif s.gamma >= 1.0:
        out.append(("gamma_high", f"gamma = {s.gamma}: the theory needs gamma in (1/2, 1)"))
    if uses_blocks(methods) and s.beta <= s.gamma:
        out.append(("beta", f"beta = {s.beta} <= gamma = {s.gamma}: Theorem 3.2 (block bootstrap) needs gamma < beta"))
    if uses_blocks(methods) and s.multiplier == "gaussian":
        out.append(("gaussian", "multiplier = 'gaussian' is unbounded; Theorem 3.2 asks bounded multipliers"))
    return out


def _warn_outside_theory(settings, methods) -> None:
    """One :class:`ConfigWarning` per kind of condition, however many settings meet it.

    A kind met with one message (one offending value) warns with that
    message; a sweep that crosses a boundary on purpose (``beta <= gamma`` in
    10 of 50 cells) gets one line counting the settings and naming the first.
    """
    found: dict[str, list[str]] = {}
    for s in settings:
        for kind, message in _warnings_for(s, methods):
            found.setdefault(kind, []).append(message)
    for kind, messages in found.items():
        distinct = list(dict.fromkeys(messages))
        if len(distinct) == 1:
            text = distinct[0]
        else:
            label, why = _WARNING_KINDS[kind]
            first = distinct[0].split(":")[0].split(";")[0]
            text = f"{label} in {len(messages)} of {len(settings)} settings (first: {first}): {why}"
        warnings.warn(text, ConfigWarning, stacklevel=3)


def _check_keys(mapping: dict, where: str, allowed=ALL_KEYS) -> None:
    for key in mapping:
        if key not in allowed:
            guess = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" (did you mean {guess[0]!r}?)" if guess else ""
            raise ConfigError(f"unknown key {key!r} in {where}{hint}; allowed: {', '.join(allowed)}")


def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def resolve(mapping: dict, where: str = "config") -> Config:
    """Validate a raw key -> value mapping (defaults filled in) into a :class:`Config`.

    Parameters
    ----------
    mapping : dict
        Keys from :data:`ALL_KEYS`; grid keys may hold lists.
    where : str
        Where the mapping came from, for error messages.

    Returns
    -------
    Config

    Raises
    ------
    ConfigError
        On the first bad key or value.
    """
    _check_keys(mapping, where)
    raw = {**DEFAULTS, **mapping}

    for key in ("reps", "seed"):
        if isinstance(raw[key], (list, tuple)):
            raise ConfigError(f"{key} = {raw[key]} must be a single integer, not a list")
    reps = _as_int("reps", raw["reps"])
    seed = _as_int("seed", raw["seed"])
    _check_range("reps", reps, reps >= 1, "[1, inf)")
    _check_range("seed", seed, seed >= 0, "[0, inf)")

    methods = _as_list(raw["methods"])
    for m in methods:
        if m not in METHODS:
            raise ConfigError(f"methods contains {_show(m)}; allowed: {', '.join(METHODS)}")
    if not methods:
        raise ConfigError(f"methods = [] is empty; allowed: {', '.join(METHODS)}")
    methods = tuple(m for m in METHODS if m in methods)

    axes = {}
    for key in GRID_KEYS:
        values = [_coerce(key, v) for v in _as_list(raw[key])]
        if not values:
            raise ConfigError(f"{key} = [] is empty")
        axes[key] = list(dict.fromkeys(values))  # drop repeats, keep order
    combos = (_model_setting(dict(zip(GRID_KEYS, combo))) for combo in itertools.product(*axes.values()))
    settings = tuple(dict.fromkeys(combos))  # models that ignore a varied key would repeat

    for s in settings:
        _validate_setting(s, methods)
    _warn_outside_theory(settings, methods)

    axes = {k: list(dict.fromkeys(getattr(s, k) for s in settings)) for k in GRID_KEYS}
    varied = tuple(k for k in GRID_KEYS if len(axes[k]) > 1)
    values = {k: (v if len(v) > 1 else v[0]) for k, v in axes.items()}
    values.update(reps=reps, seed=seed, methods=list(methods))
    return Config(settings, reps, seed, methods, varied, values)


def load_yaml(path: str | Path) -> dict:
    """Read a config file into a mapping, with one-line errors."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(f"config file {str(path)!r} not found") from None
    except OSError as exc:
        raise ConfigError(f"config file {str(path)!r} cannot be read: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise ConfigError(f"config file {str(path)!r} is not valid YAML: {problem}{where}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {str(path)!r} must hold a mapping of keys to values")
    return data


def parse_assignment(text: str, allowed=ALL_KEYS) -> tuple[str, Any]:
    """Parse a ``--set KEY=VALUE`` argument; VALUE is read as YAML (``[0.5, 0.9]``, ``inf``).

    ``allowed`` lists the keys the command takes (``trace`` takes others).
    """
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"--set expects KEY=VALUE, got {text!r}")
    _check_keys({key: None}, "--set", allowed)
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError:
        parsed = value
    return key, parsed


def load(path: str | Path | None = None, overrides: dict | None = None) -> Config:
    """Load a config file, apply CLI overrides (which win), and validate.

    Parameters
    ----------
    path : str or Path, optional
        YAML file; defaults only if omitted.
    overrides : dict, optional
        Key -> value from the command line.

    Returns
    -------
    Config
    """
    mapping = load_yaml(path) if path is not None else {}
    where = f"config file {str(path)!r}" if path is not None else "config"
    # overrides were checked where they were parsed; resolve checks the file's keys
    mapping.update(overrides or {})
    return resolve(mapping, where)
