"""What a program sees of the loader's frames: no tracer inside them, importlib's file and lines."""

from __future__ import annotations

import sys
from types import CodeType, FunctionType

#: What CPython's ``remove_importlib_frames`` counts as importlib's frames.
EXTERNAL = "<frozen importlib._bootstrap_external>"


def _method_sample(x: object) -> object:
    return x.y()  # type: ignore[attr-defined]


def _attribute_sample(x: object) -> object:
    return x.y  # type: ignore[attr-defined]


#: The opcodes that load an attribute or method (LOAD_ATTR, and LOAD_METHOD before 3.12), read from
#: the two samples above (RESUME, LOAD_FAST x, then the load of y: their third instruction):
#: neither ``opcode`` (a program's directory may hold an ``opcode.py``) nor ``compile`` (its first
#: call builds ``_ast``'s node classes, ~2 ms) at start-up (docs/design.md, "Record's fixed cost, wave 14").
ATTRIBUTE_LOADS = tuple(sorted({f.__code__.co_code[4] for f in (_method_sample, _attribute_sample)}))


def line_of_call(code: CodeType, name: str) -> int | None:
    """The line of ``code``'s first load of the attribute or method ``name`` (the line its call
    is reported at), or None.  A search of the bytes, not ``dis`` (not imported at start-up)."""
    if name not in code.co_names:
        return None
    index = code.co_names.index(name)
    args = (index << 1, index << 1 | 1) if sys.version_info >= (3, 12) else (index,)  # 3.12+: a method flag
    raw = code.co_code
    found = []
    for op in ATTRIBUTE_LOADS:
        for arg in args:
            if arg < 256:
                at = raw.find(bytes((op, arg)))
                while at >= 0 and at % 2:                                # an instruction starts at an even offset
                    at = raw.find(bytes((op, arg)), at + 1)
                found += [at] if at >= 0 else []
    at = min(found, default=-1)
    return next((line for start, end, line in code.co_lines() if start <= at < end), None)


def as_importlib(func: FunctionType, plain: FunctionType, call: str) -> None:
    """Move ``func``'s code to importlib's file, with its call of ``call`` on the line of
    ``plain``'s (importlib's own method of the same name): a ``SyntaxError`` that ``func``
    raises through importlib's ``source_to_code`` then shows plain's frames, and an import
    statement's traceback drops them all, as CPython drops importlib's (review22c MED-2)."""
    ours, theirs = line_of_call(func.__code__, call), line_of_call(plain.__code__, call)
    first = func.__code__.co_firstlineno
    if ours is not None and theirs is not None and theirs - (ours - first) > 0:
        first = theirs - (ours - first)
    func.__code__ = func.__code__.replace(co_filename=EXTERNAL, co_firstlineno=first)


class untraced:
    """A tracer or profiler the program installed does not see wholetrace instrument a
    module (nor the modules wholetrace uses meanwhile, which may be the program's too).
    A class, not ``contextlib.contextmanager``: ``contextlib`` (~4 M instructions with its
    ABCs) is not imported at start-up (docs/design.md, "Record's fixed cost, wave 14")."""

    __slots__ = ("trace", "profile")

    def __enter__(self) -> None:
        self.trace, self.profile = sys.gettrace(), sys.getprofile()
        if self.trace is not None or self.profile is not None:
            sys.settrace(None)
            sys.setprofile(None)

    def __exit__(self, *exc: object) -> None:
        if self.trace is not None or self.profile is not None:
            sys.settrace(self.trace)
            sys.setprofile(self.profile)
