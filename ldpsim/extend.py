"""Everything a model or mechanism file needs, and nothing of ldpsim's internals: the public extension API.

A researcher's model lives in a file of their own and runs in every study,
with every interval method, compiled into the same lane kernels as the
built-in models (the documentation's tutorial "Your own model", docs/extending.md):

    # my_quantile.py
    from typing import NamedTuple
    from ldpsim.extend import Model, observe, register_scalar, normal, randomized_response, where

    class Params(NamedTuple):           # the constants the kernel reads
        flip_prob: float
        high: float
        low: float

    @observe.register(Params)           # one observation's draws
    def draw(params, gen):
        return normal(gen)

    @register_scalar(Params)            # its privatized gradient at theta
    def gradient(params, obs, theta, gen):
        return where(randomized_response(obs <= theta, gen, params.flip_prob), params.high, params.low)

    class MyQuantile(Model):            # the Python side: keys, record, truth
        ...

and a config says ``model: my_quantile.py:MyQuantile``.

What is here, and stays (names are added, never changed or removed without a
deprecation period of one release):

* :class:`Model`, the base class of a model; :func:`observe`,
  :func:`register_scalar`, :func:`register_vector` register a record's draws
  and gradient (the gradient functions run in plain Python in the twins, and
  are compiled into the kernels);
* the draws :func:`uniform`, :func:`normal`, :func:`exponential` and their
  masked forms for rejection loops (:func:`uniform_where`, ...);
* the mechanisms' kernel functions :func:`randomized_response`,
  :func:`laplace`, :func:`gaussian`, :func:`draw_noise`, :func:`add_noise`,
  and :func:`sensitivity` to calibrate from a gradient's bounds;
* :class:`Mechanism` with :func:`register_noise` (additive noise) or
  :func:`register_release` (a release of the scaled gradient, as Duchi's
  mechanism) for a mechanism of one's own;
* the lane helpers :func:`where`, :func:`any_lane`, :func:`all_lanes`,
  :func:`lnot` and :func:`lane_array` (a kernel advances several
  replications side by side: a comparison is a vector of booleans, so a
  choice is ``where(cond, a, b)``, not ``if``);
* :func:`kernel_function`, for a helper that the gradient calls;
* :class:`IntervalMethod` for an interval method of one's own: the segments
  of the path whose iterate sums it reads (:class:`Segments`) or, with
  :func:`register_update`, the state it streams and its update inside the
  kernel; its interval; :func:`add_iterate` to sum iterates as the kernel
  sums them, and :func:`normal_quantile`.
"""

from __future__ import annotations

from .engine.dialect.jit import dual
from .engine.dialect.lanes import all_lanes, any_lane, lane_array, lnot, where
from .engine.dialect.rng import exponential, exponential_where, normal, normal_where, uniform, uniform_where
from .inference.critical_values import normal_quantile
from .inference.user_methods import IntervalMethod, Segments, add_iterate, register_update
from .models.base import Model, constrain, observe, register_scalar, register_vector
from .privacy.mechanisms import (Mechanism, add_noise, draw_noise, gaussian, laplace, randomized_response, register_noise,
                                 register_release, sensitivity)


def kernel_function(func):
    """Make a helper of a model's code callable from its gradient: plain Python in Python, compiled in the kernels.

    The gradient and draw functions are compiled with everything they call;
    a plain function of the user's file is not known to numba, so a helper
    is decorated with this (it is inlined where it is called, so it may take
    the generator ``gen``).
    """
    return dual(func, inline=True)


__all__ = ["Mechanism", "Model", "add_noise", "all_lanes", "any_lane", "constrain", "draw_noise", "exponential",
           "exponential_where", "gaussian", "kernel_function", "lane_array", "laplace", "lnot", "normal",
           "normal_where", "observe", "randomized_response", "register_noise", "register_release",
           "register_scalar", "register_vector",
           "sensitivity", "uniform", "uniform_where", "where"]
# users' interval methods
__all__ += ["IntervalMethod", "Segments", "add_iterate", "normal_quantile", "register_update"]
