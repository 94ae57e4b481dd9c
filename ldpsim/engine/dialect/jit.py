"""Numba options in one place.

Every kernel in ldpsim is compiled with :data:`JIT_OPTIONS` through :func:`jit`.

Numba's on-disk cache lives in ``~/.cache/ldpsim/numba`` (``$XDG_CACHE_HOME``
is honoured), unless the user set ``NUMBA_CACHE_DIR`` themselves. Numba
itself only notices edits to the file that holds the cached function, not to
the functions it calls from other modules (a model's gradient is called by
the recursion kernels in ``recursion/kernels.py``): each entry carries the
sources it was compiled from (:mod:`ldpsim.engine.dialect.numba_cache`), so that an
edit recompiles the kernels that read the edited file, and only those. This
must run before numba is imported, which is why ``ldpsim/__init__.py``
imports this module first.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parents[2]  # ldpsim/


def source_hash(names=None) -> str:
    """Hash of the package's Python sources (or of the files or folders ``names``, relative to ``ldpsim/``)."""
    roots = [_PACKAGE_DIR / name for name in names] if names else [_PACKAGE_DIR]
    paths = sorted({p for root in roots for p in ([root] if root.is_file() else root.rglob("*.py"))})
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.relative_to(_PACKAGE_DIR).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "ldpsim" / "numba"


if "NUMBA_CACHE_DIR" not in os.environ:
    os.environ["NUMBA_CACHE_DIR"] = str(_default_cache_dir())
    if "numba" in sys.modules:  # imported before us: numba read its config already
        import numba.core.config as _numba_config

        _numba_config.CACHE_DIR = os.environ["NUMBA_CACHE_DIR"]

import numba  # noqa: E402  (after the cache directory is fixed)
from numba.extending import overload  # noqa: E402

from . import numba_cache, numba_typing  # noqa: E402

numba_cache.install()  # cache keys that know users' files (ldpsim.engine.dialect.numba_cache)
numba_typing.install()  # an inlined overload typed once per argument types (ldpsim.engine.dialect.numba_typing)

#: Whether numba compiles nothing (``NUMBA_DISABLE_JIT=1``): every kernel then runs as plain Python,
#: drawing from numpy's ``Generator`` itself (:func:`ldpsim.engine.dialect.rng.kernel_rng`), the same numbers.
DISABLED = bool(numba.config.DISABLE_JIT)

#: Options of every ldpsim kernel: cached on disk, GIL released (thread
#: backends run kernels in parallel), numpy's error model (division by zero
#: gives inf/nan instead of raising, and spares the zero checks).
JIT_OPTIONS = {"cache": True, "nogil": True, "error_model": "numpy"}


#: Options of helpers called from kernels with a ``Generator`` argument. They
#: are inlined in numba's IR: an ordinary call passes the generator with a
#: reference-count increment and decrement (atomic operations) that cost
#: more than the random draw itself.
INLINE_OPTIONS = {**JIT_OPTIONS, "inline": "always"}


#: Options of functions that a kernel calls at every step with records of arrays (the method zoo's
#: steps, :mod:`ldpsim.recursion.zoo`). Compiled without numba's runtime they only borrow the
#: arrays, which their caller holds: reading a record's array otherwise costs an atomic increment
#: and decrement of its reference count, and numba's pruning of those pairs fails once a branch
#: lies between them (a hook that reads 14 arrays ran at 14x its random numbers' cost). Such a
#: function cannot allocate.
BORROW_OPTIONS = {**JIT_OPTIONS, "_nrt": False}

#: Added for functions that only kernels call: no Python or C wrapper is compiled (that of a zoo hook,
#: unboxing every array of the zoo's records, cost more to compile than the hook). A call from Python is
#: refused (:mod:`ldpsim.engine.dialect.numba_typing`); its ``.py_func`` is the plain-Python original.
KERNEL_ONLY_OPTIONS = {"no_cpython_wrapper": True, "no_cfunc_wrapper": True}

#: Options of the implementations of ldpsim's numba overloads (:func:`dual`, ``by_record``, the lane dialect,
#: the zoo's hooks): only jitted code calls them, so they are compiled without wrappers.
OVERLOAD_OPTIONS = {**JIT_OPTIONS, **KERNEL_ONLY_OPTIONS}


def jit(func=None, *, inline=False, borrow=False, kernel_only=False):
    """Compile ``func`` with :data:`JIT_OPTIONS` (or :data:`INLINE_OPTIONS`, :data:`BORROW_OPTIONS`).

    Parameters
    ----------
    func : callable
        A module-level function in numba's nopython subset.
    inline : bool
        Inline the function into its jitted callers (use for helpers that
        take the generator).
    borrow : bool
        Compile without numba's runtime (for functions called at every
        step with records of arrays that they only read and write).
    kernel_only : bool
        Only jitted code calls it (:data:`KERNEL_ONLY_OPTIONS`).

    Returns
    -------
    numba.core.registry.CPUDispatcher
        The dispatcher; ``.py_func`` is the plain-Python original. With
        :data:`DISABLED`, ``func`` itself (its ``.py_func`` is itself).
    """
    if func is None:
        return lambda f: jit(f, inline=inline, borrow=borrow, kernel_only=kernel_only)
    if DISABLED:
        # NUMBA_DISABLE_JIT=1 (how numba code is debugged) makes njit return the function itself;
        # twins and the generator's slow paths reach the Python original as .py_func either way
        func.py_func = func
        return func
    options = INLINE_OPTIONS if inline else BORROW_OPTIONS if borrow else JIT_OPTIONS
    return numba.njit(**(options | KERNEL_ONLY_OPTIONS if kernel_only else options))(func)


def dual(func=None, *, inline=False):
    """Make a plain function callable from jitted code as well, unchanged in Python.

    Python calls run ``func`` itself (so a kernel's Python twin is plain
    Python all the way down); inside jitted code numba compiles ``func``
    through an overload, as :func:`ldpsim.engine.dialect.dispatch.by_record` does
    for model records. The functions it calls must be ``dual`` too (or the
    draws of :mod:`ldpsim.engine.dialect.rng`). ``inline=True`` inlines it in numba's
    IR, for functions that take the generator (a call would reference-count
    it, which costs more than a draw); others are left to LLVM.
    """
    if func is None:
        return functools.partial(dual, inline=inline)

    @functools.wraps(func)  # numba reads the typing signature through __wrapped__
    def typer(*args):
        return func

    overload(func, jit_options=OVERLOAD_OPTIONS, inline="always" if inline else "never")(typer)
    func.py_func = func  # the plain original, as jit's dispatchers name it
    return func
