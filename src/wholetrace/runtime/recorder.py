"""The recorder: registers instrumented functions and moves every stream to the store as the run goes.

In the trace modes (``blocks``, ``witness``, ``branches``) stream chunks are stored as they are.  In the count modes a stream holds
global counter ids (one append per counter increment) and exception-edge records; the
recorder sums the ids with ``bincount`` when it flushes and keeps only the counts.
"""

from __future__ import annotations

import sys
import threading
from array import array
from typing import Any, Sequence

import numpy as np

from wholetrace.instrument.cfg import CFG
from wholetrace.instrument.modes import TRACE_MODES, ProbePlan, make_plan
from wholetrace.runtime.events import XCOUNT, arg_value
from wholetrace.runtime.probes import SITES, STREAMS, Stream

FLUSH_SECONDS = 0.25


class Recorder:
    """Owns a store writer during a run; a daemon thread moves stream buffers into it."""

    def __init__(self, writer: Any, mode: str = "blocks",
                 weights: dict[tuple[str, str, str], Sequence[float]] | None = None) -> None:
        self.writer = writer
        self.mode = mode
        self.traces = mode in TRACE_MODES
        self.weights = weights or {}
        self.functions: list[tuple[str, CFG, ProbePlan]] = []
        self.by_code: dict[tuple[str, str], int] = {}
        self.lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.events = 0
        self.counter_base = 0
        self.counts = np.zeros(1024, np.int64)
        self.exc_edges: dict[tuple[int, int, int], int] = {}
        STREAMS.on_new = self._on_new_stream

    # -- called by the loader and by new streams
    def register(self, file: str, cfg: CFG, source: str) -> tuple[int, ProbePlan]:
        """Give a function its id and probe plan, remember its statement spans, store its row."""
        with self.lock:
            fid = len(self.functions)
            base = self.counter_base
            plan = make_plan(self.mode, cfg, base, self.weights.get((file, cfg.qualname, cfg.fingerprint)))
            self.counter_base += plan.counters
            self.functions.append((file, cfg, plan))
            self.by_code[(file, cfg.qualname)] = fid
        SITES.register(fid, [(s.line, s.col, s.end_line, s.end_col, s.id) for s in cfg.stmts])
        desc = cfg.to_json()
        desc["plan"] = plan.to_json() | {"counter_base": base}
        self.writer.add_function(fid, file=file, qualname=cfg.qualname, firstline=cfg.firstline,
                                 lastline=cfg.lastline, source=source, cfg=desc,
                                 fingerprint=cfg.fingerprint)
        return fid, plan

    def _on_new_stream(self, st: Stream) -> None:
        self.writer.add_stream(st.sid, kind=st.kind, name=st.name, thread_ident=st.thread_ident,
                               parent=st.parent)

    # -- flushing
    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="wholetrace-flusher", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(FLUSH_SECONDS):
            self.flush()

    def flush(self) -> None:
        """Move what every stream holds now into the store (appends racing with this stay queued)."""
        with self._flush_lock:
            for st in list(STREAMS.all):
                n = len(st.buf)
                if not self.traces:
                    n = _complete_records(st.buf, n)
                if n:
                    chunk: array = st.buf[:n]
                    del st.buf[:n]
                    self.events += n
                    st.flushed += n
                    if self.traces:
                        self.writer.append_events(st.sid, chunk)
                    else:
                        self._count(np.frombuffer(chunk, np.int32))

    def _count(self, ev: np.ndarray) -> None:
        ids = ev[ev >= 0]
        if ids.size:
            top = int(ids.max()) + 1
            if top > self.counts.size:
                grown = np.zeros(max(top, 2 * self.counts.size), np.int64)
                grown[: self.counts.size] = self.counts
                self.counts = grown
            self.counts[:top] += np.bincount(ids, minlength=top)
        for p in np.flatnonzero(ev == XCOUNT).tolist():
            key = (arg_value(int(ev[p + 1])), arg_value(int(ev[p + 2])), arg_value(int(ev[p + 3])))
            self.exc_edges[key] = self.exc_edges.get(key, 0) + 1

    def early_exits(self) -> list[tuple[int, int]]:
        """(fid, statement) of every instrumented frame of the threads still running."""
        out: list[tuple[int, int]] = []
        me = threading.get_ident()
        for ident, frame in sys._current_frames().items():
            if ident == me:
                continue
            f = frame
            while f is not None:
                fid = self.by_code.get((f.f_code.co_filename, f.f_code.co_qualname))
                if fid is not None:
                    out.append((fid, SITES.resolve(fid, f.f_code, f.f_lasti)))
                f = f.f_back
        return out

    def stop(self) -> None:
        """Stop the flusher and flush the rest; streams of threads still running keep what they had."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        early = self.early_exits() if not self.traces else []
        self.flush()
        STREAMS.on_new = None
        if not self.traces:
            counters = np.zeros(max(self.counter_base, self.counts.size), np.int64)
            counters[: self.counts.size] = self.counts
            self.writer.put_array("counters", counters[: max(self.counter_base, 1)])
            rows = [(f, s, d, c) for (f, s, d), c in sorted(self.exc_edges.items())]
            self.writer.put_array("exception_edges", np.array(rows, np.int64).reshape(-1, 4))
            self.writer.put_array("early_exits", np.array(early, np.int64).reshape(-1, 2))


def _complete_records(buf: array, n: int) -> int:
    """Shorten ``n`` so that no XCOUNT record (4 ints) is cut in two."""
    for k in range(1, 4):
        if n - k >= 0 and buf[n - k] == XCOUNT:
            return n - k
    return n
