"""Users' interval methods inside the coverage kernels: their states updated in the main path's own pass.

The kernels take ``users``: ``None`` (no code is compiled for them, and a run
without users' methods compiles the kernels it always compiled) or a chain of
the methods' state records, ``(state_0, (state_1, ... (state_k, None)))``, so
that records of different types are unrolled when the kernel compiles. After
each step of the main path :func:`users_step` calls each record's registered
update (:func:`ldpsim.inference.user_methods.method_update`) with the step's
index and iterate; the updates read the iterate only, so they add arithmetic
to the main path's pass, not a pass.
"""

from __future__ import annotations

import numba
from numba.core import types
from numba.extending import overload

from ..engine.dialect.jit import BORROW_OPTIONS, DISABLED, KERNEL_ONLY_OPTIONS, OVERLOAD_OPTIONS
from ..inference.user_methods import method_update


def chain(states):
    """The kernels' ``users`` argument of the state records ``states`` (``None`` for none)."""
    out = None
    for state in reversed(list(states)):
        out = (state, out)
    return out


def _none(value) -> bool:
    return value is None or isinstance(value, (types.NoneType, types.Omitted))


def _step(users, i, theta):
    """:func:`users_step`'s body, inlined: each record's update, unrolled over the chain."""
    if users is not None:
        method_update(users[0], i, theta)
        _step(users[1], i, theta)


@overload(_step, jit_options=OVERLOAD_OPTIONS, inline="always")
def _step_overload(users, i, theta):
    if _none(users):
        return lambda users, i, theta: None

    def impl(users, i, theta):
        method_update(users[0], i, theta)
        _step(users[1], i, theta)

    return impl


def users_step(users, i, theta):
    """After step ``i`` of the main path (iterate ``theta``): each user's method's update."""
    _step(users, i, theta)


if not DISABLED:  # (without numba the kernels call the plain-Python function above)
    # A function compiled without numba's runtime, as the zoo's hooks are (ldpsim.engine.dialect.jit.BORROW_OPTIONS):
    # the updates read the records' arrays, and inlined into the kernel's IR each such read would cost an atomic
    # increment and decrement of a reference count per step. It is marked for LLVM to inline (forceinline): at one lane
    # LLVM's own heuristics left it a call, with the records' arrays counted around it, and the step took 2.4 times as
    # long.
    users_step = numba.njit(**BORROW_OPTIONS, **KERNEL_ONLY_OPTIONS, forceinline=True)(users_step)


__all__ = ["chain", "users_step"]
