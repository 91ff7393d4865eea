"""The WPP built while the program runs: a writer in the recorder's flush path feeds per-stream SEQUITUR builders in a helper process.

Larus 1999 §1.1 observes that compression "can run concurrently with the instrumented
program, so only the compressed form need be stored".  :class:`OnlineWpp` wraps the
recording's writer: every chunk the recorder flushes (``append_events``) is written to a pipe
read by the builder process (``wpp.builder``), which interns it (``wpp.intern``) and feeds
the stream's ``GrammarBuilder``.  A process rather than a thread (docs/design.md, "The WPP
builder process"): the recorded process never imports numba nor loads a kernel (a second and
more of start-up, and an import on a background thread crawls while the program holds the
GIL), and the build runs on the second core with no GIL to share.  When the run ends,
:meth:`close` sends the end frame, waits for the builder's result and stores, in the generic
``arrays`` table: ``wpp.grammar.<sid>`` (``Grammar.to_bytes()`` as uint8), ``wpp.symbols``
(the terminal table, (n, 3) int64: kind, fid, value), and the statistics in meta key
``wpp``.  The raw chunks are stored as well only with ``keep_raw``.

Invariant: nothing is dropped and memory stays bounded: the builder process keeps at most
``queue_events`` events in memory and spills the rest to a temporary file, built in arrival
order (``wpp.builder.ChunkQueue``).  A process forked by the program inherits this object
but never writes to the pipe nor ends the build (``os.getpid()`` is checked).
"""

from __future__ import annotations

from wholetrace.store.cmods import ArrayType as array   # cmods' (store/cmods.py): never the program's
import _signal   # not signal (enum, functools, collections): see wpp.spawn
import marshal
import os
import sys
import time
from _struct import Struct   # struct's (not struct.py: the program's own imports find what they find plainly)
import _thread   # not threading (docs/design.md, "Record's start-up, wave 15")

from wholetrace.errors import InternalError
from wholetrace.store import fdguard
from wholetrace.wpp.spawn import INTERNED_MODES, QUEUE_EVENTS, BuilderProcess

TYPE_CHECKING = False   # no typing at record's start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any

__all__ = ["BuilderProcess", "INTERNED_MODES", "OnlineWpp", "QUEUE_EVENTS"]
GRAMMAR_NAME = "wpp.grammar.{sid}"
SYMBOLS_NAME = "wpp.symbols"
META_KEY = "wpp"
#: Version of the terminal table ``wpp.symbols`` (meta ``wpp.terminals``; absent: 1).  2 (wave 10)
#: adds the fused kinds ENTER_PATH and ENTER_CHAIN (ENTERs fused with the activation's first path record,
#: ``wpp.symbols``), which a reader of version 1 would take for an unknown terminal: readers
#: refuse a version above theirs in one line instead.  Recordings of version 1 read unchanged.
#: 3 (wave 12) adds SEQ (terminals in a row joined at calls and returns, ``wpp.symbols``);
#: recordings of versions 1 and 2 read unchanged.
TERMINALS_VERSION = 3
_FRAME = Struct("<ii")   # builder.FRAME


#: 0.005 s (0.05, then 0.02 in wave 9): the builder idles less between chunks and less is left to
#: build when the program ends; flushes are timed start to start (docs/design.md, "The
#: recorder-to-builder handoff, wave 12")
FLUSH_SECONDS = float(os.environ.get("WHOLETRACE_WPP_FLUSH", "0.005"))
#: the interval while the builder has at least ``BUSY_EVENTS`` events to build (~20 ms of its work
#: at 10 M events/s): a chunk sooner would not keep it busier, each flush costs the program two
#: GIL switches (docs/design.md, "The recorder-to-builder handoff, wave 12")
BUSY_SECONDS = max(FLUSH_SECONDS, float(os.environ.get("WHOLETRACE_WPP_BUSY_FLUSH", "0.02")))
BUSY_EVENTS = 200_000


def _result(data: bytes) -> tuple[dict[str, Any] | None, str]:
    """The builder's result (marshal, not pickle: pickle with re and copyreg cost the recorder
    1.5-4.5 ms of its start-up) and ``""``, or None and why there is none: nothing written, or
    written cut short (the builder died while writing it) or garbled, or not the builder's dict."""
    if not data:
        return None, "it ended without a result"
    try:
        result = marshal.loads(data)
    except (EOFError, ValueError, TypeError) as exc:
        return None, f"its result ({len(data)} bytes) is cut short or garbled: {exc}"
    if not isinstance(result, dict) or not ("error" in result or {"grammars", "symbols", "stats", "streams"} <= result.keys()):
        return None, f"its result is not the builder's (a {type(result).__name__})"
    return result, ""


