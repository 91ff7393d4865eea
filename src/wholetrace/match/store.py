"""The compressed control-flow trace in a .wt file: ``match.*`` arrays of the ``arrays`` table.

Per stream (key = the stream id; chunks ``"<sid>:<c>"``)::

    match.grammar.off / match.grammar.rhs   the SEQUITUR grammar (int32, rules as -r)
    match.chunk                              scheme-3 chunks of F/B/E symbols (int32)
    match.chunkindex                         uint8: the chunk index, packed (below)
    match.chunkstack                         function stack at each chunk start, levels from dmin,
                                             as function id + 1 (0: unknown) in the narrowest
                                             unsigned type (the callers of reported occurrences)
    match.chunkstackoff                      its length per chunk (narrowest unsigned type)
    match.segindex                           uint8: the segment index, packed (the segment
                                             bounds follow from S: equal item counts)
    match.stream                             int64 [STREAM_FIELDS], written last: its presence
                                             says the stream's trace is complete

A packed index of U units is one byte string: the minimum and exit depth of each unit less
``dmin`` (U values each, in the narrowest unsigned type that holds ``dmax - dmin``), a bit per
function saying whether any unit marks it, then the unit bits (ceil(U/8) bytes) of those
functions only.  One array instead of four and no rows for functions that never run keep
the indexes near 1% of the compressed trace (the zstd frame of each array costs bytes too).
An index of a single unit that only repeats what the stream record and the grammar say (the
whole stream's minimum and exit depth, the functions it enters) is not stored at all.

Every array is zstd-compressed by the store.  A stream is written in one transaction.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wholetrace.errors import StoreError, UsageError
from wholetrace.grammar import Grammar
from wholetrace.match.cftrace import CompressedStream, UnitIndex, coarsen, coarsen_segments, segment_bounds
from wholetrace.match.symbols import DepthStats

#: version of the match.* layout; streams written by another version are rebuilt.
#: 3: every index stored; 4: a one-unit index that only repeats the stream record and the
#: grammar is not stored (``_put_index``)
FORMAT = 4
#: the versions this reader reads (3 is 4 with every index present)
READS = (3, 4)
#: fields of match.stream
STREAM_FIELDS = ("format", "events", "symbols", "dmin", "dmax", "final", "chunk_events", "segments",
                 "segments_asked", "segment_items", "rules", "functions", "segment_merge", "chunk_merge")

NAMES = ("match.grammar.off", "match.grammar.rhs", "match.chunkindex", "match.chunkstack",
         "match.chunkstackoff", "match.segindex", "match.stream")


def _narrow(top: int) -> type:
    """The narrowest unsigned dtype holding 0 .. top."""
    return np.uint8 if top < 1 << 8 else np.uint16 if top < 1 << 16 else np.uint32
CHUNK = "match.chunk"


def write_stream(w: Any, cs: CompressedStream) -> None:
    """Store ``cs`` (what an earlier build stored was removed by :func:`clear_stream`, and its
    chunks were already written through :class:`ChunkSink`); commits."""
    key = str(cs.sid)
    g = cs.grammar
    w.put_array("match.grammar.off", g.off.astype(np.int32), key=key)
    w.put_array("match.grammar.rhs", g.rhs.astype(np.int32), key=key)
    s = cs.stats
    _put_index(w, "match.chunkindex", cs.chunks, cs, key)
    nfun = cs.chunks.bits.shape[0]
    w.put_array("match.chunkstack", (cs.chunk_stack.astype(np.int64) + 1).astype(_narrow(nfun)), key=key)
    w.put_array("match.chunkstackoff", np.diff(cs.chunk_stack_off).astype(_narrow(cs.stats.dmax - cs.stats.dmin)),
                key=key)
    _put_index(w, "match.segindex", cs.segments, cs, key)
    w.put_array("match.stream", np.array([FORMAT, s.events, s.symbols, s.dmin, s.dmax, s.final, cs.chunk_events,
                                          len(cs.seg_item) - 1, cs.segments_asked, cs.segment_items, g.num_rules,
                                          cs.chunks.bits.shape[0], cs.segment_merge, cs.chunk_merge], np.int64),
                key=key)
    w.commit()


def _put_index(w: Any, name: str, u: UnitIndex, cs: CompressedStream, key: str) -> None:
    """Store index ``u`` packed, or nothing when it is one unit that says only what the
    stream record and the grammar say already (:func:`whole_unit`): a small trace, scanned
    whole, needs no index, and even an empty array costs a zstd frame."""
    if u.units == 1 and _same(u, whole_unit(cs.grammar, cs.stats, u.bits.shape[0])):
        return
    w.put_array(name, pack_index(u, cs.stats.dmin, cs.stats.dmax), key=key)


def whole_unit(grammar: Grammar, stats: DepthStats, functions: int) -> UnitIndex:
    """The one-unit index of a whole stream: its minimum and exit depth (``stats``) and a
    mark for each function it enters (an ``F`` terminal of ``grammar``)."""
    rhs = grammar.rhs
    fids = rhs[(rhs > 0) & ((rhs & 1) == 1)] >> 1
    marks = np.zeros((functions, 1), bool)
    marks[fids[fids < functions], 0] = True
    return UnitIndex(np.array([stats.dmin], np.int64), np.array([stats.final], np.int64),
                     np.packbits(marks, axis=1, bitorder="little"))


def _same(a: UnitIndex, b: UnitIndex) -> bool:
    return (np.array_equal(a.min_depth, b.min_depth) and np.array_equal(a.exit_depth, b.exit_depth)
            and np.array_equal(a.bits, b.bits))


#: an index may take at most this share of what it indexes (stored bytes) ...
INDEX_SHARE = 0.01


def fit_indexes(cs: CompressedStream, chunk_bytes: int, share: float = INDEX_SHARE) -> None:
    """Merge ``cs``'s index units pairwise until the stored segment index takes at most
    ``share`` of the stored grammar and the chunk index at most ``share`` of the stored chunks
    (``chunk_bytes``): a small compressed trace is scanned whole quickly, its index is not
    worth more than 1% of it."""
    from wholetrace.store.schema import compress

    def stored(u: UnitIndex) -> int:
        return len(compress(pack_index(u, cs.stats.dmin, cs.stats.dmax).tobytes()))

    g = cs.grammar
    budget = share * (len(compress(g.off.astype(np.int32).tobytes())) + len(compress(g.rhs.astype(np.int32).tobytes())))
    while cs.segments.units > 1 and stored(cs.segments) > budget:
        coarsen_segments(cs, 2)
    while cs.chunks.units > 1 and stored(cs.chunks) > share * chunk_bytes:
        cs.chunks = coarsen(cs.chunks, 2)
        cs.chunk_merge *= 2


def _depth_dtype(dmin: int, dmax: int) -> type:
    return _narrow(dmax - dmin)


def pack_index(u: UnitIndex, dmin: int, dmax: int) -> np.ndarray:
    """``u`` as the packed byte string of the module doc."""
    dt = _depth_dtype(dmin, dmax)
    depths = np.concatenate([u.min_depth - dmin, u.exit_depth - dmin]).astype(dt)
    used = u.bits.any(axis=1)
    return np.concatenate([depths.view(np.uint8), np.packbits(used, bitorder="little"),
                           u.bits[used].reshape(-1)]).astype(np.uint8, copy=False)


def unpack_index(a: np.ndarray, units: int, functions: int, dmin: int, dmax: int) -> UnitIndex:
    """The inverse of :func:`pack_index`; StoreError if ``a`` does not have its shape."""
    dt = _depth_dtype(dmin, dmax)
    nd = 2 * units * np.dtype(dt).itemsize
    nu = -(-functions // 8)
    row = -(-units // 8)
    if a.dtype != np.uint8 or a.ndim != 1 or len(a) < nd + nu:
        raise StoreError("a unit index is corrupt")
    depths = a[:nd].view(dt).astype(np.int64) + dmin
    used = np.unpackbits(a[nd:nd + nu], bitorder="little")[:functions].astype(bool)
    if len(a) != nd + nu + int(used.sum()) * row or (len(depths) and int(depths.max()) > dmax):
        raise StoreError("a unit index is corrupt")
    bits = np.zeros((functions, row), np.uint8)
    if row:
        bits[used] = a[nd + nu:].reshape(-1, row)
    return UnitIndex(depths[:units].copy(), depths[units:].copy(), bits)


class ChunkSink:
    """A ``sink(c, symbols)`` for :func:`cftrace.index` writing chunk ``c`` of stream ``sid``;
    ``stored`` sums the bytes written."""

    def __init__(self, w: Any, sid: int) -> None:
        self.w, self.sid, self.stored = w, sid, 0

    def __call__(self, c: int, sym: np.ndarray) -> None:
        self.stored += self.w.put_array(CHUNK, sym, key=f"{self.sid}:{c}")  # compressed once, there

    def put_compressed(self, c: int, blob: bytes, n: int) -> None:
        """Chunk ``c`` of ``n`` int32 symbols, already compressed (``store.schema.compress``)."""
        self.stored += self.w.put_compressed_array(CHUNK, blob, "<i4", (n,), key=f"{self.sid}:{c}")


def clear_stream(w: Any, rec: Any, sid: int) -> None:
    """Remove what an earlier build stored for stream ``sid``."""
    for name, key, _ in rec.array_sizes("match."):
        if key == str(sid) or key.startswith(f"{sid}:"):
            w.delete_arrays(name, key)


def stream_fields(rec: Any, sid: int) -> dict[str, int] | None:
    """The match.stream record of ``sid`` (None if the stream has no complete trace)."""
    a = rec.get_array("match.stream", str(sid))
    if a is None or a.ndim != 1 or len(a) != len(STREAM_FIELDS) or int(a[0]) not in READS:
        return None
    return dict(zip(STREAM_FIELDS, (int(x) for x in a)))


def load_stream(rec: Any, sid: int) -> CompressedStream:
    """The compressed trace of stream ``sid``; UsageError if the recording has none."""
    f = stream_fields(rec, sid)
    if f is None:
        raise UsageError(f"{rec.path}: stream {sid} has no compressed control-flow trace; "
                         f"run `wholetrace compress {rec.path}` first")
    key = str(sid)

    def get(name: str) -> np.ndarray:
        a = rec.get_array(name, key)
        if a is None:
            raise StoreError(f"{rec.path}: {name} of stream {sid} is missing")
        return a

    grammar = Grammar(get("match.grammar.off"), get("match.grammar.rhs"))
    _check_grammar(grammar, f["symbols"], f"{rec.path}: grammar of stream {sid}")
    stats = DepthStats(f["events"], f["symbols"], f["dmin"], f["dmax"], f["final"])
    nchunks = -(-f["symbols"] // max(1, f["chunk_events"]))
    stack_off = np.concatenate(([0], np.cumsum(get("match.chunkstackoff"), dtype=np.int64)))
    stack = get("match.chunkstack").astype(np.int64) - 1
    if len(stack_off) != nchunks + 1 or stack_off[-1] != len(stack) or (len(stack) and stack.max() >= f["functions"]):
        raise StoreError(f"{rec.path}: the caller stacks of stream {sid} are corrupt")
    stack = stack.astype(np.int32)
    seg_item, seg_pos = segment_bounds(grammar, f["segments_asked"], f["segment_items"])
    if f["segment_merge"] > 1:
        keep = np.append(np.arange(0, len(seg_item) - 1, f["segment_merge"]), len(seg_item) - 1)
        seg_item, seg_pos = seg_item[keep], seg_pos[keep]
    if len(seg_item) != f["segments"] + 1 or not 0 <= f["functions"] < 1 << 31 or min(
            f["segment_merge"], f["chunk_merge"]) < 1:
        raise StoreError(f"{rec.path}: the indexes of stream {sid} are corrupt")
    def index_of(name: str, units: int) -> UnitIndex:
        a = rec.get_array(name, key)
        if a is None and units == 1:         # not stored: the whole stream's unit (_put_index)
            return whole_unit(grammar, stats, f["functions"])
        if a is None:
            raise StoreError(f"{name} is missing")
        return unpack_index(a, units, f["functions"], f["dmin"], f["dmax"])

    try:
        chunks = index_of("match.chunkindex", -(-nchunks // f["chunk_merge"]))
        segs = index_of("match.segindex", f["segments"])
    except StoreError as e:
        raise StoreError(f"{rec.path}: stream {sid}: {e}") from None

    def read_chunk(c: int) -> np.ndarray:
        a = rec.get_array(CHUNK, f"{sid}:{c}")
        want = min(f["chunk_events"], f["symbols"] - c * f["chunk_events"])
        if a is None or a.shape != (want,):
            raise StoreError(f"{rec.path}: chunk {c} of stream {sid} is missing or corrupt")
        return a.astype(np.int32, copy=False)

    return CompressedStream(
        sid, f["symbols"], grammar, stats, f["chunk_events"], chunks,
        stack_off, stack,
        seg_item, seg_pos, segs, read_chunk, f["segments_asked"], f["segment_items"], f["segment_merge"],
        f["chunk_merge"])


def _check_grammar(g: Grammar, symbols: int, what: str) -> None:
    """Cheap structural checks so the kernels never walk outside the arrays."""
    off, rhs = g.off, g.rhs
    nr = len(off) - 1
    if nr < 1 or off[0] != 0 or off[-1] != len(rhs) or np.any(np.diff(off) < 0):
        raise StoreError(f"{what} is corrupt (offsets)")
    if len(rhs) and (rhs.min() <= -nr):
        raise StoreError(f"{what} is corrupt (rule reference)")
    if len(g) != symbols:
        raise StoreError(f"{what} is corrupt (expands to {len(g)} symbols, not {symbols})")


def describe(rec: Any) -> dict[str, Any] | None:
    """What `wholetrace info` shows about the compressed trace (None if there is none)."""
    if not hasattr(rec, "array_sizes"):        # a salvaged recording: derived data is not read
        return None
    sizes: dict[str, int] = {}
    for name, _key, nbytes in rec.array_sizes("match."):
        sizes[name] = sizes.get(name, 0) + nbytes
    if not sizes:
        return None
    streams = {str(s.sid): stream_fields(rec, s.sid) for s in rec.streams()}
    grammar = sizes.get("match.grammar.off", 0) + sizes.get("match.grammar.rhs", 0)
    chunk_index = sizes.get("match.chunkindex", 0)
    stacks = sizes.get("match.chunkstack", 0) + sizes.get("match.chunkstackoff", 0)
    return {
        "complete": all(v is not None for v in streams.values()),
        "streams": streams,
        "bytes": {"grammar": grammar, "chunks": sizes.get(CHUNK, 0), "chunk_index": chunk_index, "chunk_stacks": stacks,
                  "segment_index": sizes.get("match.segindex", 0)},
    }
