"""What a method of the registry declares (:class:`Method`), and the registry's queries.

A *method* is what a study's ``methods:`` key names: an interval (or a
confidence sequence) of the coverage study, an interval of the DP-SGD study,
an optimizer of SAGD's generalization study. Each is declared once, by a
:class:`Method` in its module of :mod:`ldpsim.inference.methods`, and every
list of method names ldpsim uses (a study's choices and defaults, the
methods that read the block sums, the zoo's, the stream codes, the docs'
tables) is a query of the registry (:func:`names`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ...engine.runs.config import Key

#: The kinds of method. ``interval``: a ``level`` interval at the end of the path, from the main path's
#: streamed state; ``sequence``: a confidence sequence from that state, ``level`` at every step at once;
#: ``release``: reads each user's NPRR release in the kernel; ``zoo``: keeps state (and paths) of its
#: own in a kernel pass of its own (docs/zoo.md); ``dpsgd``: an interval of the DP-SGD study;
#: ``optimizer``: a path of SAGD's generalization study.
KINDS = ("interval", "sequence", "release", "zoo", "dpsgd", "optimizer")
#: What a method may read of the main path's streamed state (:class:`~ldpsim.inference.streaming.PathState`).
STATES = ("blocks", "batches", "sn", "truth")


@dataclass(frozen=True)
class Method:
    """One method, declared in one place.

    Attributes
    ----------
    name : str
        As a config's ``methods:`` names it, and tables print it.
    text : str
        Its row in the documentation's tables: what it is and whose.
    studies : mapping of str to int
        The studies (and ``trace``) that take it, each with the method's
        position among that study's choices: the order of a study's
        ``methods`` key, of its chunks' columns and of its tables.
    kind : str
        One of :data:`KINDS`.
    default_in : tuple of str
        The studies that run it when a config names no methods.
    reads : tuple of str
        What it reads of the main path's streamed state (:data:`STATES`):
        the kernel streams ``blocks`` and ``batches`` only for methods that read them.
    streams : str
        What it streams inside the kernel, in words (the docs' table).
    update : callable, optional
        Its per-step update in the kernel, where it has one of its own (the
        zoo's; the classic methods' are the main kernel's own sums).
    interval : callable, optional
        Its interval from the state: ``interval(inputs)`` of an
        :class:`IntervalInputs` (kinds ``interval`` and ``sequence``),
        ``interval(arrays, inputs)`` of a :class:`ZooInputs` (``zoo``), or the
        function the study calls with its own arguments (``dpsgd``).
    twin : callable, optional
        The plain-Python twin of ``update`` (tests hold the kernel to it). ``None`` for the
        methods that read the main path's own sums: their twin is the main kernel's,
        :func:`ldpsim.recursion.twins.path_twin` (and ``state_from_definitions``, the defining formulas).
    keys : tuple of Key
        The config keys it reads, with defaults and ranges (shared keys, as
        ``level``, appear in several methods; each is declared once).
    looks : str
        ``"yes"``: an interval at every look of a run with looks; ``"needs"``:
        only with looks; ``"no"``.
    models : str
        Which models it runs on, in words (``"any"``: every model).
    stream_code : int, optional
        A zoo method with paths of its own: child ``stream_code`` of the
        replication's seed is its stream (never changed: committed runs were drawn from it).
    code : int, optional
        An optimizer's code in SAGD's kernel.
    tags : frozenset of str
        Roles other code asks about (``own_estimate``: a point estimate of its
        own; ``no_se_ratio``; ``private_moments``, ``path``,
        ``random_scaling``: the DP-SGD study's).
    params : mapping
        Constants of its interval (NPRR: the bound and whether it is a CI).
    state_floats : callable, optional
        ``state_floats(d, setting, options)``: floats a replication keeps for it.
    pass_cost : callable, optional
        ``pass_cost(options)``: a zoo method's kernel pass in main paths (time estimates).
    answers : callable, optional
        ``answers(options)``: how often each user answers (privacy); 1 if None.
    layout : callable, optional
        ``layout(setting, options)``: a zoo method's schedule, built before a path runs.
    style : tuple, optional
        ``(colour, marker)`` of its points in ``coverage.png``.
    line : tuple, optional
        ``(colour, linestyle)`` of its bounds in trace's ``figure1.png`` (a method trace draws has one).
    texts : mapping of str to str
        Its row in one study's table where it differs from ``text`` (the DP-SGD study's oracle).
    """

    name: str
    text: str
    studies: Mapping[str, int]
    kind: str = "interval"
    default_in: tuple = ()
    reads: tuple = ()
    streams: str = ""
    update: Callable | None = None
    interval: Callable | None = None
    twin: Callable | None = None
    keys: tuple = ()
    looks: str = "yes"
    models: str = "any"
    stream_code: int | None = None
    code: int | None = None
    tags: frozenset = field(default_factory=frozenset)
    params: Mapping[str, Any] = field(default_factory=dict)
    state_floats: Callable | None = None
    pass_cost: Callable | None = None
    answers: Callable | None = None
    layout: Callable | None = None
    style: tuple | None = None
    line: tuple | None = None
    texts: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        if not self.text.strip():
            raise ValueError(f"method {self.name}: no row for the documentation's tables (text is empty)")
        if self.kind not in KINDS:
            raise ValueError(f"method {self.name}: kind = {self.kind!r} is not one of {', '.join(KINDS)}")
        unknown = [r for r in self.reads if r not in STATES]
        if unknown:
            raise ValueError(f"method {self.name}: reads {unknown}, not among {', '.join(STATES)}")
        if any(s not in self.studies for s in self.default_in):
            raise ValueError(f"method {self.name}: a default in a study that does not take it")
        if not all(isinstance(k, Key) for k in self.keys):
            raise ValueError(f"method {self.name}: keys must be engine.runs.config.Key objects")

    def text_in(self, study: str) -> str:
        """Its row in ``study``'s table of methods."""
        return self.texts.get(study, self.text)

    def key(self, name: str) -> Key:
        """Its key ``name``."""
        return next(k for k in self.keys if k.name == name)


@dataclass(frozen=True)
class IntervalInputs:
    """What an ``interval`` or ``sequence`` method's interval is computed from (one replication, one setting).

    ``state`` and ``layout``: the path's :class:`~ldpsim.inference.streaming.PathState` and
    :class:`~ldpsim.inference.streaming.StreamLayout`; ``draws``: the block bootstrap's ``(B, d)``
    statistics (``None`` when no method reads the blocks); ``sigma``: the model's asymptotic
    covariance; ``t_opt``: where the confidence sequences are narrowest.
    """

    state: Any
    layout: Any
    draws: Any
    level: float
    sigma: Any
    t_opt: float


@dataclass(frozen=True)
class ZooInputs:
    """What a zoo method's interval is computed from besides its arrays: the main path's average and the run."""

    theta_bar: Any
    setting: Any
    options: Mapping
    spec: Any
    hessian: Any


#: Every method by name, in the order their modules registered them (:func:`register`).
REGISTRY: dict[str, Method] = {}


def register(*methods: Method) -> tuple[Method, ...]:
    """Add ``methods`` to :data:`REGISTRY` (a name registered twice is an error)."""
    for m in methods:
        if m.name in REGISTRY:
            raise ValueError(f"method {m.name!r} is registered twice")
        REGISTRY[m.name] = m
    return methods


def names(study: str = "coverage", *, kind=None, reads: str | None = None, tag: str | None = None,
          default: bool = False) -> tuple[str, ...]:
    """The names of the methods ``study`` takes, in its order, filtered.

    Parameters
    ----------
    study : str
        A study's name (or ``trace``).
    kind : str or tuple of str, optional
        Only methods of these kinds.
    reads : str, optional
        Only methods that read this part of the main path's state.
    tag : str, optional
        Only methods with this tag.
    default : bool
        Only the methods ``study`` runs when a config names none.
    """
    kinds = (kind,) if isinstance(kind, str) else kind
    chosen = [m for m in REGISTRY.values() if study in m.studies and (kinds is None or m.kind in kinds)
              and (reads is None or reads in m.reads) and (tag is None or tag in m.tags)
              and (not default or study in m.default_in)]
    return tuple(m.name for m in sorted(chosen, key=lambda m: m.studies[study]))


def get(name: str) -> Method:
    """The registered method ``name`` (KeyError if there is none)."""
    return REGISTRY[name]


def keys_of(methods, *, grid: bool | None = None) -> tuple[Key, ...]:
    """The keys the ``methods`` (names) read, each once, in the methods' order then their own."""
    out: dict[str, Key] = {}
    for name in methods:
        for k in REGISTRY[name].keys:
            if grid is None or k.grid == grid:
                if k.name in out and out[k.name] is not k:
                    raise ValueError(f"key {k.name!r} is declared twice, differently ({name})")
                out.setdefault(k.name, k)
    return tuple(out.values())


def readers(key_name: str, methods) -> tuple[str, ...]:
    """Of ``methods`` (names), those that read the key ``key_name``."""
    return tuple(m for m in methods if any(k.name == key_name for k in REGISTRY[m].keys))


__all__ = ["IntervalInputs", "KINDS", "Method", "REGISTRY", "STATES", "ZooInputs", "get", "keys_of", "names",
           "readers", "register"]