_PIPE = {_signal.SIGPIPE}


class _NoSigpipe:
    """Around writes to the builder's pipe: ``SIGPIPE`` blocked in this thread only, and the one a
    write to a dead builder raised (``EPIPE``, the signal pending on this thread) taken before the
    thread's mask is restored.  A program that sets ``SIGPIPE`` to ``SIG_DFL`` would otherwise be
    killed by the recorder's write (review13b M3); Python's own ``SIG_IGN`` is unaffected."""

    __slots__ = ("_wpp", "_broken", "_old")

    def __init__(self, wpp: OnlineWpp) -> None:
        self._wpp = wpp

    def __enter__(self) -> None:
        self._broken = self._wpp._broken
        # the mask as it is first: on the main thread pthread_sigmask runs pending Python signal
        # handlers after changing the mask, and one raising must not leave SIGPIPE blocked
        self._old = old = _signal.pthread_sigmask(_signal.SIG_BLOCK, ())
        try:
            _signal.pthread_sigmask(_signal.SIG_BLOCK, _PIPE)
        except BaseException:
            _signal.pthread_sigmask(_signal.SIG_SETMASK, old)
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            if self._wpp._broken is not self._broken and _signal.SIGPIPE not in self._old:
                _signal.sigtimedwait(_PIPE, 0)   # None when no signal is pending (EBADF)
        finally:
            _signal.pthread_sigmask(_signal.SIG_SETMASK, self._old)


def _close_each(*closers: Any) -> None:
    """Call every closer; then raise the first exception one of them raised, if any."""
    first: BaseException | None = None
    for close in closers:
        try:
            close()
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            first = first or exc
    if first is not None:
        raise first


