"""Finishing compiled instrumented code: site tables, and guards that re-raise an exception in place.

Two things cannot be said in the AST and are done on the code object the compiler made
(``compile_tree``), before it is cached:

* **Site tables.**  A handler's probe maps the instruction a traceback entry points at
  (``tb_lasti``) to the statement that holds it, with no call: a lookup in a table of one
  entry per code unit (statement id + 1, 0 for none; ``bytes``, or a tuple in a function
  with more than 254 statements).  The table is computed here from the code's own
  positions (``co_positions``) and the statements' spans, exactly as
  ``runtime.probes.ExceptionSites.resolve`` would at run time.

* **Re-raising in place.**  A guard (``try: body / except: record; raise / finally: ...``)
  that re-raises with ``raise`` leaves the frame's current instruction at the ``raise``:
  a tracer's ``return`` event, ``frame.f_lineno`` of the exited frame and the offset an
  enclosing ``with`` restores would all point at probe code.  CPython's own cleanup code
  avoids this with ``RERAISE n``, which restores the offset saved when the handler was
  entered (exception-table entries with the *lasti* flag push it).  So for each guard:
  the entries leading to its handler get the lasti flag, the handler's marked expression
  statement (``POP_TOP`` after the exception is loaded) becomes ``RERAISE 2``, and the
  entries nested in the handler (its cleanups) keep one more stack item.  When the
  ``finally`` is probe code too, its handler gets the same treatment (its final
  ``RERAISE 0`` becomes ``RERAISE 2``).  The exception-table format is CPython's
  (``Objects/exception_handling_notes.txt``), the same in 3.11, 3.12 and 3.13.  A guard whose
  code does not have the expected shape is left as compiled (it still works; only the
  offset is the ``raise``'s).
"""

from __future__ import annotations

import sys
from types import CodeType

from wholetrace.instrument.emit import (EXC_GUARD, EXC_OWN, RERAISE_MARK, RERAISE_MARK_GUARD, SITES_MARK,
                                       runtime_constant)
from wholetrace.plain import Record

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from typing import Iterator, Sequence


#: The opcodes read here, by CPython version (``opcode.opmap``'s values; ``opcode`` builds its
#: whole table in Python, ~2.4 M instructions of every recording's start-up, and this module
#: is imported then: probes call :func:`statement_at`).  Any other version or implementation
#: reads ``opcode``.  ``tests/runtime/test_startup14.py`` compares them with ``opcode.opmap``.
OPCODES: dict[tuple[int, int], dict[str, int]] = {
    (3, 11): {"CACHE": 0, "EXTENDED_ARG": 144, "PUSH_EXC_INFO": 35, "POP_TOP": 1, "RERAISE": 119,
              "LOAD_CONST": 100, "LOAD_FAST": 124, "GET_ITER": 68, "FOR_ITER": 93, "GET_AITER": 50,
              "BEFORE_WITH": 53, "BEFORE_ASYNC_WITH": 52, "GET_AWAITABLE": 131, "WITH_EXCEPT_START": 49},
    (3, 12): {"CACHE": 0, "EXTENDED_ARG": 144, "PUSH_EXC_INFO": 35, "POP_TOP": 1, "RERAISE": 119,
              "LOAD_CONST": 100, "LOAD_FAST": 124, "LOAD_FAST_CHECK": 127, "GET_ITER": 68, "FOR_ITER": 93,
              "GET_AITER": 50, "BEFORE_WITH": 53, "BEFORE_ASYNC_WITH": 52, "GET_AWAITABLE": 131,
              "WITH_EXCEPT_START": 49},
    (3, 13): {"CACHE": 0, "EXTENDED_ARG": 71, "PUSH_EXC_INFO": 33, "POP_TOP": 32, "RERAISE": 102,
              "LOAD_CONST": 83, "LOAD_FAST": 85, "LOAD_FAST_CHECK": 87, "STORE_FAST_LOAD_FAST": 111,
              "GET_ITER": 19, "FOR_ITER": 72, "GET_AITER": 16, "BEFORE_WITH": 2, "BEFORE_ASYNC_WITH": 1,
              "GET_AWAITABLE": 73, "WITH_EXCEPT_START": 44}}
