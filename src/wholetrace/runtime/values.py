"""``full`` mode at run time: the value probes (appends to per-thread buffers) and the value log.

A probe appends two items to the thread's value list -- the slot id and the value itself
if it is an immutable scalar (held only until the next flush), or ``~slot`` and the
object's serial -- then the marker :data:`VAL` to the thread's event stream, so each record
has an exact position in the control flow.  The flusher takes the markers out of each event
chunk (the stored stream is a plain ``blocks`` trace) and turns the records into typed
tokens (docs/design.md, "WET capture log").

Object serials survive ``id()`` reuse: a weak reference drops the ``id -> serial`` entry when
the object dies; objects that take no weak reference (list, dict, set, tuple, ...) are held
by the recording and released, on the program's thread, once the recording is their only
owner (checked whenever the number held has doubled).
"""

from __future__ import annotations

import hashlib
import itertools
import struct
import sys
import threading
import weakref
from array import array
from contextvars import ContextVar
from typing import Any, Callable

from wholetrace import events

#: The marker of a value record in an event stream (full mode only, never stored; it was -4,
#: the code of ``events.RERAISE``, before: recordings never held it, so nothing to convert).
VAL = events.VAL

#: The slot code of a *switch* record (no slot can have it): the probe that finds the value
#: list of another thread than the previous probe's appends ``SWITCH, n`` first, ``n`` from
#: one counter of the recording, so the switches order the threads' records (docs/design.md,
#: "WET threads").  The flusher stores them apart (``wet.switch``), never as value records.
SWITCH = -(1 << 62)

# token tags
NONE, BOOL, INT, FLOAT, STR, BYTES, BIGINT, COMPLEX, OBJ = range(9)
_IMMEDIATE = frozenset({int, float, bool, type(None), str, bytes, complex})
#: Token tag of each immediate type (complex is the default).
_TYPE_TAG = {int: INT, float: FLOAT, bool: BOOL, type(None): NONE, str: STR, bytes: BYTES}
_PIN_MIN = 4096
_MEMO_BYTES = 64 << 20     # content memo (value -> hash) cleared past this many bytes of contents
_I64 = 1 << 63


def content_hash(data: bytes) -> int:
    """64-bit content hash (signed) of a str/bytes/big-int value's bytes."""
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little", signed=True)


