"""Models: privatized gradients (for the kernels) and their true parameters.

To add a model, write one module here following ``quantile.py`` (a parameter
NamedTuple, a gradient registered with :func:`~ldpsim.models.base.gradient_for`,
a :class:`~ldpsim.models.base.Model` subclass with ``from_setting``) and add
it to :data:`MODELS`.
"""

from .base import Model, gradient_for, privatized_gradient
from .quantile import QuantileModel

#: Model classes by their config name.
MODELS = {QuantileModel.name: QuantileModel}


def build_model(setting) -> Model:
    """The model object of one config setting."""
    return MODELS[setting.model].from_setting(setting)


__all__ = ["MODELS", "Model", "QuantileModel", "build_model", "gradient_for", "privatized_gradient"]
