"""The recursion depth the program sees: wholetrace's own frames below it do not count.

CPython keeps, per thread, how many more calls may nest before ``RecursionError``
(``recursion_remaining`` in 3.11; ``py_recursion_remaining`` in 3.12 and 3.13, where only
Python frames count).  ``sys.getrecursionlimit()`` reads the interpreter's limit, which this
module never touches; it moves the thread's own counter instead:

* by the frames the runner keeps below the program's ``<module>`` (``python SCRIPT`` runs
  it with none), so the program recurses as deep as without wholetrace;
* in Python 3.11, where C calls count too, trace-mode probes are C calls that must still
  work in the deepest frame the program reaches: each thread that records a trace gets one
  call of headroom, and the prologue of an instrumented function turns its own failure at
  that depth into the error the plain program would see (``instrument.emit``).

``sys.setrecursionlimit`` keeps the difference (it preserves each thread's depth).  The
field is found at run time: a field of the current ``PyThreadState`` that drops by one per
nested Python call and is followed by the limit.  If none is found nothing is changed.

It is read through ``_ctypes``, the C module under ``ctypes``, with the types and the C API
functions of ``wholetrace.capi`` declared as ``ctypes`` declares them: the ``ctypes`` package
(with ``struct`` and ``ctypes._endian``) is ~9 M instructions, 3 ms, of every recording's
start-up (docs/design.md, "Record's fixed cost, wave 13").
"""

from __future__ import annotations

import sys

import _ctypes

from wholetrace.capi import Int, PyFunction, PythonAPI

_FIELDS = 20
_Ints = Int * _FIELDS
#: ``PyThreadState_Get``, found once (``ctypes.dlsym`` is an audit event, and so is ``from_address``:
#: a thread's first probe that shifts its counter must raise none a program's audit hook sees)
try:
    _thread_state = PyFunction(("PyThreadState_Get", PythonAPI))
    _thread_state.restype = _ctypes.POINTER(_Ints)
except (AttributeError, OSError):   # pragma: no cover - no C API symbols
    _thread_state = None


def _thread_state_ints() -> _ctypes.Array:
    return _thread_state().contents


def _find_field() -> int | None:
    """Index (in ints) of the current thread's remaining-depth counter, validated."""
    if _thread_state is None:   # pragma: no cover
        return None
    try:
        outer = list(_thread_state_ints())
        inner = _one_call_deeper()
    except (AttributeError, OSError, ValueError):  # pragma: no cover - no ctypes.pythonapi
        return None
    limit = sys.getrecursionlimit()
    for i in range(4, _FIELDS - 1):
        if outer[i] - inner[i] == 1 and outer[i + 1] == inner[i + 1] == limit and 0 < outer[i] <= limit:
            return i
    return None


def _one_call_deeper() -> list[int]:
    return list(_thread_state_ints())


_FIELD: int | None = _find_field()


def available() -> bool:
    return _FIELD is not None


def depth() -> int:
    """How deep the calling frame is, as CPython counts it for ``RecursionError``."""
    if _FIELD is None:
        return 0
    ints = _thread_state_ints()
    return ints[_FIELD + 1] - ints[_FIELD]


def shift(delta: int) -> bool:
    """Let the current thread nest ``delta`` more calls (negative: fewer) before the limit."""
    if _FIELD is None or delta == 0:
        return _FIELD is not None
    ints = _thread_state_ints()
    ints[_FIELD] += delta
    return True
