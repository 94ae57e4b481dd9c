"""NPRR_H, NPRR_EB, NPRR_H_CI, NPRR_EB_CI: confidence sequences and intervals from each user's NPRR release.

Waudby-Smith, Wu & Ramdas (2023): the mean model with ``mechanism: nprr``
releases each user's value once; these read the releases (not the SGD path),
streamed in the checkpoint kernel (:mod:`ldpsim.studies.coverage.releases`)
in O(1) state each (:func:`~ldpsim.inference.nprr_cs.nprr_update`). Each
reports the running intersection of its bounds: the CSs'
``[max_{s<=t} L_s, min_{s<=t} U_s]``, the CIs' ``[L, U]`` at ``n`` as the
authors' code reads them. All four are valid at every ``t`` at once (a CI is
the CS of bets tuned for ``n``); at a look ``t < n`` a CI is that CS read at ``t``.
"""

from __future__ import annotations

from .. import nprr_cs
from .base import REGISTRY, Method, names, register
from .common import LEVEL

_MODELS = "the mean model with mechanism nprr"
_STREAMS = f"each user's release, in {nprr_cs.STATE_SIZE} floats of running sums (nprr_update)"

register(*(
    Method(name, text, studies={"coverage": position}, kind="release", looks="needs", models=_MODELS,
           streams=_STREAMS, update=nprr_cs.nprr_update, twin=nprr_cs.release_reference, keys=(LEVEL,),
           params={"bound": bound, "ci": ci})
    for name, text, position, bound, ci in (
        ("NPRR_H", "NPRR Hoeffding confidence sequence (Waudby-Smith, Wu & Ramdas 2023); `mean` model, `nprr`", 80,
         "hoeffding", False),
        ("NPRR_EB", "NPRR empirical-Bernstein confidence sequence (same source and needs)", 90, "empbern", False),
        ("NPRR_H_CI", "NPRR Hoeffding interval, bets tuned for n", 100, "hoeffding", True),
        ("NPRR_EB_CI", "NPRR empirical-Bernstein interval, bets tuned for n", 110, "empbern", True),
    )
))


def release_methods() -> dict[str, tuple[str, bool]]:
    """``name -> (bound, ci)`` of the methods that read NPRR releases (:data:`RELEASE_METHODS`)."""
    return {m: (REGISTRY[m].params["bound"], REGISTRY[m].params["ci"]) for m in names(kind="release")}


#: ``name -> (bound of ldpsim.inference.nprr_cs, a fixed-n CI or not)`` of the release methods.
RELEASE_METHODS = release_methods()


def release_params(methods, r: float, level: float, n: int):
    """``(len(methods), PARAMS_SIZE)`` params of the release ``methods`` (names) at ``alpha = 1 - level``."""
    return nprr_cs.release_params([RELEASE_METHODS[m] for m in methods], r, level, n)


def release_reference(name: str, z, r: float, level: float, n: int):
    """The running bounds of the release method ``name`` over ``t = 1..len(z)``, from the plain-numpy reference."""
    return nprr_cs.release_reference(*RELEASE_METHODS[name], z, r, level, n)


__all__ = ["RELEASE_METHODS", "release_methods", "release_params", "release_reference"]
