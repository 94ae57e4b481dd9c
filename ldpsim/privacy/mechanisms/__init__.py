"""Local privacy mechanisms applied to one observation's gradient: one module per family, and their registry.

Each family module declares, in one place, its mechanisms' constants,
kernel record, release or noise (the numba code), Python class, audit hook
and guarantee text, and registers each mechanism in :mod:`.registry`:

======================  ==================================================================
module                  mechanisms (config names)
======================  ==================================================================
:mod:`.rr`              ``rr``: randomized response on a bit (the quantile model)
:mod:`.laplace_noise`   ``laplace`` (to a box's l1 sensitivity, or to Shi et al.'s l2 bound)
:mod:`.gaussian_noise`  ``gaussian`` (analytic), ``gaussian_classical``, DP-SGD's step noise
:mod:`.gdp_noise`       ``gdp``: mu-GDP, the online models' default
:mod:`.duchi`           ``duchi``, ``duchi_linf``, ``duchi_l2``
:mod:`.piecewise`       ``piecewise``
:mod:`.hybrid`          ``hybrid``
:mod:`.nprr`            ``nprr``
:mod:`.harmony`         ``harmony``
:mod:`.sampled`         ``piecewise_d``, ``hybrid_d``
======================  ==================================================================

What they share: :mod:`.kernel` (the functions a record is registered with
and the models call), :mod:`.additive` (the sensitivity of a gradient in a
box, the guarantee line and the checks), :mod:`.bounded` (the releases' base
class and 1-D loop); a user's mechanism (:mod:`ldpsim.extend`) is checked
and built by :mod:`.user`. Each class builds itself from a box's bounds
(``from_bounds``) and gives its kernel record (``noise_record``); the
calibration of Shi et al.'s online models and their per-user budgets is
:mod:`ldpsim.privacy.online`'s.

Every list of names below is read from the registry; :func:`make_mechanism`
and :func:`noise_record` build a model's mechanism and its kernel record.
A new built-in mechanism is one family module (or an entry in one) and one
import line here.
"""

from __future__ import annotations

import math

from ...engine.runs import usercode
from ...engine.dialect.lanes import lane_array
# the families, imported for their registrations: the order of registration within a list's rank
from . import rr, laplace_noise, gaussian_noise, duchi, piecewise, hybrid, nprr  # noqa: F401
from . import harmony, sampled, gdp_noise  # noqa: F401
from .additive import sensitivity
from .bounded import BoundedMechanism
from .gaussian_noise import (ClassicalGaussian, Gaussian, GaussianNoise, L2Gaussian, classical_gaussian_sigma,
                             gaussian, gaussian_delta, gaussian_or_zero)
from .kernel import (BoundedNoise, NoNoise, add_noise, add_released, add_released_joint, draw_noise, register_additive,
                     register_additive_vector, register_noise, register_release, release, released_scalar)
from .laplace_noise import L2Laplace, Laplace, LaplaceNoise, laplace
from .registry import REGISTRY, MechanismEntry, entries, names
from .rr import RandomizedResponse, randomized_response
from .user import (RELEASE_PROBES, REPEAT_DRAWS, Mechanism, build_mechanism, check_noise_draws, check_release_draws,
                   user_record)

#: The releases of a bounded gradient (:class:`~.bounded.BoundedMechanism`), as configs spell them.
LDP_MECHANISMS = names(kind="release")
#: Of those, the 1-D ones (a vector's coordinates each get epsilon / d).
ONE_DIMENSIONAL = names(kind="release", one_dimensional=True)
#: The mechanisms of the models that privatize one observation's gradient (or bit) calibrated to its bounds.
MECHANISMS = names(bounded=True)
#: The additive mechanisms of Shi et al.'s online models, their default first (their clipped models also take
#: every release).
ONLINE_MECHANISMS = tuple(sorted(names(online=True), key=lambda n: not REGISTRY[n].online_default))
#: Of those, the mechanisms whose budget may be drawn per user.
PER_USER_MECHANISMS = tuple(n for n in ONLINE_MECHANISMS if REGISTRY[n].per_user)
#: The mechanisms of a gradient in a box ``|g_j| <= bounds[j]`` (the models ``mean``, ``linear``, ``logistic``,
#: ``quantile_regression``): additive noise calibrated to the box's sensitivity, then the releases.
BOX_MECHANISMS = names(kind="additive", bounded=True) + LDP_MECHANISMS
#: The releases' classes by name.
CLASSES = {e.name: e.cls for e in entries(kind="release")}


