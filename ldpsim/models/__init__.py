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
"""

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


def build_model(setting) -> Model:
    """The model object of one config setting."""
    return MODELS[setting.model].from_setting(setting)


__all__ = ["MODELS", "Model", "add_gradient_at", "add_privatized_gradient", "build_model", "constrain", "gradient_at",
           "observe", "privatized_gradient", "register_scalar", "register_vector"]
