"""Monte Carlo driver: replications of each setting, in parallel, resumable.

Replication ``r`` of a setting draws everything (path, then bootstrap
multipliers) from ``SeedSequence(root, spawn_key=(setting.seed_key, r))``
(:mod:`ldpsim.rng`),
so results do not depend on ``n_jobs``, the backend or the order in which
chunks finish. Replications run in chunks (one joblib task each). Workers
return their chunk to the driver process, which writes it to
``<out>/chunks/`` as soon as it arrives: workers, on a cluster perhaps other
machines, need no access to the output directory, an interrupted run loses
only the chunks in flight, and ``resume=True`` skips the saved ones.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path

import numba
import numpy as np
from joblib import Parallel, delayed, effective_n_jobs

from ._jit import source_hash
from .backends import STREAMING, BackendError, check_backend, joblib_backend
from .config import Config, Setting
from .models import build_model
from .recursion import run_path
from .replication import ChunkResult, run_replications
from .rng import as_generator

#: Aim for chunks of about this many SGD steps (well under a second each).
CHUNK_STEPS = 20_000_000
#: Never more replications than this in one chunk.
MAX_CHUNK_REPS = 50
#: Bumped when the chunk file layout or the meaning of its arrays changes.
CHUNK_FORMAT = 1
#: Sources that decide what a chunk holds; a change to any of them makes
#: ``--resume`` recompute rather than reuse saved chunks. (Reporting code
#: is left out so that tables can be reworked without rerunning.)
COMPUTE_SOURCES = ("models", "_dispatch.py", "mechanisms.py", "recursion.py", "streaming.py", "inference.py",
                   "critical_values.py", "replication.py", "config.py", "rng.py")


@lru_cache(maxsize=1)
def _compute_source_hash() -> str:
    return source_hash(COMPUTE_SOURCES)  # read once per process, not once per setting


def code_identity() -> dict:
    """What must agree between the driver and its workers for results to be identical.

    The hash of the compute sources and the numpy and numba versions. A
    cluster worker with other code would write chunks under the wrong key.
    """
    return {"ldpsim": _compute_source_hash(), "numpy": np.__version__, "numba": numba.__version__}


def chunk_size(n: int) -> int:
    """Replications per chunk for paths of ``n`` steps (a function of ``n`` only)."""
    return int(min(MAX_CHUNK_REPS, max(1, CHUNK_STEPS // n)))


def chunk_key(setting: Setting, methods, root_seed: int) -> str:
    """Name of a setting's chunk files: changes with anything that changes their content."""
    identity = {
        "setting": setting.as_dict(),
        "methods": list(methods),
        "seed": root_seed,
        "format": CHUNK_FORMAT,
        "source": _compute_source_hash(),
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:20]


def _chunk_path(chunk_dir: Path, key: str, start: int, stop: int) -> Path:
    return chunk_dir / f"{key}_{start:07d}_{stop:07d}.npz"


def _save_chunk(path: Path, result: ChunkResult) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, theta_bar=result.theta_bar, bounds=result.bounds, ok=result.ok)
        os.replace(tmp, path)  # atomic: a killed run never leaves half a chunk
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _load_chunk(path: Path) -> ChunkResult | None:
    try:
        with np.load(path) as data:
            return ChunkResult(data["theta_bar"], data["bounds"], data["ok"])
    except (OSError, ValueError, KeyError):
        return None


def _chunk_task(index, setting, methods, root_seed, start, stop, identity):
    worker = code_identity()
    if worker != identity:  # `identity` is the driver's
        import socket

        def show(ident):
            return ", ".join(f"{k} {v}" for k, v in ident.items())

        raise BackendError(f"worker on {socket.gethostname()} runs other code ({show(worker)}) than the driver "
                           f"({show(identity)}): install the same ldpsim, numpy and numba there")
    result = run_replications(setting, methods, root_seed, start, stop)
    return (index, start), result  # results arrive in completion order: say whose; the driver saves


