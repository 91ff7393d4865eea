"""``full`` mode at run time: the value probes (appends to per-thread buffers) and the value log.

A probe extends the thread's *event list* by one record, two ints: a marker (the slot and
the value's tag, below every event) and a payload (an int, bool or None itself, an object's
serial, or 0 for a float, str, bytes or complex, whose value goes to the stream's side list,
held until the next flush).  So each record has an exact position in the control flow; the
flusher (``runtime.valueflush``) hands each chunk to the split server, which stores the events
alone (a plain ``blocks`` trace) and the records as typed tokens (docs/design.md, "WET capture
log", "WET capture cost", "Full mode's split server, wave 18").

Object serials survive ``id()`` reuse: a weak reference drops the ``id -> serial`` entry when
the object dies; objects that take no weak reference (list, dict, set, tuple, ...) are held
by the recording and released, on the program's thread, once the recording is their only
owner (checked whenever the number held has doubled).
"""

from __future__ import annotations

import _thread
import itertools
import time
import sys
from _weakref import ref as _weak_ref   # weakref.ref itself; the weakref module is not imported at start-up
from wholetrace.store.cmods import ArrayType as array   # cmods' (store/cmods.py): never the program's
from contextvars import ContextVar

from wholetrace.runtime.unheld import unheld
from wholetrace.runtime.valueflush import PURE_SECONDS, Flushing

try:   # not hashlib, whose import loads OpenSSL: hashlib.blake2b is this built-in module's
    from _blake2 import blake2b
except ImportError:                     # pragma: no cover - a build without the built-in module
    from hashlib import blake2b         # type: ignore[assignment]

TYPE_CHECKING = False   # typing (and re, which it imports) is not imported at start-up (docs/design.md)
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any, Callable


# token tags
NONE, BOOL, INT, FLOAT, STR, BYTES, BIGINT, COMPLEX, OBJ = range(9)
#: Tag of a *switch* record (no value has it): the probe that finds another thread's stream
#: than the previous probe's appends a switch record first, with ``n`` from one counter of the
#: recording, so the switches order the threads' records (docs/design.md, "WET threads").
#: The flusher stores them apart (``wet.switch``), never as value records.
SWITCH_TAG = 15
#: A record is two items of its thread's *event list*: a marker ``_MARK[tag] - slot`` (below
#: every event: events are int32) and an int64 payload (int, bool as 0/1, None as 0, object
#: serial, switch number; 0 for float, str, bytes and complex, whose value waits in the
#: stream's side list).  An int beyond 64 bits is its own payload: the flusher makes it a content.
_SHIFT = 40
_SLOT_MASK = (1 << _SHIFT) - 1
_MARK = {t: -((t + 1) << _SHIFT) for t in (NONE, BOOL, INT, FLOAT, STR, BYTES, BIGINT, COMPLEX, OBJ, SWITCH_TAG)}
#: Marker base of each immediate type (float, str, bytes, complex: the value on the side list).
_MARK_OF = {type(None): _MARK[NONE], bool: _MARK[BOOL], int: _MARK[INT], float: _MARK[FLOAT],
            str: _MARK[STR], bytes: _MARK[BYTES], complex: _MARK[COMPLEX]}
_MARK_MAX = _MARK[NONE]          # every marker is at or below it, every event above
#: (The probes look a type up only when its metaclass is exactly ``type``: hashing it then runs no
#: program ``__hash__``/``__eq__`` (explore21 HIGH-9); cheaper than by ``id()``, review21f MED-1.)
#: A class's ``__module__``, ``__qualname__``, ``__mro__`` as ``type`` stores them: the attribute
#: would go through a metaclass's descriptors (a property: program code, explore21 HIGH-9)
_MODULE, _QUALNAME, _MRO = (type.__dict__[k].__get__ for k in ("__module__", "__qualname__", "__mro__"))
#: An object's key in the serial tables: its address (rotated, one-to-one), as ``id()`` but no
#: audit event (a program's hook ran for every probe, its own probes too: no end; audit22 open 2)
address = object.__hash__


def type_name(t: type) -> str:
    """``module.qualname`` of class ``t``, read without running the program's code (a
    ``__module__`` its class body set to no str: ``?``)."""
    try:
        m = _MODULE(t)
    except AttributeError:
        m = None
    return f"{m if type(m) is str else '?'}.{_QUALNAME(t)}"


