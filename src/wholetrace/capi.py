"""The running interpreter's C API through ``_ctypes`` (the ``ctypes`` package, with ``struct`` and ``ctypes._endian``, costs ~3 ms of start-up and is visible in ``sys.modules``)."""

from __future__ import annotations

import _ctypes


class Int(_ctypes._SimpleCData):     # ctypes.c_int
    _type_ = "i"


class VoidP(_ctypes._SimpleCData):   # ctypes.c_void_p
    _type_ = "P"


class PyObject(_ctypes._SimpleCData):   # ctypes.py_object
    _type_ = "O"


class PyFunction(_ctypes.CFuncPtr):  # a function of ctypes.pythonapi (holds the GIL, checks errors)
    _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_PYTHONAPI
    _restype_ = VoidP


class PythonAPI:   # ctypes.pythonapi: the symbols of the running interpreter
    _handle = _ctypes.dlopen(None, _ctypes.RTLD_LOCAL)


def keep_alive(obj: object) -> None:
    """Add a reference to ``obj`` that is never released (``Py_IncRef``): it outlives the interpreter's shutdown."""
    incref = PyFunction(("Py_IncRef", PythonAPI))
    incref.argtypes = (PyObject,)
    incref.restype = None
    incref(obj)
