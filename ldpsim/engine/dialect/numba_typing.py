"""Numba's typing done once per argument types, and no machine code for what is only ever inlined.

ldpsim's kernels are written once and specialised by records (models,
mechanisms, the zoo's parts, the lanes' vectors): most functions they call are
``@overload(..., inline="always")`` functions (:func:`ldpsim.engine.dialect.dispatch.by_record`,
:func:`ldpsim.engine.dialect.jit.dual`, the zoo's hooks, the lane dialect's operators),
and every number they touch goes through numba's resolution of an operator.
Three costs of numba's compiler that such code multiplies, and what
:func:`install` does about each:

* **Typing an inlined overload.** ``_OverloadFunctionTemplate.generic`` runs
  the implementation's whole front end and type inference every time a call
  to it is typed, with no cache: at every call site, and again at every round
  of the caller's type inference. A kernel of the mean model with the
  piecewise mechanism and HulC's paths spent 200 of its 234 s of compilation
  there (8 lanes, 2026-11-28); numba's pull requests 6667 and 6856 ("Avoid
  recompiling inlined overload impl", not merged) saw 30-40% in other
  projects. The signature is remembered per overload, argument types, typing
  context and compiler flags (ldpsim's own overloads and users' files only).
* **Resolving a function or operator.** ``BaseFunction.get_call_type`` tries
  every template registered for, say, ``operator.add`` (dozens), formatting an
  error message for each that does not match, at every ``+`` of every
  function it compiles. The signature is remembered per function type,
  argument types, typing context and flags (a resolution that fails is not).
* **Machine code of an implementation that is only inlined.** numba compiles
  an ``inline="always"`` overload's implementation as a function of its own
  before inlining its IR (to check that it compiles), with a Python wrapper, a
  C wrapper and LLVM's code generation, none of which is ever used. ldpsim's
  are compiled to LLVM IR only, and not written to the cache. Such functions,
  and those made with ``jit(kernel_only=True)`` (no wrappers either), are kept
  out of their dispatcher's table of what Python may call: a call from Python
  is refused with a ``TypeError`` instead of crashing the process.

What numba keeps of the first typing (the typed IR that the
``inline_overloads`` pass copies into each call site, the implementation keys)
lives on the same objects, so every later step finds what it found before.
One IR now serves every inlining of its overload where numba typed a fresh
one each time, and numba names the variables it inlines after the IR's
function identity: two inlinings of one IR into one caller (a gradient that
inlines a helper, inlined on two paths) would redefine each other's names,
which numba's SSA check reports as a ``NumbaIRAssumptionWarning``. So each
inlining gets the IR under a new identity (``FunctionIdentity.derive``), as
numba's fresh IR had:
the machine code is the same, which the kernel twins and the committed
results, reproduced byte for byte, test. The sources read by the first typing
are remembered with it, so that the cache entry of every kernel that uses it
records them (:mod:`ldpsim.engine.dialect.numba_cache`).
"""

from __future__ import annotations

import copy

from numba.core import dispatcher, inline_closurecall, targetconfig
from numba.core.types import functions
from numba.core.typing import templates

from .numba_cache import USER_MODULE_PREFIX, note_files, note_function, recording

_original_generic = templates._OverloadFunctionTemplate.generic
_original_get_jit_decorator = templates._OverloadFunctionTemplate._get_jit_decorator
_original_call_type = functions.BaseFunction.get_call_type
_original_customize_flags = dispatcher._FunctionCompiler._customize_flags
_original_add_overload = dispatcher.Dispatcher.add_overload
_original_compile_for_args = dispatcher.Dispatcher._compile_for_args
_original_inline_ir = inline_closurecall.InlineWorker.inline_ir


def _ours(cls) -> bool:
    module = getattr(getattr(cls, "_overload_func", None), "__module__", None) or ""
    return module == "ldpsim" or module.startswith(("ldpsim.", USER_MODULE_PREFIX))


def _remembered(memo: dict, key, compute):
    """``compute()`` once per ``key`` in ``memo``; the sources it read are noted at every use."""
    try:
        sig, files = memo[key]
    except KeyError:
        with recording() as frame:  # the sources of what the typing compiled or inlined
            sig = compute()  # a typing error propagates, and is not remembered
        memo[key] = sig, frozenset(frame.files)
        return sig
    note_files(files)
    return sig


