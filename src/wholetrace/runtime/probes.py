"""Run-time support called by instrumented code: per-thread/task streams, exception edges, for wrappers."""

from __future__ import annotations

import sys
import threading
from array import array
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import CodeType, TracebackType
from typing import Any, AsyncIterator, Callable, Iterable, Iterator

from wholetrace.ids import EXIT
from wholetrace.events import EXC, RERAISE, XCOUNT, arg_code, enter_code

Append = Callable[[int], None]

#: The append method of the stream of the running thread or asyncio task.
CURRENT: ContextVar[Append | None] = ContextVar("wholetrace_stream", default=None)

#: Count modes: the recording's counters, indexed by global counter id, shared by all
#: threads (``_wt_C`` to instrumented code).  ``_wt_C[k] += 1`` is never interrupted by a
#: thread switch in CPython 3.11: none of its instructions checks the eval breaker, where
#: the GIL changes hands (docs/design.md, "count probes").  The list only grows.
COUNTERS: list[float] = []


def increment(k: int) -> None:
    """The expression form of a counter probe (``while`` tests, ``for`` iterables)."""
    COUNTERS[k] += 1.0


@dataclass
class Stream:
    """One event stream: an OS thread or an asyncio task."""

    sid: int
    kind: str
    name: str
    thread_ident: int | None
    parent: int | None
    buf: array = field(default_factory=lambda: array("i"))
    flushed: int = 0


