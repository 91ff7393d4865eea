"""Activations still open when a trace recording ends, closed as early exits (``EXC s`` LEAVE).

A daemon thread blocked for good, or an asyncio task left pending, ends the recording in the
middle of activations whose streams say only that their last block started: the statements
after the one in flight never ran.  Like the count modes (an early exit is an edge to EXIT
from the statement in flight, Ball & Larus's Figure 4 ``exit()``), the recorder closes each
such activation in its stream with ``EXC s`` LEAVE (path mode: ``EXC s r`` LEAVE, ``r`` its
path register), ``s`` the statement in flight, innermost first: block counts then cut the rest of the block, and regeneration places the exit the
same way in every trace mode.

Which stream an open frame belongs to is read from the frame itself: ``wt.a``, the append
method its prologue bound, is the append of its stream; it is None in a generator left
suspended (at a ``yield``, or delegating with ``yield from``), whose activation is not open,
and ``skip`` (``bool``, no stream) in a path-mode frame whose handler has appended its closing
exception record (a constant-closing function, ``pathforms.single_exit_record``): not open either.
Module and class bodies (which keep no local) belong to their thread's stream.

A thread stops only where the interpreter checks for a switch, and one such place is right
after a C call such as a probe's append: a frame can stand just after appending its LEAVE
(its return, its exception exit, or a generator's LEAVE before ``yield``) and before it
returns.  Its activation is closed already; ``_leave_calls`` reads that from the instruction the
frame stands at, so the recorder does not close it a second time.  That includes a
constant-closing handler's ``extend`` of ``EXC s r LEAVE`` and the few instructions up to its
switch of ``wt.a`` to ``skip`` (3.12+ run the GC at the call's switch check; an opcode tracer
runs at each).  The probes append a whole exception record (``EXC s [r] [H]``, ``RERAISE s [x]
[r] [H]``) with one call (``list.extend``, ``instrument.emit``), so a thread switch never
finds half a record; Python code can still run while its arguments are built (3.11's GC in an
allocation, a profile function at the call), which is why ``wt.a`` is switched after the
append, never before (review13d).
"""

from __future__ import annotations

import _thread
import sys
import types
from types import FrameType

from wholetrace.events import EXC, LEAVE, LEAVE_PATH
from wholetrace.instrument.emit import A, O, P
from wholetrace.runtime.probes import RunState

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    import dis
    from collections.abc import Callable, Iterable   # (collections: not imported at start-up)
    from typing import Any, TypeVar


def open_frames(by_code: dict[tuple[str, str], int], threads: dict[int, FrameType], thread_stream: dict[int, int],
                suspended: Iterable[tuple[Any, FrameType]], stream_of: Callable[[Any], int | None]
                ) -> dict[int, list[tuple[int, FrameType]]]:
    """Per stream id: (fid, frame) of its open instrumented activations, innermost first.

    ``threads``: the innermost frame of each thread still running (not the caller's);
    ``thread_stream``: thread ident -> its thread stream; ``suspended``: (object, frame) of
    the coroutines and async generators left suspended; ``stream_of``: the stream id of an
    append method (None if unknown).
    """
    out: dict[int, list[tuple[int, FrameType]]] = {}

    def add(fid: int, f: FrameType, default: int | None) -> None:
        if f.f_lasti in _leave_calls(f.f_code):          # stands just after appending its LEAVE
            return
        if A not in f.f_code.co_varnames:                # a module or class body
            sid = default
        else:
            a = f.f_locals.get(A)                        # unbound before the prologue ran
            sid = None if a is None else stream_of(a)
        if sid is not None:
            out.setdefault(sid, []).append((fid, f))

    for ident, top in threads.items():
        f: FrameType | None = top
        while f is not None:
            fid = by_code.get((f.f_code.co_filename, f.f_code.co_qualname))
            if fid is not None:
                add(fid, f, thread_stream.get(ident))
            f = f.f_back
    for obj, f in _innermost_first(suspended):
        fid = by_code.get((f.f_code.co_filename, f.f_code.co_qualname))
        if fid is not None and type(obj) is not types.GeneratorType:
            add(fid, f, None)
    return out


