"""The run-time estimate from a measured pilot of the run's own kernels.

A study's static cost model (:meth:`~ldpsim.studies.base.Study.seconds`:
its steps times a per-step cost measured once on a laptop) has the right
shape - how a replication's cost grows with ``n``, ``T``, the dimension - but
its constants are another machine's and another version's: quantile runs were
estimated 15-23 times too long, DP-SGD 6 times, the method zoo's 14-49 times
too short. So the estimate is measured: for each class of settings that run
the same kernels (they differ only in their size), the study's own
replications run on a smaller copy of the first setting
(:meth:`~ldpsim.studies.base.Study.pilot_setting`), the size grown until a
lanes group of them takes :data:`MIN_PILOT_SECONDS`; that size and a quarter
of it are timed, and a line through the two (a replication's intervals cost
about the same at any size) gives a setting's seconds per replication at its
own static cost. The first lanes group of a setting is timed apart, since it
may do more (the zoo times each of its methods there). The workers share the
replications as far as the cores that other processes used during the pilot
allow (:class:`OtherLoad`).

:func:`check_run_time` refuses a run estimated beyond a week, before its
outputs are touched; it runs a pilot only where the decision needs one (the
static model's errors are within a factor 50 both ways), so that short runs
do not pay for it. :func:`estimate_seconds` always runs it
(``scripts/pilot_accuracy.py`` compares it with the real wall time).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

from . import compiling
from .resources import MAX_RUN_SECONDS, check_time

#: The clock the pilot reads (a test may replace it).
clock = time.perf_counter
#: A timed pilot group runs at least this long: the timer's resolution and a busy machine's noise are far below it.
MIN_PILOT_SECONDS = 0.05
#: The first pilot of a class does about this many of the study's steps.
FIRST_STEPS = 20_000
#: Timings of the pilot's final size, the least taken.
REPEATS = 3
#: At most this many classes are piloted, the costliest by the static model; the others take the largest
#: measured ratio of pilot to static cost.
MAX_PILOTS = 8
#: The static model's error, measured on the committed configs, is within this factor either way (issue 32: 23
#: times too high for the quantile, 49 times too low for the zoo): beyond it the decision needs no pilot.
STATIC_ERROR = 100.0


@dataclass(frozen=True)
class Pilot:
    """What a class's pilot measured, for lanes groups of ``width`` replications.

    ``fixed`` and ``slope``: a group's seconds (after the first) are ``fixed +
    slope x static`` for a setting whose static cost per replication is
    ``static`` (fitted at two sizes: a replication's intervals, drawn in Python
    from its state, cost about the same at any ``n``); ``first``: the first
    group's seconds beyond the others at the pilot's size ``static_first``.
    """

    width: int
    fixed: float
    slope: float
    first: float
    static_first: float

    def per_replication(self, static: float) -> float:
        return (self.fixed + self.slope * static) / self.width

    def first_extra(self, static: float) -> float:
        """Seconds the first group of a setting of static cost ``static`` takes beyond the others."""
        return self.first * static / self.static_first


def _groups(study, settings) -> list[list]:
    """Settings that run together (:meth:`~ldpsim.studies.base.Study.group_key`), as the driver groups them."""
    groups: dict = {}
    for i, s in enumerate(settings):
        key = study.group_key(s)
        groups.setdefault(("alone", i) if key is None else ("group", key), []).append(s)
    return list(groups.values())


def _class_key(study, members) -> tuple:
    """Groups that differ only in their size share a class (and a pilot)."""
    return tuple(tuple((k, v) for k, v in sorted(s.as_dict().items()) if k not in study.size_keys) for s in members)


def _static(study, members, options) -> float:
    """The static model's seconds of one replication of a group (its shared path counted once)."""
    return max(study.seconds(s, options) for s in members)


def _run(study, members, options, seed, start, stop, lanes) -> float:
    tic = clock()
    with np.errstate(all="ignore"):
        if len(members) == 1:
            study.run_chunk(members[0], options, seed, start, stop, lanes=lanes)
        else:
            study.run_group(members, options, seed, start, stop, lanes=lanes)
    return clock() - tic


