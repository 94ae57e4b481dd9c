"""Output directories: checked before any work, owned by one run, never silently another run's.

A run's directory records the *identity* of its run in ``meta.json``: what
the run is (its study, or ``trace``) and the resolved config values that
shape its results (the seed among them), and a short hash of both, the run
id. :func:`open_output` is called before the simulation starts. It

1. checks the path (not empty, not a file, creatable) and creates it;
2. writes a probe file, so that a read-only or full file system fails now
   and not after the first hour of work;
3. takes a lock (``chunks/.lock``), so that two processes never write one
   directory at once;
4. compares the directory's ``meta.json`` with this run: a directory that
   holds another run (or results it cannot identify) is refused with one
   line naming both runs, unless ``force`` says to replace it, in which case
   that run's outputs and chunks are removed first;
5. removes temporary files a killed run left (``chunks/*.tmp``).

The caller then writes ``meta.json`` (:func:`write_text`, atomically) before
the simulation starts when the directory does not already hold this run, so
that an interrupted run can be identified and resumed.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError
from .config import show

try:  # POSIX; elsewhere runs go without the lock
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None

#: Where a run's chunks live, under its directory.
CHUNKS = "chunks"
#: The lock file, inside :data:`CHUNKS` (which is never committed).
LOCK = ".lock"
#: Files of a run's directory that mark it as holding results, besides ``meta.json`` and chunk files.
RESULT_GLOBS = ("*.csv", "table.md", "compare_*.md")
#: A meta.json larger than this is not one (the config of a grid of 100000 settings takes a few MiB).
MAX_META_BYTES = 64 << 20
#: The kinds of files a run writes (tables, figures); ``--force`` removes another run's of these only.
OUTPUT_SUFFIXES = (".csv", ".md", ".tex", ".png", ".pdf", ".svg", ".json")
#: How the refusals end: the way out, for the CLI and the API alike.
WAY_OUT = "choose another --out, or replace it with --force (API: force=True)"


@dataclass(frozen=True)
class RunIdentity:
    """What a run is: its kind (study name, or ``trace``) and the resolved values that shape its results.

    Attributes
    ----------
    kind : str
    values : dict
        Config key -> resolved value (lists for grid axes), JSON-normalised.
    """

    kind: str
    values: dict

    @classmethod
    def of(cls, kind: str, values: dict) -> "RunIdentity":
        """The identity of a run of ``kind`` with resolved ``values`` (tuples become lists, as in JSON)."""
        return cls(kind, json.loads(json.dumps(values, allow_nan=True, default=str)))

    @property
    def run_id(self) -> str:
        """12 hex digits of the hash of kind and values."""
        text = json.dumps({"kind": self.kind, "values": self.values}, sort_keys=True, allow_nan=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def differences(self, other: "RunIdentity") -> list[tuple[str, object, object]]:
        """``(key, other's value, this run's value)`` for each key in which ``other`` differs.

        A key only one of them records (a key added to ldpsim since the other
        ran) is not a difference.
        """
        from .usercode import without_digest

        out = [] if self.kind == other.kind else [("study", other.kind, self.kind)]
        for key, value in self.values.items():
            if key not in other.values or other.values[key] == value:
                continue
            # a user's file edited since is another run (its source hash differs), as another file is; a value
            # recorded without hashes (a meta.json written before they existed) is compared by its files only
            theirs = other.values[key]
            if without_digest(theirs) != without_digest(value) or without_digest(theirs) != theirs:
                out.append((key, theirs, value))
        return out

    def same_run(self, other: "RunIdentity") -> bool:
        return not self.differences(other)


def identity_of_meta(meta) -> RunIdentity | None:
    """The identity a ``meta.json`` records (also one written before run ids existed), or ``None``."""
    if not isinstance(meta, dict) or not isinstance(meta.get("config"), dict):
        return None
    values = meta["config"]
    kind = meta.get("kind") or values.get("study") or meta.get("study")
    if kind is None:  # written before meta.json said what wrote it
        kind = "trace" if "replication" in meta else "coverage"
    return RunIdentity.of(str(kind), {k: v for k, v in values.items() if k != "study"})


def read_meta(path: Path) -> tuple[dict | None, str | None]:
    """``(meta, None)`` from a ``meta.json``, or ``(None, why it cannot be read)``; ``(None, None)`` if absent."""
    if not path.exists() and not path.is_symlink():
        return None, None
    if path.is_dir():
        return None, "it is a directory"
    if not path.is_file():  # a link to /dev/zero would be read forever
        return None, "it is not a regular file"
    try:
        if path.stat().st_size > MAX_META_BYTES:
            return None, f"it is larger than {MAX_META_BYTES >> 20} MiB"
        meta = json.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        return None, exc.strerror or str(exc)
    except UnicodeDecodeError:
        return None, "it is not UTF-8 text"
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON: {exc.msg} at line {exc.lineno}"
    except RecursionError:
        return None, "not valid JSON: nested too deeply"
    if not isinstance(meta, dict):
        return None, "it does not hold a JSON object"
    return meta, None


def check_path(out, name: str = "out") -> Path:
    """``out`` as a Path, refusing what cannot be a directory name (one line naming it)."""
    if not isinstance(out, (str, os.PathLike)):
        raise ConfigError(f"{name} = {show(out)} is not a path")
    text = os.fspath(out)
    if isinstance(text, bytes):
        raise ConfigError(f"{name} = {show(text)} is not a path: give it as text")
    if not text.strip():
        # Path("") is ".": an empty --out would write into the current directory
        raise ConfigError(f"{name} = {text!r} is empty: give a directory")
    if "\0" in text:
        raise ConfigError(f"{name} = {text!r} contains a NUL byte")
    return Path(text)


def _fail(path: Path, what: str, exc: OSError, name: str) -> ConfigError:
    reason = exc.strerror or str(exc)
    if isinstance(exc, (FileExistsError, NotADirectoryError)) or exc.errno in (errno.EEXIST, errno.ENOTDIR):
        blocker = next((p for p in [path, *path.parents] if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            reason = f"{str(blocker)!r} is a file"
    return ConfigError(f"{name} = {str(path)!r} {what}: {reason}")


def make_directory(path: Path, name: str = "out") -> bool:
    """Create ``path`` (and its parents) and check that files can be written there; True if it was created."""
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{name} = {str(path)!r} is a file, not a directory")
    created = not path.exists()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _fail(path, "cannot be created", exc, name) from None
    try:
        fd, probe = tempfile.mkstemp(dir=path, prefix=".ldpsim-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        if created:
            _remove_empty(path)
        raise _fail(path, "is not writable", exc, name) from None
    return created


def _remove_empty(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


#: The process's umask, read once: files written through a temporary file get the usual permissions.
UMASK = _umask()


def temporary_beside(path: Path) -> tuple[int, str]:
    """``(fd, name)`` of a new temporary file ``.<name>.*.tmp`` beside ``path``, with the permissions of ``open``."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~UMASK)  # mkstemp makes it private (0600); the file it becomes should not be
    except (AttributeError, OSError):  # pragma: no cover
        pass
    return fd, tmp