#: The recorder's own ``dis`` when the program's scope takes ``dis`` (``runner.start`` binds it
#: before the program's copy replaces it in ``sys.modules``): else :func:`_leave_calls` would run
#: the program's instrumented copy at stop, and its calls would be recorded.
DIS: types.ModuleType | None = None


def _leave_calls(code: types.CodeType) -> frozenset[int]:
    """Offsets of the calls that append an activation's closing record (:func:`_scan_leaves`)."""
    return _scan_leaves(code)[0]


def _closes_with_constant(code: types.CodeType) -> bool:
    """Does the epilogue append a constant closing record ``wt.a(K)``, ``K >= LEAVE_PATH``?  Only
    a path function's does (``pathforms.single_exit_record``): its register is 0 if it keeps none."""
    return _scan_leaves(code)[1]


_SCANNED: dict[types.CodeType, tuple[frozenset[int], bool]] = {}   # a memo dict: no functools at start-up


def _scan_leaves(code: types.CodeType) -> tuple[frozenset[int], bool]:
    got = _SCANNED.get(code)
    if got is None:
        if len(_SCANNED) >= 4096:
            _SCANNED.clear()
        got = _SCANNED[code] = _scan_leaves_of(code)
    return got


def _scan_leaves_of(code: types.CodeType) -> tuple[frozenset[int], bool]:
    """Offsets of the calls that append an activation's closing record: ``wt.a(LEAVE)`` and,
    in path mode, ``wt.a(wt.p + LEAVE_PATH)``, ``wt.a(T[wt.p])``, ``wt.a(wt.o)`` or ``wt.a(K)`` (as compiled by 3.11-3.13: the loads of the
    append and its argument, then ``CALL``, or on 3.11 ``PRECALL`` ``CALL``: 3.11 runs a call of
    a C function in its ``PRECALL`` and checks for a switch there, so the frame stands at it),
    and a constant-closing handler's ``wt.a.__self__.extend((EXC, s, r, LEAVE))``, with the
    instructions after it up to its ``wt.a = ... or skip`` store (``emit.xedge``)."""
    dis = DIS or __import__("dis")   # not at start-up: the run is over (Live.stop uninstalled the finder first)

    leave_args = ([("LOAD_CONST", LEAVE)], [("LOAD_FAST", P), ("LOAD_CONST", LEAVE_PATH), ("BINARY_OP", "+")],
                  [("LOAD_FAST", O)])
    loads: list[tuple[str, object]] = []     # the loads (and operators) since the last other instruction
    last: list[tuple[str, object]] = []      # the instructions before this one (but PUSH_NULL, PRECALL)
    extend = False                           # ``wt.a.__self__.extend`` loaded, not yet called
    precall = -1
    out = set()
    constant = False
    switching = False                        # between a closing extend and the switch of ``wt.a``
    for ins in dis.get_instructions(code):
        if switching:                        # (an opcode tracer can run there: the record is appended)
            out.add(ins.offset)
            switching = not (ins.opname.startswith("STORE_FAST") and A in (ins.argval if type(ins.argval) is tuple else (ins.argval,)))
        if ins.opname == "PUSH_NULL":        # before the callable (3.11, 3.12) or after it (3.13)
            continue
        if ins.opname != "PRECALL":
            last = last[-4:] + [_as_one(ins)]
            if last[-3:] == [("LOAD_FAST", A), ("LOAD_ATTR", "__self__"), (last[-1][0], "extend")]:
                extend = True
            elif extend and ins.opname == "CALL" and _is_closing_record(last[:-1]):
                extend, switching = False, True
                out.add(ins.offset)
                if precall >= 0:
                    out.add(precall)
        if ins.opname in ("LOAD_FAST_LOAD_FAST", "LOAD_FAST_BORROW_LOAD_FAST_BORROW"):  # 3.13 pairs
            loads += [("LOAD_FAST", name) for name in ins.argval]
        elif ins.opname == "STORE_FAST_LOAD_FAST":   # 3.13: a store, then the load of the append
            loads = [("LOAD_FAST", ins.argval[1])]
        elif ins.opname.startswith("LOAD_FAST"):
            loads.append(("LOAD_FAST", ins.argval))
        elif ins.opname == "LOAD_CONST" or ins.opname == "LOAD_SMALL_INT":
            loads.append(("LOAD_CONST", ins.argval))
        elif ins.opname == "BINARY_OP":
            loads.append(("BINARY_OP", ins.argrepr))
        elif ins.opname == "BINARY_SUBSCR":
            loads.append(("BINARY_SUBSCR", None))
        elif ins.opname == "PRECALL":
            precall = ins.offset
            continue
        elif ins.opname == "CALL":
            at = max((i for i, x in enumerate(loads) if x == ("LOAD_FAST", A)), default=-1)
            args = loads[at + 1:]
            constant = constant or (at >= 0 and _is_closing_const(args))
            if at >= 0 and (args in leave_args or _is_leave_table(args) or _is_closing_const(args)):
                out.add(ins.offset)
                if precall >= 0:
                    out.add(precall)
            loads = []
        else:
            loads = []
        precall = -1
    return frozenset(out), constant