def make_ldp_mechanism(name: str, epsilon: float, bounds) -> BoundedMechanism:
    """The release ``name`` (:data:`LDP_MECHANISMS`) for a gradient in the box ``|g_j| <= bounds[j]``."""
    return CLASSES[name].from_bounds(epsilon, bounds)


def make_mechanism(name: str, epsilon: float, bounds, delta: float | None = None):
    """The mechanism ``name`` for a gradient with ``|g_j| <= bounds[j]``.

    Parameters
    ----------
    name : str
        One of :data:`BOX_MECHANISMS`, built by its class's ``from_bounds``
        (``'laplace'`` calibrated to the l1 sensitivity of the box,
        ``'gaussian'`` to its l2 sensitivity, analytically), or a user's
        ``'path/to/file.py:Class'``.
    epsilon : float
        Privacy budget; ``inf`` gives ``None`` (no mechanism).
    bounds : array_like
        Per-coordinate bound of the (clipped) gradient.
    delta : float, optional
        Required for ``'gaussian'``.

    Returns
    -------
    Laplace, Gaussian, BoundedMechanism, Mechanism or None
    """
    if math.isinf(epsilon):
        return None
    if name in BOX_MECHANISMS:
        return REGISTRY[name].cls.from_bounds(epsilon, bounds, delta)
    if usercode.looks_like_spec(name):  # a user's mechanism, path/to/file.py:Class
        return build_mechanism(name, epsilon, bounds, delta)
    raise ValueError(f"mechanism = {name!r} is not a mechanism of a bounded gradient; allowed: "
                     f"{', '.join(BOX_MECHANISMS)}")


def noise_record(mechanism, lanes: int = 1):
    """The kernel record of a mechanism (``None``: no noise): its class's ``noise_record``; scratch for ``lanes``."""
    if mechanism is None:
        return NoNoise()
    if isinstance(mechanism, Mechanism):
        record = user_record(mechanism, lanes)
        if type(record) in release.registry:
            return BoundedNoise(record, mechanism.bounds.astype(float), lane_array(mechanism.bounds.size, lanes))
        return record
    return mechanism.noise_record(lanes)


__all__ = ["BOX_MECHANISMS", "BoundedMechanism", "BoundedNoise", "CLASSES", "ClassicalGaussian", "Gaussian", "GaussianNoise",
           "L2Gaussian", "L2Laplace", "LDP_MECHANISMS", "Laplace", "LaplaceNoise", "MECHANISMS", "Mechanism",
           "MechanismEntry", "NoNoise", "ONE_DIMENSIONAL", "ONLINE_MECHANISMS", "PER_USER_MECHANISMS", "REGISTRY",
           "RELEASE_PROBES", "REPEAT_DRAWS", "RandomizedResponse", "add_noise", "add_released", "add_released_joint", "build_mechanism",
           "check_noise_draws", "check_release_draws", "classical_gaussian_sigma", "draw_noise", "entries",
           "gaussian", "gaussian_delta", "gaussian_or_zero", "laplace", "make_ldp_mechanism", "make_mechanism",
           "names", "noise_record", "randomized_response", "register_additive", "register_additive_vector",
           "register_noise", "register_release", "release", "released_scalar", "sensitivity", "user_record"]
