"""Where replications run: joblib backends on this machine or on a cluster.

``loky`` and ``threading`` are joblib's own; ``auto`` (the default) is
threads for a study whose replications run in ``nogil`` kernels
(:attr:`ldpsim.studies.base.Study.threads`: workers then start at once, share
the kernels this process compiled or loaded, and run in parallel) and loky's
processes for the others, whose Python code between kernel calls would hold
the GIL (:func:`resolve_backend`). ``dask`` runs the same joblib
tasks on a Dask distributed cluster through joblib's dask backend: on the
scheduler at ``scheduler`` if given, otherwise on a ``LocalCluster`` started
on loopback for the run and closed after it. ``ray`` runs them through Ray's
joblib backend (:func:`ray.util.joblib.register_ray`), on the cluster named
by ``RAY_ADDRESS`` or on a local Ray instance started and stopped here.
``dask`` needs the ``cluster`` extra, ``ray`` the ``ray`` extra.

The backend never changes the results: every replication seeds itself from
its identity (:mod:`ldpsim.engine.dialect.rng`), and workers return their chunks to this
process, which saves them (:func:`ldpsim.engine.runs.driver.simulate`), so workers need
no shared disk.
"""

from __future__ import annotations

import contextlib
import logging
import numbers
import os
from pathlib import Path

from ..errors import ConfigError

#: The ``--backend`` choices.
BACKENDS = ("auto", "loky", "threading", "dask", "ray")
#: The backends that run on this machine's cores.
LOCAL = ("auto", "loky", "threading")
#: Backend -> (module it imports, extra that installs it).
EXTRAS = {"dask": ("distributed", "cluster"), "ray": ("ray.util.joblib", "ray")}
#: Backends whose joblib ``Parallel`` can hand results over as they finish
#: (``return_as="generator_unordered"``). Ray's backend is built on
#: ``multiprocessing.Pool``, for which joblib refuses generators; it runs in
#: waves instead (:func:`ldpsim.engine.runs.driver.simulate`).
STREAMING = ("loky", "threading", "dask")
#: Local runs start at most this many workers per core (more only costs memory).
MAX_WORKERS_PER_CORE = 8
#: Seconds to wait for a dask scheduler to answer.
CONNECT_TIMEOUT = 10
#: Seconds to wait for the first worker to join a dask scheduler.
WORKER_TIMEOUT = 60


class BackendError(ConfigError):
    """A backend that cannot run: missing extra, unreachable scheduler, mismatched worker."""


def check_backend(backend: str, scheduler: str | None = None, n_jobs: int = -1) -> None:
    """Raise :class:`BackendError` (one line) unless ``backend`` can run here.

    Parameters
    ----------
    backend : str
        One of :data:`BACKENDS`.
    scheduler : str, optional
        Dask scheduler address (or scheduler file); only with ``'dask'``.
    n_jobs : int
        Workers; any integer but 0 (negative counts as in joblib: -1 is all cores).

    Raises
    ------
    BackendError
        Unknown backend, ``scheduler`` without ``'dask'``, ``n_jobs = 0``, or
        the backend's optional dependency not installed.
    """
    from joblib import cpu_count  # lazy: import ldpsim <= 1 s (issue 41)

    if backend not in BACKENDS:
        raise BackendError(f"backend = {backend!r} is not one of: {', '.join(BACKENDS)}")
    if scheduler is not None and not isinstance(scheduler, str):
        raise BackendError(f"scheduler = {scheduler!r} is not an address or a scheduler file")
    if scheduler is not None and backend != "dask":
        raise BackendError(f"--scheduler needs --backend dask (got --backend {backend})")
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral):  # numpy integers too
        raise BackendError(f"n_jobs = {n_jobs!r} is not an integer: give a worker count, or -1 for all cores")
    if n_jobs == 0:
        raise BackendError("n_jobs = 0 is not allowed: give a worker count, or -1 for all cores")
    if scheduler is None and backend in LOCAL and n_jobs < -cpu_count():
        # joblib would quietly run one worker: -n means all cores but n - 1
        raise BackendError(f"n_jobs = {n_jobs} leaves {-n_jobs - 1} cores out of this machine's {cpu_count()}: "
                           "give a worker count, or -1 for all cores (-2: all but one)")
    if scheduler is None and n_jobs > MAX_WORKERS_PER_CORE * cpu_count():
        # a typo (--n-jobs 1000000) would start that many processes
        raise BackendError(f"n_jobs = {n_jobs} is more than {MAX_WORKERS_PER_CORE} workers per core of this machine "
                           f"({cpu_count()} cores)")
    if backend in EXTRAS:
        module, extra = EXTRAS[backend]
        try:
            __import__(module)
        except ImportError:
            raise BackendError(f"--backend {backend} needs the {extra!r} extra: "
                               f"pip install 'ldpsim[{extra}]'") from None