def write_text(path: Path, text: str) -> None:
    """Write a file atomically (a temporary file renamed over it): never half a file under ``path``."""
    fd, tmp = temporary_beside(path)
    try:
        with os.fdopen(fd, "w", newline="") as fh:
            fh.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@dataclass
class OutputDir:
    """An output directory opened for one run (see the module docstring).

    Attributes
    ----------
    path : Path
    identity : RunIdentity
    created : bool
        Whether this run created the directory (then a run that fails before
        it saved anything removes it again).
    holds_this_run : bool
        Whether ``meta.json`` already records this run (an earlier, perhaps
        interrupted, run of the same config): it is then left as it is until
        the run ends.
    """

    path: Path
    identity: RunIdentity
    created: bool
    holds_this_run: bool
    _lock: object = field(default=None, repr=False)

    @property
    def chunks(self) -> Path:
        return self.path / CHUNKS

    def close(self) -> None:
        """Release the lock."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def discard(self) -> None:
        """After a run that failed before saving anything: remove what it made, if it made the directory."""
        self.close()
        if not self.created:
            return
        if any(self.chunks.glob("*.npz")):
            return  # something worth resuming
        for name in ("meta.json",):
            try:
                (self.path / name).unlink()
            except OSError:
                pass
        shutil.rmtree(self.chunks, ignore_errors=True)
        shutil.rmtree(self.path / "user_files", ignore_errors=True)  # the copies of users' files (ldpsim.api)
        _remove_empty(self.path)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _lock(directory: Path, name: str, path: Path):
    if fcntl is None:  # pragma: no cover
        return None
    try:
        fh = open(directory / LOCK, "a+")
    except OSError as exc:
        raise _fail(path, "is not writable", exc, name) from None
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.seek(0)
        owner = fh.read().strip()
        fh.close()
        raise ConfigError(f"{name} = {str(path)!r} is in use by another ldpsim run"
                          f"{f' (process {owner})' if owner else ''}: wait for it, or choose another --out") from None
    return fh


def _claim(fh) -> None:
    """Write this process's id into the lock file it holds (once the directory is known to be this run's)."""
    fh.seek(0)
    fh.truncate()
    fh.write(str(os.getpid()))
    fh.flush()


def _describe(identity: RunIdentity | None, label: str) -> str:
    return f"run {identity.run_id}" if identity is not None else label


def _results_present(path: Path) -> list[str]:
    found = [p.name for pattern in RESULT_GLOBS for p in sorted(path.glob(pattern))]
    if any((path / CHUNKS).glob("*.npz")):
        found.append(f"{CHUNKS}/")
    return found


def clear_run(path: Path, meta: dict | None) -> None:
    """Remove a run's outputs from ``path``: the files its meta.json lists, its tables, meta.json, chunks.

    Files ldpsim does not write are left alone.
    """
    listed = meta.get("outputs", []) if isinstance(meta, dict) and isinstance(meta.get("outputs"), list) else []
    # only names of the kinds ldpsim writes, in this directory: a meta.json is not trusted to name a config
    names = {n for n in listed if isinstance(n, str) and "/" not in n and "\\" not in n
             and n.endswith(OUTPUT_SUFFIXES)}
    names |= {p.name for pattern in RESULT_GLOBS for p in path.glob(pattern)}
    names |= {"meta.json", "table.tex", "figure1.png", "trajectory.png"}
    for name in names:
        target = path / name
        if target.is_file() or target.is_symlink():
            target.unlink()
    for png in path.glob("heatmap_*.png"):
        png.unlink()
    chunks = path / CHUNKS
    if chunks.is_dir():
        for item in chunks.iterdir():
            if item.name == LOCK:
                continue
            if item.is_dir() and not item.is_symlink():
                shutil.rmtree(item)
            else:
                item.unlink()


def open_output(out, identity: RunIdentity, *, force: bool = False, chunk_keys=None, name: str = "out",
                lock: bool = True) -> OutputDir:
    """Open ``out`` for the run ``identity`` (see the module docstring); raises a one-line ConfigError.

    Parameters
    ----------
    out : str or Path
    identity : RunIdentity
    force : bool
        Replace another run's outputs instead of refusing.
    chunk_keys : set of str, optional
        This run's chunk keys: a directory without ``meta.json`` whose chunk
        files include some of them (a run interrupted before run ids existed)
        is this run's.
    name : str
        What messages call the directory.
    lock : bool
        Take the directory's lock (runs with chunks).

    Returns
    -------
    OutputDir
        Holding the lock until :meth:`OutputDir.close`.
    """
    path = check_path(out, name)
    created = make_directory(path, name)
    chunks = path / CHUNKS
    handle, chunks_created = None, False
    if lock:
        if chunks.exists() and not chunks.is_dir():
            raise ConfigError(f"{name} = {str(path)!r} holds a file {CHUNKS!r} where its chunk directory goes")
        chunks_created = not chunks.exists()
        lock_created = not (chunks / LOCK).exists()
        try:
            chunks.mkdir(exist_ok=True)
        except OSError as exc:
            raise _fail(chunks, "cannot be created", exc, name) from None
        handle = _lock(chunks, name, path)
    try:
        holds_this_run = _check_owner(path, identity, force, chunk_keys, name)
        if handle is not None:
            _claim(handle)
        if lock:
            for tmp in chunks.glob("*.tmp"):  # left by a killed run: we hold the lock, nobody writes them
                tmp.unlink()
    except BaseException:
        if handle is not None:
            handle.close()
        if chunks_created:  # leave a refused directory as it was
            shutil.rmtree(chunks, ignore_errors=True)
        elif lock and lock_created:
            (chunks / LOCK).unlink(missing_ok=True)
        if created:
            _remove_empty(path)
        raise
    return OutputDir(path, identity, created, holds_this_run, handle)


def _check_owner(path: Path, identity: RunIdentity, force: bool, chunk_keys, name: str) -> bool:
    """Whether ``path`` already holds this run; refuses (or, forced, clears) another run's directory."""
    meta_path = path / "meta.json"
    meta, problem = read_meta(meta_path)
    other = identity_of_meta(meta) if meta is not None else None
    if other is not None and identity.same_run(other):
        return True
    if meta is None and problem is None:
        present = _results_present(path)
        if not present:
            return False
        if present == [f"{CHUNKS}/"] and chunk_keys:
            names = {p.name.split("_")[0] for p in (path / CHUNKS).glob("*.npz")}
            if names & set(chunk_keys):
                return False  # this run's chunks, saved before meta.json was written first
        what = f"results without a meta.json ({', '.join(present[:3])})"
    elif other is None:
        what = f"a meta.json that is not a run's ({problem or 'it records no config'})"
    else:
        diff = identity.differences(other)
        more = f", and {len(diff) - 3} more keys" if len(diff) > 3 else ""
        theirs = ", ".join(f"{k} = {show(a)}" for k, a, _ in diff[:3]) + more
        ours = ", ".join(f"{k} = {show(b)}" for k, _, b in diff[:3]) + more
        what = f"another run, {other.run_id} ({theirs}), not this one, {identity.run_id} ({ours})"
        from .usercode import without_digest

        if diff and all(without_digest(a) == without_digest(b) for _, a, b in diff):
            what += ": a user's file was edited since (its source hash differs)"
    if not force:
        raise ConfigError(f"{name} = {str(path)!r} holds {what}: {WAY_OUT}")
    clear_run(path, meta)
    return False


__all__ = ["CHUNKS", "OutputDir", "RunIdentity", "check_path", "clear_run", "identity_of_meta", "make_directory",
           "open_output", "read_meta", "temporary_beside", "write_text"]
