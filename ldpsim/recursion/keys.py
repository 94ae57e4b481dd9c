"""The config keys of an LDP-SGD path, and the identity its random streams are seeded from.

Every study that runs the recursion of :mod:`.kernels` takes these keys:
the model and its own keys (``tau``, ``mechanism``, ``delta``,
``covariates``, ``clip``; ``dim``, ``mu``, ``budget`` for the online models
of 004), the privacy budget, the step size
``eta_i = c i^-gamma``, the start ``theta0``, the mini-batch size and ``n``.
A setting's path depends on them alone, so two studies (or two settings of
one study that differ only in how they analyse the path) given the same
values draw the same paths from the same seed.
"""

from __future__ import annotations

import hashlib
import json
import math

from ..engine.config import ConfigError, Key, Range
from ..models import MODELS
from ..models.covariates import COVARIATES
from ..privacy.mechanisms import MECHANISMS
from ..privacy.online import ONLINE_MECHANISMS, parse_budget

#: Grid keys of a path, in grid order (``n``, :data:`N_KEY`, goes last, after a study's own keys).
PATH_KEYS = (
    Key("model", "choice", "quantile", choices=tuple(MODELS), help="model (see Models)"),
    Key("tau", "float", 0.5, range=Range("(0, 1)"), help="quantile level (quantile models)"),
    Key("epsilon", "float", 1.0, range=Range("(0, inf]"), help="privacy budget per observation; inf: non-private"),
    Key("mechanism", "choice", None, choices=MECHANISMS + tuple(m for m in ONLINE_MECHANISMS if m not in MECHANISMS),
        nullable=True, help="privacy mechanism; default: the model's first"),
    Key("delta", "float", 1e-5, range=Range("(0, 1)"), help="delta of the Gaussian mechanisms"),
    Key("covariates", "choice", "truncnorm", choices=COVARIATES, help="covariate law of the regression models"),
    Key("clip", "float", 1.0, range=Range("(0, inf]"),
        help="residual clip of the linear model; gradient norm clip of the *_clip models"),
    Key("dim", "int", 5, range=Range("[1, 1000]"), help="covariates d of the online models (x = (1, z), z in R^d)"),
    Key("mu", "float", 1.0, range=Range("(0, inf]"), help="GDP budget per user (mechanism gdp); inf: non-private"),
    Key("budget", "any", None, nullable=True, convert=parse_budget,
        help="per-user budget law of the online models, {uniform: [a, b]}; default: the constant mu / epsilon"),
    Key("batch_size", "int", 1, range=Range("[1, inf)"), help="observations per step, each privatized"),
    Key("c", "float", 1.0, range=Range("(0, inf)"), help="step size eta_i = c i^-gamma"),
    Key("gamma", "float", 0.51, range=Range("(0, 1]"), help="step-size exponent"),
    Key("theta0", "float", 0.0, range=Range("(-inf, inf)", "the finite reals"), help="starting value, every coordinate"),
)
#: The number of SGD steps, the last grid key (it varies fastest, as the tables' columns).
N_KEY = Key("n", "int", 1_000_000, range=Range("[2, inf)"), help="SGD steps (observations)")
#: Keys that only some models read (``Model.keys``); blank in other models' settings.
MODEL_KEYS = ("tau", "mechanism", "delta", "covariates", "clip", "dim", "mu", "budget")


def path_values(values: dict) -> dict:
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
    return model.complete_values(values)


def path_seed_key(values: dict) -> int:
    """Integer identity of a setting's random paths: a hash of the model's path keys.

    Replication ``r`` draws from ``SeedSequence(root, spawn_key=(seed_key, r))``:
    a setting's numbers do not depend on which other settings run, nor on
    their order, and settings that differ only in keys that do not touch
    the path (``beta``, ``B``, ``level``, ``multiplier``, a study's
    checkpoints) share their paths (common random numbers).
    """
    identity = {"model": values["model"], **{k: values[k] for k in MODELS[values["model"]].path_keys}}
    if values["batch_size"] != 1:  # so that adding the key left every earlier seed as it was
        identity["batch_size"] = values["batch_size"]
    return int(hashlib.sha256(json.dumps(identity, sort_keys=True, allow_nan=True).encode()).hexdigest()[:16], 16)


def validate_path(setting) -> None:
    """Checks of the path keys taken together."""
    clip = setting.clip
    if clip is not None and math.isinf(clip) and setting.mechanism is not None:
        budget = f"epsilon = {setting.epsilon}" if setting.epsilon is not None else f"mechanism = {setting.mechanism}"
        raise ConfigError(f"clip = inf leaves the gradient unbounded: a private run ({budget}) needs a finite clip")


def gamma_warnings(setting) -> list[tuple[str, str]]:
    """Warnings on the step-size exponent: the average has a CLT only for gamma in (1/2, 1)."""
    if setting.gamma <= 0.5:
        return [("gamma_low", f"gamma = {setting.gamma} <= 1/2: the average of the iterates has no central limit "
                              "theorem")]
    if setting.gamma >= 1.0:
        return [("gamma_high", f"gamma = {setting.gamma}: the theory needs gamma in (1/2, 1)")]
    return []


#: Kinds of :func:`gamma_warnings`.
GAMMA_WARNING_KINDS = {
    "gamma_low": ("gamma <= 1/2", "the average of the iterates has no central limit theorem"),
    "gamma_high": ("gamma >= 1", "the theory needs gamma in (1/2, 1)"),
}

__all__ = ["GAMMA_WARNING_KINDS", "MODEL_KEYS", "N_KEY", "PATH_KEYS", "gamma_warnings", "path_seed_key",
           "path_values", "validate_path"]