class ValueLog:
    """The value log of one recording: per-stream buffers, object serials, distinct contents."""

    def __init__(self, writer: Any, current_stream: Callable[[], Callable[[int], None]]) -> None:
        self.writer = writer
        self.current_stream = current_stream         # the running thread's event append (made if needed)
        self.current: ContextVar[tuple[Callable[[int], None], list[Any]] | None] = ContextVar(
            "wholetrace_values", default=None)
        self.lists: dict[int, list[Any]] = {}          # stream id -> pending records
        self.by_buffer: dict[int, list[Any]] = {}      # id(event buffer) -> its value list
        self.cf_done: dict[int, int] = {}              # stream id -> events stored so far
        self.seq: dict[int, int] = {}
        self.rec_done: dict[int, int] = {}             # stream id -> value records stored so far
        self.clock = itertools.count(1)                # switch numbers
        self.last_list: list[Any] = [None]             # the value list of the latest probe
        self.serials: dict[int, int] = {}              # id(obj) -> serial, while obj lives
        self.refs: dict[int, Any] = {}
        self.pins: dict[int, Any] = {}
        self.pin_limit = _PIN_MIN
        self.counter = itertools.count(1)
        self.new_objects: list[tuple[int, type]] = []  # (serial, type) handed out since the last flush
        self.new_classes: list[tuple[int, type]] = []  # (serial, class) of the classes among them
        self.parents = array("q")                      # serial, parent serial pairs (flushed)
        self.types: dict[type, int] = {}
        self.type_names: list[str] = []
        self.objects = array("q")                      # serial, type index pairs (flushed)
        self.contents: dict[int, tuple[int, bytes]] = {}
        # value -> content hash, one dict per tag (2**70 and complex(2**70) are equal keys);
        # keys are immutable values whose equal values have equal contents (not complex)
        self.memo: dict[int, dict[Any, int]] = {t: {} for t in (STR, BYTES, BIGINT)}
        self.memo_bytes = 0
        self.records = 0
        self.raw_bytes = 0
        self.lock = threading.Lock()
        self.layout_marked = False

    # -- streams
    def on_new(self, sid: int, append: Callable[[int], None]) -> None:
        """A stream was made in the running context: give it a value list there."""
        buf: list[Any] = []
        self.lists[sid] = buf
        self.by_buffer[id(append.__self__)] = buf  # type: ignore[attr-defined]
        self.cf_done[sid] = 0
        self.seq[sid] = 0
        self.rec_done[sid] = 0
        self.current.set((append, buf))

    def attach(self) -> tuple[Callable[[int], None], list[Any]]:
        """The running context has no value list yet (its stream was made elsewhere)."""
        append = self.current_stream()
        got = self.current.get()
        if got is None or got[0].__self__ is not append.__self__:  # type: ignore[attr-defined]
            got = (append, self.by_buffer[id(append.__self__)])  # type: ignore[attr-defined]
            self.current.set(got)
        return got

    # -- identities
    def serial(self, obj: Any) -> int:
        i = id(obj)
        s = self.serials.get(i)
        if s is not None:
            return s
        s = next(self.counter)
        self.serials[i] = s
        try:
            self.refs[i] = weakref.ref(obj, self._dead(i))
        except TypeError:
            self.pins[i] = obj
            if len(self.pins) >= self.pin_limit:
                self._sweep()
        self.new_objects.append((s, type(obj)))
        if isinstance(obj, type):
            self.new_classes.append((s, obj))
        return s

    def _dead(self, i: int) -> Callable[[Any], None]:
        serials, refs = self.serials, self.refs

        def dead(_ref: Any) -> None:
            serials.pop(i, None)
            refs.pop(i, None)
        return dead

    def _sweep(self) -> None:
        """Release held objects the program no longer references (their id may be reused)."""
        dead = [i for i, o in self.pins.items() if sys.getrefcount(o) <= 3]
        for i in dead:
            self.serials.pop(i, None)
            del self.pins[i]
        self.pin_limit = max(_PIN_MIN, 2 * len(self.pins))

    # -- probes
    def probes(self) -> dict[str, Callable[..., Any]]:
        """The value probes, by placeholder name (``instrument.wetemit``): constants of the
        instrumented code, added to the recording's run-time objects."""
        get = self.current.get
        attach = self.attach
        serial = self.serial
        imm = _IMMEDIATE

        known = self.serials.get
        last = self.last_list
        clock = self.clock

        def value(k: int, x: Any) -> Any:
            # The deepest frame the program reaches can call this probe (one call of headroom,
            # runtime.recursion) but not what it calls: at the limit the record is dropped and
            # the program goes on as without wholetrace.  What can fail runs before the first
            # append; the appends are C calls at the depth of ``get``: all or none happen.
            try:
                if type(x) in imm:
                    v = x
                else:
                    v = known(id(x))
                    if v is None:
                        v = serial(x)
                    k = ~k
                s = get()
                if s is None:
                    s = attach()
                a, buf = s
                if buf is not last[0]:                 # another thread ran since the last probe
                    last[0] = buf
                    buf.append(SWITCH)
                    buf.append(next(clock))
                    a(VAL)
                buf.append(k)
                buf.append(v)
                a(VAL)
            except RecursionError:
                pass
            return x

        def values(k: int, *xs: Any) -> None:
            # ``value`` for each of ``xs`` under consecutive slots, with no nested probe call
            try:
                out = []
                for x in xs:
                    if type(x) in imm:
                        out.append(k)
                        out.append(x)
                    else:
                        v = known(id(x))
                        out.append(~k)
                        out.append(serial(x) if v is None else v)
                    k += 1
                s = get()
                if s is None:
                    s = attach()
                a, buf = s
                if buf is not last[0]:
                    last[0] = buf
                    buf.append(SWITCH)
                    buf.append(next(clock))
                    a(VAL)
                buf += out
                for _x in xs:
                    a(VAL)
            except RecursionError:
                pass

        from wholetrace.instrument.wetemit import VALUE, VALUES

        return {VALUE: value, VALUES: values}

    # -- the flusher's side
    def split(self, sid: int, chunk: array) -> array:
        """Take the value records out of one event chunk of stream ``sid``, store them as one
        log chunk, and return the events alone."""
        import numpy as np

        from wholetrace.runtime.wetlayout import LAYOUT, pack_chunk

        ev = np.frombuffer(chunk, dtype=np.int32)
        marks = np.flatnonzero(ev == VAL)
        k = len(marks)
        done = self.cf_done.get(sid, 0)
        if k == 0:
            self.cf_done[sid] = done + len(ev)
            return chunk
        buf = self.lists[sid]
        recs = buf[: 2 * k]
        del buf[: 2 * k]
        cf = ev[ev != VAL]
        pos = done + marks - np.arange(k)
        self.cf_done[sid] = done + len(cf)
        seq = self.seq[sid]
        self.seq[sid] = seq + 1
        key = f"{sid}.{seq}"
        if not self.layout_marked:                     # before the first chunk: readers need it
            self.writer.set_meta(wet_layout=LAYOUT)
            self.layout_marked = True
        codes = np.fromiter(recs[0::2], np.int64, k)
        sw = np.flatnonzero(codes == SWITCH)
        if sw.size:                                    # (record index in the stream, position, number)
            nums = [recs[2 * j + 1] for j in sw.tolist()]
            for j in sw.tolist()[::-1]:
                del recs[2 * j: 2 * j + 2]
            at = self.rec_done.get(sid, 0) + sw - np.arange(sw.size)
            self.writer.put_array("wet.switch", np.stack([at, pos[sw], np.array(nums, np.int64)], 1), key=key)
            pos = np.delete(pos, sw)
            codes = np.delete(codes, sw)
            k -= sw.size                               # may be 0: the chunk is stored all the same
        self.rec_done[sid] = self.rec_done.get(sid, 0) + k
        slot, tag, val = self._tokens(recs, codes)
        for name, data in pack_chunk(pos.astype(np.int64), slot, tag, val).items():
            self.writer.put_array(f"wet.{name}", data, key=key)
        self.records += k
        self.raw_bytes += 8 * k + slot.nbytes + tag.nbytes + val.nbytes
        return array("i", cf.tobytes())

    def _tokens(self, recs: list[Any], codes: Any = None) -> tuple[Any, Any, Any]:
        """(slot, tag, val) arrays of ``recs`` (slot, value pairs; ``codes``: their slot codes
        as an int64 array, if the caller has it), sorted by type with C-level loops: ints,
        floats, bools and None as whole arrays; contents one by one."""
        import numpy as np

        n = len(recs) // 2
        if codes is None:
            codes = np.fromiter(recs[0::2], np.int64, n)
        items = recs[1::2]
        xs = np.empty(n, object)
        xs[:] = items
        obj = codes < 0
        slot = np.where(obj, ~codes, codes)
        tc = np.fromiter(map(_TYPE_TAG.get, map(type, items), itertools.repeat(COMPLEX)), np.uint8, n)
        tc[obj] = OBJ
        val = np.zeros(n, np.int64)
        sel = np.flatnonzero((tc == INT) | (tc == OBJ) | (tc == BOOL))   # serials are ints too
        try:
            val[sel] = np.fromiter(xs[sel], np.int64, sel.size)
        except OverflowError:                          # some int needs more than 64 bits
            for j in sel.tolist():
                x = xs[j]
                if -_I64 <= x < _I64:
                    val[j] = x
                else:
                    tc[j] = BIGINT
        sel = np.flatnonzero(tc == FLOAT)
        val[sel] = np.fromiter(xs[sel], np.float64, sel.size).view(np.int64)
        memo = self.memo
        for j in np.flatnonzero((tc >= STR) & (tc <= COMPLEX)).tolist():
            x, tg = xs[j], int(tc[j])
            h = memo[tg].get(x) if tg != COMPLEX else None  # complex: 0j == -0j, reprs differ
            if h is None:
                h = self._content(x, tg)
            val[j] = h
        self._objects()
        return slot, tc, val

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
        for s, t in items:
            ti = self.types.get(t)
            if ti is None:
                ti = self.types[t] = len(self.type_names)
                self.type_names.append(f"{t.__module__}.{t.__qualname__}")
            self.objects.append(s)
            self.objects.append(ti)
            p = known(id(t))
            if p is not None:
                self.parents.append(s)
                self.parents.append(p)
        for s, c in cls_items:
            for b in c.__mro__[1:]:
                p = known(id(b))
                if p is not None:
                    self.parents.append(s)
                    self.parents.append(p)
                    break

    def finish(self) -> None:
        """Store the distinct contents, the object table and the log's totals."""
        import numpy as np

        from wholetrace.runtime.wetlayout import pack_objects

        self._objects()
        items = sorted(self.contents.items())
        hashes = np.array([h for h, _ in items], np.int64)
        tags = np.array([t for _, (t, _d) in items], np.uint8)
        sizes = np.array([len(d) for _, (_t, d) in items], np.int64)
        data = np.frombuffer(b"".join(d for _, (_t, d) in items), np.uint8)
        self.writer.put_array("wet.content.hash", hashes)
        self.writer.put_array("wet.content.tag", tags)
        self.writer.put_array("wet.content.size", sizes)
        self.writer.put_array("wet.content.data", data)
        self.writer.put_array("wet.objects", pack_objects(np.frombuffer(self.objects, np.int64).reshape(-1, 2)))
        self.writer.put_array("wet.parents", np.frombuffer(self.parents, np.int64).reshape(-1, 2))
        self.writer.set_meta(wet_types=self.type_names, wet_records=self.records,
                             wet_raw_bytes=self.raw_bytes + hashes.nbytes + tags.nbytes + sizes.nbytes
                             + data.nbytes + 8 * len(self.objects) + 8 * len(self.parents))
        self.pins.clear()
        self.refs.clear()
        self.serials.clear()
