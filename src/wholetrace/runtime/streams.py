"""The event streams of one recording: one per OS thread and per asyncio task, made on first use."""

from __future__ import annotations

import _thread
import sys
from _contextvars import ContextVar, copy_context   # what contextvars re-exports (its module: ~0.8 M instructions)

from wholetrace.plain import Record

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any, Callable

    Append = Callable[[int], None]


class Stream(Record):
    """One event stream: an OS thread or an asyncio task.  ``buf``: what the probes appended
    and the flusher has not taken yet: ints, one per event (a list: ``runtime.buffers`` says
    why; the recorder converts it as it flushes)."""

    __slots__ = ("sid", "kind", "name", "thread_ident", "parent", "buf", "flushed")

    def __init__(self, sid: int, kind: str, name: str, thread_ident: int | None, parent: int | None,
                 buf: list[int] | None = None, flushed: int = 0) -> None:
        self.sid = sid
        self.kind = kind
        self.name = name
        self.thread_ident = thread_ident
        self.parent = parent
        self.buf: list[int] = [] if buf is None else buf
        self.flushed = flushed


def thread_name(ident: int, main: int) -> str:
    """The name ``threading`` gives thread ``ident``, read from its table of threads when the
    program has imported it (``threading`` is not imported at start-up, and
    ``current_thread()`` would add a dummy thread the program sees); else ``MainThread`` or
    ``Dummy`` (a thread of ``_thread``)."""
    active = getattr(sys.modules.get("threading"), "_active", None)
    name = getattr(active.get(ident), "name", None) if type(active) is dict else None
    if type(name) is str:
        return name
    return "MainThread" if ident == main else "Dummy"


class Streams:
    """The streams of one recording.

    ``current`` holds the append method of the running thread's or task's stream (its
    ``get`` is a constant of instrumented code).  Threads start with an empty context, so
    their first instrumented call makes their stream; asyncio tasks start in a context where
    it is unset too (:meth:`patch_asyncio`), with ``parent`` naming the stream that made them.
    """

    #: inert streams (``runtime.shipped``): what ``new`` returns, an append that keeps nothing
    sink: Append | None = None

    def __init__(self) -> None:
        self.current: ContextVar[Append | None] = ContextVar("wholetrace_stream", default=None)
        self.parent: ContextVar[int | None] = ContextVar("wholetrace_parent", default=None)
        #: the id of the frame of the running asyncio task's coroutine (``instrument.awaits.hand_flag``)
        #: (in a one-item list, emptied when it starts: no later frame at its address matches)
        self.root: ContextVar[list[int | None]] = ContextVar("wholetrace_root", default=[None])
        self.lock = _thread.allocate_lock()
        #: the main thread's ident (made in it; a fork child's ``runtime.children`` resets it)
        self.main_ident = _thread.get_ident()
        self.all: list[Stream] = []
        #: a stream's ``buf.append`` -> the stream (bound methods of one list are equal, hashed by the list's address)
        self.by_buffer: dict[Append, Stream] = {}
        self.on_new: Callable[[Stream], None] | None = None
        self._asyncio: tuple[Any, type, type] | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled code (cloudpickle: its ``new`` is a constant) names the streams by reference."""
        from wholetrace.runtime.shipped import by_reference
        return by_reference(self)

    def new(self) -> Append:
        """Create the stream of the current thread or task and make it current; return its append."""
        if self.sink is not None:   # inert streams: code pickled from another recording (runtime.shipped)
            return self.sink
        me = _thread.get_ident()
        kind, name, parent = "thread", thread_name(me, self.main_ident), None
        aio = sys.modules.get("asyncio")
        if aio is not None:
            try:
                task = aio.current_task()
            except RuntimeError:
                task = None
            if task is not None:
                kind, name, parent = "task", task.get_name(), self.parent.get()
        with self.lock:
            st = Stream(len(self.all), kind, name, me, parent)
            self.all.append(st)
        append = st.buf.append
        self.by_buffer[append] = st   # (keyed by the append itself: ``id()`` is an audit event)
        self.current.set(append)   # before on_new: a probe it runs (a program's audit hook) finds its stream
        if self.on_new is not None:
            self.on_new(st)
        return append

    def current_sid(self) -> int | None:
        a = self.current.get()
        if a is None:
            return None
        st = self.by_buffer.get(a)
        return None if st is None else st.sid

    def patch_asyncio(self, aio: Any) -> None:
        """Give every asyncio task of this recording its own stream: tasks start in a context
        without one (``asyncio.Task`` is replaced by a subclass until :meth:`unpatch_asyncio`)."""
        if self._asyncio is not None:
            return
        base = aio.tasks.Task
        streams = self
        coroutine = aio.coroutines.types.CoroutineType   # asyncio has imported types

        class Task(base):  # type: ignore[misc, valid-type]
            def __init__(self, coro: Any, **kwargs: Any) -> None:
                context = kwargs.get("context")
                if context is None:
                    context = kwargs["context"] = copy_context()
                context.run(streams.parent.set, streams.current_sid())
                context.run(streams.current.set, None)
                # a coroutine driven by this task is not driven by hand (instrument.awaits); the
                # frame of a coroutine, not of another awaitable (no attribute of the program's read)
                frame = coro.cr_frame if type(coro) is coroutine else None
                context.run(streams.root.set, [None if frame is None else id(frame)])
                super().__init__(coro, **kwargs)

        Task.__name__ = Task.__qualname__ = base.__name__
        Task.__module__ = base.__module__
        Task.__doc__ = base.__doc__
        aio.tasks.Task = aio.Task = Task
        self._asyncio = (aio, base, Task)

    def unpatch_asyncio(self) -> None:
        if self._asyncio is None:
            return
        aio, base, mine = self._asyncio
        if aio.tasks.Task is mine:
            aio.tasks.Task = base
        if aio.Task is mine:
            aio.Task = base
        self._asyncio = None
