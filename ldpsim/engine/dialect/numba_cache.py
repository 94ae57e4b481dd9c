"""Numba's on-disk cache keyed on the sources each kernel compiles, and safe for users' records.

Numba keys a cache entry on the source file of the cached function and the
types of its arguments. A kernel compiles much more than its own file: the
model's gradient and the mechanism's release (``by_record``), the draws of
:mod:`ldpsim.engine.dialect.rng`, the lane dialect, constants of other modules. An
edit of one of those would leave numba loading old machine code (numba
issues 1833, 9483). Four changes to numba's cache, made once when ldpsim is
imported, make it exact and keep it across unrelated edits:

* **Each entry carries the sources it was compiled from.** While numba
  compiles a function, every Python function it translates (inlined ones,
  overload implementations, the callees it compiles or loads), the typing
  code of every overload and intrinsic it resolves, the module of every
  type in its signature and every module whose constants its functions read
  are recorded; the entry is saved with the SHA-256 of each of those files
  (:func:`dependencies`). Loading an entry re-hashes them (once per file and
  process): if one changed, the entry is stale and numba compiles afresh,
  writing the new entry over it. An edit of ``cli.py`` or of the reporting
  code therefore recompiles nothing, and an edit of a model's module
  recompiles that model's kernels only. Files of numba, llvmlite, numpy,
  scipy and the standard library are not recorded: numba's version and
  Python's are part of the entry's key already.
* an entry's key holds the options its function was compiled with (numba's
  runtime or not, Python wrapper or not), which numba's key leaves out.
* the key of an entry whose argument types hold a class from outside ldpsim
  gets a stamp: the SHA-256 of the source of every module those classes come
  from (:func:`user_code_stamp`), so that two versions of a user's file keep
  an entry each.
* an index that names a class which cannot be imported any more is read
  entry by entry: the entries that cannot be rebuilt are left out (and are
  dropped from the file the next time numba writes it), the others load.
  The classes of users' files that ldpsim loaded by path
  (:mod:`ldpsim.models.user`) live in modules named after the file's hash;
  while such a module is not loaded, its classes are read as placeholders,
  so that their entries survive until the file is loaded again.
* an entry is saved under a lock on its function's index (``fcntl``, where
  the platform has it): numba reads the index, adds the entry and writes the
  index and the data file without one, so two processes that finished
  compiling two specialisations of one function at once (the workers of
  :func:`ldpsim.engine.runs.compiling.compile_kernels`, pytest's workers) could
  both take the same data file name, and one entry be lost or point at the
  other's machine code.
* a process compiles a kernel under a lock on its entry's key (``fcntl``):
  a second process that needs the same kernel at the same time (pytest's
  workers, two runs started together) waits for the first and loads its
  entry instead of compiling it again. Only a compilation that starts
  outside numba's compiler lock takes it (a kernel, not the functions it
  calls), so no process waits for a lock while holding numba's.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.util
import io
import os
import pickle
import sys
import sysconfig
import threading
import types as pytypes
from pathlib import Path

from numba.core import bytecode, caching, dispatcher, sigutils
from numba.core.compiler_lock import global_compiler_lock
from numba.core import types
from numba.core.typing import templates

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


# --- the sources a compilation reads --------------------------------------------------

#: Folders whose files are not recorded: their code is versioned with numba's key (numba's own version, Python's).
def _untracked_roots() -> tuple[str, ...]:
    import llvmlite
    import numba
    import numpy
    import scipy

    roots = [os.path.dirname(m.__file__) for m in (numba, llvmlite, numpy, scipy)]
    roots += [sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib")]
    return tuple(os.path.join(os.path.realpath(r), "") for r in roots)


_UNTRACKED = _untracked_roots()
class _Frames(threading.local):
    """The files each recording frame has seen: one frame per compilation under way, per thread."""

    def __init__(self):
        self.stack: list[set] = []


_local = _Frames()
_tracked_cache: dict[str, bool] = {}


def _tracked(path) -> bool:
    try:
        return _tracked_cache[path]
    except KeyError:
        pass
    real = os.path.realpath(path) if isinstance(path, str) else ""
    ok = bool(real) and os.path.isfile(real) and not real.startswith(_UNTRACKED)
    _tracked_cache[path] = ok
    return ok


def note_files(paths) -> None:
    """Record ``paths`` as read by the compilation under way (nothing if none is)."""
    frames = _local.stack
    if frames:
        top = frames[-1]
        for path in paths:
            if path not in top and _tracked(path):
                top.add(path)


def _module_file(name):
    module = sys.modules.get(name)
    return getattr(module, "__file__", None)


_imports: dict = {}


def _import_map(module_name: str) -> dict:
    """``name -> (module, name there)`` of the ``from ... import`` statements of a module's source."""
    if module_name not in _imports:
        found = {}
        module = sys.modules.get(module_name)
        path = getattr(module, "__file__", None)
        if path and path.endswith(".py") and _tracked(path):
            package = module_name if path.endswith("__init__.py") else module_name.rpartition(".")[0]
            try:
                tree = ast.parse(Path(path).read_bytes())
            except (OSError, SyntaxError, ValueError):
                tree = None
            for node in ast.walk(tree) if tree is not None else ():
                if isinstance(node, ast.ImportFrom):
                    try:
                        base = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
                    except (ImportError, ValueError):
                        continue
                    for alias in node.names:
                        found[alias.asname or alias.name] = (base, alias.name)
        _imports[module_name] = found
    return _imports[module_name]


