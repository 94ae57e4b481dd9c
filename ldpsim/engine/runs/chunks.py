"""The chunk store: a run's finished replications on disk, so that an interrupted run resumes.

A chunk is a range of replications of one setting, saved as named arrays
(first axis: replication) in ``<out>/chunks/<key>_<start>_<stop>.npz``. The
key hashes everything that decides what the chunk holds: the study, the
setting, the study's per-run keys, the root seed, the chunk format and the
source of the code that computes it. A chunk written by other code, for
another seed or in an older format is therefore never read as this run's:
``--resume`` recomputes it.

Beside its arrays a chunk file holds the seconds its replications took to
compute (``meta.json`` of a resumed run sums them over chunks, whichever
invocation computed them) and a SHA-256 checksum of the arrays, verified on
reading: a chunk whose numbers were changed after it was saved is recomputed.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from functools import lru_cache
from pathlib import Path

import numba
import numpy as np

from ..dialect.jit import source_hash
from .outdir import temporary_beside

#: Bumped when the chunk file layout changes (1: the coverage study's arrays
#: only; 2: any study's named arrays; 3: with their checksum and compute seconds; 4: and the name they were
#: saved under).
CHUNK_FORMAT = 4
#: Entries of a chunk file that are not replication arrays: the compute seconds, the checksum, and the file name
#: it was saved under (its setting's key and replication range: a chunk renamed to another's name is not reused).
SECONDS, CHECKSUM, SAVED_AS = "__seconds__", "__sha256__", "__saved_as__"
#: Aim for chunks of about this many SGD steps (well under a second each).
CHUNK_STEPS = 20_000_000
#: Never more replications than this in one chunk.
MAX_CHUNK_REPS = 50
#: Chunks hold a multiple of this many replications, and at least this many (never more than MAX_CHUNK_REPS):
#: a lanes kernel (ldpsim.engine.dialect.lanes) of up to this many lanes fills each of its calls, even at n = 1e8,
#: where a chunk of CHUNK_STEPS would hold one replication.
LANE_QUANTUM = 8


@lru_cache(maxsize=None)
def compute_source_hash(sources: tuple[str, ...]) -> str:
    """Hash of the code that decides what a study's chunks hold (read once per process)."""
    return source_hash(sources)


def code_identity(study) -> dict:
    """What must agree between the driver and its workers for results to be identical.

    The hash of the study's compute sources and the numpy and numba
    versions. A cluster worker with other code would write chunks under the
    wrong key.
    """
    return {"ldpsim": compute_source_hash(tuple(study.compute_sources)), "numpy": np.__version__,
            "numba": numba.__version__}