def pilot(study, members, options, seed, lanes=None) -> Pilot | None:
    """Time the replications of a group of settings on smaller copies of it; ``None`` if the study has no pilot.

    The copy grows (a factor up to 64 a time) until a lanes group takes
    :data:`MIN_PILOT_SECONDS`, or is the group itself; then that size and one
    of a quarter of its steps are timed (the least of :data:`REPEATS`), and a
    line through the two gives a group's seconds at any size.
    """
    full = study.steps(members[0])
    width = study.lane_width(members[0], options, lanes)
    fraction = min(1.0, FIRST_STEPS / max(full, 1))
    warmed = False

    def copies_at(f):
        copies = [study.pilot_setting(s, options, f) for s in members]
        return None if any(c is None for c in copies) else copies

    while True:
        copies = copies_at(fraction)
        if copies is None:
            return None
        if not warmed:  # the first group may compile what only it runs (the zoo's timed kernels): not timed
            _run(study, copies, options, seed, 0, width, lanes)
            warmed = True
        rest = _run(study, copies, options, seed, width, 2 * width, lanes)
        if rest >= MIN_PILOT_SECONDS or fraction >= 1.0:
            break
        fraction = min(1.0, fraction * min(64.0, max(2.0, 1.5 * MIN_PILOT_SECONDS / max(rest, 1e-6))))

    def timed(copies, start):  # the least of a few timings: a busy machine only ever adds to them
        return min(_run(study, copies, options, seed, start, start + width, lanes) for _ in range(REPEATS))

    big, small = copies, copies_at(fraction / 4.0)
    x_big, x_small = _static(study, big, options), _static(study, small, options)
    y_big, y_small = timed(big, width), timed(small, width)
    slope = (y_big - y_small) / (x_big - x_small) if x_big > x_small and y_big > y_small else y_big / x_big
    fixed = max(y_big - slope * x_big, 0.0)
    first = max(_run(study, big, options, seed, 0, width, lanes) - y_big, 0.0)  # (the zoo's: minutes at OB's size)
    return Pilot(width, fixed, slope, first, x_big)


def measured_tasks(study, settings, options, reps, seed, lanes=None) -> tuple[list[tuple[float, int]], str, float | None]:
    """``(seconds of one replication, replications)`` per group of settings, from pilots; what they rest on; and
    the cores other processes kept busy meanwhile (:class:`OtherLoad`)."""
    groups = _groups(study, settings)
    classes: dict = {}
    for members in groups:
        classes.setdefault(_class_key(study, members), []).append(members)
    # the costliest classes by the static model are piloted
    order = sorted(classes, key=lambda c: -sum(_static(study, g, options) for g in classes[c]))
    pilots = {}
    with OtherLoad() as load:
        for key in order[:MAX_PILOTS]:
            try:
                pilots[key] = pilot(study, classes[key][0], options, seed, lanes)
            except Exception:  # noqa: BLE001 - a copy the study cannot run: that class keeps the static model
                pilots[key] = None
    measured = [p for p in pilots.values() if p is not None]
    fallback = max(measured, key=lambda p: p.slope) if measured else None
    tasks, basis = [], set()
    for key, members_list in classes.items():
        p = pilots.get(key) or fallback
        for members in members_list:
            static = _static(study, members, options)
            if p is None:
                tasks.append((static, reps))
                basis.add("static")
                continue
            first = p.first_extra(static) if reps else 0.0
            tasks.append((p.per_replication(static) + first / max(reps, 1), reps))
            basis.add("pilot")
    text = ("a pilot of its own kernels on this machine" if basis == {"pilot"} else
            "its steps and their cost measured on a 2-core laptop" if basis == {"static"} else
            "a pilot of its own kernels on this machine where the study has one, its steps elsewhere")
    return tasks, text, load.cores


def _cpu_times() -> tuple[float, float] | None:
    """``(busy, total)`` CPU time of the whole machine so far, in clock ticks (Linux's /proc/stat; else None)."""
    try:
        with open("/proc/stat") as fh:
            fields = [float(x) for x in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)  # idle and iowait
    return sum(fields) - idle, sum(fields)


