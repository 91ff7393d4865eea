"""What instrumented code calls or touches at run time: one recording's objects, handed to its code as constants.

Instrumented code refers to no global or builtin name of wholetrace: the placeholders of
its templates (``instrument.emit.runtime_constant``) become, when the code is loaded, the
objects of :func:`runtime_objects` for *its* recording.  The hot paths (block probes,
counters, handlers in functions) are inline code and C calls; the Python helpers here
serve only module and class bodies (which can keep no local).
"""

from __future__ import annotations

import _thread   # threading's get_ident itself: threading is not imported at start-up (rstart15)
import sys
from sys import _getframe
from _operator import add, attrgetter, call, itemgetter, methodcaller   # operator's own: no operator at start-up (rstart15)
from _weakref import ref
from itertools import repeat   # (imported at start-up already: runtime.collector)
from types import CodeType, FrameType

from wholetrace.events import EXC, RERAISE
from wholetrace.ids import EXIT
from wholetrace.instrument import emit
from wholetrace.instrument.bytecode import exit_positions, exit_statement, statement_at
from wholetrace.plain import Record
from wholetrace.runtime import shipped
from wholetrace.runtime.streams import Streams

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any, Callable, Iterable

#: ``BaseException.__traceback__`` and ``BaseExceptionGroup.exceptions`` read through their own
#: descriptors: a program's ``__getattribute__`` (or a ``__traceback__`` its class defines) never runs
traceback_of = BaseException.__dict__["__traceback__"].__get__
members_of = BaseExceptionGroup.__dict__["exceptions"].__get__
_HEAPTYPE = 1 << 9   # Py_TPFLAGS_HEAPTYPE: a class made by a class statement or type(), not a static one


def static_exception_classes() -> frozenset[type]:
    """The exception classes that are static types (built-in ones and those of C modules
    imported so far): no program can set an attribute of one, so their instances'
    ``__traceback__`` is read as an attribute (``instrument.handledtb``)."""
    found, todo = set(), [BaseException]
    while todo:
        cls = todo.pop()
        if type(cls) is type and not cls.__flags__ & _HEAPTYPE and cls not in found:   # (no hash of a program class)
            found.add(cls)
            todo.extend(type.__subclasses__(cls))
    return frozenset(found)


class AsyncLoop(list):
    """An ``async for`` whose ``continue`` crosses cleanup code iterates over ``AsyncLoop([next])``:
    ``next`` is the bound ``__next__`` of a C ``map``/``zip`` chain that records the for-next block,
    then returns ``anext(it)`` (``instrument.loopwrap``).  Both methods are properties over C
    callables (``__aiter__``: a weak reference to the object, called: the object), so no frame of
    ours runs per item and the awaitable the loop awaits is the program's own."""

    __slots__ = ("__weakref__",)
    __aiter__ = property(ref)
    __anext__ = property(itemgetter(0))


#: Loops whose ``continue`` crosses cleanup code (``instrument.loopwrap``): the C callables their
#: wrapping iterator is built of in the loop's own code, so no Python frame of ours runs per item.
LOOP_OBJECTS: dict[str, object] = {
    emit.LOOP_MAP: map, emit.LOOP_ZIP: zip, emit.LOOP_SECOND: {}.get, emit.LOOP_REPEAT: repeat,
    emit.LOOP_EXTEND: methodcaller, emit.LOOP_SELF: attrgetter("__self__"), emit.LOOP_ATTRGETTER: attrgetter,
    emit.LOOP_SETATTR: setattr, emit.LOOP_ADD: add,
    emit.LOOP_AITER: aiter, emit.LOOP_ANEXT: anext, emit.LOOP_ASYNC: AsyncLoop, emit.LOOP_CALL: call}


class ExceptionSites:
    """Maps (code, instruction offset) of a traceback entry to a statement id of the function
    (what the site tables of ``instrument.bytecode`` hold, for the helpers and the end of a run)."""

    def __init__(self) -> None:
        self.spans: dict[int, list[tuple[int, int, int, int, int]]] = {}
        self.cache: dict[tuple[CodeType, int], int] = {}

    def register(self, fid: int, stmts: Iterable[tuple[int, int, int, int, int]]) -> None:
        """``stmts``: (line, col, end_line, end_col, stmt id); innermost spans are tried first."""
        self.spans[fid] = sorted(stmts, key=lambda s: ((s[2] - s[0]) * 10_000 + s[3] - s[1]))

    def resolve(self, fid: int, code: CodeType, lasti: int) -> int:
        key = (code, lasti)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        sid = -1
        positions = list(code.co_positions())
        unit = lasti // 2
        if 0 <= unit < len(positions):
            spans = self.spans.get(fid, ())
            sid = exit_statement(code, positions, unit, exit_positions(spans))
            if sid < 0:
                sid = statement_at(spans, positions[unit], code.co_code[lasti & ~1])
        self.cache[key] = sid
        return sid


