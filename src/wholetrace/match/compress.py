"""`wholetrace compress`: add the compressed control-flow trace and its indexes to a recording.

Idempotent (a stream already built with the same chunk and segment sizes is left alone) and
safe to interrupt: each stream is written in one transaction, so an interrupted run leaves
the streams finished so far and a valid file.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from wholetrace.errors import UsageError
from wholetrace.match import cftrace
from wholetrace.match import store as mstore
from wholetrace.match.source import symbol_chunks
from wholetrace.match.symbols import DepthStats
from wholetrace.wpp.stored import readable

#: modes whose streams the decoding kernel turns into block events (full: a blocks trace, values apart)
TRACE_MODES = ("blocks", "witness", "branches", "path", "full")


@dataclass
class StreamBuild:
    """What building one stream cost and produced."""

    sid: int
    events: int
    symbols: int
    rules: int
    grammar_s: float
    index_s: float
    skipped: bool = False
    grammar_cpu: float = 0.0         # CPU seconds of the process (both threads) while decoding and building
    index_cpu: float = 0.0


def compress_file(path: str | Path, *, force: bool = False, chunk_events: int = cftrace.CHUNK_EVENTS,
                  segments: int = cftrace.SEGMENTS, segment_items: int = cftrace.SEGMENT_ITEMS) -> list[StreamBuild]:
    """Build what is missing (everything with ``force``); returns one entry per stream."""
    from wholetrace.progress import progress
    from wholetrace.store import Recording
    from wholetrace.store.writer import updating

    if chunk_events < 1 or segments < 1 or segment_items < 1:
        raise UsageError("--chunk-events, --segments and --segment-items must be at least 1")
    with Recording(path) as stored:
        rec = readable(stored)         # a --wpp recording without raw streams: read through its grammars
        mode = rec.meta.get("mode")
        if mode not in TRACE_MODES:
            raise UsageError(f"{path}: a {mode!r} recording has no control-flow trace to compress "
                             f"(record with --mode {' / '.join(TRACE_MODES)})")
        streams = rec.streams()
        nfun = max((f.fid for f in rec.functions()), default=-1) + 1
        todo = [s for s in streams if force or not _current(rec, s.sid, chunk_events, segments, segment_items)]
        done = [StreamBuild(s.sid, s.n_events, 0, 0, 0.0, 0.0, skipped=True) for s in streams if s not in todo]
        if not todo:
            return done
        total = 2 * sum(s.n_events for s in todo)
        with updating(path) as w, progress(f"compressing {Path(path).name}", total) as advance:
            for s in todo:
                done.append(_build_stream(rec, w, s.sid, nfun, (chunk_events, segments, segment_items), advance))
    return sorted(done, key=lambda b: b.sid)


def ahead(arrays: Iterator[np.ndarray], depth: int = 8) -> Iterator[np.ndarray]:
    """The arrays of ``arrays`` (copied), computed by a second thread up to ``depth`` ahead:
    decoding (numba kernels without the GIL) runs beside the grammar build on a second core.
    An error of the producer is raised here; closing the generator stops the producer."""
    q: queue.Queue[Any] = queue.Queue(depth)
    stop = threading.Event()
    end = object()

    def produce() -> None:
        try:
            for a in arrays:
                if stop.is_set():
                    return
                q.put(a.copy())
            q.put(end)
        except BaseException as e:   # noqa: BLE001 - handed to the consumer
            q.put(e)

    t = threading.Thread(target=produce, name="wholetrace-compress-decode", daemon=True)
    t.start()
    try:
        while True:
            item = q.get()
            if item is end:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while t.is_alive():           # unblock a producer waiting on a full queue
            try:
                q.get_nowait()
            except queue.Empty:
                t.join(0.01)


def _current(rec: object, sid: int, chunk_events: int, segments: int, segment_items: int) -> bool:
    f = mstore.stream_fields(rec, sid)
    return f is not None and (f["chunk_events"], f["segments_asked"], f["segment_items"]) == (
        chunk_events, segments, segment_items)


def _chunking(arrays: Iterator[np.ndarray], chunker: cftrace.ChunkIndexer) -> Iterator[np.ndarray]:
    """``arrays``, each fed to ``chunker`` first (on the thread that iterates this)."""
    for a in arrays:
        chunker.feed(a)
        yield a


def _build_stream(rec: object, w: object, sid: int, nfun: int, sizes: tuple[int, int, int],
                  advance: object) -> StreamBuild:
    from wholetrace.store.schema import compress

    stats = DepthStats()
    t0, c0 = time.perf_counter(), time.process_time()
    # the decoding thread also makes the chunk index and compresses the chunks (the stream's
    # own symbols: the grammar is not needed for them) while this thread builds the grammar;
    # the compressed chunks wait in memory until the stream's transaction writes them
    blobs: list[tuple[bytes, int]] = []
    chunker = cftrace.ChunkIndexer(sizes[0], nfun, lambda c, a: blobs.append((compress(a.data), len(a))))
    grammar = cftrace.build(ahead(_chunking(symbol_chunks(rec, sid, stats), chunker)), stats,
                            advance)  # type: ignore[arg-type]
    chunked = chunker.finish(stats)
    t1, c1 = time.perf_counter(), time.process_time()
    mstore.clear_stream(w, rec, sid)
    sink = mstore.ChunkSink(w, sid)
    for c, (blob, n) in enumerate(blobs):
        sink.put_compressed(c, blob, n)
    del blobs
    cs = cftrace.index(sid, grammar, stats, chunk_events=sizes[0], segments=sizes[1], segment_items=sizes[2],
                       functions=nfun, chunked=chunked, advance=advance)  # type: ignore[arg-type]
    mstore.fit_indexes(cs, sink.stored)
    mstore.write_stream(w, cs)
    return StreamBuild(sid, stats.events, stats.symbols, grammar.num_rules, t1 - t0, time.perf_counter() - t1,
                       grammar_cpu=c1 - c0, index_cpu=time.process_time() - c1)
