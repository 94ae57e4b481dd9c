"""The releases of a bounded gradient (Duchi, PM, HM, NPRR, Harmony, ...), by the names this module always had.

Each mechanism now lives with its constants, record, release and class in
its family's module of :mod:`ldpsim.privacy.mechanisms` (``duchi``,
``piecewise``, ``hybrid``, ``nprr``, ``harmony``, ``sampled``), registered in
:mod:`ldpsim.privacy.mechanisms.registry`; this module gathers them for the
code and scripts that import them from here. docs/mechanisms.md has the
formulas and their sources.
"""

from __future__ import annotations

from .mechanisms import CLASSES, LDP_MECHANISMS, ONE_DIMENSIONAL, make_ldp_mechanism
from .mechanisms.bounded import BoundedMechanism
from .mechanisms.duchi import (Duchi, DuchiL2, DuchiL2Release, DuchiLinf, DuchiLinfRelease, DuchiRelease, duchi_bound,
                               duchi_variance, l2_constant, linf_constant, linf_correlation)
from .mechanisms.harmony import Harmony, HarmonyRelease
from .mechanisms.hybrid import Hybrid, HybridRelease, hybrid_alpha, hybrid_threshold, hybrid_variance
from .mechanisms.kernel import register_release, release
from .mechanisms.nprr import NPRR, NPRRRelease, nprr_entropy_rule, nprr_epsilon
from .mechanisms.piecewise import Piecewise, PiecewiseRelease, piecewise_c, piecewise_variance
from .mechanisms.sampled import HybridD, PiecewiseD, SampledRelease, piecewise_d_k

#: ``eps*`` of the Hybrid mechanism (Wang et al. 2019, about 0.61): below it HM is Duchi's mechanism alone. It is
#: where PM's variance at ``t = 0`` equals Duchi's (the worst case of both); solved, not typed in (on first use, by
#: the module's ``__getattr__``: scipy.optimize is not loaded at import).
HYBRID_THRESHOLD: float


def __getattr__(name):
    if name == "HYBRID_THRESHOLD":
        return hybrid_threshold()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BoundedMechanism", "CLASSES", "Duchi", "DuchiL2", "DuchiL2Release", "DuchiLinf", "DuchiLinfRelease",
           "DuchiRelease", "HYBRID_THRESHOLD", "Harmony", "HarmonyRelease", "Hybrid", "HybridD", "HybridRelease",
           "LDP_MECHANISMS", "NPRR", "NPRRRelease", "ONE_DIMENSIONAL", "Piecewise", "PiecewiseD", "PiecewiseRelease",
           "SampledRelease", "duchi_bound", "duchi_variance", "hybrid_alpha", "hybrid_variance",
           "l2_constant", "linf_constant", "linf_correlation", "make_ldp_mechanism", "nprr_entropy_rule",
           "nprr_epsilon", "piecewise_c", "piecewise_d_k", "piecewise_variance", "register_release", "release"]
