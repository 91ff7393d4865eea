"""What a program sees of the loader's frames: no tracer inside them, importlib's file and lines."""

from __future__ import annotations

import sys
from types import CodeType, FunctionType

#: What CPython's ``remove_importlib_frames`` counts as importlib's frames.
EXTERNAL = "<frozen importlib._bootstrap_external>"


def line_of_call(code: CodeType, name: str) -> int | None:
    """The line of ``code``'s first load of the attribute or method ``name`` (the line its call
    is reported at), or None."""
    import opcode   # imported at start-up already (the instrumenter's)

    if name not in code.co_names:
        return None
    index = code.co_names.index(name)
    ops = {opcode.opmap[op] for op in ("LOAD_METHOD", "LOAD_ATTR") if op in opcode.opmap}
    shift = 1 if sys.version_info >= (3, 12) else 0     # 3.12+: LOAD_ATTR's low bit is the method flag
    raw = code.co_code
    for start, end, line in code.co_lines():
        for i in range(start, end, 2):
            if raw[i] in ops and raw[i + 1] >> shift == index and line is not None:
                return line
    return None


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
