"""The compressed control-flow trace in a .wt file: ``match.*`` arrays of the ``arrays`` table.

Per stream (key = the stream id; chunks ``"<sid>:<c>"``)::

    match.grammar.off / match.grammar.rhs   the SEQUITUR grammar (int32, rules as -r)
    match.chunk                              scheme-3 chunks of F/B/E symbols (int32)
    match.chunks                             int32 [chunks, 2]: minimum and exit depth
    match.chunkbits                          uint8 [functions, ceil(chunks/8)]
    match.chunkstack / match.chunkstackoff   function stack at each chunk start (int32)
    match.segments                           int32 [segments, 2]: minimum and exit depth (the
                                             segment bounds follow from S: equal item counts)
    match.segbits                            uint8 [functions, ceil(segments/8)]
    match.stream                             int64 [STREAM_FIELDS], written last: its presence
                                             says the stream's trace is complete

Every array is zstd-compressed by the store.  A stream is written in one transaction.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wholetrace.errors import StoreError, UsageError
from wholetrace.grammar import Grammar
from wholetrace.match.cftrace import CompressedStream, UnitIndex, segment_bounds
from wholetrace.match.symbols import DepthStats

#: version of the match.* layout; streams written by another version are rebuilt
FORMAT = 1
#: fields of match.stream
STREAM_FIELDS = ("format", "events", "symbols", "dmin", "dmax", "final", "chunk_events", "segments",
                 "segments_asked", "segment_items", "rules")

NAMES = ("match.grammar.off", "match.grammar.rhs", "match.chunks", "match.chunkbits", "match.chunkstack",
         "match.chunkstackoff", "match.segments", "match.segbits", "match.stream")
CHUNK = "match.chunk"


def write_stream(w: Any, cs: CompressedStream) -> None:
    """Store ``cs`` (its chunks were already written through :func:`chunk_sink`); commits."""
    key = str(cs.sid)
    g = cs.grammar
    w.put_array("match.grammar.off", g.off.astype(np.int32), key=key)
    w.put_array("match.grammar.rhs", g.rhs.astype(np.int32), key=key)
    w.put_array("match.chunks", _depths(cs.chunks), key=key)
    w.put_array("match.chunkbits", cs.chunks.bits, key=key)
    w.put_array("match.chunkstack", cs.chunk_stack, key=key)
    w.put_array("match.chunkstackoff", cs.chunk_stack_off.astype(np.int32), key=key)
    w.put_array("match.segments", _depths(cs.segments), key=key)
    w.put_array("match.segbits", cs.segments.bits, key=key)
    s = cs.stats
    w.put_array("match.stream", np.array([FORMAT, s.events, s.symbols, s.dmin, s.dmax, s.final, cs.chunk_events,
                                          len(cs.seg_item) - 1, cs.segments_asked, cs.segment_items, g.num_rules],
                                         np.int64), key=key)
    w.commit()


def _depths(u: UnitIndex) -> np.ndarray:
    return np.stack([u.min_depth, u.exit_depth], 1).astype(np.int32)


def chunk_sink(w: Any, sid: int) -> Any:
    """A ``sink(c, symbols)`` for :func:`cftrace.index` writing chunk ``c`` of stream ``sid``."""
    def sink(c: int, sym: np.ndarray) -> None:
        w.put_array(CHUNK, sym, key=f"{sid}:{c}")
    return sink


def clear_stream(w: Any, rec: Any, sid: int) -> None:
    """Remove what an earlier build stored for stream ``sid``."""
    for name, key, _ in rec.array_sizes("match."):
        if key == str(sid) or key.startswith(f"{sid}:"):
            w.delete_arrays(name, key)


def stream_fields(rec: Any, sid: int) -> dict[str, int] | None:
    """The match.stream record of ``sid`` (None if the stream has no complete trace)."""
    a = rec.get_array("match.stream", str(sid))
    if a is None or a.ndim != 1 or len(a) != len(STREAM_FIELDS) or int(a[0]) != FORMAT:
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
    chunks = get("match.chunks").astype(np.int64)
    segs = get("match.segments").astype(np.int64)
    nchunks = -(-f["symbols"] // max(1, f["chunk_events"]))
    seg_item, seg_pos = segment_bounds(grammar, f["segments_asked"], f["segment_items"])
    if chunks.shape != (nchunks, 2) or segs.shape != (f["segments"], 2) or len(seg_item) != f["segments"] + 1:
        raise StoreError(f"{rec.path}: the indexes of stream {sid} are corrupt")

    def read_chunk(c: int) -> np.ndarray:
        a = rec.get_array(CHUNK, f"{sid}:{c}")
        want = min(f["chunk_events"], f["symbols"] - c * f["chunk_events"])
        if a is None or a.shape != (want,):
            raise StoreError(f"{rec.path}: chunk {c} of stream {sid} is missing or corrupt")
        return a.astype(np.int32, copy=False)

    return CompressedStream(
        sid, f["symbols"], grammar, stats, f["chunk_events"],
        UnitIndex(chunks[:, 0].copy(), chunks[:, 1].copy(), _bits(get("match.chunkbits"), nchunks)),
        get("match.chunkstackoff").astype(np.int64), get("match.chunkstack").astype(np.int32),
        seg_item, seg_pos, UnitIndex(segs[:, 0].copy(), segs[:, 1].copy(), _bits(get("match.segbits"), f["segments"])),
        read_chunk, f["segments_asked"], f["segment_items"])


def _bits(a: np.ndarray, units: int) -> np.ndarray:
    if a.dtype != np.uint8 or a.ndim != 2 or a.shape[1] != -(-units // 8):
        raise StoreError("a function bit index is corrupt")
    return a


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
    chunk_index = sizes.get("match.chunks", 0) + sizes.get("match.chunkbits", 0)
    stacks = sizes.get("match.chunkstack", 0) + sizes.get("match.chunkstackoff", 0)
    return {
        "complete": all(v is not None for v in streams.values()),
        "streams": streams,
        "bytes": {"grammar": grammar, "chunks": sizes.get(CHUNK, 0), "chunk_index": chunk_index, "chunk_stacks": stacks,
                  "segment_index": sizes.get("match.segments", 0) + sizes.get("match.segbits", 0)},
    }