class _Ref(_weak_ref):  # type: ignore[type-arg]
    """A weak reference that knows the id its object had (the key of its serial)."""

    __slots__ = ("i",)


def _release(pins: dict[int, Any], serials: dict[int, int]) -> int:
    """Drop every object of ``pins`` that nothing but ``pins`` references, and its serial;
    return how many were dropped.  (A listing of ``pins.items()`` held one more reference,
    in the iterator's reused tuple, than the old test allowed: nothing was ever dropped.)"""
    dropped = 0
    for i in list(pins):
        o = pins.get(i)
        if o is not None and sys.getrefcount(o) <= _ONLY_PINNED:
            pins.pop(i, None)
            serials.pop(i, None)
            dropped += 1
    return dropped


def _pinned_count() -> int:
    """``sys.getrefcount`` of an object that only ``pins`` holds, seen from ``_release``'s loop."""
    pins = {0: [None]}
    for i in list(pins):
        o = pins.get(i)
        return sys.getrefcount(o)
    return 3


_ONLY_PINNED = _pinned_count()


def marker(tag: int, slot: int) -> int:
    """The first item of a record of ``tag`` (``SWITCH_TAG``: a switch record) for ``slot``."""
    return _MARK[tag] - slot
_PIN_MIN = 4096
_NO_STREAM = object()      # no probe has run yet (``wt.a`` may be None: never equal to it)
_MEMO_BYTES = 64 << 20     # content memo (value -> hash) cleared past this many bytes of contents


def content_hash(data: bytes) -> int:
    """64-bit content hash (signed) of a str/bytes/big-int value's bytes."""
    return int.from_bytes(blake2b(data, digest_size=8).digest(), "little", signed=True)