class Streams:
    """The streams of one recording; new ones are made lazily on first use in a thread or task."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.all: list[Stream] = []
        self.by_append: dict[int, Stream] = {}
        self.on_new: Callable[[Stream], None] | None = None

    def new(self) -> Append:
        """Create the stream of the current thread or task and make it current; return its append."""
        kind, name, parent = "thread", threading.current_thread().name, None
        aio = sys.modules.get("asyncio")
        if aio is not None:
            try:
                task = aio.current_task()
            except RuntimeError:
                task = None
            if task is not None:
                kind, name = "task", task.get_name()
                parent = getattr(task, "_wt_parent", None)
        with self.lock:
            st = Stream(len(self.all), kind, name, threading.get_ident(), parent)
            self.all.append(st)
        append = st.buf.append
        self.by_append[id(st.buf)] = st
        CURRENT.set(append)
        if self.on_new is not None:
            self.on_new(st)
        return append

    def current_sid(self) -> int | None:
        a = CURRENT.get()
        if a is None:
            return None
        st = self.by_append.get(id(a.__self__))  # type: ignore[attr-defined]
        return None if st is None else st.sid


class ExceptionSites:
    """Maps (code, instruction offset) of a traceback entry to a statement id of the function."""

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
        if 0 <= lasti // 2 < len(positions):
            line, _end, col, _ecol = positions[lasti // 2]
            if line is not None:
                at = (line, col or 0)
                for l0, c0, l1, c1, s in self.spans.get(fid, ()):
                    if (l0, c0) <= at <= (l1, c1):
                        sid = s
                        break
        self.cache[key] = sid
        return sid


STREAMS = Streams()
SITES = ExceptionSites()


def new_stream() -> Append:
    return STREAMS.new()


_UNSET: Any = object()


def exception_edge(fid: int, a: Append | None | bool, handler: int = -1, reraise_site: int | None = None,
                   held: Any = _UNSET) -> Any:
    """Record EXC <statement> in the current stream; called first thing in every handler.

    ``a`` is the caller's append method; ``None`` means the generator was suspended (an
    exception was thrown in at a ``yield``), so ENTER is recorded first; ``False`` means a
    class body (which keeps no local).  Returns the append method.  Witness modes pass
    ``handler``, the handler's block id (-1 if the exception leaves the activation), appended
    after the record (blocks mode records it by the handler's own probe); in a body that can
    re-raise also ``reraise_site`` and ``held`` (see :func:`_origin`): a re-raise is recorded
    as RERAISE <statement> <re-raise site>, and with ``held`` the new held traceback is returned
    too, as (append, traceback).
    """
    cur = CURRENT.get() or STREAMS.new()
    if a is None:
        cur(enter_code(fid))
    sid, raised, now_held = _origin(fid, reraise_site, None if held is _UNSET else held, handler >= 0)
    if raised != sid:
        cur(RERAISE)
        cur(sid)
        cur(raised)
    else:
        cur(EXC)
        cur(sid)
    if handler >= 0:
        cur(handler)
    return cur if held is _UNSET else (cur, now_held)


#: Module and class bodies (which keep no locals): (thread, fid) -> (last re-raise site passed,
#: traceback of the last exception caught), while the body runs.
NAMESPACE_RERAISE: dict[tuple[int, int], tuple[int, TracebackType | None]] = {}


def note_reraise(fid: int, stmt: int) -> None:
    """A module or class body passed re-raise site ``stmt``; -1: it starts or ends (forget all)."""
    key = (threading.get_ident(), fid)
    if stmt < 0:
        NAMESPACE_RERAISE.pop(key, None)
    else:
        NAMESPACE_RERAISE[key] = (stmt, NAMESPACE_RERAISE.get(key, (-1, None))[1])


def _origin(fid: int, reraise_site: int | None, held: TracebackType | None,
            keep: bool) -> tuple[int, int, TracebackType | None]:
    """(the statement the handled exception's traceback points at in this frame, the statement
    that raised it, the traceback the frame holds next).

    A re-raise (bare ``raise``, the end of a ``finally``, a ``with`` exit) leaves the head of
    the exception's traceback as it was, while raising anew, even the same object
    (``raise e``), adds a new entry for the frame.  So the frame holds the head it saw at its
    last handler (``held``, while the exception stays in the frame: ``keep``), and an
    exception whose head is that one was re-raised, from the last re-raise site the frame
    passed (``reraise_site``; -2: a module or class body, see ``NAMESPACE_RERAISE``).
    ``reraise_site`` None (blocks mode, or a body without re-raise sites): not asked.
    The frame drops the held traceback when an ``except`` body ends and when it ends
    itself, so what the traceback refers to does not outlive the frame.
    """
    exc = sys.exception()
    tb = exc.__traceback__ if exc is not None else None
    if tb is None:
        return -1, -1, None
    src = SITES.resolve(fid, tb.tb_frame.f_code, tb.tb_lasti)
    if reraise_site is None:
        return src, src, None
    namespace = reraise_site == -2
    if namespace:
        key = (threading.get_ident(), fid)
        reraise_site, held = NAMESPACE_RERAISE.get(key, (-1, None))
    raised = reraise_site if held is tb and reraise_site >= 0 else src
    now_held = tb if keep else None
    if namespace:
        NAMESPACE_RERAISE[key] = (reraise_site, now_held)
    return src, raised, now_held


def exception_edge_count(fid: int, dst: int, reraise_site: int, held: TracebackType | None = None) -> TracebackType | None:
    """Count modes: record XCOUNT fid, source statement, target block at a handler entry (the
    source is the statement that raised, see :func:`_origin`); returns the traceback to hold."""
    cur = CURRENT.get() or STREAMS.new()
    _src, raised, now_held = _origin(fid, reraise_site, held, dst != EXIT)
    cur(XCOUNT)
    cur(arg_code(fid))
    cur(arg_code(raised))
    cur(arg_code(dst))
    return now_held


def _record(values: tuple[int, ...], count: bool) -> None:
    if count:
        for v in values:
            COUNTERS[v] += 1.0
        return
    a = CURRENT.get() or STREAMS.new()
    for v in values:
        a(v)


def for_wrapper(iterable: Iterable[Any], values: tuple[int, ...], count: bool = False) -> Iterator[Any]:
    """Iterate ``iterable``, recording ``values`` (appended, or counters incremented if
    ``count``) before every ``__next__`` (loops whose ``continue`` runs finally/with code
    before the next iteration)."""
    it = iter(iterable)
    while True:
        _record(values, count)
        try:
            item = next(it)
        except StopIteration:
            return
        yield item


async def afor_wrapper(iterable: Any, values: tuple[int, ...], count: bool = False) -> AsyncIterator[Any]:
    """The async twin of :func:`for_wrapper`."""
    it = iterable.__aiter__()
    while True:
        _record(values, count)
        try:
            item = await it.__anext__()
        except StopAsyncIteration:
            return
        yield item


RUNTIME = {"_wt_get": CURRENT.get, "_wt_new": new_stream, "_wt_x": exception_edge,
           "_wt_xc": exception_edge_count, "_wt_rr": note_reraise, "_wt_for": for_wrapper, "_wt_afor": afor_wrapper,
           "_wt_C": COUNTERS, "_wt_inc": increment}


def install() -> None:
    """Make the run-time names visible to all instrumented code (as builtins)."""
    import builtins
    for name, value in RUNTIME.items():
        setattr(builtins, name, value)



def patch_asyncio(aio: Any) -> None:
    """Give every asyncio task its own stream: tasks start in a context without one."""
    base = aio.tasks.Task
    if getattr(base, "_wt_patched", False):
        return

    class Task(base):  # type: ignore[misc, valid-type]
        _wt_patched = True

        def __init__(self, coro: Any, *, loop: Any = None, name: str | None = None,
                     context: Any = None) -> None:
            import contextvars
            if context is None:
                context = contextvars.copy_context()
            self._wt_parent = STREAMS.current_sid()
            context.run(CURRENT.set, None)
            super().__init__(coro, loop=loop, name=name, context=context)

    Task.__name__ = Task.__qualname__ = base.__name__
    Task.__module__ = base.__module__
    aio.tasks.Task = Task
    aio.Task = Task