def _origins(module_name: str, name: str) -> list:
    """The files of the modules a name was imported through, to the one that defines it."""
    files = []
    for _ in range(8):  # re-exports are short chains
        step = _import_map(module_name).get(name)
        if step is None:
            break
        module_name, name = step
        files.append(_module_file(module_name))
    return files


def _names(code, out: set) -> set:
    out.update(code.co_names)
    for const in code.co_consts:
        if isinstance(const, pytypes.CodeType):
            _names(const, out)
    return out


#: ``function -> files`` of :func:`note_function`, found once per function and process.
_function_files: dict = {}


def note_function(func) -> None:
    """Record the file of ``func`` and of the modules whose constants, classes and submodules it reads."""
    if not _local.stack:
        return
    func = getattr(func, "py_func", func)
    try:
        files = _function_files[func]
    except (KeyError, TypeError):
        files = _function_sources(func)
        try:
            _function_files[func] = files
        except TypeError:  # (not hashable: not remembered)
            pass
    note_files(files)


def _function_sources(func) -> tuple:
    code = getattr(func, "__code__", None)
    if code is None or not _tracked(code.co_filename):  # numba's own typers and implementations: not ours to track
        return ()
    files = [code.co_filename]
    glbls = getattr(func, "__globals__", {})
    module_name = glbls.get("__name__", "")
    for name in _names(code, set()):
        if name not in glbls:
            continue
        value = glbls[name]
        if isinstance(value, pytypes.ModuleType):
            files.append(getattr(value, "__file__", None))
        elif isinstance(value, type):
            files.append(_module_file(value.__module__))
        elif not callable(value):  # a number, tuple or array frozen into the machine code: where it is defined
            files.extend(_origins(module_name, name))
    return tuple(f for f in set(files) if f and _tracked(f))


def _note_types(tys) -> None:
    """Record the modules of the types in a signature (the lane dialect's, the records' classes)."""
    found: set = set()
    seen: set = set()

    def walk(ty):
        if id(ty) in seen:
            return
        seen.add(id(ty))
        found.add(type(ty).__module__)
        cls = getattr(ty, "instance_class", None)
        if isinstance(cls, type):
            found.add(cls.__module__)
        for attr in ("types", "dtype", "key", "array"):
            inner = getattr(ty, attr, None)
            if isinstance(inner, types.Type):
                walk(inner)
            elif isinstance(inner, tuple):
                for item in inner:
                    if isinstance(item, types.Type):
                        walk(item)

    for ty in tys:
        if isinstance(ty, types.Type):
            walk(ty)
    note_files(f for f in map(_module_file, found) if f)


class recording:
    """Record the sources read inside the ``with`` block into a new frame (``.files`` after it); they join the outer frame."""

    def __enter__(self):
        self.files = set()
        _local.stack.append(self.files)
        return self

    def __exit__(self, *exc):
        frames = _local.stack
        frames.pop()
        if frames:
            frames[-1].update(self.files)
        return False


_digests: dict = {}


def _digest(path: str) -> str | None:
    """SHA-256 of a file, once per content seen by this process (``None``: gone)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (path, st.st_mtime_ns, st.st_size)
    if key not in _digests:
        try:
            _digests[key] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError:
            return None
    return _digests[key]


def dependencies(files) -> tuple:
    """The manifest saved with an entry: ``((path, sha256), ...)`` of the files it was compiled from."""
    return tuple(sorted((f, _digest(f)) for f in files))


def fresh(manifest) -> bool:
    """Whether every file of an entry's manifest still has the content it was compiled from."""
    return all(_digest(path) == digest for path, digest in manifest)


#: Marks a dispatcher's cache entry written with its manifest: ``(_TAG, manifest, numba's data)``.
_TAG = "ldpsim-sources-1"

_original_compile = dispatcher.Dispatcher.compile
_original_from_function = bytecode.FunctionIdentity.from_function.__func__
_original_intrinsic_generic = templates._IntrinsicTemplate.generic


def _compile(self, sig):
    # one frame per (dispatcher, signature) being compiled or loaded; its sources are kept on the dispatcher
    # so that a later kernel of this process calling the same compiled function records them too
    args, _ = sigutils.normalize_signature(sig)
    with _one_compiler(self, args), recording() as frame:
        _note_types(args)
        result = _original_compile(self, sig)
        known = self.__dict__.setdefault("_ldpsim_sources", {})
        key = tuple(args)
        if key in known:
            frame.files.update(known[key])
        known[key] = frozenset(frame.files)
    return result


