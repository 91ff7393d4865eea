"""Objects the value log never holds: frames, tracebacks, built-in exceptions, tuples holding one."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any


def _traceback_type() -> type:
    """``types.TracebackType`` (the types module is not imported at start-up)."""
    try:
        raise TypeError
    except TypeError as e:
        return type(e.__traceback__)


#: Types without weak references that the recording never holds, nor a built-in exception
#: (no weak references either): a frame held past its function's return keeps that function's
#: locals alive (a traceback holds frames, an exception its traceback), so a finaliser of the
#: program ran late, or never (review19c P2), and a file it left open stayed unflushed.  Their
#: serials are kept by address and type (``ValueLog.loose``): one that dies passes its serial
#: on to the next object of its type at its address (a dependence too many, never one missing).
_FRAME, _TRACEBACK = type(sys._getframe()), _traceback_type()


def unheld(t: type, obj: Any, fr: type = _FRAME, tb: type = _TRACEBACK, exc: type = BaseException,
           tup: type = tuple, sub: Any = issubclass, each: Any = tuple.__iter__) -> bool:
    """Is ``obj`` (of type ``t``, no weak references) never held?  Frames, tracebacks, built-in
    exceptions, and tuples (``sys.exc_info()``, ``inspect.FrameInfo``) with one among their
    items.  Identity tests and ``issubclass``: no ``__hash__``/``__eq__`` of a metaclass runs.
    (Defaults: module globals are None while the interpreter shuts down.)"""
    if t is fr or t is tb or sub(t, exc):
        return True
    if sub(t, tup):
        for x in each(obj):
            u = type(x)
            if u is fr or u is tb or sub(u, exc):
                return True
    return False
