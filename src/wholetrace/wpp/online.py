"""The WPP built while the program runs: a writer in the recorder's flush path feeds per-stream SEQUITUR builders on a background thread.

Larus 1999 §1.1 observes that compression "can run concurrently with the instrumented
program, so only the compressed form need be stored".  :class:`OnlineWpp` wraps the
recording's writer: every chunk the recorder flushes (``append_events``) is queued for the
builder thread, which interns it (``wpp.intern``) and feeds the stream's
``GrammarBuilder``; both kernels release the GIL, so the work runs on another core beside
the program.  When the run ends, :meth:`close` drains the queue, finishes every grammar and
stores, in the generic ``arrays`` table: ``wpp.grammar.<sid>`` (``Grammar.to_bytes()`` as
uint8), ``wpp.symbols`` (the terminal table, (n, 3) int64: kind, fid, value), and the
statistics in meta key ``wpp``.  The raw chunks are stored as well only with ``keep_raw``.

Invariant: nothing is dropped and memory stays bounded.  At most ``queue_events`` events
wait in memory; a chunk that would exceed that, and every later chunk of its stream until
the builder has caught up with the stream, is *spilled*: stored as ``wpp.spill.<sid>``
(committed), read back by the builder when it has nothing else to do, and deleted once
built.  Each stream's chunks therefore reach its builder in order.
"""

from __future__ import annotations

import _thread
import collections
import threading
import time
from typing import Any

import numpy as np

from wholetrace.errors import InternalError
from wholetrace.grammar import GrammarBuilder
from wholetrace.wpp.intern import EventInterner, interner_for, terminals_to_array

#: Default bound of the events waiting in memory for the builder (4 bytes each).
QUEUE_EVENTS = 1 << 22
GRAMMAR_NAME = "wpp.grammar.{sid}"
SPILL_NAME = "wpp.spill.{sid}"
SYMBOLS_NAME = "wpp.symbols"
META_KEY = "wpp"


class _StreamBuild:
    """One stream's builder and what it cost."""

    def __init__(self, lookahead: bool) -> None:
        self.builder = GrammarBuilder(lookahead=lookahead)
        self.events = 0
        self.cpu = 0.0