@contextlib.contextmanager
def _one_compiler(disp, args):
    """Hold a lock on the cache entry ``disp`` at ``args`` would have while it is loaded or compiled.

    Taken only where numba's compiler lock is not held by this thread (a
    kernel, not a function compiled inside one) and the entry is not in this
    process already; a process that cannot lock compiles as numba does.
    """
    cache = getattr(disp, "_cache", None)
    if (fcntl is None or not isinstance(cache, caching.FunctionCache) or global_compiler_lock.is_locked()
            or tuple(args) in disp.overloads):
        yield
        return
    try:
        key = cache._index_key(tuple(args), disp.targetctx.codegen())
        name = hashlib.sha256(repr(key).encode()).hexdigest()[:24]
        cache._impl.locator.ensure_cache_path()
        lock = open(f"{cache._cache_file._index_path}.{name}.compiling", "a+b")  # beside the index
    except Exception:  # noqa: BLE001  (a key or a folder that cannot be had: no lock, as numba)
        yield
        return
    with lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def _from_function(cls, pyfunc):
    note_function(pyfunc)
    return _original_from_function(cls, pyfunc)


def _intrinsic_generic(self, args, kws):
    note_function(self._definition_func)
    return _original_intrinsic_generic(self, args, kws)


def sources_of(disp, args) -> frozenset:
    """The files that this process recorded for ``disp`` compiled or loaded at argument types ``args``."""
    return disp.__dict__.get("_ldpsim_sources", {}).get(tuple(args), frozenset())


def _load_overload(self, sig, target_context):
    if not self._enabled:
        return None
    key = self._index_key(sig, target_context.codegen())
    data = self._cache_file.load(key)
    if data is None:
        return None
    if isinstance(self, caching.FunctionCache):
        if not (isinstance(data, tuple) and len(data) == 3 and data[0] == _TAG) or not fresh(data[1]):
            return None  # written without its sources, or compiled from sources since edited: compile afresh
        note_files(path for path, _ in data[1])
        data = data[2]
    return self._impl.rebuild(target_context, data)


def _save_overload(self, sig, data):
    if not self._enabled or not self._impl.check_cachable(data):
        return
    self._impl.locator.ensure_cache_path()
    key = self._index_key(sig, data.codegen)
    payload = self._impl.reduce(data)
    if isinstance(self, caching.FunctionCache):
        frames = _local.stack
        payload = (_TAG, dependencies(frames[-1] if frames else ()), payload)
    self._cache_file.save(key, payload)


def cached(disp, args) -> bool:
    """Whether ``disp`` at argument types ``args`` has a fresh entry in the cache (no compilation, no loading)."""
    cache = getattr(disp, "_cache", None)
    if not isinstance(cache, caching.FunctionCache):
        return False
    sig = tuple(args)
    try:
        data = cache._cache_file.load(cache._index_key(sig, disp.targetctx.codegen()))
    except Exception:  # noqa: BLE001  (an unreadable entry is no entry)
        return False
    return isinstance(data, tuple) and len(data) == 3 and data[0] == _TAG and fresh(data[1])


_original_index_key = caching.Cache._index_key
_original_load_index = caching.IndexDataCacheFile._load_index


def _index_key(self, sig, codegen):
    key = _original_index_key(self, sig, codegen)
    options = getattr(self, "_ldpsim_options", None)
    if options is not None:  # (numba keys on the bytecode, not on the options it compiled with)
        key += (options,)
    stamp = user_code_stamp(sig)
    return key if stamp is None else key + (stamp,)


_original_enable_caching = dispatcher.Dispatcher.enable_caching


def _enable_caching(self):
    _original_enable_caching(self)
    # the jit options are part of what is compiled (numba's runtime or not, wrappers, error model)
    self._cache._ldpsim_options = repr(sorted(self.targetoptions.items()))


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


_original_save = caching.IndexDataCacheFile.save

try:
    import fcntl
except ImportError:  # (Windows: numba's own unlocked save)
    fcntl = None


def _save(self, key, data):
    if fcntl is None:
        return _original_save(self, key, data)
    with open(self._index_path + ".lock", "a+b") as lock:  # beside the index, in the same cache folder
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            return _original_save(self, key, data)
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def install() -> None:
    """Make numba's cache as described in the module docstring (idempotent)."""
    if getattr(caching.Cache._index_key, "__ldpsim__", False):
        return
    _index_key.__ldpsim__ = True
    caching.Cache._index_key = _index_key
    caching.IndexDataCacheFile._load_index = _load_index
    caching.IndexDataCacheFile.save = _save
    caching.Cache._load_overload = _load_overload
    caching.Cache._save_overload = _save_overload
    dispatcher.Dispatcher.compile = _compile
    dispatcher.Dispatcher.enable_caching = _enable_caching
    bytecode.FunctionIdentity.from_function = classmethod(_from_function)
    templates._IntrinsicTemplate.generic = _intrinsic_generic


__all__ = ["USER_MODULE_PREFIX", "cached", "dependencies", "fresh", "install", "note_files", "note_function",
           "recording", "sources_of", "user_code_stamp"]