class RunState(Record):
    """Everything one recording's instrumented code writes to while it runs."""

    _fields = ("streams", "file_counts", "xedges", "sites", "namespace_reraise")

    def __init__(self) -> None:
        self.streams = Streams()
        #: Count modes: per file (by its first global counter id), an object with one slot per
        #: counter, shared by all threads.  ``counts.c<j> += 1.0`` is never interrupted by a
        #: thread switch in CPython 3.11: none of its instructions checks the eval breaker
        #: (docs/design.md, "count probes").
        self.file_counts: dict[int, object] = {}
        #: Count modes: exception edges as they happen, flat (fid, source statement, target block);
        #: a handler extends it by one whole triple (one C call, atomic under the GIL).
        self.xedges: list[int] = []
        self.sites = ExceptionSites()
        #: Module and class bodies (which keep no locals), while they run: the body's frame (one
        #: slot an activation: a class body re-entered on the same thread has its own) ->
        #: {-2: last re-raise site passed, -1: traceback entry their last handler saw, region k:
        #: the entry held at its start} (absent: -1, None, None): what functions keep in ``wt.r``,
        #: ``wt.s`` and ``wt.h<k>`` (``instrument.emit.Emitter.again``, ``instrument.heldcode``,
        #: whose code reads and writes it with C calls only: ``emit.SLOT``).
        self.namespace_reraise: dict[FrameType, dict[int, object]] = Held()

    def clear_held(self) -> None:
        """Drop the tracebacks held to recognise re-raises (the run is over)."""
        self.namespace_reraise.clear()


def new_counts(n: int) -> object:
    """A file's counter object: slots ``c0`` .. ``c<n-1>``, all 0.0 (a slot is read and
    written by two specialized instructions, cheaper than an item of a list)."""
    names = tuple(f"c{j}" for j in range(n))
    counts = type("counts", (), {"__slots__": names, "__reduce__": shipped.by_reference})()
    for name in names:
        setattr(counts, name, 0.0)
    return counts


def read_counts(counts: object) -> list[float]:
    """The counters of a file's counter object, in order."""
    return [getattr(counts, name) for name in type(counts).__slots__]  # type: ignore[attr-defined]


class Edges:
    """Count modes: the exception-edge list, in an object instrumented code gets as a
    constant (``edges.x``): a code object whose constants held a list could not be hashed."""

    __slots__ = ("x",)
    __reduce__ = shipped.by_reference   # (pickled code: runtime.shipped)

    def __init__(self, xedges: list[int]) -> None:
        self.x = xedges


class NoSlot(dict):   # type: ignore[type-arg]
    """Stands for the slot of a body that has none yet (nothing held: no handler ran).  The
    body's saves, holds and drops write into it only what it reads from it, None (its -2, a
    site, is never read: ``origin`` reads sites of real slots only), so it reads as empty;
    hashable, as a constant of the code."""

    __slots__ = ()
    __hash__ = object.__hash__   # type: ignore[assignment]


class _NoTraceback:
    """Stands for a missing traceback in a handler's site lookup (index -1: no statement)."""

    __slots__ = ()
    tb_lasti = -2


class Held(dict):   # type: ignore[type-arg]
    """A dict whose bound methods are constants of instrumented code (``held.get``,
    ``driven.__setitem__``): the same C methods as a dict's, but code pickled by value names
    it by reference (``runtime.shipped``), not by value with what the run put in it."""

    __slots__ = ()
    __reduce__ = shipped.by_reference


def increment(counts: object, slot: str) -> None:
    """Module and class bodies, count modes: a counter probe inside an expression."""
    setattr(counts, slot, getattr(counts, slot) + 1.0)