def warm_up(config: Config) -> None:
    """Compile (or load from cache) each kernel once before workers start."""
    seen = set()
    for setting in config.settings:
        model = build_model(setting)
        kind = numba.typeof(model.kernel_params())  # nested records (noise, covariates) count
        if kind in seen:
            continue
        seen.add(kind)
        small = dataclasses.replace(setting, n=64, beta=0.5)
        run_path(model, as_generator(0), small.n, small.c, small.gamma, small.theta0, small.layout(config.methods),
                 small.batch_size)


def _run_tasks(calls: list, n_jobs: int, streaming: bool):
    """Yield task results as they finish (or, without streaming, wave by wave)."""
    if streaming:
        yield from Parallel(n_jobs=n_jobs, return_as="generator_unordered")(calls)
        return
    # joblib hands results of Pool-based backends (ray) over only as a whole
    # list: run two tasks per worker at a time, so that an interrupt loses at
    # most one wave
    wave = 2 * effective_n_jobs(n_jobs)
    parallel = Parallel(n_jobs=n_jobs)
    for first in range(0, len(calls), wave):
        yield from parallel(calls[first:first + wave])


def simulate(config: Config, *, n_jobs: int = -1, backend: str = "loky", scheduler: str | None = None,
             chunk_dir: Path | None = None, resume: bool = False, progress: bool = True) -> list[ChunkResult]:
    """Run every replication of every setting of ``config``.

    Parameters
    ----------
    config : Config
        Validated run.
    n_jobs : int
        joblib workers (-1: all cores). Never changes the results.
    backend : {'loky', 'threading', 'dask', 'ray'}
        joblib backend (:mod:`ldpsim.backends`). Kernels release the GIL, so
        threads run in parallel; ``dask`` and ``ray`` run on a cluster.
    scheduler : str, optional
        Dask scheduler address (``backend='dask'`` only); without it, dask
        starts a local cluster of ``n_jobs`` workers for the run.
    chunk_dir : Path, optional
        Where finished chunks are saved, by this process as they arrive;
        ``None`` keeps them in memory only.
    resume : bool
        Reuse chunks saved in ``chunk_dir`` by an earlier run of the same
        settings and seed.
    progress : bool
        Show a progress bar with ETA.

    Returns
    -------
    list of ChunkResult
        One per setting, replications in order.
    """
    from tqdm.auto import tqdm

    check_backend(backend, scheduler, n_jobs)  # before any work, even when everything is resumed
    tasks, done = [], {}
    for i, setting in enumerate(config.settings):
        key = chunk_key(setting, config.methods, config.seed)
        size = chunk_size(setting.n)
        for start in range(0, config.reps, size):
            stop = min(config.reps, start + size)
            path = _chunk_path(chunk_dir, key, start, stop) if chunk_dir is not None else None
            if resume and path is not None and path.exists():
                loaded = _load_chunk(path)
                if loaded is not None:
                    done[(i, start)] = loaded
                    continue
            tasks.append((i, start, stop, path))

    # progress in SGD steps, not replications: an n = 1e8 replication costs a
    # hundred times an n = 1e6 one, and the ETA should know it
    total = config.reps * sum(s.n for s in config.settings)
    already = sum(len(r.ok) * config.settings[i].n for (i, _), r in done.items())
    with tqdm(total=total, initial=already, unit="step", unit_scale=True, disable=not progress,
              dynamic_ncols=True, desc="SGD steps") as bar:
        if tasks:
            warm_up(config)  # compiles into the cache that local workers load from
            identity = code_identity()
            paths = {(i, start): path for i, start, _, path in tasks}
            calls = [delayed(_chunk_task)(i, config.settings[i], config.methods, config.seed, start, stop, identity)
                     for i, start, stop, _ in tasks]
            with joblib_backend(backend, n_jobs, scheduler):
                for tag, result in _run_tasks(calls, n_jobs, streaming=backend in STREAMING):
                    if paths[tag] is not None:
                        _save_chunk(paths[tag], result)
                    done[tag] = result
                    bar.update(len(result.ok) * config.settings[tag[0]].n)

    out = []
    for i in range(len(config.settings)):
        parts = [done[k] for k in sorted(k for k in done if k[0] == i)]
        out.append(ChunkResult.concatenate(parts))
    return out
