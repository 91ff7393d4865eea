"""The Python layer of ``kernels.decode``: feed a stream's chunks, get rows, one per edge taken.

``StreamDecoder`` keeps the kernel's state between chunks, grows the stack and loads
function tables when the kernel asks (its status codes), and turns a malformed stream into
a one-line :class:`~wholetrace.errors.StoreError`.  Memory is bounded by the row capacity
and the stack depth, whatever the length of the stream.

A witness stream is read twice: first by ``trace.lookahead`` (which groups of children an
exception record of their parent ends: the parent then stops at the raising block, see
``kernels.decode``), then by the kernel.  A stream fed chunk by chunk with :meth:`feed`
alone (online) has no first pass unless ``held`` is given: its children of implicit calls
before an exception then sit at the parent's next call block (the activation form is the
same).

For counts alone, :meth:`StreamDecoder.count` runs ``kernels.decode.count``: the rows are
tallied inside the kernel while they are in cache and never handed out.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from wholetrace.errors import InternalError, StoreError
from wholetrace.kernels import decode as K
from wholetrace.trace.readonly import read_only as _read_only
from wholetrace.trace.lookahead import groups_ended_by_exceptions
from wholetrace.trace.tables import WITNESS_MODES, Tables

if TYPE_CHECKING:
    from wholetrace.trace.counts import Tally

#: Rows of the buffer :meth:`StreamDecoder.count` reuses (small enough to stay in cache).
COUNT_ROWS = 4096
#: Events per kernel run when counting (stored chunks are joined up to this many: ``coalesced``).
COUNT_EVENTS = 1 << 18
#: Rows of a decoder's first buffer: it doubles up to ``capacity`` only when a stream gives more
#: rows (a recording of 20,000 task streams of three events each must not zero 20,000 buffers of
#: ``capacity`` rows: explore22 MED-6); the batches handed out are the same either way.
FIRST_ROWS = 256

#: Row kinds (``Rows.eid`` values below 0).
EID_EXC, EID_ENTER, EID_LEAVE = K.EID_EXC, K.EID_ENTER, K.EID_LEAVE


class Rows:
    """A batch of decoded rows, in stream order: the int64 array ``data`` of shape (6, n)
    whose rows are the columns below (see ``kernels.decode``).

    ``eid`` >= 0: static edge ``src -> dst`` of function ``fid``; EID_EXC: exception edge
    (``aux`` its origin statement, ``dst`` -1 if the stream ended before its target);
    EID_ENTER / EID_LEAVE: activation ``act`` starts / ends (``aux`` the parent activation).
    """

    __slots__ = ("data",)

    def __init__(self, data: np.ndarray) -> None:
        self.data = data

    act = property(lambda self: self.data[K.R_ACT])
    fid = property(lambda self: self.data[K.R_FID])
    src = property(lambda self: self.data[K.R_SRC])
    dst = property(lambda self: self.data[K.R_DST])
    eid = property(lambda self: self.data[K.R_EID])
    aux = property(lambda self: self.data[K.R_AUX])

    def __len__(self) -> int:
        return self.data.shape[1]

    def select(self, mask: np.ndarray) -> Rows:
        return Rows(self.data[:, mask])

    @classmethod
    def concat(cls, parts: Iterable[Rows]) -> Rows:
        parts = [p.data for p in parts]
        return cls(np.concatenate(parts, axis=1) if parts else np.zeros((K.ROW_W, 0), np.int64))


_REASONS = {
    K.BAD_CODE: "unknown event code {a}",
    K.BAD_FUNC: "ENTER of function {a}, which is not registered",
    K.BAD_OUTSIDE: "event {a} outside any activation",
    K.BAD_BLOCK: "block {a} does not exist in {fb}",
    K.BAD_STMT: "statement {a} does not exist in {fb}",
    K.BAD_WITNESS: "witness {a} does not exist in {fb}",
    K.BAD_EDGE: "B{a} -> B{b} is not an edge of {ft}",
    K.BAD_START: "an activation of {fb} starts at block {a}",
    K.BAD_HANDLER: "an exception enters block {a} of {fb}, which is not a handler",
    K.BAD_LEAVE: "{fb} returns from block {a}, which has no edge to EXIT",
    K.BAD_CHOICE: "witness {a} cannot follow block {b} of {ft}",
    K.BAD_MISMATCH: "witness {a} read where witness {b} must come ({ft})",
    K.BAD_LEFT: "event {a} after the activation of {fb} left",
    K.BAD_RESUME: "{a} cannot start or resume the generator {fb}",
    K.BAD_CYCLE: "no witness-free path in {ft}",
    K.BAD_PATH: "path {a} does not exist in {fb} or does not end as recorded",
    K.BAD_REGISTER: "path register {a} of an exception names no path of {fb} from where it stands",
}


def coalesced(chunks: Iterable[np.ndarray], limit: int) -> Iterator[np.ndarray]:
    """``chunks`` joined into arrays of about ``limit`` events (the recorder's chunks can be
    small; each kernel run that meets new functions loads them in one batch, so fewer, larger
    runs parse and load the functions of a stream in fewer batches).  Memory: ``limit`` events."""
    held: list[np.ndarray] = []
    n = 0
    for chunk in chunks:
        held.append(chunk)
        n += len(chunk)
        if n >= limit:
            yield held[0] if len(held) == 1 else np.concatenate(held)
            held, n = [], 0
    if held:
        yield held[0] if len(held) == 1 else np.concatenate(held)


class StreamDecoder:
    """Decodes one stream, chunk by chunk (``what`` names it in error messages); ``held``: the
    first pass's result for the stream (``trace.lookahead``), else :meth:`decode` computes it
    for a witness recording."""

    def __init__(self, tables: Tables, *, what: str = "stream", capacity: int = 1 << 16,
                 held: dict[int, int] | None = None) -> None:
        self.tables = tables
        self.hkey = self.hval = np.zeros(0, np.int64)
        self._held_given = held is not None
        if held:
            self.set_held(held)
        self.what = what
        self.capacity = capacity
        self.stack = np.zeros((64, K.FR_W), np.int64)
        self.meta = np.zeros(K.META_SIZE, np.int64)
        self.out = np.zeros((K.ROW_W, min(self._full(), max(FIRST_ROWS, 4 * tables.margin))), np.int64)
        self._spare: np.ndarray | None = None
        self.consumed = 0          # events fully read before the current chunk
        self.finished = False

    @property
    def depth(self) -> int:
        """Activations open now."""
        return int(self.meta[K.M_DEPTH])

    @property
    def activations(self) -> int:
        """Activations started so far."""
        return int(self.meta[K.M_NEXT_ACT])

    def set_held(self, held: dict[int, int]) -> None:
        """The first pass's groups (first child's activation number -> statement that raised)."""
        if self.consumed or self.meta[K.M_NEXT_ACT]:
            raise InternalError("StreamDecoder.set_held after decoding began")
        keys = sorted(held)
        self.hkey = np.array(keys, np.int64)
        self.hval = np.array([held[k] for k in keys], np.int64)
        self._held_given = True

    def feed(self, chunk: np.ndarray, *, copy: bool = True) -> Iterator[Rows]:
        """Decode one int32 chunk; yields row batches (``copy=False``: views valid until the
        next batch is requested)."""
        if self.finished:
            raise InternalError("StreamDecoder.feed after finish")
        ev = self._events(chunk)
        pos = 0
        while True:
            pos, status = self._run(ev, pos)
            if status == K.ST_DONE:
                break
            if status == K.ST_NEED_OUT:
                if self.out.shape[1] < self._full():     # a small first buffer: grown, no batch yet
                    self._widen(min(2 * self.out.shape[1], self._full()))
                else:
                    yield from self._take(copy)
            else:
                self._grow(status, pos, ev)
        self.consumed += len(ev)
        if self.meta[K.M_NOUT] >= self.capacity // 2:
            yield from self._take(copy)

    def finish(self, *, copy: bool = True) -> Iterator[Rows]:
        """The stream ended: settle what waited for a later event; yields the last rows."""
        if self.finished:
            return
        self.finished = True
        need = int(self.meta[K.M_NOUT]) + self.tables.margin + self.depth + 2
        if need > self.out.shape[1] and self.out.shape[1] < self._full():   # a small first buffer
            self._widen(min(self._full(), max(need, 2 * self.out.shape[1])))
        if need > self.out.shape[1]:
            yield from self._take(copy)
        if self.depth + self.tables.margin + 2 > self.out.shape[1]:
            self.out = np.zeros((K.ROW_W, 2 * (self.depth + self.tables.margin + 2)), np.int64)
        fn, blk, succ, stm, edg, _wit, _chs, ysl, pool, pdg = self.tables.arrays()
        if K.finish(fn, blk, succ, edg, stm, ysl, pool, pdg, self.stack, self.meta, self.tables.scratch,
                    self.out) != K.ST_DONE:
            self._fail(-1)
        yield from self._take(copy)

    def decode(self, chunks: Iterable[np.ndarray], *, copy: bool = True) -> Iterator[Rows]:
        """Every row of a whole stream given as chunks (read twice for a witness recording:
        a one-shot iterator is first gathered into a list)."""
        chunks = self._first_pass(chunks)
        for chunk in chunks:
            yield from self.feed(chunk, copy=copy)
        yield from self.finish(copy=copy)

    def count(self, chunks: Iterable[np.ndarray], tally: Tally, *, rows: int = COUNT_ROWS,
              out: np.ndarray | None = None) -> None:
        """Add the counts of a whole stream into ``tally`` (``trace.counts.Tally``) without
        handing out rows: ``kernels.decode.count`` tallies them while they are in cache
        (``rows``: the buffer's first size; it grows when one event may give more).  ``out``:
        a row buffer to use instead (``self.out`` afterwards: one buffer serves every stream
        of a recording, since no row outlives this call)."""
        if self.consumed or self.finished:
            raise InternalError("StreamDecoder.count on a stream already fed")
        chunks = self._first_pass(chunks)
        fits = out is not None and out.ndim == 2 and out.shape[0] == K.ROW_W and out.dtype == np.int64
        self.out = out if fits else np.zeros((K.ROW_W, max(rows, 1)), np.int64)
        for chunk in coalesced(chunks, COUNT_EVENTS):
            ev = self._events(chunk)
            pos = 0
            while True:
                pos, status = self._run(ev, pos, tally)
                if status == K.ST_DONE:
                    break
                if status == K.ST_NEED_OUT:     # fewer rows than one event may give: a larger buffer
                    self.out = np.zeros((K.ROW_W, max(2 * self.out.shape[1], 4 * self.tables.margin)), np.int64)
                else:
                    self._grow(status, pos, ev)
            self.consumed += len(ev)
        for rows in self.finish():     # copied: ``self.out`` stays the buffer (no spare swapped in)
            tally.add(rows)

    # -- internals
    def _first_pass(self, chunks: Iterable[np.ndarray]) -> Iterable[np.ndarray]:
        """A witness stream's first pass (``trace.lookahead``) unless ``held`` was given; the
        chunks to read again (a one-shot iterator gathered into a list)."""
        if not self._held_given and self.tables.mode in WITNESS_MODES:
            if iter(chunks) is chunks:
                chunks = list(chunks)
            self.set_held(groups_ended_by_exceptions(chunks))
        return chunks

    def _grow(self, status: int, pos: int, ev: np.ndarray) -> None:
        """What the kernel asked for at ``ev[pos]``: a deeper stack or a function's tables
        (and those of the functions the rest of the chunk enters); else it failed."""
        if status == K.ST_NEED_STACK:
            grown = np.zeros((2 * len(self.stack), K.FR_W), np.int64)
            grown[:len(self.stack)] = self.stack
            self.stack = grown
        elif status == K.ST_NEED_FUNC:
            self.tables.need(int(self.meta[K.M_ARG]), ev[max(pos, 0):])
            self._fit_margin()
        else:
            self._fail(pos)

    def _events(self, chunk: np.ndarray) -> np.ndarray:
        ev = np.ascontiguousarray(chunk, dtype=np.int32)
        if ev.ndim != 1:
            raise StoreError(f"{self.what}: events are not a flat array")
        return _read_only(ev)

    def _run(self, ev: np.ndarray, pos: int, tally: Tally | None = None) -> tuple[int, int]:
        """One kernel call from ``pos``: ``decode`` into the row buffer, or with ``tally``
        ``count`` (rows added into its histograms, grown first to the tables loaded)."""
        self.meta[K.M_MARGIN] = self.tables.margin
        fn, blk, succ, stm, edg, wit, chs, ysl, pool, pdg = self.tables.arrays()
        if tally is None:
            pos, status = K.decode(ev, pos, fn, blk, succ, stm, edg, wit, chs, ysl, pool, pdg, self.stack,
                                   self.meta, self.tables.scratch, self.hkey, self.hval, self.out)
        else:
            tally.fit()
            pos, status = K.count(ev, pos, fn, blk, succ, stm, edg, wit, chs, ysl, pool, pdg, self.stack,
                                  self.meta, self.tables.scratch, self.hkey, self.hval, self.out,
                                  tally.block, tally.edge, tally.cut, tally.enters)
        return int(pos), int(status)

    def _full(self) -> int:
        """Rows of the buffer at its largest (a batch is taken when it fills)."""
        return max(self.capacity, 4 * self.tables.margin)

    def _fit_margin(self) -> None:
        need = 4 * self.tables.margin
        if self.out.shape[1] < need:
            self._widen(need)

    def _widen(self, width: int) -> None:
        """The row buffer grown to ``width`` rows, keeping the rows it holds."""
        grown = np.zeros((K.ROW_W, width), np.int64)
        n = int(self.meta[K.M_NOUT])
        grown[:, :n] = self.out[:, :n]
        self.out = grown

    def _take(self, copy: bool) -> Iterator[Rows]:
        n = int(self.meta[K.M_NOUT])
        if n:
            rows = Rows(self.out[:, :n].copy() if copy else self.out[:, :n])
            if not copy:      # the kernel writes into the other buffer while the view is in use
                if self._spare is None or self._spare.shape != self.out.shape:
                    self._spare = np.empty_like(self.out)
                self.out, self._spare = self._spare, self.out
            self.meta[K.M_NOUT] = 0
            yield rows

    def _fail(self, pos: int) -> None:
        why, a, b = (int(x) for x in self.meta[[K.M_BAD, K.M_ARG, K.M_ARG2]])
        depth = self.depth
        top = int(self.stack[depth - 1, K.FR_FID]) if depth else -1
        reason = _REASONS.get(why, "malformed event").format(a=a, b=b, fb=self._name(b), ft=self._name(top))
        at = f"event {self.consumed + pos:,}" if pos >= 0 else "the end"
        raise StoreError(f"{self.what}: invalid {at}: {reason}")

    def _name(self, fid: int) -> str:
        sh = self.tables.shapes.get(fid)
        return f"function {fid}" + (f" ({sh.qualname})" if sh is not None else "")