class BodyHelpers:
    """Module and class bodies' exception helpers (their bound methods are constants of the
    code): an object, not closures, so that code pickled by value names it by reference
    (``runtime.shipped``) instead of copying the run's edges and site tables."""

    __slots__ = ("current", "new_stream", "xedges", "sites", "held")
    __reduce__ = shipped.by_reference

    def __init__(self, current: Callable[..., Any], new_stream: Callable[[], Any], xedges: Any,
                 sites: ExceptionSites, held: dict[FrameType, dict[int, object]]) -> None:
        self.current, self.new_stream, self.xedges, self.sites, self.held = current, new_stream, xedges, sites, held

    def origin(self, fid: int, reraise: bool, keep: bool) -> tuple[int, int]:
        """Module and class bodies: (the statement the handled exception's traceback points at
        in ``frame``, the body's, the statement that raised it).  They differ for a re-raise:
        the traceback entry is the one the body's last handler saw (held while the exception
        stays in the body: ``keep``), and the body passed a re-raise site since (the same
        rule as functions' inline ``instrument.emit.Emitter.again``).  ``reraise``: the body
        has re-raise sites and the mode asks (count and witness modes); only then is the body's
        frame (the caller's caller) fetched: ``sys._getframe`` is an audit event."""
        exc = sys.exception()
        tb = traceback_of(exc) if exc is not None else None   # (no attribute of the program's exception read)
        if tb is None and issubclass(type(exc), BaseExceptionGroup):   # except* wrapped a naked exception
            tb = traceback_of(members_of(exc)[0])
        if tb is None:
            return -1, -1
        src = self.sites.resolve(fid, tb.tb_frame.f_code, tb.tb_lasti)
        if not reraise:
            return src, src
        slot = self.held.setdefault(_getframe(2), {})
        site, seen = slot.get(-2, -1), slot.get(-1)
        slot[-1] = tb if keep else None
        return src, site if seen is tb and site >= 0 else src  # type: ignore[operator]

    def exception_edge(self, fid: int, handler: int = -1, reraise: bool = False) -> None:
        """Module and class bodies: EXC <statement>, or RERAISE <statement> <re-raise site>
        (witness modes), then the handler block (witness modes, unless it is EXIT: -1)."""
        cur = self.current() or self.new_stream()
        src, raised = self.origin(fid, reraise, handler >= 0)
        rec = (RERAISE, src, raised) if raised != src else (EXC, src)
        # one call for the whole record: a thread stopped at exit never stands inside it
        cur.__self__.extend(rec + (handler,) if handler >= 0 else rec)

    def exception_edge_count(self, fid: int, dst: int, reraise: bool = False) -> None:
        """Module and class bodies, count modes: the edge from the statement that raised."""
        self.xedges.extend((fid, self.origin(fid, reraise, dst != EXIT)[1], dst))


def runtime_objects(state: RunState) -> dict[str, object]:
    """The run-time objects of one recording, by placeholder name (``instrument.emit``)."""
    streams, xedges = state.streams, state.xedges
    current, new_stream = streams.current.get, streams.new
    held = state.namespace_reraise
    #: frame id -> the code of an instrumented coroutine activation driven by a task, None by hand
    #: (``instrument.awaits.hand_flag``: set at each activation's first step, read by what it awaits)
    driven: dict[int, CodeType | None] = Held()
    helpers = BodyHelpers(current, new_stream, xedges, state.sites, held)
    edges = Edges(xedges)
    shipped.register(state, edges, helpers, driven)   # code pickled by value names these objects by reference
    return {emit.GET: current, emit.NEW: new_stream, emit.XEDGE: helpers.exception_edge,
            emit.XCOUNT: helpers.exception_edge_count, **LOOP_OBJECTS, emit.COUNTS: state.file_counts.__getitem__, emit.EDGES: edges,
            emit.INC: increment,
            emit.RERAISE_MARK: sys.exception,
            emit.RERAISE_MARK_GUARD: sys.exception, emit.NO_TB: _NoTraceback(), emit.SKIP: bool, emit.VARS: vars,
            emit.TYPE: type, emit.ISSUBCLASS: issubclass, emit.GROUP: BaseExceptionGroup,
            emit.STAR_HOLDER: BaseExceptionGroup("wholetrace", [Exception()]),
            emit.RECURSION_ERROR: RecursionError, emit.EXC_INFO: sys.exc_info, emit.TRACEBACK: traceback_of,
            emit.MEMBERS: members_of, emit.BUILTIN_EXCEPTIONS: static_exception_classes(),
            emit.SLOT: held.get, emit.NO_SLOT: NoSlot(), emit.FORGET: held.pop, emit.FRAME: _getframe,
            emit.ID: id, emit.ROOT: streams.root.get, emit.DRIVEN_GET: driven.get, emit.DRIVEN_SET: driven.__setitem__}