def chunk_size(steps: int) -> int:
    """Replications per chunk when one replication costs ``steps`` SGD steps (a function of that only).

    About :data:`CHUNK_STEPS` steps, rounded down to a multiple of
    :data:`LANE_QUANTUM` replications and at least that many, at most
    :data:`MAX_CHUNK_REPS`. It does not depend on the lanes a run uses, so
    runs of any lanes resume each other's chunks.
    """
    quantum = min(LANE_QUANTUM, MAX_CHUNK_REPS)
    reps = min(MAX_CHUNK_REPS, max(1, CHUNK_STEPS // max(1, steps)))
    return int(max(quantum, reps - reps % quantum))


def chunk_key(study, setting, config) -> str:
    """Name of a setting's chunk files: changes with anything that changes their content."""
    identity = {
        "study": study.name,
        "setting": setting.as_dict(),
        "options": study.chunk_identity(config),
        "seed": config.seed,
        "format": [CHUNK_FORMAT, study.chunk_format],
        "source": compute_source_hash(tuple(study.compute_sources)),
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:20]


def chunk_path(chunk_dir: Path, key: str, start: int, stop: int) -> Path:
    """The file of replications ``start .. stop - 1`` of the setting whose key is ``key``."""
    return chunk_dir / f"{key}_{start:07d}_{stop:07d}.npz"


def checksum(arrays: dict[str, np.ndarray]) -> np.ndarray:
    """SHA-256 of a chunk's arrays (names, types, shapes and bytes), as 32 ``uint8``."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}:{array.dtype.str}:{array.shape};".encode())
        digest.update(array.tobytes())
    return np.frombuffer(digest.digest(), dtype=np.uint8).copy()


def save_chunk(path: Path, arrays: dict[str, np.ndarray], seconds: float = float("nan")) -> None:
    """Write a chunk atomically: a killed run never leaves half a chunk under its final name.

    The file holds ``arrays``, their :func:`checksum`, ``seconds``, the
    time its replications took to compute (NaN: unknown), and its own file
    name, which :func:`read_chunk` checks: a chunk of another run renamed to
    this one's name is not reused.

    The arrays go to a temporary file ``.<name>.*.tmp`` beside it, which is
    flushed to disk and then renamed over ``path``. A run killed in between
    leaves only the temporary file, which the next run into the directory
    removes (:func:`ldpsim.engine.runs.outdir.open_output`).
    """
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = temporary_beside(path)
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays, **{SECONDS: np.float64(seconds), CHECKSUM: checksum(arrays),
                                      SAVED_AS: np.frombuffer(path.name.encode(), dtype=np.uint8)})
            fh.flush()
            os.fsync(fh.fileno())  # the rename must not reach the disk before the data
        os.replace(tmp, path)
    except OSError as exc:  # a full disk says ENOSPC without a file name: name the chunk
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def load_chunk(path: Path) -> dict[str, np.ndarray] | None:
    """The arrays of a saved chunk, or ``None`` if it cannot be read."""
    arrays, problem, _ = read_chunk(path)
    return None if problem else arrays


def read_chunk(path: Path, reps: int | None = None,
               shapes: dict[str, tuple] | None = None) -> tuple[dict[str, np.ndarray] | None, str | None, float]:
    """A saved chunk's arrays, checked: ``(arrays, None, seconds)``, or ``(None, what is wrong with it, nan)``.

    ``seconds`` is the time its replications took to compute; the arrays
    must match the checksum saved with them, and the name saved with them
    must be ``path``'s (its setting's key and replication range).

    Parameters
    ----------
    path : Path
    reps : int, optional
        Replications the chunk must hold (the first axis of every array).
    shapes : dict, optional
        The shape of each array of one replication
        (:meth:`~ldpsim.studies.base.Study.chunk_shapes`); without it only
        ``ok`` and the first axes are checked.
    """
    try:
        with open(path, "rb") as fh:  # ours to close: np.load leaks the handle of a file it fails to read
            data = np.load(fh, allow_pickle=False)
            arrays = {name: data[name] for name in data.files} if isinstance(data, np.lib.npyio.NpzFile) else data
    except Exception as exc:  # a truncated or foreign file fails in many ways (BadZipFile, EOFError, zlib.error, ...)
        detail = str(exc).splitlines()[0] if str(exc) else "no detail"
        return None, f"cannot be read ({type(exc).__name__}: {detail})", math.nan
    if not isinstance(arrays, dict):  # np.load of a bare .npy file gives an array
        return None, "is not a chunk (no named arrays)", math.nan
    seconds, saved, name = arrays.pop(SECONDS, None), arrays.pop(CHECKSUM, None), arrays.pop(SAVED_AS, None)
    if name is None or name.dtype != np.uint8 or name.ndim != 1:
        return None, "does not say which run's chunk it is (no name saved with it)", math.nan
    if name.tobytes() != Path(path).name.encode():  # another run's (or setting's, or range's) chunk, renamed
        shown = name.tobytes().decode("utf-8", "replace")[:80]
        return None, f"was saved as {shown!r}: the chunk of another run, setting or replication range", math.nan
    if (problem := check_chunk(arrays, reps, shapes)) is not None:
        return None, problem, math.nan
    if saved is None:
        return None, "has no checksum", math.nan
    if saved.dtype != np.uint8 or saved.shape != (32,) or not np.array_equal(saved, checksum(arrays)):
        return None, "fails its checksum (its numbers changed after it was saved)", math.nan
    seconds = float(seconds) if seconds is not None and seconds.shape == () and seconds.dtype.kind == "f" else math.nan
    return arrays, None, seconds if 0.0 <= seconds < 1e12 else math.nan  # (not part of the checksum: unknown)


def check_chunk(arrays: dict[str, np.ndarray], reps: int | None = None,
                shapes: dict[str, tuple] | None = None) -> str | None:
    """What is wrong with a chunk's arrays (see :func:`read_chunk`), or ``None``."""
    if "ok" not in arrays:
        return "holds no 'ok' array"
    if arrays["ok"].dtype != np.bool_ or arrays["ok"].ndim != 1:
        return f"has an 'ok' array of {arrays['ok'].dtype} {arrays['ok'].shape}, not a boolean vector"
    count = arrays["ok"].shape[0] if reps is None else reps
    if shapes is not None and set(arrays) != set(shapes):
        return f"holds arrays {sorted(arrays)}, not {sorted(shapes)}"
    for name, array in arrays.items():
        want = (count, *shapes[name]) if shapes is not None else None
        if array.ndim == 0 or array.shape[0] != count or (want is not None and array.shape != want):
            return f"has '{name}' of shape {array.shape}, not {want or (count, '...')}"
        if array.dtype.kind not in "biuf":
            return f"has '{name}' of type {array.dtype}, not numbers"
    return None


def set_aside(path: Path) -> Path:
    """Move a damaged chunk file to ``damaged/`` beside it (kept for inspection); returns where it went."""
    target_dir = path.parent / "damaged"
    target_dir.mkdir(exist_ok=True)
    target = target_dir / path.name
    count = 1
    while target.exists():
        target = target_dir / f"{path.name}.{count}"
        count += 1
    os.replace(path, target)
    return target


def concatenate(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The chunks of one setting, in replication order, as one set of arrays."""
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}


__all__ = ["CHECKSUM", "CHUNK_FORMAT", "SAVED_AS", "SECONDS", "check_chunk", "checksum", "chunk_key", "chunk_path", "chunk_size",
           "code_identity", "concatenate", "load_chunk", "read_chunk", "save_chunk", "set_aside"]
