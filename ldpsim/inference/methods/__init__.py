"""The registry of methods: one module per method (or per family that shares a state), each declaring it once.

A module here registers its methods (:func:`~.base.register`) with everything
ldpsim asks of them (:class:`~.base.Method`): the name, which studies take it
and where it sits in their tables, what it streams inside the kernel and its
update, how its interval is computed from that state, its keys with defaults
and ranges, its twin, its row in the documentation. Every list of method
names (a study's choices and defaults, the methods that read the blocks, the
zoo's, the seeds' stream codes, the generated tables of README.md and
docs/) is a query of :data:`~.base.REGISTRY`.

Every module of this package but :mod:`.base`, :mod:`.common` and
:mod:`.docs` is a family of methods and is imported here, in name order: a
new built-in method is a new module (its table positions say where its rows go).
"""

from __future__ import annotations

import importlib
import pkgutil

from .base import REGISTRY, IntervalInputs, Method, ZooInputs, get, keys_of, names, readers, register

_NOT_FAMILIES = ("base", "common", "docs")

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
    if _info.name not in _NOT_FAMILIES and not _info.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_info.name}")

#: The coverage study's methods that read the main path's streamed state, in table order.
POINTWISE_METHODS = names(kind="interval")
#: The asymptotic confidence sequences: ``level`` at every step at once, asymptotically.
CS_METHODS = names(kind="sequence")
#: The coverage study's methods whose interval comes from the main path's state (``intervals``), in table order.
CLASSIC_METHODS = POINTWISE_METHODS + CS_METHODS
#: Methods that need the block sums (and the bootstrap draws).
BLOCK_METHODS = names(reads="blocks")
#: Methods that read the batch-means batches.
BATCH_METHODS = names(reads="batches")
#: Methods the coverage study runs when a config does not say.
DEFAULT_METHODS = names(default=True)
#: The method zoo's methods: state (and paths) of their own in a kernel pass of their own (docs/zoo.md).
ZOO_METHODS = names(kind="zoo")
#: Methods that read each user's NPRR release.
RELEASE_METHODS = names(kind="release")
#: ``method -> stream code`` of the zoo's methods with paths of their own: child ``code`` of a replication's seed.
STREAM_CODES = {m: REGISTRY[m].stream_code for m in ZOO_METHODS if REGISTRY[m].stream_code is not None}

__all__ = ["BATCH_METHODS", "BLOCK_METHODS", "CLASSIC_METHODS", "CS_METHODS", "DEFAULT_METHODS", "IntervalInputs",
           "Method", "POINTWISE_METHODS", "REGISTRY", "RELEASE_METHODS", "STREAM_CODES", "ZOO_METHODS", "ZooInputs",
           "get", "keys_of", "names", "readers", "register"]
