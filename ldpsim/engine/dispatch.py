"""Functions whose implementation is chosen by the type of a parameter record.

Models, mechanisms and covariate laws hand their constants to the kernels
as ``typing.NamedTuple`` records. A function made with :func:`by_record`
picks its implementation from the type of its first argument, both in
plain Python (a dictionary lookup: the kernels' Python twins call it) and
inside jitted code, where numba resolves it at compile time and inlines it,
so one generic loop serves every model and mechanism with no runtime branch.
"""

from __future__ import annotations

import functools
import inspect

from numba.core import types
from numba.extending import overload

from .jit import OVERLOAD_OPTIONS


def by_record(stub):
    """Turn ``stub(record, ...)`` into a function dispatched on ``type(record)``.

    Parameters
    ----------
    stub : callable
        Documents the signature; its body is never run. Implementations
        registered with ``.register(RecordClass)`` must use the same
        parameter names (numba checks them).

    Returns
    -------
    callable
        Callable from Python and from jitted code, with a ``register``
        attribute: ``@f.register(RecordClass)`` registers the decorated
        plain-Python function for records of that class and returns it
        unchanged.
    """
    registry: dict[type, object] = {}
    names = list(inspect.signature(stub).parameters)

    @functools.wraps(stub)
    def call(record, *args):
        try:
            impl = registry[type(record)]
        except KeyError:
            raise TypeError(f"{stub.__name__} has no implementation for {type(record).__name__} records") from None
        return impl(record, *args)

    def register(record_cls):
        def decorate(func):
            if list(inspect.signature(func).parameters) != names:
                raise TypeError(f"{func.__name__} must take ({', '.join(names)}) to implement {stub.__name__}")
            registry[record_cls] = func

            def choose(record):
                if isinstance(record, types.BaseNamedTuple) and record.instance_class is record_cls:
                    return func
                return None

            # numba reads the typing signature through __wrapped__, i.e. the stub's
            @functools.wraps(stub)
            def select(*args):
                return choose(args[0])

            # inlined in numba's IR: a call would pay reference counting on the generator
            overload(call, jit_options=OVERLOAD_OPTIONS, inline="always")(select)
            return func

        return decorate

    call.register = register
    call.registry = registry  # read-only use: which record classes have an implementation
    return call
