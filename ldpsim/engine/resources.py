"""What a run can afford: this machine's memory, and estimates checked before any work.

A study estimates the memory of one replication
(:meth:`~ldpsim.studies.base.Study.memory`) and of what the driver keeps per
replication until the summary (its chunk arrays,
:meth:`~ldpsim.studies.base.Study.chunk_shapes`). :func:`check_memory` refuses,
with one line naming the keys, a setting whose replication alone would take
more than :data:`MEMORY_FRACTION` of this machine's memory; the run checks the
same for all its workers at once before it starts.
"""

from __future__ import annotations

import math
import os

from .errors import ConfigError

#: A run may plan to use at most this fraction of the machine's physical memory.
MEMORY_FRACTION = 0.5
#: Bytes of one float64.
FLOAT = 8


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
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if abs(count) < 1024 or unit == "EiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
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


__all__ = ["FLOAT", "MEMORY_FRACTION", "check_memory", "format_bytes", "memory_budget", "physical_memory"]
