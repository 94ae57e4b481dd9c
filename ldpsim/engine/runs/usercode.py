"""Users' models and mechanisms: named in a config, loaded from their files, checked, told apart by their source.

A config names a user's class as ``path/to/file.py:Class`` (a file: relative
to the config file, or to the working directory for ``--set`` and the API)
or ``package.module:Class`` (an importable module); the API also takes the
class itself. The value a setting holds is canonical,
``<absolute path>:<Class>#<hash>`` or ``<module>:<Class>#<hash>`` with the
first 16 hex digits of the SHA-256 of the source, so that

* workers, which rebuild the model from the setting, load the same file and
  refuse (one line) if their copy differs from the driver's;
* a chunk saved by a run of another version of the file is never reused
  (the chunk key hashes the setting);
* ``meta.json`` records which source produced the numbers.

A file is executed as a module named ``ldpsim_user_<hash>`` (the SHA-256 of
its bytes): two files that define records of the same name are different
modules, an edited file is a new one, and numba's cache keys a kernel
compiled for a user's record on that source
(:mod:`ldpsim.engine.dialect.numba_cache`). Everything that can go wrong in a user's
file (not found, a syntax error, an exception at import, no such class, not
a model) is a :class:`~ldpsim.engine.errors.ConfigError` of one line.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import re
import sys
import traceback
import types as pytypes
from dataclasses import dataclass
from pathlib import Path

from ..dialect.numba_cache import USER_MODULE_PREFIX
from ..errors import ConfigError

#: Hex digits of the source hash a canonical value carries.
HASH_DIGITS = 16
_HASH = re.compile(rf"#([0-9a-f]{{{HASH_DIGITS}}})$")
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_CLASS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
#: A file larger than this is not a model file (``/dev/zero``, a data file given by mistake).
MAX_SOURCE_BYTES = 8 << 20


@dataclass(frozen=True)
class Spec:
    """A parsed ``target:Class[#hash]``: ``kind`` is ``"file"``, ``"module"`` or ``"process"`` (a class in memory)."""

    kind: str
    target: str
    name: str
    digest: str | None = None

    def text(self, digest: str | None = None) -> str:
        digest = digest if digest is not None else self.digest
        return f"{self.target}:{self.name}" + (f"#{digest[:HASH_DIGITS]}" if digest else "")


def looks_like_spec(value) -> bool:
    """Whether a config value names a user's class (``file.py:Class``, ``module:Class``) rather than a built-in."""
    return isinstance(value, str) and ":" in value


def parse(text: str, what: str = "model") -> Spec:
    """Split ``target:Class[#hash]``; one-line errors for text that cannot name a class."""
    digest = None
    match = _HASH.search(text)
    if match:
        digest, text_ = match.group(1), text[: match.start()]
    else:
        text_ = text
    target, sep, name = text_.rpartition(":")
    if not sep or not target or not _CLASS.match(name):
        raise ConfigError(f"{what} = {text!r} is not 'path/to/file.py:Class' or 'package.module:Class'")
    if target.startswith("<process>"):
        return Spec("process", target, name, digest)
    is_file = target.endswith(".py") or "/" in target or os.sep in target
    if not is_file and not _MODULE.match(target):
        raise ConfigError(f"{what} = {text!r}: {target!r} is neither a .py file nor a module name")
    return Spec("file" if is_file else "module", target, name, digest)


def without_digest(value):
    """A config value with the source hashes of users' classes taken off (lists too): the file, not its version."""
    if isinstance(value, list):
        return [without_digest(v) for v in value]
    if isinstance(value, str) and ":" in value and _HASH.search(value):
        return value[: _HASH.search(value).start()]
    return value


def anchor(value, base_dir: Path):
    """A file spec's relative path made absolute against ``base_dir`` (the config file's folder); others unchanged."""
    if isinstance(value, list):
        return [anchor(v, base_dir) for v in value]
    if not looks_like_spec(value):
        return value
    try:
        spec = parse(value)
    except ConfigError:
        return value  # the key's own check says what is wrong with it
    if spec.kind != "file" or os.path.isabs(os.path.expanduser(spec.target)):
        return value
    return Spec("file", str(base_dir / spec.target), spec.name, spec.digest).text()


# --- loading ----------------------------------------------------------------------

#: (absolute path, mtime_ns, size) -> SHA-256 of the bytes, so that a file is hashed once per version.
_DIGESTS: dict[tuple, str] = {}
#: Classes handed to the API that live in no importable file (a notebook's), by their canonical value.
_IN_PROCESS: dict[str, type] = {}


def _read(path: Path, what: str, text: str) -> bytes:
    try:
        if path.is_dir():
            raise ConfigError(f"{what} = {text!r}: {str(path)!r} is a directory, not a Python file")
        size = path.stat().st_size
        if size > MAX_SOURCE_BYTES:
            raise ConfigError(f"{what} = {text!r}: {str(path)!r} is larger than {MAX_SOURCE_BYTES >> 20} MiB: "
                              "not a model file")
        return path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{what} = {text!r}: file {str(path)!r} not found") from None
    except OSError as exc:
        raise ConfigError(f"{what} = {text!r}: {str(path)!r} cannot be read: {exc.strerror or exc}") from None


def file_digest(path: Path) -> str:
    """SHA-256 (hex) of a file's bytes."""
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key not in _DIGESTS:
        if len(_DIGESTS) > 4096:
            _DIGESTS.clear()
        _DIGESTS[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return _DIGESTS[key]


def _user_line(exc: BaseException, path: Path) -> str:
    """`` (file.py, line N)`` for the deepest frame of ``exc`` in the user's file, or nothing."""
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if os.path.realpath(frame.filename) == os.path.realpath(path):
            line = frame.lineno
    return f" ({path.name}, line {line})" if line else ""


def draws_twice(draw, count: int) -> tuple[list, list]:
    """``draw(gen)`` made ``count`` times from one seed, twice over: a user's code must give equal lists.

    Code that draws from ``np.random.*`` (or any source besides ``gen``)
    gives different ones, and no run of it could be reproduced.
    Exceptions of the user's code go to the caller.
    """
    from ..dialect.rng import as_generator

    def once():
        gen = as_generator(0)
        return [draw(gen) for _ in range(count)]

    return once(), once()


def defined_at(func) -> str:
    """`` (file.py, line N)`` where a user's function (or method) is defined, or nothing."""
    code = getattr(inspect.unwrap(getattr(func, "__func__", func)), "__code__", None)
    if code is None:
        return ""
    line = code.co_firstlineno  # (its first decorator's line: the def's is named)
    try:
        lines = Path(code.co_filename).read_text(errors="replace").splitlines()
        while line <= len(lines) and lines[line - 1].lstrip().startswith("@"):
            line += 1
    except OSError:
        pass
    return f" ({Path(code.co_filename).name}, line {line})"


def list_in_kernel_code(funcs) -> tuple | None:
    """``(file name, line, source line)`` of the first list a user's kernel function builds, or ``None``.

    A list in compiled code is allocated by numba's runtime at every call (a
    gradient's list: an allocation a step), and a list of lane vectors (the
    ``theta`` and ``obs`` of a kernel advancing several replications) holds
    vectors that numba's allocator aligns to 16 bytes where the vector
    instructions that load them need 32 or 64: the process dies of a
    segmentation fault, with no message (issue 44). Read from the bytecode
    (comprehensions and nested functions included) of ``funcs`` and of the
    ``@kernel_function`` helpers of the same file that they call.
    """
    import dis

    seen, todo, found = set(), [f for f in funcs if f is not None], None
    while todo and found is None:
        func = todo.pop(0)
        func = getattr(func, "py_func", func)
        if func is None or id(func) in seen or not hasattr(func, "__code__"):
            continue
        seen.add(id(func))
        codes, glbls = [func.__code__], getattr(func, "__globals__", {})
        while codes and found is None:
            code = codes.pop(0)
            line = code.co_firstlineno
            for ins in dis.get_instructions(code):
                line = ins.positions.lineno if getattr(ins, "positions", None) and ins.positions.lineno else line
                if ins.opname in ("BUILD_LIST", "LIST_APPEND", "LIST_EXTEND") or (
                        ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and ins.argval == "list"):
                    found = (Path(code.co_filename).name, line, code.co_filename)
                    break
                if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and callable(glbls.get(ins.argval)):
                    helper = glbls[ins.argval]
                    if getattr(helper, "py_func", None) is helper and getattr(helper, "__module__", None) == func.__module__:
                        todo.append(helper)  # a @kernel_function of the same file: compiled with it
            codes.extend(c for c in code.co_consts if isinstance(c, pytypes.CodeType))
    if found is None:
        return None
    name, line, filename = found
    try:
        source = Path(filename).read_text(errors="replace").splitlines()[line - 1].strip()
    except (OSError, IndexError):
        source = ""
    return name, line, source


def refuse_lists(funcs, context: str) -> None:
    """A one-line :class:`ConfigError` if a user's kernel function builds a list (:func:`list_in_kernel_code`)."""
    found = list_in_kernel_code(funcs)
    if found is not None:
        name, line, source = found
        raise ConfigError(f"{context}: {name}, line {line} builds a list in code compiled into the kernels"
                          + (f" ({source})" if source else "") + ": numba's lists of lane values crash the "
                          "process at several lanes, and allocate at every call; use a tuple (a, b) or a scratch "
                          "array of the record (lane_array)")


def short(value) -> str:
    """``repr(value)`` on one line, cut to 60 characters: a user's value as a one-line error shows it."""
    text = repr(value).replace("\n", " ")
    return text if len(text) <= 60 else text[:57] + "..."


def is_number(value) -> bool:
    """Whether a user's function returned one real number as the kernels compute it: a Python or numpy int or
    float, not a bool (nor an array, a str, ...)."""
    import numpy as np

    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def describe_exception(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def load_file(path: Path, what: str = "model", text: str | None = None) -> pytypes.ModuleType:
    """Execute a user's file as the module ``ldpsim_user_<sha256>`` (once per content), with one-line errors."""
    path = Path(os.path.expanduser(str(path))).resolve()
    text = text if text is not None else str(path)
    try:  # a file loaded before and unchanged since (same size and time): its module, without reading it again
        known = _module_name(path, file_digest(path))
    except OSError:
        known = None
    module = sys.modules.get(known) if known else None
    if module is not None and not getattr(module, "__ldpsim_placeholder__", False):
        return module
    data = _read(path, what, text)
    digest = hashlib.sha256(data).hexdigest()
    name = _module_name(path, digest)
    module = sys.modules.get(name)
    if module is not None and not getattr(module, "__ldpsim_placeholder__", False):
        return module
    try:
        code = compile(data, str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise ConfigError(f"{what} = {text!r}: {path.name}, line {exc.lineno}: SyntaxError: {exc.msg}") from None
    except ValueError as exc:  # a NUL byte
        raise ConfigError(f"{what} = {text!r}: {path.name} is not Python source ({exc})") from None
    module = pytypes.ModuleType(name)
    module.__file__ = str(path)
    module.__ldpsim_sha256__ = digest
    module.__ldpsim_path__ = str(path)
    sys.modules[name] = module  # before running it: NamedTuple, dataclasses and pickle look their module up
    # the file's folder on the path while it runs, so that it can import its neighbours, as `python file.py` would
    folder = str(path.parent)
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    try:
        exec(code, module.__dict__)  # noqa: S102  (the user's own model file, which they asked to run)
    except BaseException as exc:
        del sys.modules[name]
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise ConfigError(f"{what} = {text!r}: {path.name} failed to load: {describe_exception(exc)}"
                          f"{_user_line(exc, path)}") from None
    finally:
        if added:
            try:
                sys.path.remove(folder)
            except ValueError:
                pass
    distinguish_records(module, name[len(USER_MODULE_PREFIX):][:8])
    return module


def distinguish_records(module, tag: str) -> None:
    """Give the record classes of a user's module names of their own: ``Params`` becomes ``Params_<tag>``.

    numba's dispatcher recognises a NamedTuple argument by its class's
    ``__name__`` and field types only (numba's ``compute_fingerprint``): a
    second class of the same name and fields, from another file or from an
    edited version of the same file, would run the machine code compiled for
    the first. ``__qualname__`` is left as it is, so that pickle still finds
    the class in its module.
    """
    for value in list(vars(module).values()):
        if (isinstance(value, type) and issubclass(value, tuple) and hasattr(value, "_fields")
                and value.__module__ == module.__name__ and not value.__dict__.get("__ldpsim_named__")):
            value.__name__ = f"{value.__name__}_{tag}"
            value.__ldpsim_named__ = True


def _module_name(path: Path, digest: str) -> str:
    """One module per file and content: an edit is a new module, and so is a copy elsewhere (its messages and
    meta.json name its own path)."""
    return USER_MODULE_PREFIX + hashlib.sha256(f"{path}\0{digest}".encode()).hexdigest()[:32]


def _import(module_name: str, what: str, text: str) -> pytypes.ModuleType:
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise ConfigError(f"{what} = {text!r}: no module named {exc.name!r} (give a file as path/to/file.py:Class, "
                              "or install the module)") from None
        raise ConfigError(f"{what} = {text!r}: importing {module_name} failed: {describe_exception(exc)}") from None
    except Exception as exc:  # noqa: BLE001  (the user's module raised while it was imported)
        raise ConfigError(f"{what} = {text!r}: importing {module_name} failed: {describe_exception(exc)}") from None
    distinguish_records(module, (_module_digest(module) or f"{id(module):016x}")[:8])
    return module


def _module_digest(module) -> str:
    recorded = getattr(module, "__ldpsim_sha256__", None)
    if recorded:
        return recorded
    path = getattr(module, "__file__", None)
    return file_digest(Path(path)) if path else ""


def _lookup(module, name: str):
    obj = module
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _class_in(module, spec: Spec, base: type, what: str, text: str) -> type:
    cls = _lookup(module, spec.name)
    where = Path(module.__file__).name if getattr(module, "__file__", None) else spec.target
    if cls is None:
        found = sorted(k for k, v in vars(module).items() if isinstance(v, type) and issubclass(v, base) and v is not base)
        hint = f"; it defines {', '.join(found)}" if found else f"; it defines no {base.__name__} subclass"
        raise ConfigError(f"{what} = {text!r}: {where} has no class {spec.name!r}{hint}")
    if cls is base:
        raise ConfigError(f"{what} = {text!r}: {spec.name} is ldpsim.extend's base class itself, which computes "
                          f"nothing; give a subclass of it that you wrote ('path/to/file.py:My{base.__name__}')")
    if not (isinstance(cls, type) and issubclass(cls, base)):
        kind = "a class" if isinstance(cls, type) else f"a {type(cls).__name__}"
        raise ConfigError(f"{what} = {text!r}: {spec.name} is {kind}, not a subclass of ldpsim.extend.{base.__name__}")
    return cls


def resolve(value, base: type, what: str = "model") -> type:
    """The class a canonical value (or any spec) names, loaded if needed; its source checked against the value's hash.

    A worker whose copy of the file differs from the driver's (another hash)
    is refused in one line: its numbers would not be the run's.
    """
    if isinstance(value, type):
        return value
    spec = parse(value, what)
    if spec.kind == "process":
        try:
            return _IN_PROCESS[value]
        except KeyError:
            raise ConfigError(f"{what} = {spec.name}: the class was handed to ldpsim.run in another process and cannot "
                              "be loaded here: put it in a file and give 'path/to/file.py:Class', or run with n_jobs=1 "
                              "or backend='threading'") from None
    if spec.kind == "file":
        path = Path(os.path.expanduser(spec.target)).resolve()
        if spec.digest is not None:
            try:
                current = file_digest(path)
            except OSError:
                current = None
            if current is not None and current[:HASH_DIGITS] != spec.digest:
                import socket

                raise ConfigError(f"{what} file {str(path)!r} on {socket.gethostname()} differs from the one the run "
                                  f"was started with (SHA-256 {current[:HASH_DIGITS]}..., the run's {spec.digest}...): "
                                  "copy the same file there, or restart the run")
        return _class_in(load_file(path, what, value), spec, base, what, value)
    module = _import(spec.target, what, value)
    cls = _class_in(module, spec, base, what, value)
    if spec.digest is not None:  # the module that defines the class, as canonical() hashed it (a package may
        # re-export it from a module of its own)
        current = _module_digest(sys.modules.get(cls.__module__, module))[:HASH_DIGITS]
        if current and current != spec.digest:
            raise ConfigError(f"{what} module {spec.target} differs from the one the run was started with "
                              f"(SHA-256 {current}..., the run's {spec.digest}...)")
    return cls


def canonical(value, base: type, what: str = "model") -> str:
    """The value a setting holds for a user's class: ``<absolute path or module>:<Class>#<hash>``.

    ``value`` is a spec (a relative path is taken from the working
    directory) or a class. A class from a module without a file (a
    notebook's) is kept in this process: it runs with one worker or threads.
    """
    if isinstance(value, type):
        if not issubclass(value, base):
            raise ConfigError(f"{what} = {value.__name__} is not a subclass of ldpsim.extend.{base.__name__}")
        module = sys.modules.get(value.__module__)
        path = getattr(module, "__ldpsim_path__", None)
        if path is not None:
            return Spec("file", path, value.__qualname__).text(module.__ldpsim_sha256__)
        file = getattr(module, "__file__", None)
        if value.__module__ != "__main__" and file is not None and "<locals>" not in value.__qualname__:
            return Spec("module", value.__module__, value.__qualname__).text(_module_digest(module))
        key = Spec("process", f"<process>{value.__module__}", value.__qualname__).text(f"{id(value):016x}"[-16:])
        _IN_PROCESS[key] = value
        if module is not None:  # a notebook's cell run again defines new records of the old names
            for record in list(vars(module).values()):
                if isinstance(record, type) and issubclass(record, tuple) and hasattr(record, "_fields") and \
                        record.__module__ == value.__module__ and not record.__dict__.get("__ldpsim_named__"):
                    record.__name__ = f"{record.__name__}_{id(record):x}"[:80]
                    record.__ldpsim_named__ = True
        return key
    spec = parse(value, what)
    if spec.kind == "process":
        resolve(value, base, what)
        return value
    if spec.kind == "file":
        path = Path(os.path.expanduser(spec.target))
        path = (path if path.is_absolute() else Path.cwd() / path).resolve()
        cls = resolve(Spec("file", str(path), spec.name).text(), base, what)  # loads it, one-line errors
        return Spec("file", str(path), spec.name).text(sys.modules[cls.__module__].__ldpsim_sha256__)
    cls = resolve(Spec("module", spec.target, spec.name).text(), base, what)
    return Spec("module", spec.target, spec.name).text(_module_digest(sys.modules[cls.__module__]))


def source_of(value) -> dict | None:
    """``{"path", "sha256"}`` of the file a canonical value's class comes from (``None``: a class in memory)."""
    if isinstance(value, type):
        module = sys.modules.get(value.__module__)
    elif looks_like_spec(value):
        spec = parse(value)
        if spec.kind == "process":
            return None
        cls = resolve(value, object)
        module = sys.modules.get(cls.__module__)
    else:
        return None
    path = getattr(module, "__ldpsim_path__", None) or getattr(module, "__file__", None)
    if not path:
        return None
    return {"path": str(path), "sha256": _module_digest(module)}  # (a file's module: its own path, load_file)


def display(value):
    """A user's class as tables print it, the same on every machine: ``folder/file.py:Class`` (other values as they are).

    The full path and the file's hash are in ``meta.json`` (``user_files``).
    """
    spec = _spec_or_none(value)
    if spec is None:
        return value
    if spec.kind == "file":
        parts = Path(spec.target).parts
        return f"{'/'.join(parts[-2:])}:{spec.name}"
    return f"{spec.target.removeprefix('<process>')}:{spec.name}"


def shown(value):
    """A user's class as messages name it: the path from the working directory if it lies below it, else absolute."""
    spec = _spec_or_none(value)
    if spec is None:
        return value
    target = spec.target
    if spec.kind == "file":
        try:
            relative = os.path.relpath(target)
            target = target if relative.startswith("..") else relative
        except ValueError:
            pass
    return f"{target.removeprefix('<process>')}:{spec.name}"


def _spec_or_none(value):
    if not looks_like_spec(value):
        return None
    try:
        return parse(value)
    except ConfigError:
        return None


# --- what a user's model class must be ------------------------------------------------

def signature_keys(cls, what: str, text: str, skip=("self", "epsilon")) -> list[tuple[str, object]]:
    """``(name, default)`` of the parameters of ``cls.__init__`` besides ``epsilon``: the class's config keys.

    A parameter without a default has default ``inspect.Parameter.empty``
    (the config must give it).
    """
    try:
        params = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        raise ConfigError(f"{what} = {text!r}: the signature of {cls.__name__}.__init__ cannot be read") from None
    out = []
    for name, p in params.items():
        if name in skip:
            continue
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ConfigError(f"{what} = {text!r}: {cls.__name__}.__init__ takes *{'*' if p.kind == p.VAR_KEYWORD else ''}"
                              f"{name}; name each key it reads as a parameter with its default")
        if p.kind == p.POSITIONAL_ONLY:
            raise ConfigError(f"{what} = {text!r}: {cls.__name__}.__init__ takes {name} by position only; ldpsim passes "
                              "keys by name")
        default = p.default
        if not (default is p.empty or default is None or isinstance(default, (bool, int, float, str))):
            # a list or tuple was read as a grid of settings, a dict was an internal error (unhashable)
            grid = f"; a grid of settings is set in the config ({name}: {list(default)!r})" \
                if isinstance(default, (list, tuple)) and default else ""
            raise ConfigError(f"{what} = {text!r}: {cls.__name__}.__init__ gives {name} the default {default!r}"
                              f"{defined_at(cls.__init__)}; a key's default must be one number, string, True/False "
                              f"or None (a key holds one value per run){grid}")
        out.append((name, default))
    return out


__all__ = ["HASH_DIGITS", "Spec", "anchor", "canonical", "describe_exception", "display", "file_digest", "load_file",
           "looks_like_spec", "parse", "resolve", "signature_keys", "source_of"]


# --- code numba cannot compile ------------------------------------------------------------

#: Lines of numba's message kept at most (the rest is numba's own frames).
MAX_ERROR_LINES = 15


class UserCodeError(ConfigError):
    """A user's code that numba cannot compile: a short message of several lines (the CLI prints it whole)."""

    multiline = True


def _user_files() -> dict[str, str]:
    """Real path -> shown path of every user file loaded in this process."""
    out = {}
    for name, module in list(sys.modules.items()):
        # only our modules' own dicts: getattr on every module would run other packages' module __getattr__ hooks
        # (mpmath's deprecation warnings, lazy imports)
        path = vars(module).get("__ldpsim_path__") if name.startswith(USER_MODULE_PREFIX) else None
        if path:
            out[os.path.realpath(path)] = shown(f"{path}:x").rpartition(":")[0]
    return out


#: What numba says went wrong, in the lines of its message (the innermost match before the user's line wins).
_WHAT = re.compile(r"(No implementation of function .*? found for signature:|Unknown attribute .*|Untyped global name .*|"
                   r"Cannot unify .*|Invalid use of .*|NameError: .*|Cannot determine Numba type of .*|"
                   r"Use of unsupported opcode .*|Unsupported .*|non-precise type .*|Can't unify .*)")


def condense_numba_error(exc: BaseException, context: str) -> str | None:
    """A numba compile error that points into a user's file, as at most :data:`MAX_ERROR_LINES` lines.

    ``None`` if the error names no user's file (then it is ldpsim's, and is
    not dressed up). Kept: the place in the user's file with its source
    line, what numba could not do there (its innermost message before that
    place, with the argument types), and the hint to rerun without numba.
    """
    text = str(exc)
    files = _user_files()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    places, first = [], None
    for i, ln in enumerate(lines):
        for match in re.finditer(r'File "([^"]+)", line (\d+)', ln):
            real = os.path.realpath(match.group(1))
            if real in files:
                place = (files[real], int(match.group(2)))
                first = i if first is None else first
                if place not in places:
                    places.append(place)
    if not places:
        return None
    what = []
    for i in range(first, -1, -1):
        match = _WHAT.search(lines[i])
        if match:
            what = [match.group(1)]
            if match.group(1).startswith("No implementation") and i + 1 < len(lines) and lines[i + 1].startswith(">>>"):
                what.append(lines[i + 1])
            break
    path, line = places[0]
    source = _source_line(path, line)
    body = [f"{context}: {path}, line {line} does not compile into the kernels (numba {type(exc).__name__})"]
    if source:
        body.append(f"    {source}")
    body += [f"  {w}" for w in what] or ["  (numba's message names no cause; see NUMBA_DISABLE_JIT=1 below)"]
    for other, at in places[1:4]:
        body.append(f"  also at {other}, line {at}: {_source_line(other, at)}")
    if any(w.startswith("Untyped global name") for w in what):
        body.append("  A function the gradient calls must be compiled too: decorate it with @kernel_function "
                    "(from ldpsim.extend).")
    if "LaneVector" in text:
        body.append("  A kernel advances several replications side by side (lanes): a comparison is a vector of "
                    "booleans, so choose with where(cond, a, b), not if (or run with --lanes 1).")
    body.append("  hint: rerun with NUMBA_DISABLE_JIT=1 for a Python traceback of the same code")
    return "\n".join(body[:MAX_ERROR_LINES])


def _source_line(shown: str, line: int) -> str:
    for real, name in _user_files().items():
        if name == shown:
            try:
                return Path(real).read_text(errors="replace").splitlines()[line - 1].strip()
            except (OSError, IndexError):
                return ""
    return ""


class compile_errors:
    """``with compile_errors(context):`` turns a numba error in a user's code into a :class:`UserCodeError`."""

    def __init__(self, context: str):
        self.context = context

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if exc is None:
            return False
        from numba.core.errors import NumbaError

        if isinstance(exc, NumbaError):
            message = condense_numba_error(exc, self.context)
            if message is not None:
                raise UserCodeError(message) from None
        return False
