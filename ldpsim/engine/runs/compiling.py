"""The kernels a run compiles: listed before any is compiled, then compiled on all cores.

A study's :meth:`~ldpsim.studies.base.Study.warm_up` calls each kernel a run
needs once, on a tiny input. :func:`plan` runs its units with numba's
dispatchers intercepted: a call from Python to a kernel is recorded with its
argument types and whether it is fresh in the cache
(:func:`ldpsim.engine.dialect.numba_cache.cached`), and skipped (its outputs stay as
the wrapper allocated them) unless it is compiled in this process already.
The result lists every kernel the run will call and whether numba must
compile it, before a second of compilation and without loading a kernel
(``python -m ldpsim kernels CONFIG``).

:func:`compile_kernels` then compiles the kernels that are missing, each in a
process of its own, so that a run that needs several compiles them side by
side on the cores it may use (numba compiles one function at a time in a
process: its compiler holds a lock). Each worker writes its kernel into the
shared cache; the run's workers (or this process) load them from there. A
kernel that a worker cannot rebuild from its name and argument types (a
user's model, whose classes live in a file this process loaded) is compiled
here, as is everything when only one core may be used. A unit of the
warm-up that did not complete under the plan (its wrapper needed a skipped
kernel's result) is said so, and run as it is after the plan: what it calls
is compiled then.
"""

from __future__ import annotations

import contextlib
import importlib
import pickle
import time
from dataclasses import dataclass, field

from ..dialect.jit import DISABLED
from ..dialect.numba_cache import USER_MODULE_PREFIX


@dataclass
class Kernel:
    """One kernel a run calls from Python: its dispatcher, argument types and whether it must be compiled."""

    dispatcher: object
    argtypes: tuple
    cached: bool

    @property
    def name(self) -> str:
        func = self.dispatcher.py_func
        return f"{func.__module__.removeprefix('ldpsim.')}.{func.__qualname__}"

    def describe(self) -> dict:
        """``{kernel, record, lanes, parts}``: what the argument types specialise it on, in words."""
        return describe_types(self.argtypes) | {"kernel": self.name}


@dataclass
class KernelPlan:
    """The kernels of a run (in the order of first call) and the warm-up units the plan could not finish."""

    kernels: list = field(default_factory=list)
    unfinished: list = field(default_factory=list)
    problem: str | None = None

    @property
    def complete(self) -> bool:
        """Whether every unit of the warm-up ran to its end under the plan (every kernel is listed)."""
        return not self.unfinished

    @property
    def missing(self) -> list:
        """The kernels that numba must compile."""
        return [k for k in self.kernels if not k.cached]


def _bind_types(disp, args, kwargs) -> tuple:
    """The argument types numba's dispatcher would compile ``disp(*args, **kwargs)`` for."""
    from numba.core import types

    if kwargs or len(args) < len(disp._compiler.pysig.parameters):
        bound = disp._compiler.pysig.bind(*args, **kwargs)
        out = []
        for name, param in disp._compiler.pysig.parameters.items():
            if name in bound.arguments:
                out.append(disp.typeof_pyval(bound.arguments[name]))
            else:
                out.append(types.Omitted(param.default))
        return tuple(out)
    return tuple(disp.typeof_pyval(a) for a in args)


@contextlib.contextmanager
def _intercepted(found: list, seen: set):
    """Numba's dispatchers, while the block runs: compiled or cached kernels run, the others are recorded."""
    from numba.core.dispatcher import Dispatcher

    from ..dialect.numba_cache import cached

    call = Dispatcher.__call__  # (numba's own, inherited from its C base: restored by deleting ours)

    def planned(self, *args, **kwargs):
        argtypes = _bind_types(self, args, kwargs)
        key = (id(self), argtypes)
        loaded = argtypes in self.overloads
        if key not in seen:
            seen.add(key)
            found.append(Kernel(self, argtypes, loaded or cached(self, argtypes)))
        if loaded:  # compiled in this process: it runs, and what follows in the warm-up is listed too
            return call(self, *args, **kwargs)
        return None  # skipped, cached or not: the plan loads nothing (its outputs are not used)

    Dispatcher.__call__ = planned
    try:
        yield
    finally:
        del Dispatcher.__call__  # numba's own call again


def plan(study, config, lanes=None) -> KernelPlan:
    """The kernels a run of ``config`` calls, and which of them numba must compile (nothing is compiled)."""
    result = KernelPlan()
    if DISABLED:
        return result
    seen: set = set()
    with _intercepted(result.kernels, seen):
        for unit in study.warm_up_units(config, lanes):
            try:
                unit()
            except Exception as exc:  # noqa: BLE001  (a wrapper that needed a skipped kernel's result)
                result.unfinished.append(unit)
                result.problem = result.problem or f"{type(exc).__name__}: {exc}"
    return result


def _locate(disp):
    """``(module, qualname)`` that name ``disp`` in another process, or ``None`` (a user's file, a closure)."""
    func = disp.py_func
    module, name = func.__module__, func.__qualname__
    if not module.startswith("ldpsim.") or "<locals>" in name:
        return None
    try:
        obj = importlib.import_module(module)
        for part in name.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    return (module, name) if obj is disp else None


def _compile_one(module: str, qualname: str, argtypes: bytes) -> float:
    """In a worker: compile ``module.qualname`` for the pickled argument types into the cache; the seconds taken."""
    import ldpsim  # noqa: F401  (fixes numba's cache folder and its hooks before numba compiles)

    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    tic = time.perf_counter()
    obj.compile(pickle.loads(argtypes))
    return time.perf_counter() - tic


