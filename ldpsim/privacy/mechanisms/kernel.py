"""The kernel functions every mechanism registers with and every model calls, whatever the mechanism.

Models hold a mechanism's record (a ``NamedTuple``); numba compiles one
kernel per record type, so epsilon = inf (:class:`NoNoise`) costs no branch
and no draw. Two kinds of record:

* additive noise: :func:`add_noise` adds i.i.d. noise to every coordinate,
  :func:`draw_noise` draws one coordinate's (the scalar models);
* a release (:func:`release`): the gradient scaled into ``[-1, 1]^d`` is
  overwritten by an unbiased release of it; :class:`BoundedNoise` wraps
  such a record with the gradient's bounds and a scratch vector.

The models with a bounded gradient call :func:`add_released`,
:func:`add_released_joint` or :func:`released_scalar`: an additive record
adds its noise to the gradient, a :class:`BoundedNoise` scales the gradient,
releases it and scales it back. The family modules register their records
here; the audit (:mod:`ldpsim.privacy.audit`) draws through the same functions.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...engine.dialect.dispatch import by_record


def _fmt(x: float) -> str:
    """A number as the guarantee strings print it: ``1``, ``0.5``, ``1e-05``, ``inf``."""
    return f"{x:g}"


# --- additive noise ------------------------------------------------------------------------


class NoNoise(NamedTuple):
    """No privacy (epsilon = inf)."""

    zero: float = 0.0  # numba wants a field


@by_record
def add_noise(noise, gen, out):
    """Add the mechanism's i.i.d. noise to every coordinate of ``out``."""


@by_record
def draw_noise(noise, gen):
    """One draw of the mechanism's noise (scalar models)."""


@add_noise.register(NoNoise)
def _add_no_noise(noise, gen, out):
    pass


@draw_noise.register(NoNoise)
def _draw_no_noise(noise, gen):
    return 0.0


def _add_drawn(noise, gen, out):
    for j in range(out.shape[0]):
        out[j] += draw_noise(noise, gen)


# --- releases of a scaled gradient ---------------------------------------------------------
# Each record's release overwrites t (shape (d,), values in [-1, 1], one per lane in lanes) with
# an unbiased release of it. Every draw is made in every lane (both sides of each `where`), so
# lanes draw as one-lane runs do, and each call draws a fixed number of numbers.


@by_record
def release(noise, gen, t):
    """Overwrite ``t`` (``(d,)``, in ``[-1, 1]``) with the mechanism's unbiased release of it."""


def register_release(record_cls):
    """Register a releasing mechanism: ``func(noise, gen, t)`` overwrites ``t`` with its release, in place.

    ``t`` is the gradient scaled into ``[-1, 1]^d`` (``g_j / bounds[j]``; one
    entry per lane in lanes); the function must release an unbiased estimate
    of it, ``E[t_new | t] = t``, drawing only from ``gen``. The models with a
    bounded gradient scale the release back (``bounds[j] t_new[j]``), and the
    audit draws through the same function. ldpsim's own mechanisms of this
    kind (Duchi, PM, HM, NPRR, Harmony, ...) are registered with it.
    """
    return release.register(record_cls)


# --- the models' calls: a bounded gradient's release, whatever the mechanism ------------------
# The models with a bounded gradient (mean, linear, logistic, quantile_regression) call these;
# an additive record adds its noise to the gradient (the arithmetic the models always did), a
# BoundedNoise record scales the gradient into [-1, 1]^d and releases it (release).


class BoundedNoise(NamedTuple):
    """A release (:func:`release`) of a gradient in the box ``|g_j| <= bounds[j]``; ``t`` is scratch (per lane)."""

    mechanism: tuple
    bounds: np.ndarray
    t: np.ndarray


@by_record
def add_released(noise, gen, w, x, out):
    """Add the release of the gradient ``w x`` (a residual times the covariates) to ``out``."""


@by_record
def released_scalar(noise, gen, value, center, half):
    """The release of a scalar gradient ``value`` known to lie in ``[center - half, center + half]``."""


@by_record
def add_released_joint(noise, gen, w, x, last, out):
    """Add the release of the gradient ``(w x, last)`` (``len(x) + 1`` coordinates: 004's Huber ``(b, s)``) to ``out``.

    Only this observation's gradient is released: ``out`` may already hold
    the other gradients of a mini-batch.
    """


def _add_released_additive(noise, gen, w, x, out):
    for j in range(x.shape[0]):
        out[j] += w * x[j]
    add_noise(noise, gen, out)


def _add_released_joint_additive(noise, gen, w, x, last, out):
    out[x.shape[0]] += last  # (its own coordinate: the same sums as adding it after w x)
    add_released(noise, gen, w, x, out)


def _released_scalar_additive(noise, gen, value, center, half):
    return value + draw_noise(noise, gen)


def register_additive_vector(record_cls):
    """Register an additive record (``add_noise``) for the vector gradients' releases: the gradient plus its noise."""
    add_released.register(record_cls)(_add_released_additive)
    add_released_joint.register(record_cls)(_add_released_joint_additive)


def register_additive(record_cls):
    """Register an additive record (``add_noise`` and ``draw_noise``) for every release call of the models."""
    register_additive_vector(record_cls)
    released_scalar.register(record_cls)(_released_scalar_additive)


register_additive(NoNoise)


@add_released.register(BoundedNoise)
def _add_released_bounded(noise, gen, w, x, out):
    t, bounds = noise.t, noise.bounds
    for j in range(x.shape[0]):
        t[j] = w * x[j] / bounds[j]
    release(noise.mechanism, gen, t)
    for j in range(x.shape[0]):
        out[j] += bounds[j] * t[j]


@add_released_joint.register(BoundedNoise)
def _add_released_joint_bounded(noise, gen, w, x, last, out):
    # t is the release's own scratch: a mini-batch's other gradients in out stay out of it
    t, bounds = noise.t, noise.bounds
    n = x.shape[0]
    for j in range(n):
        t[j] = w * x[j] / bounds[j]
    t[n] = last / bounds[n]
    release(noise.mechanism, gen, t)
    for j in range(n + 1):
        out[j] += bounds[j] * t[j]


@released_scalar.register(BoundedNoise)
def _released_scalar_bounded(noise, gen, value, center, half):
    t = noise.t
    t[0] = (value - center) / half
    release(noise.mechanism, gen, t)
    return center + half * t[0]


def register_noise(record_cls):
    """Register a user's additive mechanism: ``func(noise, gen)`` draws the noise of one coordinate.

    The models that take an additive mechanism add one draw to each
    coordinate of the gradient (:func:`add_noise`), or to the scalar gradient
    (:func:`draw_noise`), in the order of the coordinates; the audit
    (``ldpsim audit``) draws through the same functions.
    """

    def decorate(func):
        draw_noise.register(record_cls)(func)
        add_noise.register(record_cls)(_add_drawn)
        register_additive(record_cls)
        return func

    return decorate


__all__ = ["BoundedNoise", "NoNoise", "add_noise", "add_released", "add_released_joint", "draw_noise",
           "register_additive", "register_additive_vector", "register_noise", "register_release", "release",
           "released_scalar"]
