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
``resume=True`` skips the saved ones. Settings that share their paths (the
study's ``group_key``: the coverage study's settings that differ only in
``beta``, ``B``, ``level`` or ``multiplier``) run as one task, each path once,
and still get a chunk file each.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from joblib import Parallel, delayed, effective_n_jobs

from . import chunks as store
from .backends import STREAMING, BackendError, check_backend, joblib_backend
from .config import Config


def _chunk_task(indices, study, settings, options, root_seed, start, stop, identity):
    worker = store.code_identity(study)
    if worker != identity:  # `identity` is the driver's
        import socket

        def show(ident):
            return ", ".join(f"{k} {v}" for k, v in ident.items())

        raise BackendError(f"worker on {socket.gethostname()} runs other code ({show(worker)}) than the driver "
                           f"({show(identity)}): install the same ldpsim, numpy and numba there")
    if len(settings) == 1:
        results = [study.run_chunk(settings[0], options, root_seed, start, stop)]
    else:  # settings that share their paths: each path runs once
        results = study.run_group(settings, options, root_seed, start, stop)
    return [((i, start), r) for i, r in zip(indices, results)]  # results arrive in completion order: say whose


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
             chunk_dir: Path | None = None, resume: bool = False, progress: bool = True,
             log: Callable[[str], None] | None = None, stats: dict | None = None) -> list[dict]:
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
    log : callable, optional
        Called with one line for what the user should know: how many chunks
        ``resume`` reused, a damaged chunk set aside.
    stats : dict, optional
        Filled with ``chunks`` (in the run), ``reused`` and ``damaged``.

    Returns
    -------
    list of dict
        One per setting: the study's named arrays, replications in order.
    """
    from tqdm.auto import tqdm

    check_backend(backend, scheduler, n_jobs)  # before any work, even when everything is resumed
    study = config.study
    log = log or (lambda line: None)
    # settings that share their paths (study.group_key) run as one task per range of replications
    groups: dict = {}
    for i, setting in enumerate(config.settings):
        key = study.group_key(setting)
        groups.setdefault(("alone", i) if key is None else ("group", key), []).append(i)
    tasks, done, paths, damaged, own = [], {}, {}, 0, set()
    for members in groups.values():
        size = store.chunk_size(study.steps(config.settings[members[0]]))  # members share n
        for start in range(0, config.reps, size):
            stop = min(config.reps, start + size)
            todo = []
            for i in members:
                setting = config.settings[i]
                path = None
                if chunk_dir is not None:
                    path = store.chunk_path(chunk_dir, store.chunk_key(study, setting, config), start, stop)
                    own.add(path.name)
                paths[(i, start)] = path
                if resume and path is not None and (path.exists() or path.is_symlink()):
                    loaded, problem = store.read_chunk(path, stop - start, study.chunk_shapes(setting, config.options))
                    if problem is None:
                        done[(i, start)] = loaded
                        continue
                    damaged += 1
                    try:
                        where = store.set_aside(path)
                        log(f"chunk {path.name} {problem}: moved to {where.parent.parent.name}/{where.parent.name}/, "
                            "its replications are recomputed")
                    except OSError as exc:
                        log(f"chunk {path.name} {problem}; it cannot be moved aside ({exc.strerror}): recomputing it")
                todo.append(i)
            if todo:
                tasks.append((todo, start, stop))
    computing = len(paths) - len(done)
    if stats is not None:
        stats.update(chunks=len(paths), reused=len(done), damaged=damaged)
    if resume and chunk_dir is not None:
        other = 0
        if chunk_dir.is_dir():
            other = sum(1 for p in chunk_dir.glob("*.npz") if p.name not in own)
        note = (f"; {other} other chunk file(s) there belong to other settings, seeds, reps or code and are not used"
                if other else "")
        log(f"resume: reusing {len(done)} of {len(paths)} chunks saved in {chunk_dir}, computing {computing}{note}")

    def cost(indices, reps):  # a group's shared path counts once
        return reps * study.steps(config.settings[indices[0]])

    # progress in SGD steps, not replications: an n = 1e8 replication costs a
    # hundred times an n = 1e6 one, and the ETA should know it
    total = sum(cost(m, config.reps) for m in groups.values())
    with tqdm(total=total, unit="step", unit_scale=True, disable=not progress, dynamic_ncols=True,
              desc="SGD steps") as bar:
        bar.update(total - sum(cost(todo, stop - start) for todo, start, stop in tasks))
        if tasks:
            study.warm_up(config)  # compiles into the cache that local workers load from
            identity = store.code_identity(study)
            calls = [delayed(_chunk_task)(todo, study, [config.settings[i] for i in todo], config.options,
                                          config.seed, start, stop, identity)
                     for todo, start, stop in tasks]
            with joblib_backend(backend, n_jobs, scheduler):
                for results in _run_tasks(calls, n_jobs, streaming=backend in STREAMING):
                    for tag, result in results:
                        if paths[tag] is not None:
                            store.save_chunk(paths[tag], result)
                        done[tag] = result
                    bar.update(cost([results[0][0][0]], len(results[0][1]["ok"])))

    return [store.concatenate([done[k] for k in sorted(k for k in done if k[0] == i)])
            for i in range(len(config.settings))]