def _key(context, args, kws) -> tuple:
    return context, tuple(args), tuple(kws.items()), targetconfig.ConfigStack.top_or_none()


def _generic(self, args, kws):
    cls = type(self)
    note_function(cls._overload_func)  # the typer's code decides what compiles (ldpsim.engine.dialect.numba_cache)
    if self._inline.is_never_inline or not _ours(cls):
        return _original_generic(self, args, kws)
    if "_ldpsim_typed" not in cls.__dict__:  # (per template class: numba creates one per overload)
        cls._ldpsim_typed = {}
    return _remembered(cls._ldpsim_typed, _key(self.context, args, kws), lambda: _original_generic(self, args, kws))


#: ``id(function type) -> (the type, its memo)``: kept apart from the type, whose attributes numba pickles into
#: the cache with every signature that holds it; by identity, since each type object keeps its own implementation
#: keys (an equal type that was not asked would not have them).
_calls: dict = {}


def _call_type(self, context, args, kws):
    entry = _calls.get(id(self))
    if entry is None or entry[0] is not self:
        entry = _calls[id(self)] = (self, {})
    return _remembered(entry[1], _key(context, args, kws), lambda: _original_call_type(self, context, args, kws))


def _get_jit_decorator(self):
    jitter = _original_get_jit_decorator(self)
    if not (self._inline.is_always_inline and _ours(type(self))):
        return jitter

    def options(**given):
        decorate = jitter(**{k: v for k, v in given.items() if k != "cache"})  # nothing of it is kept

        def make(pyfunc):
            disp = decorate(pyfunc)
            disp._compiler._ldpsim_inlined = True  # (read by _customize_flags)
            return disp

        return make

    return options


def _customize_flags(self, flags):
    flags = _original_customize_flags(self, flags)
    if getattr(self, "_ldpsim_inlined", False):  # typed and lowered to LLVM IR, no wrappers, no machine code
        flags.no_compile = True
        flags.no_cpython_wrapper = True
        flags.no_cfunc_wrapper = True
    return flags


def _kernel_only(disp) -> bool:
    """Compiled without a Python wrapper: an inlined implementation, or ``jit(kernel_only=True)``."""
    return getattr(disp._compiler, "_ldpsim_inlined", False) or bool(disp.targetoptions.get("no_cpython_wrapper"))


def _add_overload(self, cres):
    if _kernel_only(self):  # nothing a call from Python could run: kept out of the dispatcher's table
        self.overloads[tuple(cres.signature.args)] = cres
        return
    _original_add_overload(self, cres)


def _compile_for_args(self, *args, **kws):
    if _kernel_only(self):  # (a call of its machine code without the wrapper would crash the process)
        raise TypeError(f"{self.py_func.__qualname__} is compiled for ldpsim's kernels only, without a Python "
                        "wrapper: call its .py_func from Python")
    return _original_compile_for_args(self, *args, **kws)


def _inline_ir(self, caller_ir, block, i, callee_ir, callee_freevars, arg_typs=None):
    callee = copy.copy(callee_ir)  # the object alone: numba's inline_ir copies the blocks before it mutates them
    callee.func_id = callee_ir.func_id.derive()  # the inlined variables' names: unique per inlining
    return _original_inline_ir(self, caller_ir, block, i, callee, callee_freevars, arg_typs)


def install() -> None:
    """Make numba's typing and its inlined implementations as the module docstring says (idempotent)."""
    if getattr(templates._OverloadFunctionTemplate.generic, "__ldpsim__", False):
        return
    _generic.__ldpsim__ = True
    templates._OverloadFunctionTemplate.generic = _generic
    templates._OverloadFunctionTemplate._get_jit_decorator = _get_jit_decorator
    functions.BaseFunction.get_call_type = _call_type
    dispatcher._FunctionCompiler._customize_flags = _customize_flags
    dispatcher.Dispatcher.add_overload = _add_overload
    dispatcher.Dispatcher._compile_for_args = _compile_for_args
    inline_closurecall.InlineWorker.inline_ir = _inline_ir


__all__ = ["install"]
