"""Monte Carlo driver: the replications of every setting, in parallel, resumable.

Replication ``r`` of a setting draws everything from
``SeedSequence(root, spawn_key=(setting.seed_key, r))`` (:mod:`ldpsim.engine.rng`),
so results do not depend on ``n_jobs``, the backend or the order in which
chunks finish. Replications run in chunks (one joblib task each) through the
study's :meth:`~ldpsim.studies.base.Study.run_chunk`; the driver knows
nothing of what they hold. Workers return their chunk to the driver process,
which writes it to ``<out>/chunks/`` (:mod:`ldpsim.engine.chunks`) as soon as it
arrives: workers, on a cluster perhaps other machines, need no access to the
output directory, an interrupted run loses only the chunks in flight, and
``resume=True`` skips the saved ones.
"""

from __future__ import annotations

from pathlib import Path

from joblib import Parallel, delayed, effective_n_jobs

from . import chunks as store
from .backends import STREAMING, BackendError, check_backend, joblib_backend
from .config import Config


def _chunk_task(index, study, setting, options, root_seed, start, stop, identity):
    worker = store.code_identity(study)
    if worker != identity:  # `identity` is the driver's
        import socket

        def show(ident):
            return ", ".join(f"{k} {v}" for k, v in ident.items())

        raise BackendError(f"worker on {socket.gethostname()} runs other code ({show(worker)}) than the driver "
                           f"({show(identity)}): install the same ldpsim, numpy and numba there")
    result = study.run_chunk(setting, options, root_seed, start, stop)
    return (index, start), result  # results arrive in completion order: say whose; the driver saves


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
             chunk_dir: Path | None = None, resume: bool = False, progress: bool = True) -> list[dict]:
    """Run every replication of every setting of ``config``.

    Parameters
    ----------
    config : Config
        Validated run; ``config.study`` says what a replication computes.
    n_jobs : int
        joblib workers (-1: all cores). Never changes the results.
    backend : {'loky', 'threading', 'dask', 'ray'}
        joblib backend (:mod:`ldpsim.engine.backends`). Kernels release the
        GIL, so threads run in parallel; ``dask`` and ``ray`` run on a cluster.
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
    list of dict
        One per setting: the study's named arrays, replications in order.
    """
    from tqdm.auto import tqdm

    check_backend(backend, scheduler, n_jobs)  # before any work, even when everything is resumed
    study = config.study
    tasks, done = [], {}
    for i, setting in enumerate(config.settings):
        key = store.chunk_key(study, setting, config)
        size = store.chunk_size(study.steps(setting))
        for start in range(0, config.reps, size):
            stop = min(config.reps, start + size)
            path = store.chunk_path(chunk_dir, key, start, stop) if chunk_dir is not None else None
            if resume and path is not None and path.exists():
                loaded = store.load_chunk(path)
                if loaded is not None:
                    done[(i, start)] = loaded
                    continue
            tasks.append((i, start, stop, path))

    def cost(i, result):
        return len(result["ok"]) * study.steps(config.settings[i])

    # progress in SGD steps, not replications: an n = 1e8 replication costs a
    # hundred times an n = 1e6 one, and the ETA should know it
    total = config.reps * sum(study.steps(s) for s in config.settings)
    already = sum(cost(i, r) for (i, _), r in done.items())
    with tqdm(total=total, initial=already, unit="step", unit_scale=True, disable=not progress,
              dynamic_ncols=True, desc="SGD steps") as bar:
        if tasks:
            study.warm_up(config)  # compiles into the cache that local workers load from
            identity = store.code_identity(study)
            paths = {(i, start): path for i, start, _, path in tasks}
            calls = [delayed(_chunk_task)(i, study, config.settings[i], config.options, config.seed, start, stop,
                                          identity)
                     for i, start, stop, _ in tasks]
            with joblib_backend(backend, n_jobs, scheduler):
                for tag, result in _run_tasks(calls, n_jobs, streaming=backend in STREAMING):
                    if paths[tag] is not None:
                        store.save_chunk(paths[tag], result)
                    done[tag] = result
                    bar.update(cost(tag[0], result))

    return [store.concatenate([done[k] for k in sorted(k for k in done if k[0] == i)])
            for i in range(len(config.settings))]