#: Every name :data:`OPCODES` may hold (those a version lacks are absent there and in ``opmap``).
OPCODE_NAMES = ("CACHE", "EXTENDED_ARG", "PUSH_EXC_INFO", "POP_TOP", "RERAISE", "LOAD_CONST", "LOAD_FAST",
                "LOAD_FAST_CHECK", "STORE_FAST_LOAD_FAST", "GET_ITER", "FOR_ITER", "GET_AITER", "BEFORE_WITH",
                "BEFORE_ASYNC_WITH", "GET_AWAITABLE", "WITH_EXCEPT_START")


def _opcodes() -> dict[str, int]:
    known = OPCODES.get(sys.version_info[:2]) if sys.implementation.name == "cpython" else None
    if known is not None:
        return known
    import opcode   # pragma: no cover - a version not in OPCODES

    return {n: opcode.opmap[n] for n in OPCODE_NAMES if n in opcode.opmap}  # pragma: no cover


_OP = _opcodes()
_CACHE = _OP["CACHE"]
_EXTENDED_ARG = _OP["EXTENDED_ARG"]
_PUSH_EXC_INFO = _OP["PUSH_EXC_INFO"]
_POP_TOP = _OP["POP_TOP"]
_RERAISE = _OP["RERAISE"]
_LOAD_CONST = _OP["LOAD_CONST"]
_LOAD_FAST = {_OP[n] for n in ("LOAD_FAST", "LOAD_FAST_CHECK") if n in _OP}
_LOAD_FAST_OP = _OP["LOAD_FAST"]
_STORE_FAST_LOAD_FAST = _OP.get("STORE_FAST_LOAD_FAST", -1)
_WITH_EXCEPT_START = _OP["WITH_EXCEPT_START"]

Span = tuple[int, int, int, int, int]


class _Prefix:
    """A warnings-filter message pattern without ``re`` (instrumenting ``re`` itself must
    not need it): the filter machinery only calls ``.match``."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def match(self, text: str) -> bool:
        return text.startswith(self.prefix)


_QUIET = ("ignore", _Prefix("'frozenset' object is not"), SyntaxWarning, None, 0)


class quiet_placeholders:
    """The compiler warns about calling or subscripting a constant; placeholder constants are
    called and subscripted on purpose (they become the run-time objects at load).  A class,
    not ``contextlib.contextmanager``: ``contextlib`` is not imported at start-up."""

    __slots__ = ("_filters",)

    def __enter__(self) -> None:
        self._filters = _filters()
        self._filters.insert(0, _QUIET)
        _mutated()

    def __exit__(self, *exc: object) -> None:
        try:
            self._filters.remove(_QUIET)
        except ValueError:
            pass
        _mutated()


def _filters() -> list[object]:
    """The filter list the compiler's warnings go through, found as ``_warnings.c`` finds it:
    ``sys.modules["warnings"].filters`` when that is a list (``catch_warnings`` replaces it),
    else the built-in ``_warnings.filters``.  Never ``import warnings``: that may be the
    program's own ``warnings.py``, even one being imported (review14d, finding 1)."""
    import _warnings

    module = sys.modules.get("warnings")
    found = getattr(module, "__dict__", {}).get("filters")   # the dict: no module __getattr__ of the program's
    return found if type(found) is list else _warnings.filters   # type: ignore[no-any-return]


def _mutated() -> None:
    import _warnings

    mutated = getattr(_warnings, "_filters_mutated", None)   # (3.11-3.13)
    if mutated is not None:
        mutated()