def _as_one(ins: dis.Instruction) -> tuple[str, object]:
    """``ins`` as (name, argument) for the shapes matched here; 3.13's fused store-then-load
    (``STORE_FAST_LOAD_FAST``, before the load of ``wt.a`` when the handler's traceback read
    ends in a store) and load pairs count as the load they end with."""
    if ins.opname in ("STORE_FAST_LOAD_FAST", "LOAD_FAST_LOAD_FAST", "LOAD_FAST_BORROW_LOAD_FAST_BORROW"):
        return ("LOAD_FAST", ins.argval[1])
    return (ins.opname, ins.argrepr if ins.opname == "BINARY_OP" else ins.argval)


def _is_closing_record(before: list[tuple[str, object]]) -> bool:
    """Do the instructions ``before`` a call of ``wt.a.__self__.extend`` end its argument with the
    LEAVE constant: ``(..., LEAVE)``, ``... + (r, LEAVE)`` (an exception record closing the
    activation, ``emit.xedge``; a frame stopped at this call has appended it)?"""
    def leave_tuple(ins: list[tuple[str, object]]) -> bool:
        return ((len(ins) == 2 and ins[0] == ("LOAD_CONST", LEAVE) and ins[1][0] == "BUILD_TUPLE")
                or (len(ins) >= 1 and ins[-1][0] == "LOAD_CONST" and type(ins[-1][1]) is tuple
                    and ins[-1][1][-1:] == (LEAVE,)))
    if before[-1:] == [("BINARY_OP", "+")]:
        return leave_tuple(before[:-1][-2:]) or leave_tuple(before[:-1][-1:])
    return leave_tuple(before[-2:])


def _is_closing_const(loads: list[tuple[str, object]]) -> bool:
    """``K``, a constant closing record ``LEAVE_PATH + id`` (``pathforms.single_exit_record``)."""
    return (len(loads) == 1 and loads[0][0] == "LOAD_CONST" and type(loads[0][1]) is int
            and loads[0][1] >= LEAVE_PATH)  # type: ignore[operator]


def _is_leave_table(loads: list[tuple[str, object]]) -> bool:
    """``T[wt.p]``, ``T`` the epilogue's table of closing records (``emit.leave_table``)."""
    return (len(loads) == 3 and loads[0][0] == "LOAD_CONST" and isinstance(loads[0][1], tuple)
            and loads[0][1][-1:] == (LEAVE,) and loads[1] == ("LOAD_FAST", P) and loads[2][0] == "BINARY_SUBSCR")


