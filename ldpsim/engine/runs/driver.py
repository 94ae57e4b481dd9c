"""Monte Carlo driver: the replications of every setting, in parallel, resumable.

Replication ``r`` of a setting draws everything from
``SeedSequence(root, spawn_key=(setting.seed_key, r))`` (:mod:`ldpsim.engine.dialect.rng`),
so results do not depend on ``n_jobs``, the backend or the order in which
chunks finish. Replications run in chunks (one joblib task each) through the
study's :meth:`~ldpsim.studies.base.Study.run_chunk`; the driver knows
nothing of what they hold. Workers return their chunk to the driver process,
which writes it to ``<out>/chunks/`` (:mod:`ldpsim.engine.runs.chunks`) as soon as it
arrives: workers, on a cluster perhaps other machines, need no access to the
output directory, an interrupted run loses only the chunks in flight, and
``resume=True`` skips the saved ones. Settings that share their paths (the
study's ``group_key``: the coverage study's settings that differ only in
``beta``, ``B``, ``level`` or ``multiplier``) run as one task, each path once,
and still get a chunk file each.

Each chunk is saved with the seconds its replications took to compute
(a task's time, shared by the settings it ran), so that a run finished by
``--resume`` reports the compute time of all its chunks, whichever
invocation computed them (``stats``). Ctrl-C (or SIGTERM, which the CLI turns
into it) stops the kernels running in this process within a poll of
:mod:`ldpsim.engine.dialect.interrupt`: a run on one worker runs its tasks in a
worker thread, so that the main thread is free to receive the signal.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Callable

from joblib import Parallel, delayed, effective_n_jobs

from ..dialect import interrupt
from . import chunks as store
from . import compiling, usercode
from .backends import LOCAL, STREAMING, BackendError, check_backend, joblib_backend, local_workers, resolve_backend
from .config import Config

#: The clock of the compute seconds saved with each chunk (a test may replace it).
clock = time.perf_counter


def _chunk_task(indices, study, settings, options, root_seed, start, stop, identity, lanes=None):
    worker = store.code_identity(study)
    if worker != identity:  # `identity` is the driver's
        import socket

        def show(ident):
            return ", ".join(f"{k} {v}" for k, v in ident.items())

        raise BackendError(f"worker on {socket.gethostname()} runs other code ({show(worker)}) than the driver "
                           f"({show(identity)}): install the same ldpsim, numpy and numba there")
    with interrupt.task():
        tic = clock()
        if len(settings) == 1:
            results = [study.run_chunk(settings[0], options, root_seed, start, stop, lanes=lanes)]
        else:  # settings that share their paths: each path runs once
            results = study.run_group(settings, options, root_seed, start, stop, lanes=lanes)
        share = (clock() - tic) / len(results)  # the shared paths' time, split between their chunks
    # results arrive in completion order: say whose
    return [((i, start), r, share) for i, r in zip(indices, results)]


def _run_tasks(calls: list, n_jobs: int, streaming: bool, in_thread: bool = False):
    """Yield task results as they finish (or, without streaming, wave by wave).

    ``in_thread``: one after the other, each in a worker thread while this
    thread waits, free to receive Ctrl-C (:func:`ldpsim.engine.dialect.interrupt.in_worker_thread`).
    """
    if in_thread:
        for func, args, kwargs in calls:
            yield interrupt.in_worker_thread(func, *args, **kwargs)
        return
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


#: The progress bar: its time left is :class:`Estimate`'s (the postfix), "estimating" until it knows.
ETA_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]"


class Estimate:
    """The time a run has left, from the speed of its steps since compiling ended; "estimating" before that is known.

    tqdm's own estimate counts the kernels' compilation (minutes, before the first chunk) as time spent on
    steps and, with several workers, the first chunk as the only one under way: a 9-minute run said 24 hours.
    This one says ``estimating`` until as many chunks as there are workers are in (or the run is done), then
    ``remaining steps / (steps done / seconds since compiling ended)``.
    """

    def __init__(self, bar, workers: int = 1):
        self.bar, self.workers = bar, max(1, int(workers))
        self.started, self.done, self.chunks = None, 0, 0
        self._say("estimating")

    def _say(self, text: str) -> None:
        self.bar.set_postfix_str(text, refresh=False)

    def start(self) -> None:
        """The steps start now (the kernels are compiled)."""
        self.started, self.done, self.chunks = time.perf_counter(), 0, 0

    def update(self, steps: int) -> None:
        """A chunk of ``steps`` steps is in."""
        self.done += steps
        self.chunks += 1
        spent = time.perf_counter() - self.started if self.started is not None else 0.0
        left = self.bar.total - self.bar.n - steps
        if self.chunks >= self.workers and spent > 0 and self.done > 0:
            rate = self.done / spent
            self._say(f"{self.bar.format_interval(left / rate)} left, {self.bar.format_sizeof(rate)}step/s")
        self.bar.update(steps)


def simulate(config: Config, *, n_jobs: int = -1, backend: str = "auto", scheduler: str | None = None,
             chunk_dir: Path | None = None, resume: bool = False, progress: bool = True,
             log: Callable[[str], None] | None = None, stats: dict | None = None,
             lanes: int | None = None) -> list[dict]:
    """Run every replication of every setting of ``config``.

    Parameters
    ----------
    config : Config
        Validated run; ``config.study`` says what a replication computes.
    n_jobs : int
        joblib workers (-1: all cores). Never changes the results.
    backend : {'auto', 'loky', 'threading', 'dask', 'ray'}
        joblib backend (:mod:`ldpsim.engine.runs.backends`). Kernels release the
        GIL, so threads run in parallel (``auto``: threads for the studies
        whose replications are kernels, processes for the others); ``dask``
        and ``ray`` run on a cluster.
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
        Filled with ``chunks`` (in the run), ``reused``, ``damaged``, ``computed``
        (chunks computed now), ``compute_s`` (the compute seconds of every
        chunk of the run, saved ones included; NaN if one is unknown) and
        ``computed_s`` (of the chunks computed now). Updated as chunks
        arrive, so that an interrupted run's caller can report them.
    lanes : int, optional
        Replications a kernel call advances side by side (default: each study's
        :meth:`~ldpsim.studies.base.Study.default_lanes`). Never changes the results,
        so it is not part of a chunk's identity: chunks of any lanes resume each other.

    Returns
    -------
    list of dict
        One per setting: the study's named arrays, replications in order.
    """
    from tqdm.auto import tqdm

    check_backend(backend, scheduler, n_jobs)  # before any work, even when everything is resumed
    study = config.study
    backend = resolve_backend(backend, study)
    log = log or (lambda line: None)
    # settings that share their paths (study.group_key) run as one task per range of replications
    groups: dict = {}
    for i, setting in enumerate(config.settings):
        key = study.group_key(setting)
        groups.setdefault(("alone", i) if key is None else ("group", key), []).append(i)
    interrupt.clear()  # a stop asked of an earlier run is not this run's
    tasks, done, paths, damaged, own, seconds = [], {}, {}, 0, set(), {}
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
                    loaded, problem, spent = store.read_chunk(path, stop - start,
                                                              study.chunk_shapes(setting, config.options))
                    if problem is None:
                        done[(i, start)], seconds[(i, start)] = loaded, spent
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
    stats = stats if stats is not None else {}
    reused_s = math.fsum(seconds.values())
    stats.update(chunks=len(paths), reused=len(done), damaged=damaged, computed=0, computed_s=0.0,
                 compute_s=reused_s)
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
              desc="SGD steps", bar_format=ETA_FORMAT) as bar:
        bar.update(total - sum(cost(todo, stop - start) for todo, start, stop in tasks))
        eta = Estimate(bar, local_workers(n_jobs) if backend in LOCAL and scheduler is None else 1)
        if tasks:
            with usercode.compile_errors("user code"):  # numba's page of typing errors, cut to its cause
                # compiles into the cache that local workers load from, the missing kernels side by side on the
                # local cores; in a thread, so that Ctrl-C and SIGTERM stop the run within a poll, and a long first
                # compilation is said with its elapsed time
                def said(line):  # a line of its own, not glued to the progress bar's
                    bar.clear()
                    log(line)
                    bar.refresh()

                if backend in LOCAL and scheduler is None:
                    compiling.prepare(study, config, lanes, local_workers(n_jobs), said)
                else:  # a cluster's workers load from their own caches: this process fills its own
                    interrupt.while_compiling(lambda: study.warm_up(config, lanes), said)
            identity = store.code_identity(study)
            eta.start()  # the steps' own speed: compiling is behind us
            calls = [delayed(_chunk_task)(todo, study, [config.settings[i] for i in todo], config.options,
                                          config.seed, start, stop, identity, lanes)
                     for todo, start, stop in tasks]
            # one local worker: the tasks run in a worker thread, and Ctrl-C reaches the main thread
            in_thread = backend in LOCAL and scheduler is None and local_workers(n_jobs) == 1
            try:
                with joblib_backend(backend, n_jobs, scheduler):
                    for results in _run_tasks(calls, n_jobs, streaming=backend in STREAMING, in_thread=in_thread):
                        for tag, result, spent in results:
                            if paths[tag] is not None:
                                store.save_chunk(paths[tag], result, spent)
                            done[tag], seconds[tag] = result, spent
                            stats["computed"] += 1
                            stats["computed_s"] += spent
                            stats["compute_s"] += spent
                        eta.update(cost([results[0][0][0]], len(results[0][1]["ok"])))
            except BaseException:
                interrupt.request_stop()  # kernels still running in this process's threads stop at their next poll
                raise
            finally:
                if interrupt.requested():
                    interrupt.wait_idle()
                    interrupt.clear()

    return [store.concatenate([done[k] for k in sorted(k for k in done if k[0] == i)])
            for i in range(len(config.settings))]
