"""The compressed control-flow trace of one stream: its SEQUITUR grammar, chunk and segment indexes.

Built in two passes.  ``build`` feeds the stream's F/B/E symbols to the grammar builder and
measures the depth range; ``index`` walks the grammar's expansion once to cut it into the
zstd chunks of scheme 3 and to fill both indexes (path-matching paper, sections 4.3-4.4,
with the corrections of shared/specs/matching.md section 3.3):

* chunk index: fixed-size chunks of the symbol stream; per chunk the minimum depth (entry
  included) and the exit depth, a bit per function (the chunk holds a block whose innermost
  invocation is that function, or its F symbol), and the function stack at its start (used
  only to name the callers of reported occurrences);
* segment index: S's right-hand side cut into segments of equal item counts, with the same
  per-segment depths and bits.

Invariant: skipping an unmarked unit by cutting the scheme-1 stack to its minimum depth and
padding it with -1 levels up to its exit depth gives exactly the stack a full scan gives.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import zstandard

from wholetrace.errors import InternalError
from wholetrace.grammar import Grammar, GrammarBuilder
from wholetrace.kernels import automaton_index as K
from wholetrace.match.symbols import DepthStats

#: default chunk size in symbols: 4 MiB of int32, the paper's 4 MB blocks
CHUNK_EVENTS = 1 << 20
#: default number of segments of S (the paper used up to 128) ...
SEGMENTS = 128
#: ... of at least this many items each (the paper's example: 50 items per segment)
SEGMENT_ITEMS = 50
_PIECE = 1 << 16


@dataclass
class UnitIndex:
    """Per-unit depths and function bits of the chunk or segment index."""

    min_depth: np.ndarray            # int64 [units]
    exit_depth: np.ndarray           # int64 [units]
    bits: np.ndarray                 # uint8 [functions, ceil(units / 8)]

    @property
    def units(self) -> int:
        return len(self.min_depth)

    def marked(self, fid: int) -> np.ndarray:
        """Boolean [units]: which units the function's bit marks."""
        if not 0 <= fid < self.bits.shape[0]:
            return np.zeros(self.units, bool)
        return np.unpackbits(self.bits[fid], bitorder="little")[: self.units].astype(bool)

    def nbytes(self) -> int:
        return int(self.min_depth.nbytes + self.exit_depth.nbytes + self.bits.nbytes)


@dataclass
class CompressedStream:
    """Everything the matchers need about one stream, in memory or read lazily from a .wt."""

    sid: int
    n: int                           # symbols in the stream
    grammar: Grammar
    stats: DepthStats
    chunk_events: int
    chunks: UnitIndex
    chunk_stack_off: np.ndarray      # int64 [chunks + 1]
    chunk_stack: np.ndarray          # int32: function stack at each chunk start, levels from dmin
    seg_item: np.ndarray             # int64 [segments + 1]: first item of S of each segment
    seg_pos: np.ndarray              # int64 [segments + 1]: its position in the expansion
    segments: UnitIndex
    read_chunk: Callable[[int], np.ndarray] = field(repr=False)
    segments_asked: int = SEGMENTS   # the segment count requested (S may have had fewer items) ...
    segment_items: int = SEGMENT_ITEMS   # ... and the least items per segment
    segment_merge: int = 1           # segments stored: those asked for, merged this many by this many
    chunk_merge: int = 1             # chunks per unit of the chunk index

    @property
    def dmin(self) -> int:
        return self.stats.dmin

    @property
    def stack_slots(self) -> int:
        """Size of a scheme stack: depths dmin..dmax plus the sentinel slot."""
        return self.stats.dmax - self.stats.dmin + 2

    def new_stack(self) -> tuple[np.ndarray, int]:
        """A scheme-1 stack for the start of the stream and its top (slots in use)."""
        return np.full(self.stack_slots, -1, np.int32), 1 - self.stats.dmin


def build(symbol_chunks: Iterable[np.ndarray], stats: DepthStats,
          advance: Callable[[int], None] = lambda n: None) -> Grammar:
    """The SEQUITUR grammar of a stream's symbols; ``stats`` gets its depth range."""
    builder = GrammarBuilder(expected_symbols=0)
    for sym in symbol_chunks:
        builder.feed(sym)
        advance(len(sym))
    return builder.finish()