class ValueLog(Flushing):
    """The value log of one recording: per-stream buffers, object serials, distinct contents
    (the flusher's side: ``runtime.valueflush``)."""

    unheld = staticmethod(unheld)

    def __init__(self, writer: Any, current_stream: Callable[[], Callable[[int], None]]) -> None:
        self.writer = writer
        self.current_stream = current_stream         # the running thread's event append (made if needed)
        # probe state of the running thread or task: (event list append, side append, event list extend)
        self.current: ContextVar[tuple[Callable[[Any], None], ...] | None] = ContextVar(
            "wholetrace_values", default=None)
        self.lists: dict[int, list[Any]] = {}          # stream id -> its side list (values not in the record)
        self.carry: dict[int, list[int]] = {}          # stream id -> a marker whose payload came after a flush
        self.side_done: dict[int, Any] = {}            # stream id -> int64 payloads of its side list's first items
        self.by_buffer: dict[int, Any] = {}            # address(event list) -> probe state
        self.cf_done: dict[int, int] = {}              # stream id -> events stored so far
        self.seq: dict[int, int] = {}
        self.rec_done: dict[int, int] = {}             # stream id -> value records stored so far
        self.clock = itertools.count(1)                # switch numbers
        self.serials: dict[int, int] = {}              # address(obj) -> serial, while obj lives
        self.refs: dict[int, Any] = {}
        self.pins: dict[int, Any] = {}
        self.loose: dict[tuple[int, int], int] = {}    # (address, its type's) -> serial, never held
        self.pin_limit = _PIN_MIN
        self.counter = itertools.count(1)
        self.new_objects: list[tuple[int, type]] = []  # (serial, type) handed out since the last flush
        self.new_classes: list[tuple[int, type]] = []  # (serial, class) of the classes among them
        self.parents = array("q")                      # serial, parent serial pairs (flushed)
        self.types: dict[int, tuple[type, int]] = {}   # address(type) -> (type, its name's index)
        self.type_names: list[str] = []
        self.objects = array("q")                      # serial, type index pairs (flushed)
        self.contents: dict[int, tuple[int, bytes]] = {}
        # value -> content hash, one dict per tag (2**70 and complex(2**70) are equal keys);
        # keys are immutable values whose equal values have equal contents (not complex)
        self.memo: dict[int, dict[Any, int]] = {t: {} for t in (STR, BYTES, BIGINT)}
        self.memo_bytes = 0
        self.records = 0
        self.raw_bytes = 0
        self.lock = _thread.allocate_lock()
        self.layout_marked = False
        self.dead = self._on_dead()
        #: the split server (``runtime.splitserver``): None splits in the flusher's thread
        self.server: Any = None
        self.splits = [0, 0]                           # chunks split by the server, in the flusher's thread
        self.child = False                             # a fork child's log (``forked``)

    def serve(self) -> None:
        """Fork the split server now (before the program's first line: one thread)."""
        from wholetrace.runtime import splitserver
        self.server = splitserver.start() if splitserver.WANTED else None

    def forked(self, writer: Any, renumbered: dict[int, int]) -> None:
        """In a fork child (``runtime.children``, flusher stopped): store to the child's part
        ``writer`` (the parent's stays locked in the child: its value chunks hung the child) and
        key each kept stream's state by its new id (``renumbered``: parent id -> child id).  The
        part's events of a stream start at 0, so do its chunks and record counts; serials,
        contents and the object table go on (the child's records name the parent's objects).
        ``splitpure`` is imported here, in the child's only thread: not by its flusher, beside the
        program's threads (``sys.modules`` changing under them)."""
        from wholetrace.runtime import splitpure  # noqa: F401
        self.writer = writer
        self.child, self.asked, self.parts = True, None, None   # (``Flushing.prepare``; the root sweeps)
        self.pure_until = time.monotonic() + PURE_SECONDS       # split in Python until then, or a server
        self.lock = _thread.allocate_lock()
        self.layout_marked = False
        self.records = self.raw_bytes = 0
        self.splits = [0, 0]
        for name in ("lists", "carry", "side_done"):
            old = getattr(self, name)
            setattr(self, name, {renumbered[sid]: v for sid, v in old.items() if sid in renumbered})
        new = set(renumbered.values())
        self.cf_done = dict.fromkeys(new, 0)
        self.seq = dict.fromkeys(new, 0)
        self.rec_done = dict.fromkeys(new, 0)

    def events_in(self, sid: int, buf: list[Any]) -> int:
        """How many of stream ``sid``'s unstored items are events (a fork child's base: the rest
        are value records, two items each, the first a payload if a marker was carried)."""
        n, j, end = 0, 1 if self.carry.get(sid) else 0, len(buf)
        while j < end:
            if buf[j] <= _MARK_MAX:
                j += 2
            else:
                n += 1
                j += 1
        return n

    # -- streams
    def on_new(self, sid: int, append: Callable[[int], None]) -> None:
        """A stream was made in the running context: give it its probe state there.  ``append``:
        the one its trace probes hold (functions pass it to ``value-in``, compared by identity)."""
        buf = append.__self__                            # type: ignore[attr-defined]
        side: list[Any] = []
        state = (append, side.append, buf.extend)
        self.lists[sid] = side
        self.by_buffer[address(buf)] = state
        self.cf_done[sid] = 0
        self.seq[sid] = 0
        self.rec_done[sid] = 0
        self.current.set(state)

    def attach(self) -> tuple[Callable[[Any], None], ...]:
        """The running context has no probe state yet (its stream was made elsewhere)."""
        append = self.current_stream()
        got = self.by_buffer[address(append.__self__)]         # type: ignore[attr-defined]
        self.current.set(got)
        return got

    # -- identities
    def serial(self, obj: Any, i: int | None = None) -> int:
        """The serial of ``obj`` (``i``: its ``address``, which the probes already took), a new
        one if it has none.  Looked up again: a collection between the probe's look-ups and this
        call can run a finalizer whose probes gave ``obj`` one."""
        if i is None:
            i = address(obj)
        s = self.serials.get(i)
        if s is not None:
            return s
        if self.loose:               # a live frame, traceback, ... (empty until the first one)
            s = self.loose.get((i, address(type(obj))))
            if s is not None:
                return s             # (or the serial of the last one of its type at this address)
        s = next(self.counter)
        self.serials[i] = s
        try:
            r = self.refs[i] = _Ref(obj, self.dead)
            r.i = i
        except TypeError:
            t = type(obj)
            if self.unheld(t, obj):   # never held (``runtime.unheld``)
                self.serials.pop(i, None)
                self.loose[(i, address(t))] = s
            else:
                self.pins[i] = obj
                if len(self.pins) >= self.pin_limit:
                    self._sweep()
        self.new_objects.append((s, type(obj)))
        if issubclass(type(obj), type):   # (isinstance would read a __class__ the program defined)
            self.new_classes.append((s, obj))
        return s

    def _on_dead(self) -> Callable[[Any], None]:
        """The one callback of every weak reference (a closure per object allocated three
        objects per serial handed out, and their collections traversed the event lists)."""
        serials, refs = self.serials, self.refs

        def dead(ref: Any) -> None:
            serials.pop(ref.i, None)
            refs.pop(ref.i, None)
        return dead

    def _sweep(self) -> None:
        """Release held objects the program no longer references (their id may be reused).

        Over a snapshot of the ids: the loop allocates, a collection it triggers can run the
        program's finalizers, and their probes can pin more objects (or sweep) meanwhile."""
        _release(self.pins, self.serials)
        self.pin_limit = max(_PIN_MIN, 2 * len(self.pins))

    # -- probes
    def probes(self) -> dict[str, Callable[..., Any]]:
        """The value probes, by placeholder name (``instrument.wetemit``): constants of the
        instrumented code, added to the recording's run-time objects."""
        get = self.current.get
        attach = self.attach
        serial = self.serial
        tagof = _MARK_OF.get
        known = self.serials.get
        addr = address
        loose = self.loose                             # (never rebound: tested for emptiness)
        lget = loose.get
        clock = self.clock
        m_obj, m_int, m_float, m_switch = _MARK[OBJ], _MARK[INT], _MARK[FLOAT], _MARK[SWITCH_TAG]

        # the probe state of the latest probe's stream, its event list append and side list append
        prev: tuple[Callable[[Any], None], ...] | None = None
        pa: Any = _NO_STREAM
        pside: Any = None

        def value(k: int, x: Any) -> Any:
            # The deepest frame the program reaches can call this probe (one call of headroom,
            # runtime.recursion) but not what it calls: at the limit the record is dropped and
            # the program goes on as without wholetrace.  What can fail runs before the first
            # append; the appends are C calls at the depth of ``get``: all or none happen.  A
            # flush may fall between a marker and its payload: the flusher carries the marker
            # over to the next chunk.  Cheapest tests first (ints, then floats: most records).
            nonlocal prev, pa, pside
            try:
                s = get()
                if s is None:
                    s = attach()
                t = type(x)
                if t is int:                           # beyond 64 bits: the flusher sees to it
                    m = m_int - k
                    v = x
                elif t is float:
                    m = m_float - k
                    v = s                              # ``s``: the value goes on the side
                else:
                    m = tagof(t) if type(t) is type else None   # (``_MARK_OF``: no program code)
                    if m is None:
                        i = addr(x)
                        v = known(i)
                        if v is None and loose:        # a live frame, traceback, ...: one dict hit
                            v = lget((i, addr(t)))
                        if v is None:
                            v = serial(x, i)
                        m = m_obj - k
                    elif m > m_int:                    # None, bool: the payload itself
                        m -= k
                        v = x or 0
                    else:                              # str, bytes, complex: on the side
                        m -= k
                        v = s
                # The appends of one record share a line: a program's tracer (a ``line``
                # event) cannot run between them and put its own records inside this one.
                a = s[0]
                if s is not prev: prev, pa, pside = s, a, s[1]; a(m_switch); a(next(clock))  # another thread ran since the last probe
                if v is not s: a(m); a(v)
                else: s[1](x); a(m); a(0)
            except RecursionError:
                pass
            return x

        def value_in(k: int, x: Any, a: Any) -> Any:
            # ``value`` in a function: ``a`` is its local ``wt.a``, the append of its stream
            # (read after ``x``: a generator may resume in another thread; None once a thrown
            # exception resumed it, until its handler's probe fetched the stream again).  The
            # stream of the latest probe needs no look-up; another one goes through ``value``.
            # The test ``a is pa`` comes right before the appends, with no call in between
            # (a call can let another thread run and probe), and ``prev, pa, pside`` change
            # together in one statement without a call (no thread switch between the stores).
            try:
                t = type(x)
                # (each test and its appends on one line: no tracer runs between, as in ``value``)
                if t is int:
                    if a is pa: a(m_int - k); a(x); return x
                elif t is float:
                    if a is pa: pside(x); a(m_float - k); a(0); return x
                else:
                    m = tagof(t) if type(t) is type else None   # (``_MARK_OF``: no program code)
                    if m is None:
                        i = addr(x)
                        v = known(i)
                        if v is None and loose:        # a live frame, traceback, ...: one dict hit
                            v = lget((i, addr(t)))
                        if v is None:
                            v = serial(x, i)
                        if a is pa: a(m_obj - k); a(v); return x
                    elif m > m_int:
                        if a is pa: a(m - k); a(x or 0); return x
                    elif a is pa: pside(x); a(m - k); a(0); return x
                return value(k, x)
            except RecursionError:
                return x

        def many(s: tuple[Callable[[Any], None], ...], k: int, xs: tuple[Any, ...]) -> None:
            # ``value`` for each of ``xs`` under consecutive slots, into stream state ``s``, in
            # one ``extend`` (what can fail runs first)
            nonlocal prev, pa, pside
            out = []
            side = []
            for x in xs:
                t = type(x)
                m = tagof(t) if type(t) is type else None
                if m is None:
                    i = addr(x)
                    v = known(i)
                    if v is None and loose:
                        v = lget((i, addr(t)))
                    out.append(m_obj - k)
                    out.append(serial(x, i) if v is None else v)
                elif m >= m_int:                       # int (any size: the flusher), None, bool
                    out.append(m - k)
                    out.append(x or 0)
                else:
                    side.append(x)
                    out.append(m - k)
                    out.append(0)
                k += 1
            if s is not prev:
                prev, pa, pside = s, s[0], s[1]
                out[:0] = (m_switch, next(clock))
            s[1].__self__.extend(side); s[2](out)   # type: ignore[attr-defined]  # one line: as in ``value``

        def values(k: int, *xs: Any) -> None:
            try:
                many(get() or attach(), k, xs)
            except RecursionError:
                pass

        def values_in(k: int, a: Any, *xs: Any) -> None:
            # ``values`` in a function (``a``: as for ``value_in``)
            try:
                many(prev if a is pa else get() or attach(), k, xs)  # type: ignore[arg-type]
            except RecursionError:
                pass

        from wholetrace.instrument import misspath
        if misspath.program_shadows_stdlib():   # an enum.py beside the script (review15c)
            misspath.load()   # wetemit imports ast: the standard library's
            if self.server is None:   # the flusher's split imports it (the server imports its own)
                misspath.import_past_program("numpy")
        from wholetrace.instrument.wetemit import VALUE, VALUE_IN, VALUES, VALUES_IN

        return {VALUE: value, VALUES: values, VALUE_IN: value_in, VALUES_IN: values_in}

    def _content(self, x: Any, tg: int) -> int:
        """Hash a str/bytes/big int/complex value's content, once per distinct value: the same
        string is read again and again (a parser's source text, recorded as the object of
        ``src[pos]``), and hashing it anew cost a hash of its whole length per record."""
        if tg == STR:
            data = x.encode("utf-8", "surrogatepass")
        elif tg == BYTES:
            data = x
        elif tg == BIGINT:
            data = str(x).encode()
        else:
            data = repr(x).encode()
        h = content_hash(bytes([tg]) + data)
        self.contents.setdefault(h, (tg, data))
        if self.memo_bytes > _MEMO_BYTES:              # bound what the memo keeps alive
            for m in self.memo.values():
                m.clear()
            self.memo_bytes = 0
        if tg != COMPLEX:
            self.memo[tg][x] = h
            self.memo_bytes += len(data) + 64
        return h

    def _objects(self) -> None:
        """Move the serials handed out since the last flush to the object table, and link each
        object to the serial of the class its attribute lookups fall back to (``parents``): an
        instance to its class, a class to its nearest base with a serial (docs/design.md,
        "WET class attributes")."""
        new, classes = self.new_objects, self.new_classes
        n, m = len(new), len(classes)
        items, cls_items = new[:n], classes[:m]
        del new[:n]
        del classes[:m]
        known = self.serials.get                       # the types below are alive: ids are valid
        last: Any = None                               # (objects come in runs of one type)
        for s, t in items:
            if t is not last:
                a = address(t)
                got = self.types.get(a)                # (the type is held: its id stays its own)
                if got is None:
                    got = self.types[a] = (t, len(self.type_names))
                    self.type_names.append(type_name(t))
                ti, last = got[1], t
            self.objects.append(s)
            self.objects.append(ti)
            p = known(a)
            if p is not None:
                self.parents.append(s)
                self.parents.append(p)
        for s, c in cls_items:
            for b in _MRO(c)[1:]:
                p = known(address(b))
                if p is not None:
                    self.parents.append(s)
                    self.parents.append(p)
                    break
