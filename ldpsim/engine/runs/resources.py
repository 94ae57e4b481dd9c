"""What a run can afford: this machine's memory and a week of time, estimates checked before any work.

A study estimates the memory of one replication
(:meth:`~ldpsim.studies.base.Study.memory`) and of what the driver keeps per
replication until the summary (its chunk arrays,
:meth:`~ldpsim.studies.base.Study.chunk_shapes`). :func:`check_memory` refuses,
with one line naming the keys, a setting whose replication alone would take
more than :data:`MEMORY_FRACTION` of this machine's memory; the run checks the
same for all its workers at once before it starts.

A study also estimates the compute seconds of one replication
(:meth:`~ldpsim.studies.base.Study.seconds`, from its step counts and a
per-step cost measured with ``scripts/bench.py``). :func:`check_time` refuses
a run whose estimate exceeds :data:`MAX_RUN_SECONDS` (a run of years cannot
be meant), with one line giving the estimate, unless ``allow_long``.
"""

from __future__ import annotations

import math
import os

from ..errors import ConfigError

#: A run may plan to use at most this fraction of the machine's physical memory.
MEMORY_FRACTION = 0.5
#: Bytes of one float64.
FLOAT = 8
#: A run estimated to take longer than this (7 days) is refused unless allowed (``--allow-long``).
MAX_RUN_SECONDS = 7 * 24 * 3600.0


def physical_memory() -> int:
    """Bytes of physical memory of this machine (``2**62`` if the platform cannot say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return 1 << 62


def memory_budget() -> int:
    """Bytes a run may plan to use: :data:`MEMORY_FRACTION` of :func:`physical_memory`."""
    return int(MEMORY_FRACTION * physical_memory())


def format_bytes(count: float) -> str:
    """``1.5 GiB``, ``43.7 TiB``, ``512 B``."""
    if not math.isfinite(count):
        return "unboundedly many bytes"
    count = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if abs(count) < 1024 or unit == "EiB":
            if unit == "B":
                return f"{count:.0f} {unit}"
            return f"{count:.1f} {unit}" if abs(count) < 1e6 else f"{count:.3g} {unit}"  # not 60 digits of EiB
        count /= 1024.0
    return f"{count:.1f} EiB"  # pragma: no cover


def check_memory(terms: list[tuple[float, str]], *, per: str = "per replication", hint: str = "",
                 copies: int = 1) -> None:
    """Raise a one-line :class:`ConfigError` if ``copies`` times the terms exceed the budget.

    Parameters
    ----------
    terms : list of (float, str)
        Bytes and what they hold, naming the keys that size them
        (``"bootstrap draws B x m x (d + 1) = 1e12 x 31 x 2 doubles"``).
    per : str
        What the terms are for (``"per replication"``, ``"for the trace"``).
    hint : str
        What to lower, appended to the message.
    copies : int
        How many of them are in memory at once (workers).
    """
    total = copies * sum(b for b, _ in terms)
    budget = memory_budget()
    if total <= budget:
        return
    largest = max(terms, key=lambda t: t[0])[1]
    times = f"{copies} workers, each " if copies > 1 else ""
    raise ConfigError(f"this needs about {format_bytes(total)} {per} ({times}mostly {largest}), more than "
                      f"{int(MEMORY_FRACTION * 100)}% of this machine's {format_bytes(physical_memory())}"
                      + (f": {hint}" if hint else ""))


def format_duration(seconds: float) -> str:
    """``45 s``, ``12 min``, ``3.5 hours``, ``9.2 days``, ``24 years``, ``3e+08 years``."""
    if not math.isfinite(seconds):
        return "forever"
    for unit, size in (("years", 365.25 * 86400), ("days", 86400), ("hours", 3600), ("min", 60)):
        if seconds >= 2 * size or (unit == "min" and seconds >= 60):
            value = seconds / size
            return f"{value:.2g} {unit}" if value >= 1e6 else f"{value:.3g} {unit}" if value < 10 else \
                f"{value:.0f} {unit}"
    return f"{seconds:.0f} s"


def check_time(tasks: list[tuple[float, int]], workers: int, *, allow_long: bool = False,
               limit: float = MAX_RUN_SECONDS, basis: str = "its steps and their cost measured on a 2-core laptop"
               ) -> float:
    """The estimated wall time of a run; a one-line :class:`ConfigError` beyond ``limit`` unless ``allow_long``.

    Parameters
    ----------
    tasks : list of (float, int)
        ``(seconds of one replication, replications)`` per group of settings
        that share their paths.
    workers : int
        Workers that run replications at once.
    allow_long : bool
        Return the estimate instead of refusing.
    limit : float
        Seconds.
    basis : str
        What the seconds rest on, for the message (the static model or a pilot).

    Returns
    -------
    float
        Seconds: the work shared by the workers, but never less than the
        longest replication (one replication runs on one worker).
    """
    total = math.fsum(seconds * reps for seconds, reps in tasks)
    longest = max((seconds for seconds, reps in tasks if reps > 0), default=0.0)
    estimate = max(total / max(1, workers), longest)
    if estimate > limit and not allow_long:
        one = f"; one replication alone takes {format_duration(longest)}" if limit < longest < estimate else ""
        raise ConfigError(f"this run would take about {format_duration(estimate)} on {workers} worker(s){one} "
                          f"(estimated from {basis}), more than the "
                          f"limit of {format_duration(limit)}: lower n, reps or the grid, or pass --allow-long "
                          "(API: allow_long=True) if you mean it")
    return estimate


__all__ = ["FLOAT", "MAX_RUN_SECONDS", "MEMORY_FRACTION", "check_memory", "check_time", "format_bytes",
           "format_duration", "memory_budget", "physical_memory"]
