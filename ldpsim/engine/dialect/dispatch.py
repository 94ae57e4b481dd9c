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


def by_record(stub=None, *, default=None):
    """Turn ``stub(record, ...)`` into a function dispatched on ``type(record)``.

    Parameters
    ----------
    stub : callable
        Documents the signature; its body is never run. Implementations
        registered with ``.register(RecordClass)`` must use the same
        parameter names (numba checks them).
    default : callable, optional
        The implementation for records of a class nobody registered (with
        the stub's parameters): ``@by_record(default=f)``. Without it such a
        record is a ``TypeError`` in Python and a typing error in numba.

    Returns
    -------
    callable
        Callable from Python and from jitted code, with a ``register``
        attribute: ``@f.register(RecordClass)`` registers the decorated
        plain-Python function for records of that class and returns it
        unchanged.
    """
    if stub is None:  # @by_record(default=...)
        return functools.partial(by_record, default=default)
    registry: dict[type, object] = {}
    names = list(inspect.signature(stub).parameters)

    @functools.wraps(stub)
    def call(record, *args):
        impl = registry.get(type(record), default)
        if impl is None:
            raise TypeError(f"{stub.__name__} has no implementation for {type(record).__name__} records")
        return impl(record, *args)

    if default is not None:
        # one overload for every record class nobody registered, read when a kernel is compiled (registrations
        # made after this are seen); a registered class is left to its own overload
        @functools.wraps(stub)
        def select_default(*args):
            if isinstance(args[0], types.BaseNamedTuple) and args[0].instance_class not in registry:
                return default
            return None

        overload(call, jit_options=OVERLOAD_OPTIONS, inline="always")(select_default)

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
