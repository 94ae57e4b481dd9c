"""Stopping kernels on request: Ctrl-C and SIGTERM stop a run within a second, also in this process.

A jitted kernel holds no GIL and never returns to the interpreter until it
is done, so Python's signal handlers (``KeyboardInterrupt``) cannot run in
its thread while it works, and a replication of 1e10 steps would ignore
Ctrl-C for minutes. Instead every path kernel takes :data:`FLAG` (a
process-wide ``int64`` array of one element) and reads it, with
:func:`stop_requested`, every :data:`POLL_STEPS` steps or so: a load and a
compare, off the hot path. When it is set the kernel returns at once, and
its Python wrapper calls :func:`check`, which raises :class:`Interrupted`
instead of handing back a half-finished path.

Who sets it: the driver (:mod:`ldpsim.engine.runs.driver`), when the main thread
receives ``KeyboardInterrupt`` (Ctrl-C, or SIGTERM turned into one by the
CLI) while tasks run in this process, in threads (``--backend threading``,
or ``--n-jobs 1``, whose tasks run in one worker thread so that the main
thread stays free to receive the signal). Worker processes (loky) are
stopped by joblib itself. Setting the flag changes no number: a kernel that
is not stopped computes what it always did.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import threading
import time

import numpy as np
from numba.core import types
from numba.extending import intrinsic, overload

from .jit import OVERLOAD_OPTIONS

#: Set to 1 to ask every kernel of this process to stop (read by :func:`stop_requested`).
FLAG = np.zeros(1, dtype=np.int64)
#: Kernels whose steps cost about the same read the flag every this many steps (a step of
#: the cheapest kernel takes a few nanoseconds: a check every few hundred microseconds).
POLL_STEPS = 1 << 16
#: ``i & POLL_MASK == 0`` every :data:`POLL_STEPS` steps (one AND, where ``i % POLL_STEPS`` would cost a sign fix).
POLL_MASK = POLL_STEPS - 1

_lock = threading.Lock()
_active = 0


class Interrupted(KeyboardInterrupt):
    """A kernel stopped because the run was interrupted (its results are not returned)."""


def stop_requested(flag) -> bool:
    """Inside a kernel: whether :data:`FLAG` (passed as ``flag``) is set.

    Jitted, an atomic (``monotonic``) load, so that the compiler cannot hoist
    it out of the loop that polls it; on x86 and ARM it is an ordinary load.
    (In plain Python, with ``NUMBA_DISABLE_JIT=1``, an ordinary read.)
    """
    return bool(flag[0])


@intrinsic
def _load_flag(typingctx, flag):
    if not isinstance(flag, types.Array) or flag.dtype != types.int64:
        return None
    sig = types.boolean(flag)

    def codegen(context, builder, signature, args):
        array = context.make_array(signature.args[0])(context, builder, args[0])
        value = builder.load_atomic(array.data, "monotonic", 8)
        return builder.icmp_signed("!=", value, value.type(0))

    return sig, codegen


@overload(stop_requested, jit_options=OVERLOAD_OPTIONS, inline="always")
def _stop_requested(flag):
    return lambda flag: _load_flag(flag)


def poll_mask(work_per_step: float) -> int:
    """``mask`` for ``i & mask == 0``: a poll about every :data:`POLL_STEPS` units of work, ``work_per_step`` a step.

    For kernels whose step costs ``work_per_step`` times the cheapest (a
    mini-batch of ``m`` examples in ``d`` coordinates): a power of two minus
    one, 0 (every step) when a step is as costly as :data:`POLL_STEPS`.
    """
    every = max(1, int(POLL_STEPS // max(1.0, float(work_per_step))))
    return (1 << (every.bit_length() - 1)) - 1


def request_stop() -> None:
    """Ask every kernel running in this process to stop."""
    FLAG[0] = 1


def clear() -> None:
    """Let kernels run again."""
    FLAG[0] = 0


def requested() -> bool:
    """Whether a stop was requested."""
    return bool(FLAG[0])


def check() -> None:
    """Raise :class:`Interrupted` if a stop was requested (after a kernel returned: it may have stopped early)."""
    if FLAG[0]:
        raise Interrupted()


@contextlib.contextmanager
def task():
    """Count a task running in this process (:func:`wait_idle` waits for them to end)."""
    global _active
    with _lock:
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1


def in_worker_thread(func, *args, **kwargs):
    """``func(*args, **kwargs)`` run in a worker thread while this thread waits, free to receive Ctrl-C.

    A kernel called in the main thread holds it until it returns: Python's
    signal handlers (Ctrl-C's ``KeyboardInterrupt``, the CLI's SIGTERM) wait
    for it. Here the main thread only waits; when the wait is interrupted,
    the kernel is asked to stop (:func:`request_stop`), the worker is waited
    for (a poll away) and the interrupt goes on.
    """
    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="ldpsim-kernel")
    try:
        future = pool.submit(func, *args, **kwargs)
        try:
            return future.result()
        except BaseException:
            if not future.done():
                request_stop()
                concurrent.futures.wait([future])
                clear()
            raise
    finally:
        pool.shutdown(wait=False)


#: Seconds of compiling before the run says so, and between its reminders.
COMPILE_NOTICE = 10.0
COMPILE_REMINDER = 30.0


def while_compiling(func, log, what: str = "the kernels of this run", poll: float = 0.1):
    """``func()`` (a study's warm-up: numba compiles its kernels) in a thread, saying so if it takes a while.

    numba compiles in Python and in LLVM, for minutes for the zoo's kernels
    of a vector model the first time; in the main thread a SIGTERM or Ctrl-C
    would wait for it (and, raised inside numba's compiler, leave its
    library half built: "no compiled object yet"). Here the main thread only
    waits, and an interrupt goes on within ``poll`` seconds; the compiling
    thread is a daemon, left to the process's exit (numba writes a cache
    file whole or not at all). After :data:`COMPILE_NOTICE` seconds ``log``
    gets one line saying what happens, then one every :data:`COMPILE_REMINDER`
    seconds, and the time it took at the end.
    """
    done = threading.Event()
    box = {}

    def target():
        try:
            box["value"] = func()
        except BaseException as exc:  # handed to the waiting thread
            box["error"] = exc
        finally:
            done.set()

    start = time.monotonic()
    threading.Thread(target=target, name="ldpsim-compile", daemon=True).start()
    said, next_note = False, COMPILE_NOTICE
    while not done.wait(poll):
        elapsed = time.monotonic() - start
        if elapsed >= next_note:
            log(f"compiling {what}: first run only, numba caches them ({elapsed:.0f} s so far)" if not said else
                f"still compiling {what} ({elapsed:.0f} s so far)")
            said, next_note = True, elapsed + COMPILE_REMINDER
    if "error" in box:
        raise box["error"]
    if said:
        log(f"compiled {what} in {time.monotonic() - start:.0f} s")
    return box.get("value")


def wait_idle(timeout: float = 10.0) -> bool:
    """Wait until no task of this process runs (or ``timeout`` seconds); whether none does."""
    deadline = time.monotonic() + timeout
    while _active > 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    return _active == 0


__all__ = ["FLAG", "Interrupted", "POLL_MASK", "POLL_STEPS", "check", "clear", "in_worker_thread", "while_compiling", "poll_mask", "request_stop", "requested", "stop_requested",
           "task", "wait_idle"]
