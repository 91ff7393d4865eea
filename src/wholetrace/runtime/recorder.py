"""The recorder: registers instrumented functions and flushes every stream to the store as the run goes."""

from __future__ import annotations

import threading
from array import array
from typing import Any

from wholetrace.instrument.cfg import CFG
from wholetrace.runtime.probes import SITES, STREAMS, Stream

FLUSH_SECONDS = 0.25
FLUSH_EVENTS = 1 << 20


class Recorder:
    """Owns a store writer during a run; a daemon thread moves stream buffers into it."""

    def __init__(self, writer: Any) -> None:
        self.writer = writer
        self.functions: list[tuple[str, CFG]] = []
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.events = 0
        STREAMS.on_new = self._on_new_stream

    # -- called by the loader and by new streams
    def register(self, file: str, cfg: CFG, source: str) -> int:
        """Give a function its global id, remember its statement spans, store its registry row."""
        with self.lock:
            fid = len(self.functions)
            self.functions.append((file, cfg))
        SITES.register(fid, [(s.line, s.col, s.end_line, s.end_col, s.id) for s in cfg.stmts])
        self.writer.add_function(fid, file=file, qualname=cfg.qualname, firstline=cfg.firstline,
                                 lastline=cfg.lastline, source=source, cfg=cfg.to_json(),
                                 fingerprint=cfg.fingerprint)
        return fid

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
        for st in list(STREAMS.all):
            n = len(st.buf)
            if n:
                chunk: array = st.buf[:n]
                del st.buf[:n]
                self.writer.append_events(st.sid, chunk)
                st.flushed += n
                self.events += n

    def stop(self) -> None:
        """Stop the flusher and flush the rest; streams of threads still running keep what they had."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self.flush()
        STREAMS.on_new = None