class OnlineWpp:
    """A recording writer that builds one grammar per stream as chunks arrive (see the module doc).

    Every writer method but ``append_events`` and ``close`` passes through to ``writer``.
    """

    #: how often the recorder's flusher should hand chunks over (``runtime.recorder``; default
    #: 0.25 s): the builder works beside the program only on what it has been given, and a small
    #: program's events otherwise arrive in one or two flushes at its end.
    flush_seconds = FLUSH_SECONDS

    def __init__(self, writer: Any, mode: str, *, lookahead: bool = False, keep_raw: bool = False,
                 queue_events: int = QUEUE_EVENTS, process: "BuilderProcess | None" = None) -> None:
        if process is None:
            process = BuilderProcess(mode, lookahead=lookahead, queue_events=queue_events)
        self._writer = writer
        self.mode = process.mode
        self.lookahead = process.lookahead
        self.keep_raw = bool(keep_raw)
        self.queue_events = process.queue_events
        self.submitted = 0
        self._pid = os.getpid()
        process.reap()        # the shell that started it: gone before the program runs
        self._lock = _thread.allocate_lock()
        self._broken: BaseException | None = None
        self._stderr, self._fd, self._out = process.stderr, process.fd, process.out
        self._fd_guard(process)
        self._spawned = process.spawned
        self._start = getattr(process, "start", "exec")   # forked or exec'd (wpp.spawn; meta startup.start)
        self._progress = getattr(process, "progress", None)   # the builder's events built (wpp.spawn)
        self._busy = 0                      # flushes paced at BUSY_SECONDS
        self._flusher: list[float] = []     # runtime.recorder.Recorder.flusher_stats
        self._stopped = 0.0                 # time.time() of the recorder's stop (flusher joined)
        self._sent = [0, 0.0]               # chunks sent, seconds in os.writev/os.write

    def _fd_guard(self, process: Any) -> None:
        """Our three descriptors checked before each use (docs/design.md, "Descriptors the program
        closes, wave 13"): the pipe before each write, the result pipe and stderr file at the end."""
        self._pipe: fdguard.FdGuard | None = fdguard.FdGuard(self._fd)
        self._out = fdguard.GuardedFile(self._out, "the WPP builder's result pipe")
        self._stderr = fdguard.GuardedFile(self._stderr, "the WPP builder's stderr file")
        # the progress file's descriptor (``wpp.spawn.Progress``), read per flush
        progress = getattr(process, "progress", None)
        self._mapped = None if progress is None else fdguard.FdGuard(progress.fd)

    def _end_pipe(self) -> None:
        """Close the pipe after the end frame; if the program closed it, fail: the builder's input
        ended there (the chunks sent are gone with it) and its number is now the program's."""
        pipe = self._pipe
        if pipe is not None and not pipe.intact():
            self._out.close()     # ours, or left open for good if the program took its number too
            raise InternalError(f"the WPP builder failed: the program closed the recorder's descriptor "
                                f"{pipe.fd} (its pipe to the builder)")
        os.close(self._fd)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._writer, name)

    def add_file(self, fid_base: int, **row: Any) -> None:
        """Register a file's functions; in path mode the builder learns which record path ids."""
        self._writer.add_file(fid_base, **row)
        if self.mode != "path" or os.getpid() != self._pid:
            return
        payload = _FRAME.pack(fid_base, row["n_functions"]) + bytes(row["registry"])
        with self._lock, _NoSigpipe(self):
            self._send(_FRAME.pack(-2, len(payload)), payload)   # builder.FILE_FRAME

    # -- the flush path (the recorder's flusher thread) -------------------------------
    def flush_interval(self) -> float:
        """Seconds until the recorder's next flush: ``flush_seconds`` while the builder has less
        than ``BUSY_EVENTS`` to build, or while its progress is unknown (no progress file, or the
        builder has not mapped it: still ``wpp.spawn.PROGRESS_UNMAPPED``), ``BUSY_SECONDS`` otherwise."""
        progress = self._progress
        if progress is None:
            return self.flush_seconds
        if self._mapped is None or not self._mapped.intact():   # the program closed it: the pace unknown
            return self.flush_seconds
        try:
            built = progress.built()
        except OSError:
            return self.flush_seconds
        if built >= 0 and self.submitted - built >= BUSY_EVENTS:
            self._busy += 1
            return BUSY_SECONDS
        return self.flush_seconds

    def flusher_stats(self, stats: list[float]) -> None:
        """The recorder's flusher statistics (read when the run ends: meta ``wpp.feed``); called by
        ``Recorder.stop`` once the flusher has ended (meta ``wpp.timeline.stop``)."""
        self._flusher = stats
        self._stopped = time.time()

    def append_events(self, sid: int, events: Any) -> None:
        """Send one chunk of stream ``sid`` to the builder (and store it raw with ``keep_raw``)."""
        if os.getpid() != self._pid:
            return
        if self.keep_raw:
            self._writer.append_events(sid, events)
        if isinstance(events, array) and events.itemsize == 4 and events.typecode in "il":
            data: Any = events   # the recorder's chunks (runtime.buffers): no numpy in the recorded
            # process (importing it on the flusher thread, beside the busy program, took 0.2-0.4 s)
        else:
            import numpy as np

            data = np.ascontiguousarray(events, dtype=np.int32)
        n = len(data)
        if n == 0:
            return
        with self._lock, _NoSigpipe(self):
            t = time.perf_counter()
            self.submitted += n
            self._send(_FRAME.pack(sid, n), data)
            self._sent[0] += 1
            self._sent[1] += time.perf_counter() - t

    def _send(self, *parts: Any) -> None:
        """Write ``parts`` to the pipe in one system call where it takes them all (a frame's head
        and its events: each call releases the GIL, and the flusher then waits up to a switch
        interval to get it back while the program runs)."""
        if self._broken is not None:
            return
        if self._pipe is not None and not self._pipe.intact():
            self._broken = OSError(f"the program closed descriptor {self._pipe.fd}")
            return
        views = [memoryview(p).cast("B") for p in parts]
        try:
            while views:
                k = os.writev(self._fd, views) if len(views) > 1 else os.write(self._fd, views[0])
                while views and k >= len(views[0]):
                    k -= len(views[0])
                    views.pop(0)
                if views:
                    views[0] = views[0][k:]
        except OSError as exc:
            # the builder died (or the program closed our descriptor): nothing more is sent, and
            # close() fails with a one-line error, never a grammar of part of the run (its count
            # of events received must equal ``submitted``)
            self._broken = exc

    # -- the end of the run ------------------------------------------------------------------
    def close(self, **how: Any) -> None:
        """Finish every grammar, store them with the symbol table and statistics, close the writer."""
        if getattr(self._writer, "closed", False) or os.getpid() != self._pid:
            return
        t0 = time.perf_counter()
        self._closing = time.time()
        try:
            with self._lock, _NoSigpipe(self):
                self._send(_FRAME.pack(-1, 0))
                self._end_pipe()
            data = self._out.read()      # until the builder exits
            self._result_wall = time.time()
            self._out.close()
            result, why = _result(data)
            if result is None or "error" in result:
                if result is not None:
                    why = str(result["error"])
                else:   # the builder's last words, if any (a traceback's last line)
                    said = self._builder_stderr()
                    why = (said or why) if not data else why + (f"; its stderr ends: {said}" if said else "")
                if self._broken is not None:   # the chunks it never got: say so
                    why += f" (the recorder's writes to it failed from then on: {self._broken})"
                raise InternalError(f"the WPP builder failed: {why}")
            self._store(result, time.perf_counter() - t0)
        except InternalError as exc:
            # the recording says so (meta ``wpp``: only ``error`` and the settings; ``wpp``, ``info``
            # and the readers report it), not "no WPP" nor, without --keep-raw, an empty trace
            try:
                self._writer.set_meta(**{META_KEY: {"error": str(exc), "mode": self.mode,
                                                    "keep_raw": self.keep_raw, "events": self.submitted}})
            except Exception:  # noqa: BLE001 - the writer failing too: the builder's error is the one to report
                pass
            raise
        finally:
            # each in its own step: one failing (EBADF after a program's closerange) skips no other
            _close_each(self._stderr.close, self._close_progress, lambda: self._writer.close(**how))

    def _close_progress(self) -> None:
        progress, self._progress = self._progress, None
        if progress is not None:
            if self._mapped is None or self._mapped.intact():
                progress.close()
            # else left open: its close would close the program's descriptor

    def _builder_stderr(self) -> str:
        """The last line the builder wrote to its stderr, or ``""``."""
        self._stderr.seek(0)
        lines = self._stderr.read().decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else ""

    def _feed(self, builder: dict[str, Any]) -> dict[str, Any]:
        """How the chunks went from the recorder to the builder (docs/design.md, "The
        recorder-to-builder handoff, wave 12"): the recorder's side (flushes by the flusher
        thread, the total delay of their wake-ups past the interval, their total duration, the
        flusher thread's CPU, the list-to-int32 conversion, the pipe writes) and the builder's
        (``wpp.builder``: chunks, sizes, gaps between arrivals, its idle time)."""
        f = list(self._flusher) + [0.0] * (5 - len(self._flusher))
        return {"interval": self.flush_seconds, "busy_interval": BUSY_SECONDS, "busy_flushes": self._busy,
                "progress": self._progress is not None, "flushes": int(f[0]), "wake_delay_seconds": round(f[1], 4),
                "flush_seconds": round(f[2], 4), "flusher_cpu_seconds": round(f[3], 4),
                "convert_seconds": round(f[4], 4), "chunks_sent": self._sent[0],
                "write_seconds": round(self._sent[1], 4)} | builder

    def _store(self, result: dict[str, Any], tail: float) -> None:
        # no numpy here: importing it on the tail cost 0.1-0.25 s of every recording
        for sid, enc in sorted(result["grammars"].items()):
            self._writer.put_array(GRAMMAR_NAME.format(sid=sid), enc)
        symbols = array("q")
        symbols.frombytes(result["symbols"])
        if sys.byteorder != "little":  # pragma: no cover - the builder wrote little-endian int64
            symbols.byteswap()
        self._writer.put_array(SYMBOLS_NAME, symbols, shape=(len(symbols) // 3, 3))
        stats = result["stats"]
        timeline = dict(stats.get("timeline", {}), close=round(self._closing - self._spawned, 4),
                        result=round(self._result_wall - self._spawned, 4))
        if self._stopped:
            timeline["stop"] = round(self._stopped - self._spawned, 4)
        if stats["received_events"] != self.submitted:
            why = f" (the recorder's writes to it failed: {self._broken})" if self._broken is not None else ""
            raise InternalError(f"the WPP builder received {stats['received_events']} of {self.submitted} events{why}")
        timeline["stored"] = round(time.time() - self._spawned, 4)   # the grammars and symbols put
        self._writer.set_meta(**{META_KEY: {
            "mode": self.mode, "lookahead": self.lookahead, "keep_raw": self.keep_raw,
            "terminals": TERMINALS_VERSION,
            "queue_events": self.queue_events, "events": self.submitted,
            "max_backlog_events": stats["max_backlog_events"],
            "backlog_at_end_events": stats["backlog_at_end_events"],
            "tail_seconds": round(tail, 4), "jit_seconds": stats["jit_seconds"],
            "import_seconds": stats["import_seconds"], "ready_seconds": stats["ready_seconds"],
            "spilled_events": stats["spilled_events"], "spilled_chunks": stats["spilled_chunks"],
            "builder": "process", "builder_cpu_seconds": stats["cpu_seconds"], "timeline": timeline,
            "feed": self._feed(stats.get("feed", {})),
            "kernels": stats.get("kernels", "jit"), "startup": dict(stats.get("startup", {}), start=self._start),
            "streams": result["streams"]}})