def _portable(kernel: Kernel):
    """The picklable task that compiles ``kernel`` in another process, or ``None``."""
    where = _locate(kernel.dispatcher)
    if where is None:
        return None
    try:
        data = pickle.dumps(kernel.argtypes)
        pickle.loads(data)
    except Exception:  # noqa: BLE001  (types of classes another process cannot import)
        return None
    if USER_MODULE_PREFIX.encode() in data:
        # a class of a user's file loaded by path: it unpickles here, where the file is loaded, not in a worker
        return None
    return (*where, data)


def compile_kernels(kernels, workers: int) -> None:
    """Compile ``kernels`` into the cache: side by side in ``workers`` processes where there are two or more."""
    kernels = list(kernels)
    tasks = [(k, _portable(k)) for k in kernels]
    remote = [task for k, task in tasks if task is not None]
    here = [k for k, task in tasks if task is None]
    workers = min(workers, len(remote))
    if workers >= 2:
        from joblib import Parallel, delayed

        # loky: the executor is kept, so that a run's workers are these processes, its kernels loaded
        Parallel(n_jobs=workers, backend="loky")(delayed(_compile_one)(*task) for task in remote)
    else:
        here = kernels
    for kernel in here:
        kernel.dispatcher.compile(kernel.argtypes)


#: Modules whose records are the kernels' machinery (generators, lanes, streams, the zoo's state), not what they model.
_MACHINERY = ("ldpsim.engine.dialect.", "ldpsim.recursion.", "ldpsim.inference.")


def _record_text(ty) -> str:
    from numba.core import types

    inner = [_record_text(t) for t in ty.types if isinstance(t, types.BaseNamedTuple)]
    return ty.instance_class.__name__ + (f"({', '.join(inner)})" if inner else "")


def prepare(study, config, lanes=None, workers: int = 1, log=None) -> KernelPlan:
    """Have every kernel of a run compiled (on ``workers`` cores) or in the cache, before its replications start.

    ``log`` gets a line when the compilation takes a while (:func:`ldpsim.engine.dialect.interrupt.while_compiling`);
    without it, the compilation runs in this thread, unsaid.
    """
    from ..dialect import interrupt

    def run(func, what):
        if log is None:
            func()
        else:  # (in a thread: Ctrl-C and SIGTERM stop it, and a long compile is said)
            interrupt.while_compiling(func, log, what)

    found = plan(study, config, lanes)
    missing = found.missing
    if missing:
        cores = min(workers, len(missing))
        what = (f"the {len(missing)} kernels of this run" + (f" on {cores} cores" if cores > 1 else "")
                if len(missing) > 1 else "the kernel of this run")
        # the checks left for this step (a Monte Carlo truth) run here while the workers compile
        run(lambda: side_by_side(lambda: compile_kernels(missing, workers), lambda: study.settle(config)), what)
    else:
        run(lambda: study.settle(config), "the Monte Carlo truths of this run")
    if found.unfinished:  # what the plan could not list compiles as those units call it
        run(lambda: [unit() for unit in found.unfinished], "the kernels of this run")
    return found


def side_by_side(first, second):
    """``first()`` in a thread while ``second()`` runs in this one; ``second``'s error is raised at once.

    ``first`` (the workers' compilation) is waited for only when ``second``
    succeeds; its thread is a daemon, left to the process's exit otherwise.
    """
    import threading

    box = {}

    def target():
        try:
            first()
        except BaseException as exc:  # handed to this thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="ldpsim-compile-workers", daemon=True)
    thread.start()
    second()
    thread.join()
    if "error" in box:
        raise box["error"]


def describe_types(argtypes) -> dict:
    """What a kernel's argument types say in words: its model record, its lanes and the zoo's parts it runs."""
    from numba.core import types

    from ..dialect.lanes import LaneArrayType, LaneVector

    record, lanes, parts = None, 1, []
    seen: set = set()

    def walk(ty):
        nonlocal lanes, record
        if id(ty) in seen:
            return
        seen.add(id(ty))
        if isinstance(ty, (LaneArrayType, LaneVector)):
            lanes = max(lanes, ty.count)
        cls = getattr(ty, "instance_class", None)
        if isinstance(ty, types.BaseNamedTuple) and isinstance(cls, type):
            if cls.__name__ == "ZooPaths" and cls.__module__.startswith("ldpsim."):
                parts.extend(f for f, t in zip(cls._fields, ty.types)
                             if f not in ("dim", "active") and not isinstance(t, (types.NoneType, types.Omitted)))
            elif cls.__dict__.get("__ldpsim_method_state__"):  # a user's method's state (register_update marks it)
                parts.append(f"user {cls.__qualname__}")
                return
            elif record is None and not cls.__module__.startswith(_MACHINERY):
                record = _record_text(ty)
                return
        for attr in ("types", "dtype", "array"):
            inner = getattr(ty, attr, None)
            if isinstance(inner, types.Type):
                walk(inner)
            elif isinstance(inner, tuple):
                for item in inner:
                    if isinstance(item, types.Type):
                        walk(item)

    for ty in argtypes:
        walk(ty)
    return {"record": record or "-", "lanes": lanes, "parts": ", ".join(parts) or "-"}


def signature_text(argtypes) -> str:
    """numba's argument types, one line."""
    return ", ".join(str(t) for t in argtypes)


__all__ = ["Kernel", "KernelPlan", "compile_kernels", "describe_types", "plan", "prepare"]