def finish(code: CodeType, spans: Sequence[Sequence[Span]]) -> CodeType:
    """``code`` and its nested code objects with site tables filled in (``spans[i]``: the
    statement spans of the file's ``i``-th function) and guards re-raising in place."""
    consts = list(code.co_consts)
    for i, c in enumerate(consts):
        if type(c) is CodeType:
            consts[i] = finish(c, spans)
        elif type(c) is frozenset and SITES_MARK in c:
            index: int = next(x for x in c if x != SITES_MARK)  # type: ignore[assignment]
            table = site_table(code, spans[index if index >= 0 else -1 - index])
            consts[i] = table if index >= 0 else table[:0] + (b"\0" if type(table) is bytes else (0,))
    return _patch_guards(code.replace(co_consts=tuple(consts)))


#: Instructions that get a ``for`` loop's iterator or its next item.  They belong to the loop's
#: for-next statement (``instrument.cfg``), but from 3.13 on the compiler places them at the
#: iterable, whose span is the for-iter statement's: see :func:`statement_at`.
_LOOP_STEP = frozenset(_OP[n] for n in ("GET_ITER", "FOR_ITER", "GET_AITER") if n in _OP)


def statement_at(spans: Sequence[Span], position: tuple[int | None, ...], op: int) -> int:
    """Id of the innermost statement of ``spans`` (innermost first) holding the start of an
    instruction (opcode ``op``, ``co_positions`` entry ``position``), -1 if none.

    A loop step placed exactly on a for-iter statement's span (3.13 places ``GET_ITER``,
    ``FOR_ITER`` and ``GET_AITER`` at the iterable; 3.11 and 3.12 at the whole ``for``) goes
    to the loop's for-next statement, the next id, whose header span holds the iterable.  The
    exact match keeps an inlined comprehension's own loop steps (3.12+), which lie strictly
    inside the iterable, with the for-iter statement."""
    line, end_line, col, end_col = position
    if line is None:
        return -1
    at = (line, col or 0)
    found = -1
    for l0, c0, l1, c1, s in spans:
        if s >= 0 and (l0, c0) <= at <= (l1, c1):   # (s < 0: a with exit's code, ``with_exit_at``)
            if found < 0:
                if op not in _LOOP_STEP or (l0, c0, l1, c1) != (line, col, end_line, end_col):
                    return s
                found = s
            elif s == found + 1:
                return s
    return found


def site_table(code: CodeType, spans: Sequence[Span]) -> bytes | tuple[int, ...]:
    """Per code unit of ``code``: 1 + the id of the statement holding the unit
    (:func:`statement_at`), 0 if none."""
    by_line: dict[int, list[Span]] = {}
    for sp in spans:                     # innermost first, as ``spans`` are sorted
        for line in range(sp[0], sp[2] + 1):
            by_line.setdefault(line, []).append(sp)
    raw = code.co_code
    memo: dict[tuple[tuple[int | None, ...], bool], int] = {}
    out: list[int] = []
    positions = list(code.co_positions())
    for unit, position in enumerate(positions):
        if position[0] is None:
            out.append(0)
            continue
        op = raw[2 * unit]
        key = (position, op in _LOOP_STEP)
        v = memo.get(key)
        if v is None:
            v = memo[key] = statement_at(by_line.get(position[0], ()), position, op) + 1
        out.append(v)
    exits = exit_positions(spans)
    if exits:
        for unit in range(len(positions)):
            sid = exit_statement(code, positions, unit, exits)
            if sid >= 0:
                out[unit] = sid + 1
    return bytes(out) if max(out, default=0) < 256 else tuple(out)


def exit_positions(spans: Sequence[Span]) -> dict[tuple[int, int, int, int], list[int]]:
    """``co_positions`` entry -> the with-exit and with-enter statement ids of the items whose
    exit code is placed there, ``[exit, enter]`` an item, items in order
    (``instrument.cleanup.with_exit_spans``)."""
    out: dict[tuple[int, int, int, int], list[int]] = {}
    for l0, c0, l1, c1, s in spans:
        if s < 0:
            out.setdefault((l0, l1, c0, c1), []).append(-1 - s)
    return out