def segment_bounds(grammar: Grammar, segments: int, min_items: int = SEGMENT_ITEMS) -> tuple[np.ndarray, np.ndarray]:
    """Items of S cut into at most ``segments`` runs of (nearly) equal item counts, at least
    ``min_items`` each where S is long enough: (first item of each run, plus the end) and
    their expansion positions."""
    s = grammar.rule(0)
    k = max(1, min(int(segments), len(s) // max(1, int(min_items))))
    items = np.linspace(0, len(s), k + 1).round().astype(np.int64)
    lens = grammar.lengths()
    item_len = np.where(s >= 0, 1, lens[np.maximum(-s, 0)])
    pos = np.concatenate(([0], np.cumsum(item_len, dtype=np.int64)))
    return items, pos[items]


class ChunkIndexer:
    """The chunk part of the index, fed the stream's symbols in order: the grammar's
    expansion, or the decoded stream itself on the decoding thread of ``compress`` while the
    grammar builds (the stream's length and depth range are not known yet then: the arrays
    grow, and the function stacks are kept from the lowest depth seen so far).  Chunks go to
    ``sink(c, symbols)``; ``finish`` gives the chunk index and the stack at each chunk start."""

    def __init__(self, chunk_events: int, functions: int, sink: Callable[[int, np.ndarray], None],
                 symbols_hint: int = 0) -> None:
        self.chunk_events, self.sink, self.functions = max(1, int(chunk_events)), sink, functions
        cap = max(1, -(-symbols_hint // self.chunk_events))
        self.min_depth, self.exit_depth = np.zeros(cap, np.int64), np.zeros(cap, np.int64)
        self.bits = np.zeros((functions, -(-cap // 8)), np.uint8)
        self.stack_off = np.zeros(cap + 1, np.int64)
        self.stack_pool = np.zeros(16 * cap, np.int32)
        self.base = 0                    # depth of fstack[0]: the lowest depth seen (or lower)
        self.fstack = np.full(16, -1, np.int32)
        self.st = np.zeros(K.I_SIZE, np.int64)
        self.buf = np.empty(self.chunk_events if symbols_hint == 0 else min(self.chunk_events, max(symbols_hint, 1)),
                            np.int32)
        self.fill = self.pos = self.emitted = 0

    def _room(self, chunks: int) -> None:
        """Arrays for at least ``chunks`` chunks."""
        cap = len(self.min_depth)
        if chunks <= cap:
            return
        new = max(chunks, 2 * cap)
        self.min_depth = np.concatenate([self.min_depth, np.zeros(new - cap, np.int64)])
        self.exit_depth = np.concatenate([self.exit_depth, np.zeros(new - cap, np.int64)])
        self.stack_off = np.concatenate([self.stack_off, np.zeros(new - cap, np.int64)])
        bits = np.zeros((self.functions, -(-new // 8)), np.uint8)
        bits[:, : self.bits.shape[1]] = self.bits
        self.bits = bits

    def _lower_base(self, depth: int, pos: int) -> None:
        """Make ``depth`` the stack's lowest level (at least doubling the levels added): the
        new levels are unknown (-1) in the stack and in every chunk stack stored so far."""
        k = max(self.base - depth, len(self.fstack))
        self.base -= k
        self.fstack = np.concatenate([np.full(k, -1, np.int32), self.fstack])
        chunks = -(-pos // self.chunk_events)  # chunks started before position pos
        self.stack_pool, self.stack_off[: chunks + 1] = _pad_stacks(self.stack_pool, self.stack_off[: chunks + 1], k)
        self.st[K.I_NSTACK] = self.stack_off[chunks] if chunks else 0

    def feed(self, sym: np.ndarray) -> None:
        """The next symbols (int32) of the stream."""
        self._room((self.pos + len(sym)) // self.chunk_events + 1)
        done = 0
        while True:
            status = K.chunk_pass(sym[done:], self.pos + done, self.fstack, self.base, self.st, self.chunk_events,
                                  self.min_depth, self.exit_depth, self.bits, self.stack_off, self.stack_pool)
            done += int(self.st[K.I_DONE])
            if status == 0:
                break
            if status == K.CP_LOW:
                self._lower_base(int(self.st[K.I_DEPTH]) - 1, self.pos + done)
            elif status == K.CP_HIGH:
                self.fstack = np.concatenate([self.fstack, np.full(len(self.fstack), -1, np.int32)])
            else:
                self.stack_pool = np.concatenate([self.stack_pool, np.zeros(max(len(self.stack_pool), len(self.fstack)),
                                                                            np.int32)])
        self.pos += len(sym)
        i = 0
        while i < len(sym):
            take = min(len(sym) - i, self.chunk_events - self.fill)
            self.buf[self.fill:self.fill + take] = sym[i:i + take]
            self.fill += take
            i += take
            if self.fill == self.chunk_events:
                self.sink(self.emitted, self.buf.copy())
                self.emitted += 1
                self.fill = 0

    def finish(self, stats: DepthStats) -> tuple[UnitIndex, np.ndarray, np.ndarray]:
        """(chunk index, stack offsets, stack pool with levels from ``stats.dmin``) once every
        symbol of the stream (``stats``: its final length and depth range) was fed."""
        if self.pos != stats.symbols or stats.dmin < self.base:
            raise ValueError("the stream's depth statistics do not match its symbols")
        if self.fill:
            self.sink(self.emitted, self.buf[:self.fill].copy())
            self.fill = 0
        n = -(-self.pos // self.chunk_events)
        off = self.stack_off[: n + 1]
        pool, off = _pad_stacks(self.stack_pool, off, -(stats.dmin - self.base))  # levels below dmin: all -1
        index = UnitIndex(self.min_depth[:n].copy(), self.exit_depth[:n].copy(), self.bits[:, : -(-n // 8)].copy())
        return index, off, pool[: int(off[-1])].copy()


def _pad_stacks(pool: np.ndarray, off: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The stacks ``pool[off[c]:off[c + 1]]`` with ``k`` unknown (-1) levels added below each
    (k < 0: that many bottom levels removed)."""
    if k == 0 or len(off) < 2:
        return pool, off.copy()
    sizes = np.diff(off)
    new_off = np.concatenate([[0], np.cumsum(sizes + k)]).astype(np.int64)
    out = np.full(max(len(pool), int(new_off[-1]) + 1), -1, np.int32)
    for c in range(len(sizes)):
        if k > 0:
            out[new_off[c] + k: new_off[c + 1]] = pool[off[c]: off[c + 1]]
        else:
            out[new_off[c]: new_off[c + 1]] = pool[off[c] - k: off[c + 1]]
    return out, new_off


def index(sid: int, grammar: Grammar, stats: DepthStats, *, chunk_events: int = CHUNK_EVENTS,
          segments: int = SEGMENTS, segment_items: int = SEGMENT_ITEMS, functions: int | None = None,
          sink: Callable[[int, np.ndarray], None] | None = None,
          read_chunk: Callable[[int], np.ndarray] | None = None,
          advance: Callable[[int], None] = lambda n: None,
          chunked: tuple[UnitIndex, np.ndarray, np.ndarray] | None = None) -> CompressedStream:
    """Walk the grammar's expansion once: chunks go to ``sink(c, symbols)`` (kept in memory,
    zstd-compressed, when there is no sink), and both indexes are filled.  ``chunked``: the
    chunk part already made by a :class:`ChunkIndexer` fed the stream (then only the segment
    index is built here, and ``read_chunk`` reads the chunks it wrote)."""
    n = len(grammar)
    if n != stats.symbols:
        raise ValueError(f"grammar expands to {n} symbols, the stream has {stats.symbols}")
    chunk_events = max(1, int(chunk_events))
    nfun = functions if functions is not None else _functions(grammar)
    seg_item, seg_pos = segment_bounds(grammar, segments, segment_items)
    nseg = len(seg_item) - 1
    segs = UnitIndex(np.zeros(nseg, np.int64), np.zeros(nseg, np.int64), np.zeros((nfun, -(-nseg // 8)), np.uint8))
    fstack = np.full(stats.dmax - stats.dmin + 1, -1, np.int32)
    st = np.zeros(K.I_SIZE, np.int64)
    frames: list[bytes] = []
    chunker = None
    if chunked is None:
        if sink is None:
            comp = zstandard.ZstdCompressor(level=3)
            sink = lambda c, a: frames.append(comp.compress(a.tobytes()))  # noqa: E731
            read_chunk = _frame_reader(frames)
        chunker = ChunkIndexer(chunk_events, nfun, sink, symbols_hint=n)
    pos = 0
    for piece in grammar.iter_chunks(_PIECE):
        sym = piece.astype(np.int32)
        if K.segment_pass(sym, pos, fstack, stats.dmin, st, seg_pos, segs.min_depth, segs.exit_depth, segs.bits):
            raise ValueError("the stream's depth statistics do not match its symbols")
        if chunker is not None:
            chunker.feed(sym)
        pos += len(sym)
        advance(len(sym))
    chunks, stack_off, stack = chunked if chunker is None else chunker.finish(stats)
    return CompressedStream(sid, n, grammar, stats, chunk_events, chunks, stack_off, stack, seg_item, seg_pos,
                            segs, read_chunk or _written_elsewhere, segments, segment_items)


def coarsen(u: UnitIndex, m: int) -> UnitIndex:
    """The index of units made of ``m`` consecutive units of ``u`` (the last may hold fewer):
    minimum of the minima (each unit's entry is the exit of the one before), exit of the
    last, union of the bits.  Skipping stays exact: a coarse unit is unmarked only if each
    of its parts is."""
    if m <= 1 or u.units == 0:
        return u
    k = -(-u.units // m)
    starts = np.arange(0, u.units, m)
    bits = np.unpackbits(u.bits, axis=1, bitorder="little")[:, : u.units].astype(bool)
    merged = np.logical_or.reduceat(bits, starts, axis=1) if bits.shape[0] else np.zeros((0, k), bool)
    return UnitIndex(np.minimum.reduceat(u.min_depth, starts), u.exit_depth[np.minimum(starts + m, u.units) - 1].copy(),
                     np.packbits(merged, axis=1, bitorder="little").reshape(u.bits.shape[0], -(-k // 8)))


def coarsen_segments(cs: CompressedStream, m: int) -> None:
    """Merge ``cs``'s segments ``m`` by ``m`` (bounds and index), in place."""
    if m <= 1:
        return
    keep = np.append(np.arange(0, len(cs.seg_item) - 1, m), len(cs.seg_item) - 1)
    cs.seg_item, cs.seg_pos = cs.seg_item[keep], cs.seg_pos[keep]
    cs.segments = coarsen(cs.segments, m)
    cs.segment_merge *= m


def _functions(grammar: Grammar) -> int:
    """Rows needed for function bits: one more than the largest function id in the grammar."""
    rhs = grammar.rhs
    odd = rhs[(rhs > 0) & ((rhs & 1) == 1)]
    return int(odd.max() >> 1) + 1 if len(odd) else 0


def _written_elsewhere(c: int) -> np.ndarray:
    raise InternalError("this stream's chunks went to a sink; read them from where they were written")


def _frame_reader(frames: list[bytes]) -> Callable[[int], np.ndarray]:
    def read(c: int) -> np.ndarray:
        return np.frombuffer(zstandard.ZstdDecompressor().decompress(frames[c]), np.int32)
    return read


def from_symbols(symbols: np.ndarray, *, sid: int = 0, chunk_events: int = CHUNK_EVENTS,
                 segments: int = SEGMENTS, segment_items: int = 1, grammar: Grammar | None = None
                 ) -> CompressedStream:
    """An in-memory compressed stream of an F/B/E symbol array (tests); ``grammar`` may give
    any grammar of the same symbols instead of SEQUITUR's; segments may be single items."""
    sym = np.ascontiguousarray(symbols, dtype=np.int32)
    stats = DepthStats(events=len(sym), symbols=len(sym))
    d = np.cumsum(np.where(sym == 0, -1, np.where((sym & 1) == 1, 1, 0)))
    if len(d):
        stats.dmin, stats.dmax, stats.final = min(0, int(d.min())), max(0, int(d.max())), int(d[-1])
    if grammar is None:
        grammar = build([sym] if len(sym) else [], stats)
    return index(sid, grammar, stats, chunk_events=chunk_events, segments=segments, segment_items=segment_items)