def _innermost_first(suspended: Iterable[tuple[Any, FrameType]]) -> list[tuple[Any, FrameType]]:
    """Suspended coroutines ordered so that each comes before the one awaiting it."""
    items = list(suspended)
    awaiting = {id(getattr(o, "cr_await", None) or getattr(o, "ag_await", None)): o for o, _f in items}
    depth: dict[int, int] = {}
    for o, _f in items:
        d, cur = 0, o
        while id(cur) in awaiting and d < len(items):
            cur = awaiting[id(cur)]
            d += 1
        depth[id(o)] = d
    return sorted(items, key=lambda it: -depth[id(it[0])])


def _close(state: RunState, fid: int, f: FrameType) -> list[int]:
    """``EXC s`` LEAVE for one open activation; in path mode (a frame with a path register)
    ``EXC s r`` LEAVE, ``r`` the register as it stands (the truncated path; -1 if unset), or 0 in
    a function whose register no probe keeps (a closing record ``wt.o`` or a constant one but no
    ``wt.p``: ``modes.register_free``)."""
    out = [EXC, state.sites.resolve(fid, f.f_code, f.f_lasti)]
    names = f.f_code.co_varnames
    if P in names:
        r = f.f_locals.get(P)
        out.append(r if type(r) is int else -1)
    elif O in names or _closes_with_constant(f.f_code):
        out.append(0)
    return out + [LEAVE]


#: The switch interval while an instant is taken (seconds), and how often it is tried.
_HOLD, _TRIES = 0.1, 20

if TYPE_CHECKING:   # pragma: no cover
    T = TypeVar("T")


def at_one_instant(take: Callable[[], T], settled: Callable[[], object] = lambda: None) -> T:
    """``take()`` while no other thread runs, as far as can be seen: retried (at most ``_TRIES``
    times) until every other thread's innermost frame, and ``settled()``, are the same after it
    as before.

    Other threads run only if this one drops the GIL, which it does at a switch check when
    another thread asks.  A thread already waiting asks after the interval it began waiting
    with, so a long interval alone is no guarantee: a waiter on the old 5 ms takes the GIL,
    and this thread, then waiting on the long interval, would not ask it back for that long
    (a daemon thread in a loop held it for good).  Hence a moderate interval and the check."""
    me = _thread.get_ident()

    def now() -> tuple[object, dict[int, tuple[int, int]]]:
        return settled(), {i: (id(f), f.f_lasti) for i, f in sys._current_frames().items() if i != me}

    old = sys.getswitchinterval()
    sys.setswitchinterval(_HOLD)
    try:
        for _attempt in range(_TRIES):
            before = now()
            out = take()
            if now() == before:
                break
        return out
    finally:
        sys.setswitchinterval(old)


def snapshot(state: RunState, by_code: dict[tuple[str, str], int],
             suspended: Callable[[], Iterable[tuple[Any, FrameType]]], mine: bool = False
             ) -> tuple[dict[int, list[int]], dict[int, int]]:
    """At one instant (``at_one_instant``): per stream, the events that close its open
    activations (``EXC s`` LEAVE each, innermost first), and how many events of each stream's
    buffer belong to the run (later appends of threads still running are dropped); ``state``:
    the recording's.  ``suspended``: lists the suspended generators and coroutines (a gc scan,
    made before the instant, which it could outlast); ``mine``: the calling thread's frames are
    open activations too (a recording that ends inside the program)."""
    pending = list(suspended())
    streams = state.streams
    me = _thread.get_ident()

    def stream_id(append: Any) -> int | None:
        st = streams.by_buffer.get(append)
        return None if st is None else st.sid

    def lengths() -> dict[int, int]:
        return {st.sid: len(st.buf) for st in streams.all}

    def take() -> tuple[dict[int, list[int]], dict[int, int]]:
        threads = {ident: f for ident, f in sys._current_frames().items() if ident != me or mine}
        by_thread = {st.thread_ident: st.sid for st in streams.all if st.kind == "thread"}
        frames = open_frames(by_code, threads, by_thread, pending, stream_id)
        tails = {sid: [v for fid, f in fs for v in _close(state, fid, f)] for sid, fs in frames.items()}
        return tails, lengths()

    return at_one_instant(take, lengths)