def exit_statement(code: CodeType, positions: Sequence[tuple[int | None, ...]], unit: int,
                   exits: dict[tuple[int, int, int, int], list[int]]) -> int:
    """The statement code unit ``unit`` belongs to when it is placed where a ``with`` item's
    exit code is (``exits``: :func:`exit_positions` of the function's spans), -1 for
    :func:`statement_at`'s answer: the item's with-exit statement for its exit code; when
    several items share the place (3.11, 3.12: all at the ``with`` statement), the item is
    the number of them whose exceptional exit encloses the unit (:func:`_enclosing_withs`),
    and its other code there (``BEFORE_WITH``, the ``__aenter__`` await) is its with-enter
    statement's."""
    here = positions[unit]
    sids = exits.get(here)  # type: ignore[call-overload]
    if sids is None:
        return -1
    item = min(_enclosing_withs(code, positions, unit), len(sids) // 2 - 1) if len(sids) > 2 else 0
    if with_exit_at(code, positions, unit):
        return sids[2 * item]
    return sids[2 * item + 1] if len(sids) > 2 else -1


_parsed: tuple[bytes, list[Entry], list[int] | None] = (b"", [], [])   # the last table read, entries, starts


def _enclosing_withs(code: CodeType, positions: Sequence[tuple[int | None, ...]], unit: int) -> int:
    """How many ``with`` items placed where ``unit`` is enclose it: the handlers an exception
    at ``unit`` can reach (the handler covering it, the one covering that handler's code, and
    so on out) that start ``PUSH_EXC_INFO; WITH_EXCEPT_START`` there.  An item's code at the
    statement (its ``BEFORE_WITH``, its exit code, normal or exceptional) lies outside its own
    handler's range and inside those of the items before it, by the compiler's nesting."""
    global _parsed
    parsed = _parsed   # one read: another thread may replace the global between a test and a use
    if parsed[0] is not code.co_exceptiontable:
        entries = parse_exception_table(code.co_exceptiontable)
        starts = None if any(a.end > b.start for a, b in zip(entries, entries[1:])) else [e.start for e in entries]
        parsed = _parsed = (code.co_exceptiontable, entries, starts)   # compiled tables are sorted, disjoint
    entries, starts = parsed[1], parsed[2]
    raw, here = code.co_code, positions[unit]
    seen: set[int] = set()
    n = 0
    entry = _covering(entries, unit, starts)
    while entry is not None and entry.target not in seen:
        t = entry.target
        seen.add(t)
        if (raw[2 * t] == _PUSH_EXC_INFO and 2 * t + 2 < len(raw) and raw[2 * t + 2] == _WITH_EXCEPT_START
                and positions[t + 1] == here):
            n += 1
        entry = _covering(entries, t, starts)
    return n


_WITH_OPS = frozenset(_OP[n] for n in ("BEFORE_WITH", "BEFORE_ASYNC_WITH", "GET_AWAITABLE", "WITH_EXCEPT_START")
                      if n in _OP)


def with_exit_at(code: CodeType, positions: Sequence[tuple[int | None, ...]], unit: int) -> bool:
    """Is code unit ``unit``, placed where a ``with`` item's exit code is, that exit code?  The
    same place holds (3.11, 3.12) ``BEFORE_WITH`` and the ``__aenter__`` await, and (3.13) the
    item's expression: walking back over the units placed there, the first of
    ``BEFORE_WITH``/``BEFORE_ASYNC_WITH`` (no), ``GET_AWAITABLE 2`` (yes: ``__aexit__``; 1 is
    ``__aenter__``, 0 an ``await`` in the expression), ``WITH_EXCEPT_START`` (yes) decides;
    with none, the normal exit's ``__exit__(None, None, None)`` is known by its ``None``
    arguments placed there."""
    raw, here = code.co_code, positions[unit]
    nones = False
    j = unit
    while j >= 0 and positions[j] == here:
        op = raw[2 * j]
        if op in _WITH_OPS:
            if op == _OP["GET_AWAITABLE"]:
                return raw[2 * j + 1] == 2
            return op == _OP["WITH_EXCEPT_START"]
        if op == _LOAD_CONST and j < unit:
            arg = raw[2 * j + 1] | (raw[2 * j - 1] << 8 if j and raw[2 * j - 2] == _EXTENDED_ARG else 0)
            nones = nones or (arg < len(code.co_consts) and code.co_consts[arg] is None)
        j -= 1
    return nones


# --------------------------------------------------------------------------- exception tables

class Entry(Record):
    """One exception-table entry: code units [start, end) go to ``target`` with ``depth``
    stack items kept, pushing the raising offset first if ``lasti``."""

    __slots__ = ("start", "end", "target", "depth", "lasti")

    def __init__(self, start: int, end: int, target: int, depth: int, lasti: bool) -> None:
        self.start = start
        self.end = end
        self.target = target
        self.depth = depth
        self.lasti = lasti

    def covers(self, unit: int) -> bool:
        return self.start <= unit < self.end


def parse_exception_table(raw: bytes) -> list[Entry]:
    out: list[Entry] = []
    pos = 0

    def varint() -> int:
        nonlocal pos
        b = raw[pos]
        pos += 1
        v = b & 63
        while b & 64:
            b = raw[pos]
            pos += 1
            v = (v << 6) | (b & 63)
        return v

    while pos < len(raw):
        start = varint()
        size = varint()
        target = varint()
        dl = varint()
        out.append(Entry(start, start + size, target, dl >> 1, bool(dl & 1)))
    return out


def encode_exception_table(entries: Sequence[Entry]) -> bytes:
    out = bytearray()

    def varint(v: int, first: bool) -> None:
        chunks = [v & 63]
        v >>= 6
        while v:
            chunks.append(v & 63)
            v >>= 6
        chunks.reverse()
        for i, c in enumerate(chunks):
            out.append(c | (64 if i < len(chunks) - 1 else 0) | (128 if first and i == 0 else 0))

    for e in entries:
        varint(e.start, True)
        varint(e.end - e.start, False)
        varint(e.target, False)
        varint(e.depth << 1 | int(e.lasti), False)
    return bytes(out)


def _instructions(raw: bytes) -> list[tuple[int, int, int]]:
    """(code unit, opcode, argument) of every instruction; caches and EXTENDED_ARG folded in."""
    out = []
    ext = 0
    for i in range(0, len(raw), 2):
        op = raw[i]
        if op == _CACHE:
            continue
        if op == _EXTENDED_ARG:
            ext = (ext | raw[i + 1]) << 8
            continue
        out.append((i // 2, op, ext | raw[i + 1]))
        ext = 0
    return out


# --------------------------------------------------------------------------- guards

def _terminals(code: CodeType, ins: list[tuple[int, int, int]]) -> list[tuple[int, bool]]:
    """(index in ``ins`` of the guard's marked ``POP_TOP``, whether its ``finally`` is ours)."""
    names = code.co_varnames
    own = names.index(EXC_OWN) if EXC_OWN in names else -1
    other = names.index(EXC_GUARD) if EXC_GUARD in names else -1
    marks = {}
    for tag, mine in ((RERAISE_MARK, True), (RERAISE_MARK_GUARD, False)):
        ph = runtime_constant(tag)
        for k, c in enumerate(code.co_consts):
            if type(c) is frozenset and c == ph:
                marks[k] = mine
    out = []
    for j, (_u, op, arg) in enumerate(ins[:-1]):
        if op == _STORE_FAST_LOAD_FAST:   # 3.13 fuses a store with the load that follows it
            op, arg = _LOAD_FAST_OP, arg & 15
        if op in _LOAD_FAST and arg in (own, other) and arg >= 0 and ins[j + 1][1] == _POP_TOP:
            out.append((j + 1, arg == own))
        elif op == _LOAD_CONST and arg in marks:
            k = next((k for k in range(j + 1, len(ins)) if ins[k][1] == _POP_TOP), None)
            if k is not None:
                out.append((k, marks[arg]))
    return out


def _handler_start(ins: list[tuple[int, int, int]], j: int) -> int | None:
    """Code unit of the ``PUSH_EXC_INFO`` that opens the handler holding instruction ``j``."""
    for k in range(j, -1, -1):
        if ins[k][1] == _PUSH_EXC_INFO:
            return ins[k][0]
    return None


def _covering(entries: list[Entry], unit: int, starts: list[int] | None = None) -> Entry | None:
    """The first entry covering ``unit``; by bisection given ``starts`` (entries sorted, disjoint)."""
    if starts is None:
        return next((e for e in entries if e.covers(unit)), None)
    lo, hi = 0, len(starts)
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if starts[mid] <= unit else (lo, mid)
    return entries[lo - 1] if lo and unit < entries[lo - 1].end else None


def _retarget(entries: list[Entry], handler: int, cleanups: set[int]) -> bool:
    """Give the entries into ``handler`` the lasti flag and the entries into its cleanups one
    more stack item; False (nothing changed) if the shape is not the compiler's usual one."""
    into = [e for e in entries if e.target == handler]
    nested = [e for e in entries if e.target in cleanups]
    if not into or not nested or any(e.lasti for e in into):
        return False
    depth = into[0].depth
    if any(e.depth != depth for e in into) or any(e.depth != depth + 1 or not e.lasti for e in nested):
        return False
    for e in into:
        e.lasti = True
    for e in nested:
        e.depth += 1
    return True


def _patch_guards(code: CodeType) -> CodeType:
    raw = code.co_code
    ins = _instructions(raw)
    terminals = _terminals(code, ins)
    if not terminals:
        return code
    entries = parse_exception_table(code.co_exceptiontable)
    # the compiler may copy a handler's tail (one terminal per copy): patch by handler
    handlers: dict[int, tuple[list[int], bool]] = {}
    for j, own_final in terminals:
        h = _handler_start(ins, j)
        if h is not None:
            handlers.setdefault(h, ([], own_final))[0].append(ins[j][0])
    patched = bytearray(raw)
    changed = False
    for h, (units, own_final) in handlers.items():
        c = _covering(entries, h)
        inner = {e.target for u in units if (e := _covering(entries, u)) is not None}
        if c is None or len(inner) != 1:
            continue
        final = _finally_of(entries, ins, c.target) if own_final else None
        if not _retarget(entries, h, {c.target} | inner):
            continue
        for unit in units:
            patched[2 * unit:2 * unit + 2] = bytes((_RERAISE, 2))
        changed = True
        if final is not None:
            f_start, f_reraise = final
            cf = _covering(entries, f_start)
            if cf is not None and _retarget(entries, f_start, {cf.target}):
                patched[2 * f_reraise:2 * f_reraise + 2] = bytes((_RERAISE, 2))
    if not changed:
        return code
    return code.replace(co_code=bytes(patched), co_exceptiontable=encode_exception_table(entries),
                        co_stacksize=code.co_stacksize + 1)


def _finally_of(entries: list[Entry], ins: list[tuple[int, int, int]], cleanup: int) -> tuple[int, int] | None:
    """(start, final ``RERAISE 0``) of the ``finally`` handler that encloses the handler
    whose cleanup starts at ``cleanup``, if it has the usual shape."""
    f = _covering(entries, cleanup)
    if f is None:
        return None
    at = next((k for k, (u, _o, _a) in enumerate(ins) if u == f.target), None)
    if at is None or ins[at][1] != _PUSH_EXC_INFO:
        return None
    for u, op, arg in ins[at + 1:]:
        if op == _PUSH_EXC_INFO:
            return None
        if op == _RERAISE:
            return (f.target, u) if arg == 0 else None
    return None