class OtherLoad:
    """How many cores other processes kept busy while the pilot ran: measured, not the lagging load average.

    The machine's busy share over the pilot's wall time (/proc/stat), less
    this process's own CPU time: another run or another user on a 2-core
    machine leaves two workers about one core. ``None`` where it cannot be read.
    """

    def __enter__(self):
        self.machine, self.own, self.wall = _cpu_times(), time.process_time(), time.perf_counter()
        self.cores = None
        return self

    def __exit__(self, *exc):
        after = _cpu_times()
        wall = time.perf_counter() - self.wall
        if self.machine is None or after is None or wall <= 0.0 or after[1] <= self.machine[1]:
            return False
        cpus = os.cpu_count() or 1
        busy = (after[0] - self.machine[0]) / (after[1] - self.machine[1]) * cpus  # cores busy on average
        self.cores = max(0.0, busy - (time.process_time() - self.own) / wall)
        return False


def available_workers(workers: int, others: float | None) -> int:
    """The workers that run at once on this machine: ``workers``, fewer if other processes keep ``others`` cores busy."""
    if others is None:
        return workers
    return int(max(1, min(workers, round((os.cpu_count() or 1) - others))))


_STARTUP = """
import pickle, sys, time
tic = time.perf_counter()
config, lanes = pickle.load(sys.stdin.buffer)  # (imports ldpsim, as a worker unpickling its task does)
config.study.warm_up(config, lanes)
print(time.perf_counter() - tic)
"""


def startup_seconds(config, workers: int, lanes=None) -> float:
    """Seconds a worker process takes before its first replication: ldpsim imported, the kernels loaded, measured.

    0 for one worker (the replications run in this process). A fresh
    interpreter does what a loky worker does first; its wall time (the
    workers start side by side) is the run's startup.
    """
    if workers <= 1:
        return 0.0
    import pickle
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _STARTUP], input=pickle.dumps((config, lanes)), capture_output=True,
                          timeout=3600)
    try:
        return float(done.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):  # (a worker that cannot start fails the run itself, with its own message)
        return 0.0


def estimate_seconds(study, config, workers: int = 1, lanes=None) -> float:
    """The pilot's estimate of the run's wall time on ``workers`` local workers (it compiles the kernels first).

    Worker startup (:func:`startup_seconds`) plus the pilot's replications
    shared by the workers that other processes' use of the cores leaves (:class:`OtherLoad`).
    """
    compiling.prepare(study, config, lanes, workers)
    tasks, _, others = measured_tasks(study, config.settings, config.options, config.reps, config.seed, lanes)
    shared = available_workers(workers, others)
    return startup_seconds(config, workers, lanes) + check_time(tasks, shared, allow_long=True)


def static_tasks(study, settings, options, reps) -> list[tuple[float, int]]:
    """The static model's ``(seconds of one replication, replications)`` per group of settings."""
    return [(_static(study, members, options), reps) for members in _groups(study, settings)]


def check_run_time(study, config, workers: int, allow_long: bool = False, lanes=None,
                   limit: float = MAX_RUN_SECONDS, log=None) -> float:
    """Refuse a run estimated beyond ``limit`` (one line), before its outputs are touched; return the estimate (s).

    The static model decides where it is more than :data:`STATIC_ERROR` from
    the limit either way; in between the kernels are compiled and piloted.
    """
    static = check_time(static_tasks(study, config.settings, config.options, config.reps), workers, allow_long=True)
    if allow_long or static * STATIC_ERROR < limit:
        return static
    if static > STATIC_ERROR * limit:
        return check_time(static_tasks(study, config.settings, config.options, config.reps), workers, limit=limit)
    compiling.prepare(study, config, lanes, workers, log)  # the missing kernels side by side on the workers' cores
    tasks, basis, others = measured_tasks(study, config.settings, config.options, config.reps, config.seed, lanes)
    return check_time(tasks, available_workers(workers, others), limit=limit, basis=basis)


__all__ = ["MIN_PILOT_SECONDS", "Pilot", "check_run_time", "estimate_seconds", "measured_tasks", "pilot",
           "static_tasks"]
