"""The registry of built-in mechanisms: one entry per name a config may give, declared by its family's module.

Each family module of :mod:`ldpsim.privacy.mechanisms` (``duchi``,
``piecewise``, ``laplace``, ...) holds, in one place, a mechanism's
constants, kernel record, release or noise (the numba code), Python class,
audit hook and guarantee text, and ends with :func:`register` calls. Every
list of mechanism names (``MECHANISMS``, ``LDP_MECHANISMS``,
``ONE_DIMENSIONAL``, ``ONLINE_MECHANISMS``, ``PER_USER_MECHANISMS``), the
docs' mechanism tables (:mod:`ldpsim.docgen`) and the audit's cases of the
releases (``scripts/audit_privacy.py``) are read from here.

This module imports no family: it is filled as the package
:mod:`ldpsim.privacy.mechanisms` imports them, and its functions read it at
call time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

#: What a mechanism privatizes: a bit (``rr``), a gradient by added noise, or a gradient by a release of it.
KINDS = ("bit", "additive", "release")


@dataclass(frozen=True)
class OnlineCalibration:
    """How Shi et al.'s online models calibrate a mechanism to the l2 sensitivity ``D`` of their gradients.

    Parameters
    ----------
    make : callable
        ``make(budget, dim, sensitivity, delta)``: the mechanism at a constant budget.
    numerator : callable, optional
        ``numerator(dim, sensitivity, delta)``: the noise scale times the budget, so that
        user ``i`` with budget ``b_i`` gets scale ``numerator / b_i`` (raises ``ValueError``
        for a ``delta`` the calibration cannot take). ``None``: no per-user form.
    variance_factor : float
        The variance of one coordinate's noise over its scale squared (Laplace: 2).
    per_user_text : str
        A user's guarantee at budget ``b_i``, formatted with ``numerator``, ``dim``,
        ``sensitivity`` and ``delta`` (a number as guarantees print it).
    per_user_record : type, optional
        The kernel record of the per-user noise, ``(numerator, low, width)``: the user's
        budget ``U(low, low + width)`` is drawn in the kernel before the noise.
    """

    make: Callable
    numerator: Callable | None = None
    variance_factor: float = 1.0
    per_user_text: str = ""
    per_user_record: type | None = None


@dataclass(frozen=True)
class MechanismEntry:
    """One built-in mechanism, as configs name it.

    Parameters
    ----------
    name : str
        The name configs give (``mechanism: duchi``).
    family : str
        The family module that declares it (``ldpsim.privacy.mechanisms.<family>``).
    cls : type
        Its Python class (parameters, variance, guarantee, kernel record).
    text : str
        Its row in the docs' mechanism tables: what it is, and whose.
    kind : {'bit', 'additive', 'release'}
        ``release``: an unbiased release of the gradient scaled into ``[-1, 1]^d``
        (a ``BoundedMechanism``, registered with ``register_release``).
    bounded : bool
        Taken by the models with a bounded gradient, or by ``quantile`` (``rr``): the ``MECHANISMS`` list.
    one_dimensional : bool
        A release of one coordinate: a vector's coordinates each get ``epsilon / d``.
    online : bool
        Calibrated to an l2 sensitivity by Shi et al.'s online models (``ONLINE_MECHANISMS``);
        their clipped models also take every release. Its :class:`OnlineCalibration` is ``calibration``.
    online_default : bool
        The online models' default mechanism (first in ``ONLINE_MECHANISMS``).
    per_user : bool
        Has a per-user form: each user's budget drawn from a law (``PER_USER_MECHANISMS``).
    budget_key : {'epsilon', 'mu'}
        The config key its budget is read from.
    delta : bool
        Reads the config's ``delta`` (an (epsilon, delta) guarantee); the key is blanked for the others.
    audit_dims : tuple of int
        A release's audit hook: the dimensions ``scripts/audit_privacy.py`` draws it at, at the
        vertices -1 and 1 (with its class's ``output_bound`` and ``jump_points``). The additive
        mechanisms and ``rr`` are audited through the models that call them.
    calibration : OnlineCalibration, optional
        How the online models calibrate it (:mod:`ldpsim.privacy.online`); given exactly when ``online``,
        with a per-user form exactly when ``per_user``.
    """

    name: str
    family: str
    cls: type
    text: str
    kind: str
    bounded: bool = True
    one_dimensional: bool = False
    online: bool = False
    online_default: bool = False
    per_user: bool = False
    budget_key: str = "epsilon"
    delta: bool = False
    audit_dims: tuple = ()
    calibration: OnlineCalibration | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"mechanism {self.name!r}: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.kind == "release" and not self.audit_dims:
            raise ValueError(f"mechanism {self.name!r}: a release needs the dimensions it is audited at")
        if self.online != (self.calibration is not None):
            raise ValueError(f"mechanism {self.name!r}: an online mechanism, and only one, has a calibration")
        if self.per_user != (self.calibration is not None and self.calibration.numerator is not None
                             and self.calibration.per_user_record is not None):
            raise ValueError(f"mechanism {self.name!r}: a per-user mechanism, and only one, has a calibration with "
                             "a numerator and a per-user kernel record")

    @property
    def rank(self) -> tuple:
        """Where the entry stands in every list: the bit, the additive mechanisms, the 1-D releases, the vector
        releases, then the online models' own (their default first); within each, in the order registered."""
        if self.kind == "release":
            return (2,) if self.one_dimensional else (3,)
        if not self.bounded:
            return (4, not self.online_default)
        return (0,) if self.kind == "bit" else (1,)


#: name -> entry, in the order of registration (:func:`entries` sorts them by :attr:`MechanismEntry.rank`).
REGISTRY: dict[str, MechanismEntry] = {}


def register(name: str, cls: type, text: str, kind: str, **options) -> MechanismEntry:
    """Enter the mechanism ``name`` (its family is the calling class's module); returns the entry.

    Raises
    ------
    ValueError
        If ``name`` is registered already.
    """
    if name in REGISTRY:
        raise ValueError(f"mechanism {name!r} is registered twice ({REGISTRY[name].family} and {cls.__module__})")
    entry = MechanismEntry(name, cls.__module__.rpartition(".")[2], cls, text, kind, **options)
    REGISTRY[name] = entry
    return entry


def entries(**where) -> list[MechanismEntry]:
    """The registered entries whose fields equal ``where`` (all without), in the lists' order."""
    chosen = [e for e in REGISTRY.values() if all(getattr(e, k) == v for k, v in where.items())]
    return sorted(chosen, key=lambda e: e.rank)  # stable: registration order within a rank


def names(**where) -> tuple[str, ...]:
    """The names of :func:`entries` ``(**where)``."""
    return tuple(e.name for e in entries(**where))


__all__ = ["KINDS", "MechanismEntry", "OnlineCalibration", "REGISTRY", "entries", "names", "register"]