class OnlineWpp:
    """A recording writer that builds one grammar per stream as chunks arrive (see the module doc).

    Every writer method but ``append_events`` and ``close`` passes through to ``writer``.
    """

    def __init__(self, writer: Any, mode: str, *, lookahead: bool = False, keep_raw: bool = False,
                 queue_events: int = QUEUE_EVENTS) -> None:
        self._writer = writer
        self.mode = mode
        self.lookahead = bool(lookahead)
        self.keep_raw = bool(keep_raw)
        self.queue_events = max(0, int(queue_events))
        interner_for(mode)   # UsageError unless the mode's streams can be interned
        self._cond = threading.Condition()
        self._queue: collections.deque[tuple[int, Any]] = collections.deque()
        self._backlog = 0                      # events queued in memory
        self._spilled: dict[int, list[str]] = {}   # sid -> keys of spilled chunks not yet built
        self._spill_seq: dict[int, int] = {}
        self._spill_backlog = 0                # events spilled and not yet built
        self._ending = False
        self._error: BaseException | None = None
        self._builds: dict[int, _StreamBuild] = {}
        self._reader: Any = None
        # statistics
        self.submitted = 0
        self.max_backlog = 0
        self.spilled_events = 0
        self.spilled_chunks = 0
        # Imports and kernel loading happen here, before the program runs: on the builder thread
        # they would crawl while the program holds the GIL (each file read gives the GIL up, and
        # taking it back from a busy thread waits for a switch interval: seconds for numba).
        t = time.thread_time()
        self.interner = _warm_up(self.lookahead, mode)
        self.jit_seconds = time.thread_time() - t
        # A bare thread (not in threading.enumerate()): the program cannot see it, and the
        # runner's end-of-run report of daemon threads does not count it.
        self._done = threading.Event()
        _thread.start_new_thread(self._run, ())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._writer, name)

    # -- the flush path (the recorder's flusher thread) -------------------------------
    def append_events(self, sid: int, events: Any) -> None:
        """Queue one chunk of stream ``sid`` for its builder (and store it raw with ``keep_raw``)."""
        if self.keep_raw:
            self._writer.append_events(sid, events)
        n = len(events)
        if n == 0:
            return
        with self._cond:
            self.submitted += n
            spill = bool(self._spilled.get(sid)) or self._backlog + n > self.queue_events
            if not spill:
                self._queue.append((sid, events))   # the recorder hands over a fresh array
                self._backlog += n
                self.max_backlog = max(self.max_backlog, self._backlog)
                self._cond.notify()
                return
            seq = self._spill_seq.get(sid, 0)
            self._spill_seq[sid] = seq + 1
            key = f"{seq:010d}"
        self._writer.put_array(SPILL_NAME.format(sid=sid), np.asarray(events, np.int32), key=key)
        self._writer.commit()     # the builder reads it back through its own connection
        with self._cond:
            self._spilled.setdefault(sid, []).append(key)
            self.spilled_events += n
            self.spilled_chunks += 1
            self._spill_backlog += n
            self._cond.notify()

    # -- the builder thread ---------------------------------------------------------------
    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # noqa: BLE001 - reported by close(), in the recording's thread
            self._error = exc
        finally:
            self._done.set()

    def _loop(self) -> None:
        """Build chunks in arrival order, spilled chunks when nothing waits in memory."""
        while True:
            with self._cond:
                while not self._queue and not any(self._spilled.values()) and not self._ending:
                    self._cond.wait()
                if self._queue:
                    sid, chunk = self._queue.popleft()
                    spilled_key = None
                elif any(self._spilled.values()):
                    sid = min(s for s, keys in self._spilled.items() if keys)
                    spilled_key = self._spilled[sid][0]
                    chunk = None
                else:
                    return
            if chunk is None:
                chunk = self._read_spilled(sid, spilled_key)
            self._build(sid, chunk)
            with self._cond:
                if spilled_key is None:
                    self._backlog -= len(chunk)
                else:
                    self._spilled[sid].pop(0)
                    self._spill_backlog -= len(chunk)

    def _read_spilled(self, sid: int, key: str) -> np.ndarray:
        if self._reader is None:
            from wholetrace.store import open_recording
            self._reader = open_recording(self._writer.path, check=False)
        arr = self._reader.get_array(SPILL_NAME.format(sid=sid), key)
        if arr is None:
            raise InternalError(f"spilled chunk {key} of stream {sid} is missing")
        return arr

    def _build(self, sid: int, chunk: Any) -> None:
        b = self._builds.get(sid)
        if b is None:
            b = self._builds[sid] = _StreamBuild(self.lookahead)
        t = time.thread_time()
        b.builder.feed(self.interner.codes(sid, _int32(chunk)))
        b.cpu += time.thread_time() - t
        b.events += len(chunk)

    # -- the end of the run ------------------------------------------------------------------
    def close(self, **how: Any) -> None:
        """Finish every grammar, store them with the symbol table and statistics, close the writer."""
        if getattr(self._writer, "closed", False):
            return
        t0 = time.perf_counter()
        with self._cond:
            backlog_at_end = self._backlog + self._spill_backlog
            self._ending = True
            self._cond.notify()
        self._done.wait()
        try:
            if self._error is not None:
                raise self._error
            self._store(backlog_at_end, t0)
        finally:
            if self._reader is not None:
                self._reader.close()
            self._writer.close(**how)

    def _store(self, backlog_at_end: int, t0: float) -> None:
        streams: dict[str, dict[str, Any]] = {}
        for sid, b in sorted(self._builds.items()):
            t = time.thread_time()
            g = b.builder.finish()
            enc = g.to_bytes()
            b.cpu += time.thread_time() - t
            self._writer.put_array(GRAMMAR_NAME.format(sid=sid), np.frombuffer(enc, np.uint8))
            streams[str(sid)] = {"events": b.events, "symbols": len(g), "rules": g.num_rules,
                                 "rhs": g.num_symbols, "len_S": g.start_length,
                                 "encoded_bytes": len(enc), "build_seconds": round(b.cpu, 4)}
        for sid in self._spill_seq:
            self._writer.delete_arrays(SPILL_NAME.format(sid=sid))
        self._writer.put_array(SYMBOLS_NAME, terminals_to_array(self.interner.terminals()))
        self._writer.set_meta(**{META_KEY: {
            "mode": self.mode, "lookahead": self.lookahead, "keep_raw": self.keep_raw,
            "queue_events": self.queue_events, "events": self.submitted,
            "max_backlog_events": self.max_backlog, "backlog_at_end_events": backlog_at_end,
            "tail_seconds": round(time.perf_counter() - t0, 4),
            "jit_seconds": round(self.jit_seconds, 4),
            "spilled_events": self.spilled_events, "spilled_chunks": self.spilled_chunks,
            "streams": streams}})


def _warm_up(lookahead: bool, mode: str) -> EventInterner:
    """Compile (or load from numba's cache) the kernels; returns the mode's interner.  Build times
    do not include this (it is reported apart as ``jit_seconds``; importing numba comes before it)."""
    b = GrammarBuilder(lookahead=lookahead)
    b.feed(interner_for(mode).codes(0, np.array([-8, 0, 1, 0, 1, -2, 0, -1], np.int32)))
    b.finish().to_bytes()
    return interner_for(mode)


def _int32(chunk: Any) -> np.ndarray:
    return chunk if isinstance(chunk, np.ndarray) else np.frombuffer(chunk, np.int32)
