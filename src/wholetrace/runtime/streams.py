"""The event streams of one recording: one per OS thread and per asyncio task, made on first use."""

from __future__ import annotations

import _thread
import sys
from _contextvars import ContextVar, copy_context   # what contextvars re-exports (its module: ~0.8 M instructions)
from _operator import methodcaller
from _weakref import ref

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


class Unowned(_thread.RLock):   # type: ignore[misc]
    """The lock of ``Streams.unowned``: no thread holds it.  A constant of instrumented code,
    so code pickled by value names it by reference (``runtime.shipped``)."""

    __slots__ = ()

    def __reduce__(self) -> tuple[Any, ...]:
        from wholetrace.runtime.shipped import by_reference
        return by_reference(self)


class _Life:
    """What a thread's ``Streams.alive`` holds while it lives: dropped in the ending thread
    (its thread state's dict is cleared, a fork child's other threads' states too) before its
    ident can be given to another thread."""

    __slots__ = ("__weakref__",)


class _Revoke(ref):   # type: ignore[type-arg]
    """A weak reference to a thread's :class:`_Life` whose callback releases the thread's
    owner lock: ``methodcaller`` reads the ``_release_save`` slot (the lock's, unchecked owner)
    and calls it, all in C: a profiler or tracer of the ending thread sees no call.
    ``Streams.revoke`` disarms it (``int``: a call that does nothing) when it releases first."""

    __slots__ = ("_release_save",)


_RELEASE = methodcaller("_release_save")


class Streams:
    """The streams of one recording.

    ``current`` holds the append method of the running thread's or task's stream (its
    ``get`` is a constant of instrumented code), ``owned`` the pair ``(owner, append)``:
    ``owner`` a ``_thread.RLock`` the thread that made the stream holds for its life.  Threads
    start with an empty context, so their first instrumented call makes their stream; asyncio
    tasks start in a context where both are unset too (:meth:`patch_asyncio`), with ``parent``
    naming the stream that made them.  A context copied in one thread can run in another
    (``asyncio.to_thread``, ``call_soon_threadsafe``, ``Context.run`` in a pool): there
    ``owner._is_owned()`` is false, and a function's prologue makes a stream of its own thread
    in that context (:meth:`here`; docs/design.md, "A context copied into another thread,
    wave 23").  ``unowned``: what ``owned`` gives where it is unset.
    """

    #: inert streams (``runtime.shipped``): what ``new`` returns, an append that keeps nothing
    sink: Append | None = None

    def __init__(self) -> None:
        self.current: ContextVar[Append | None] = ContextVar("wholetrace_stream", default=None)
        self.owned: ContextVar[tuple[Any, Append] | None] = ContextVar("wholetrace_owned", default=None)
        #: the ``owned`` of a context where it is unset: an RLock no thread holds, no append
        self.unowned: tuple[Any, Append | None] = (Unowned(), None)
        #: thread ident -> the RLock that thread holds, owner of the streams made in it; ``alive.owner``
        #: the same, in the thread; ``alive.life`` a :class:`_Life` whose end (the thread's)
        #: releases the lock through ``guards[ident]``: an ended thread's streams are no one's, a
        #: later thread given its ident (ident reuse: short threads one after another, a fork
        #: child's threads) does not append to them
        self.owners: dict[int, Any] = {}
        self.guards: dict[int, _Revoke] = {}
        self.alive = _thread._local()
        #: (a stream's append, a thread that ran a context naming it) -> the ``owned`` pair of the
        #: stream made for it there: every copy of one context run in another thread (a callback of
        #: ``call_soon_threadsafe`` each, a pool's jobs) shares one stream of that thread
        self.adopted: dict[tuple[Append, int], tuple[Any, Append]] = {}
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
        """Create the stream of the current thread or task and make it current; return its append.
        In a context whose stream another thread made, the stream this thread made for that
        one, if any."""
        if self.sink is not None:   # inert streams: code pickled from another recording (runtime.shipped)
            return self.sink
        me = _thread.get_ident()
        owner = getattr(self.alive, "owner", None)
        if owner is None:
            owner = self._own(me)
        foreign = self.owned.get(self.unowned)
        if foreign[1] is not None and foreign[0] is not owner:
            mine = self.adopted.get((foreign[1], me))
            if mine is not None and mine[0] is owner:   # (not an ended thread's with this ident)
                self.owned.set(mine)
                self.current.set(mine[1])
                return mine[1]
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
        pair = (owner, append)
        if foreign[1] is not None and foreign[0] is not owner:
            self.adopted[(foreign[1], me)] = pair
        self.owned.set(pair)
        self.current.set(append)   # before on_new: a probe it runs (a program's audit hook) finds its stream
        if self.on_new is not None:
            self.on_new(st)
        return append

    def _own(self, me: int) -> Any:
        """This thread's first stream: its owner lock, held for its life, released when it ends."""
        self.revoke(me)   # (an ended thread with this ident whose end did not release it)
        owner = self.alive.owner = self.owners[me] = _thread.RLock()
        owner.acquire()   # held for the thread's life: ``_is_owned()`` is true in it only
        life = self.alive.life = _Life()
        guard = self.guards[me] = _Revoke(life, _RELEASE)
        guard._release_save = owner._release_save
        return owner

    def revoke(self, ident: int) -> None:
        """Release the owner lock of the (ended) thread ``ident`` unless its end did."""
        guard = self.guards.pop(ident, None)
        if guard is not None and guard() is not None:   # (a fired guard is dead: released)
            guard._release_save = int   # its end, if it comes, does nothing
            self.owners[ident]._release_save()

    def after_fork(self, me: int) -> None:
        """In a fork child (``me`` the forking thread): the other threads are gone; their locks
        are no one's (their ends ran as the child cleared their states, on the versions that
        do) and their adopted streams are dropped."""
        for ident in list(self.guards):
            if ident != me:
                self.revoke(ident)
        self.owners = {i: o for i, o in self.owners.items() if i == me}
        self.adopted = {k: v for k, v in self.adopted.items() if k[1] == me}

    def mine(self) -> Append | None:
        """The append of the running context's stream if this thread made it, else None."""
        owner, append = self.owned.get(self.unowned)
        return append if owner._is_owned() else None

    def here(self) -> Append:
        """The append of the running context's stream, made for this thread if need be (what
        a function's prologue does inline: ``instrument.probecode.Emitter.stream``)."""
        owner, append = self.owned.get(self.unowned)
        return append if owner._is_owned() else self.new()

    def current_sid(self) -> int | None:
        a = self.mine()
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
                context.run(streams.owned.set, streams.unowned)
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
