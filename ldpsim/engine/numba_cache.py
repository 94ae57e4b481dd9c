"""Numba's on-disk cache made safe for records defined outside ldpsim (users' models and mechanisms).

A kernel's cache entry is keyed by numba on the kernel's own source file and
the types of its arguments, among them the record of the model it runs
(a ``NamedTuple`` class). A record defined in a user's file is a type whose
code numba does not track (numba issues 1833, 9483): after an edit of the
file the next run would load the old machine code. And the cache index of a
kernel pickles the classes of every record it was compiled for, so a file
that was deleted or renamed made the whole index unreadable, for built-in
models too (numba issue 6018).

Two changes to numba's cache, made once when ldpsim is imported:

* the key of an entry whose argument types hold a class from outside ldpsim
  gets a stamp: the SHA-256 of the source of every module those classes come
  from (:func:`user_code_stamp`). An edited file gives another key, so another
  entry: never stale code. Keys of ldpsim's own types are unchanged, so the
  existing caches stay valid.
* an index that names a class which cannot be imported any more is read
  entry by entry: the entries that cannot be rebuilt are left out (and are
  dropped from the file the next time numba writes it), the others load.
  The classes of users' files that ldpsim loaded by path
  (:mod:`ldpsim.models.user`) live in modules named after the file's hash;
  while such a module is not loaded, its classes are read as placeholders,
  so that their entries survive until the file is loaded again.
"""

from __future__ import annotations

import hashlib
import io
import pickle
import sys
import types as pytypes

from numba.core import caching
from numba.core import types

#: Modules of users' files loaded by path are named ``USER_MODULE_PREFIX + <hash>`` (:mod:`ldpsim.models.user`).
USER_MODULE_PREFIX = "ldpsim_user_"
#: Where ldpsim's and numba's own classes come from: their code is the package's, hashed already.
_OWN = ("ldpsim", "numba", "numpy", "builtins", "typing", "collections")


def _module_digest(name: str) -> str:
    """SHA-256 of the source a module was loaded from (recorded at load for users' files), or a per-process token."""
    module = sys.modules.get(name)
    recorded = getattr(module, "__ldpsim_sha256__", None)
    if recorded:
        return recorded
    path = getattr(module, "__file__", None)
    if path:
        try:
            with open(path, "rb") as fh:
                return hashlib.sha256(fh.read()).hexdigest()
        except OSError:
            pass
    # no source to hash (a class typed in an interactive session): a key no other process shares
    return f"process-{id(sys.modules)}-{name}"


def _foreign_modules(ty, found: set, seen: set) -> None:
    if id(ty) in seen:
        return
    seen.add(id(ty))
    cls = getattr(ty, "instance_class", None)
    if isinstance(cls, type) and not cls.__module__.split(".")[0] in _OWN:
        found.add(cls.__module__)
    for attr in ("types", "dtype", "key"):
        inner = getattr(ty, attr, None)
        if isinstance(inner, types.Type):
            _foreign_modules(inner, found, seen)
        elif isinstance(inner, tuple):
            for item in inner:
                if isinstance(item, types.Type):
                    _foreign_modules(item, found, seen)


def user_code_stamp(sig) -> str | None:
    """The hash of the sources of the classes from outside ldpsim in a signature's types (``None``: there are none)."""
    found: set = set()
    seen: set = set()
    for ty in getattr(sig, "args", sig if isinstance(sig, tuple) else ()):
        if isinstance(ty, types.Type):
            _foreign_modules(ty, found, seen)
    if not found:
        return None
    digest = hashlib.sha256()
    for name in sorted(found):
        digest.update(f"{name}:{_module_digest(name)};".encode())
    return "user-code-" + digest.hexdigest()


class _Placeholder:
    """Stands for a class of a user's file that is not loaded in this process (read from a cache index)."""


def _placeholder_module(name: str) -> pytypes.ModuleType:
    module = pytypes.ModuleType(name, "placeholder for a user's file not loaded in this process (ldpsim)")
    module.__ldpsim_placeholder__ = True

    def make(attr):  # a class that re-pickles under its own name, and equals nothing real
        if attr.startswith("__"):
            raise AttributeError(attr)
        cls = type(attr, (_Placeholder,), {"__module__": name, "__qualname__": attr})
        setattr(module, attr, cls)
        return cls

    module.__getattr__ = make
    return module


class _Unreadable(Exception):
    pass


class _TolerantUnpickler(pickle.Unpickler):
    """Reads an index whose classes may be gone: placeholders for users' files, a marker for the rest."""

    def find_class(self, module, name):
        try:
            return super().find_class(module, name)
        except (ImportError, AttributeError):
            if module.startswith(USER_MODULE_PREFIX) and "." not in name:
                sys.modules.setdefault(module, _placeholder_module(module))
                return getattr(sys.modules[module], name)
            return _Gone


class _Gone:
    """A class that no longer exists: an index entry that holds it cannot be rebuilt."""


def _mentions_gone(obj) -> bool:
    try:
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001  (anything that cannot be written back is left out)
        return True
    return b"_Gone" in data


_original_index_key = caching.Cache._index_key
_original_load_index = caching.IndexDataCacheFile._load_index


def _index_key(self, sig, codegen):
    key = _original_index_key(self, sig, codegen)
    stamp = user_code_stamp(sig)
    return key if stamp is None else key + (stamp,)


def _load_index(self):
    try:
        return _original_load_index(self)
    except Exception:  # noqa: BLE001  (an index naming a class that is gone, or a damaged file)
        pass
    try:
        with open(self._index_path, "rb") as f:
            version = pickle.load(f)
            data = f.read()
        if version != self._version:
            return {}
        stamp, overloads = _TolerantUnpickler(io.BytesIO(data)).load()
    except Exception:  # noqa: BLE001  (unreadable: numba recompiles and writes a new index)
        return {}
    if stamp != self._source_stamp:
        return {}
    return {key: value for key, value in overloads.items() if not _mentions_gone(key)}


def install() -> None:
    """Make numba's cache keys and index reads as described in the module docstring (idempotent)."""
    if getattr(caching.Cache._index_key, "__ldpsim__", False):
        return
    _index_key.__ldpsim__ = True
    caching.Cache._index_key = _index_key
    caching.IndexDataCacheFile._load_index = _load_index


__all__ = ["USER_MODULE_PREFIX", "install", "user_code_stamp"]
