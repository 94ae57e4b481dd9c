"""Models: privatized gradients (for the kernels) and their true parameters.

A model draws one observation inside a kernel, privatizes its gradient with
a mechanism of :mod:`ldpsim.privacy`, and knows its truth: ``theta_star``,
the Hessian ``G``, the gradient covariance ``S`` and the oracle covariance.
To add a model, write one module here following ``quantile.py`` (scalar) or
``linear.py`` (vector): a parameter NamedTuple, the draws of one observation
registered for it with ``observe.register``, its privatized gradient at any
``theta`` with ``register_scalar`` or ``register_vector``,
and a :class:`~ldpsim.models.base.Model` subclass with its truth (``theta_star``,
``hessian``, ``gradient_covariance``); then add the class to :data:`MODELS`.
The built-in models use what :mod:`ldpsim.extend` offers a user's model, but
import it from where it is defined: ``ldpsim.extend`` imports this package,
and ``import ldpsim.extend`` as a program's first import would meet a cycle.
"""

import difflib

from ..engine.runs import usercode
from ..engine.runs.config import show
from ..engine.errors import ConfigError
from . import user
from .base import (Model, add_gradient_at, add_privatized_gradient, constrain, gradient_at, observe, privatized_gradient,
                   register_scalar, register_vector)
from .huber import HuberClipModel, HuberModel
from .linear import LinearModel
from .logistic import LogisticModel
from .logistic_online import LogisticClipModel, LogisticMallowsModel
from .mean import MeanModel
from .quantile import QuantileModel
from .quantile_regression import QuantileRegressionModel

#: Model classes by their config name.
MODELS = {cls.name: cls for cls in (QuantileModel, QuantileRegressionModel, LinearModel, LogisticModel, MeanModel,
                                    HuberModel, HuberClipModel, LogisticMallowsModel, LogisticClipModel)}


def model_class(value) -> type[Model]:
    """The class a setting's ``model`` value names: a built-in by name, or a user's (``file.py:Class``, a class)."""
    if isinstance(value, str) and value in MODELS:
        return MODELS[value]
    if isinstance(value, type) or usercode.looks_like_spec(value):
        return user.prepare(usercode.resolve(value, Model, "model"), value)
    raise ConfigError(f"model = {show(value)} is not one of: {', '.join(MODELS)}; or a user's model as "
                      "'path/to/file.py:Class' or 'package.module:Class'")


def canonical_model(name: str, value) -> str:
    """A config's ``model`` value as a setting holds it: a built-in's name, or a user's class with its source hash."""
    if isinstance(value, str) and value in MODELS:
        return value
    if isinstance(value, type) or usercode.looks_like_spec(value):
        text = usercode.canonical(value, Model, name)
        user.prepare(usercode.resolve(text, Model, name), text)
        return text
    guess = difflib.get_close_matches(str(value), list(MODELS), n=1)
    hint = f" (did you mean {guess[0]!r}?)" if guess else ""
    raise ConfigError(f"{name} = {show(value)} is not one of: {', '.join(MODELS)}{hint}; or a user's model as "
                      "'path/to/file.py:Class' or 'package.module:Class'")


def is_user_model(value) -> bool:
    """Whether a setting's ``model`` value names a user's class."""
    return not (isinstance(value, str) and value in MODELS)


def build_model(setting) -> Model:
    """The model object of one config setting."""
    cls = model_class(setting.model)
    if not cls.declared:
        return cls.from_setting(setting)
    return user.build(cls, setting, usercode.shown(setting.model))


__all__ = ["MODELS", "Model", "add_gradient_at", "add_privatized_gradient", "build_model", "canonical_model",
           "constrain", "gradient_at", "is_user_model", "model_class", "observe", "privatized_gradient",
           "register_scalar", "register_vector"]
