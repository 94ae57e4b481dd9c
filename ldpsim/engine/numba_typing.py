"""Numba types an inlined overload once per argument types, not at every call.

ldpsim's kernels are written once and specialised by records (models,
mechanisms, the zoo's parts, the lanes' vectors): most functions they call are
``@overload(..., inline="always")`` functions (:func:`ldpsim.engine.dispatch.by_record`,
:func:`ldpsim.engine.jit.dual`, the zoo's hooks, the lane dialect's operators).
Numba's typing of such a call (``_OverloadFunctionTemplate.generic``) runs the
implementation's whole front end and type inference every time the call is
typed, with no cache: at every call site, and again at every round of the
caller's type inference, for every argument type seen before. A kernel of
the mean model with the piecewise mechanism and HulC's paths spent 200 of its
234 s of compilation there (8 lanes, 2026-11-28); numba's own pull requests
6667 and 6856 ("Avoid recompiling inlined overload impl", not merged) saw 30-40%
in other projects.

:func:`install` remembers, per overload (its template class), the signature
that typing gave for each argument types, typing context and compiler flags,
and returns it when they recur. What numba keeps of the first typing (the
implementation's typed IR, which the ``inline_overloads`` pass copies into
each call site) lives on the same template class, so every later step finds
what it found before; the machine code is the same, which the kernel twins
and the committed results, reproduced byte for byte, test. Only ldpsim's own
overloads (and users' files loaded by ldpsim) are remembered: numba's and
other packages' are typed as numba types them. The sources read by the first
typing are remembered with it, so that the cache entry of every kernel that
inlines the overload records them (:mod:`ldpsim.engine.numba_cache`).
"""

from __future__ import annotations

from numba.core import targetconfig
from numba.core.typing import templates

from .numba_cache import USER_MODULE_PREFIX, note_files, note_function, recording

_original_generic = templates._OverloadFunctionTemplate.generic


def _ours(cls) -> bool:
    module = getattr(getattr(cls, "_overload_func", None), "__module__", None) or ""
    return module == "ldpsim" or module.startswith(("ldpsim.", USER_MODULE_PREFIX))


def _generic(self, args, kws):
    cls = type(self)
    note_function(cls._overload_func)  # the typer's code decides what compiles (ldpsim.engine.numba_cache)
    if self._inline.is_never_inline or not _ours(cls):
        return _original_generic(self, args, kws)
    memo = cls.__dict__.get("_ldpsim_typed")
    if memo is None:
        memo = {}
        cls._ldpsim_typed = memo
    key = (self.context, tuple(args), tuple(kws.items()), targetconfig.ConfigStack.top_or_none())
    try:
        sig, files = memo[key]
    except KeyError:
        with recording() as frame:  # the sources of the implementation, for every later kernel that inlines it
            sig = _original_generic(self, args, kws)  # a typing error propagates, and is not remembered
        memo[key] = sig, frozenset(frame.files)
        return sig
    note_files(files)
    return sig


def install() -> None:
    """Remember the typing of ldpsim's inlined overloads, as the module docstring says (idempotent)."""
    if getattr(templates._OverloadFunctionTemplate.generic, "__ldpsim__", False):
        return
    _generic.__ldpsim__ = True
    templates._OverloadFunctionTemplate.generic = _generic


__all__ = ["install"]