def resolve_backend(backend: str, study) -> str:
    """The backend a run of ``study`` uses: ``auto`` made ``threading`` or ``loky``, any other as given.

    Threads where the study's replications run in kernels that release the GIL
    (``study.threads``): a small run does not wait for processes to start, import
    ldpsim and load every kernel (``configs/quantile.yaml --reps 20 --n 1e5`` on
    2 workers: 2.2 s against 5.5 s with loky, 2026-11-28, 2-core VM at load 2),
    and larger ones were as fast or faster (zoo_quantile 0.95 of loky's wall).
    Processes for the others: the DP-SGD study's Python between kernel calls made
    threads 5% slower than loky there.
    """
    if backend != "auto":
        return backend
    return "threading" if getattr(study, "threads", False) else "loky"


def local_workers(n_jobs: int) -> int:
    """Worker count on this machine for ``n_jobs`` (joblib's meaning: -1 all cores, -2 all but one)."""
    from joblib import cpu_count

    return n_jobs if n_jobs > 0 else max(1, cpu_count() + 1 + n_jobs)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _dask_client(scheduler: str | None, n_jobs: int, stack: contextlib.ExitStack):
    from distributed import Client, LocalCluster

    if scheduler is None:
        cluster = stack.enter_context(LocalCluster(
            n_workers=local_workers(n_jobs), threads_per_worker=1, processes=True,
            host="127.0.0.1", dashboard_address=None, silence_logs=logging.ERROR,
        ))
        return stack.enter_context(Client(cluster, set_as_default=False))
    if scheduler.endswith(".json"):  # written by `dask scheduler --scheduler-file`
        if not Path(scheduler).is_file():
            raise BackendError(f"scheduler file {scheduler!r} not found")
        target = {"scheduler_file": scheduler}
    else:
        target = {"address": scheduler}
    try:
        client = Client(**target, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise BackendError(f"cannot reach the dask scheduler at {scheduler!r}: {_first_line(exc)}") from None
    stack.enter_context(client)
    try:
        client.wait_for_workers(1, timeout=WORKER_TIMEOUT)
    except TimeoutError:
        raise BackendError(f"the dask scheduler at {scheduler!r} has no workers after {WORKER_TIMEOUT} s: "
                           f"start some with `dask worker {client.scheduler.address}`") from None
    return client


@contextlib.contextmanager
def joblib_backend(backend: str = "loky", n_jobs: int = -1, scheduler: str | None = None):
    """Make ``backend`` joblib's backend inside the ``with`` block.

    Parameters
    ----------
    backend : {'loky', 'threading', 'dask', 'ray'}
        Where tasks run.
    n_jobs : int
        Workers for ``loky``, ``threading`` and ``ray``; for ``dask`` without
        ``scheduler``, the size of the local cluster. With a scheduler,
        dask uses every worker thread of the cluster.
    scheduler : str, optional
        Address of a running dask scheduler (``tcp://host:8786``), or the
        JSON file ``dask scheduler --scheduler-file`` wrote.

    Yields
    ------
    None
        ``joblib.Parallel`` created in the block runs on ``backend``; a
        cluster started here is closed on leaving it, also on errors and
        interrupts.
    """
    from joblib import parallel_config

    check_backend(backend, scheduler, n_jobs)
    with contextlib.ExitStack() as stack:
        if backend == "dask":
            client = _dask_client(scheduler, n_jobs, stack)
            stack.enter_context(parallel_config(backend="dask", client=client))
        elif backend == "ray":
            import ray
            from ray.util.joblib import register_ray

            register_ray()
            if not ray.is_initialized():
                quiet = {"log_to_driver": False, "logging_level": logging.ERROR}
                if os.environ.get("RAY_ADDRESS"):
                    ray.init(**quiet)
                else:  # a private local instance, not one some `ray start` left running
                    ray.init(address="local", num_cpus=local_workers(n_jobs), include_dashboard=False, **quiet)
                stack.callback(ray.shutdown)
            stack.enter_context(parallel_config(backend="ray"))
        else:
            stack.enter_context(parallel_config(backend=backend))
        yield
