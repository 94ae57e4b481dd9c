"""The chunk store: a run's finished replications on disk, so that an interrupted run resumes.

A chunk is a range of replications of one setting, saved as named arrays
(first axis: replication) in ``<out>/chunks/<key>_<start>_<stop>.npz``. The
key hashes everything that decides what the chunk holds: the study, the
setting, the study's per-run keys, the root seed, the chunk format and the
source of the code that computes it. A chunk written by other code, for
another seed or in an older format is therefore never read as this run's:
``--resume`` recomputes it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path

import numba
import numpy as np

from .jit import source_hash

#: Bumped when the chunk file layout changes (1: the coverage study's arrays
#: only; 2: any study's named arrays).
CHUNK_FORMAT = 2
#: Aim for chunks of about this many SGD steps (well under a second each).
CHUNK_STEPS = 20_000_000
#: Never more replications than this in one chunk.
MAX_CHUNK_REPS = 50


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
    """Replications per chunk when one replication costs ``steps`` SGD steps (a function of that only)."""
    return int(min(MAX_CHUNK_REPS, max(1, CHUNK_STEPS // max(1, steps))))


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


def save_chunk(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write a chunk atomically: a killed run never leaves half a chunk under its final name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def load_chunk(path: Path) -> dict[str, np.ndarray] | None:
    """The arrays of a saved chunk, or ``None`` if it cannot be read."""
    try:
        with np.load(path) as data:
            return {name: data[name] for name in data.files}
    except (OSError, ValueError, KeyError):
        return None


def concatenate(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The chunks of one setting, in replication order, as one set of arrays."""
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}


__all__ = ["CHUNK_FORMAT", "chunk_key", "chunk_path", "chunk_size", "code_identity", "concatenate", "load_chunk",
           "save_chunk"]
