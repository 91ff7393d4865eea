"""The recorder: registers instrumented functions and moves every stream to the store as the run goes.

In the trace modes (``blocks``, ``witness``, ``branches``) stream chunks are stored as they are.  In the count modes
probes increment the slots of a counter object per file (made here as files are registered) and
handlers append exception edges to its edge list, which the recorder tallies as it flushes;
the counters are stored when the run ends.  Everything the program's code writes to belongs
to this recording (``self.state``, handed to instrumented code as constants): two recordings
in one process share nothing.
"""

from __future__ import annotations

import _thread
import gc
import sys
import time
import types
from wholetrace.store.cmods import ArrayType as array   # cmods' (store/cmods.py): never the program's
from types import FrameType

from wholetrace.instrument.emit import C_CALLS_COUNT
from wholetrace.instrument.emit import LOCAL as LOCAL_COUNTER
from wholetrace.instrument.facts import recording_facts
from wholetrace.instrument.modes import TRACE_MODES, ProbePlan, make_plan
from wholetrace.runtime import forkwarn, recursion, unfinished
from wholetrace.runtime.buffers import take_events
from wholetrace.runtime.shutdown import report_unraisable
from wholetrace.runtime.probes import RunState, new_counts, read_counts, runtime_objects
from wholetrace.runtime.streams import Stream

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any, Sequence

    from wholetrace.instrument.cfg import CFG
    from wholetrace.instrument.loader import FileEntry

FLUSH_SECONDS = 0.25


class Flag:
    """``threading.Event``'s ``set``/``is_set``/``wait`` on one ``_thread`` lock, held while the
    flag is clear: ``threading`` is not imported at start-up (docs/design.md, "Record's
    start-up, wave 15")."""

    __slots__ = ("_lock", "_set", "_guard")

    def __init__(self) -> None:
        self._lock = _thread.allocate_lock()
        self._lock.acquire()
        self._set = False
        self._guard = _thread.allocate_lock()   # one setter at a time: the lock is released once

    def set(self) -> None:
        with self._guard:
            if not self._set:
                self._set = True
                self._lock.release()

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: float) -> bool:
        """Wait until the flag is set or ``timeout`` seconds pass; True if it is set."""
        if self._set:
            return True
        if self._lock.acquire(True, timeout):
            self._lock.release()
            return True
        return self._set


def _as_plain() -> None:
    """On the flusher, around each flush: what the program's code may have left on this
    thread goes.  A ``__del__``, weakref or ``gc`` callback run here by a collection the
    flusher's allocations started, calling ``threading.current_thread()``, registers a
    ``_DummyThread`` the program would list for ever (``Dummy-1``; review15c): taken out of
    ``threading._active``.  A trace or profile function ``threading.settrace_all_threads`` /
    ``setprofile_all_threads`` (3.12+) set on this thread is cleared (here, and in the loop
    before the flush's first Python call), so the program's hook does not see wholetrace's
    frames (a profile function: at most the return of the wait it was set during)."""
    if sys.gettrace() is not None or sys.getprofile() is not None:
        sys.settrace(None), sys.setprofile(None)
    forkwarn.drop_due()   # a fork warning's filter, 3.13
    th = sys.modules.get("threading")
    active = getattr(th, "_active", None)
    dummy = getattr(th, "_DummyThread", None)
    if not isinstance(active, dict) or not isinstance(dummy, type):
        return
    me = _thread.get_ident()
    if isinstance(active.get(me), dummy):
        active.pop(me, None)


class Recorder:
    """Owns a store writer during a run; a daemon thread moves stream buffers into it."""

    def __init__(self, writer: Any, mode: str = "blocks",
                 weights: dict[tuple[str, str, str], Sequence[float]] | None = None) -> None:
        self.writer = writer
        self.mode = mode
        self.traces = mode in TRACE_MODES
        self.weights = weights or {}
        self.files: list[tuple[str, int, int, FileEntry]] = []   # (file, first fid, first counter, entry)
        self.n_functions = 0
        self._index: tuple[dict[tuple[str, str], int], list[int]] | None = None
        self.lock = _thread.allocate_lock()
        self._flush_lock = _thread.allocate_lock()
        self._stop = Flag()
        #: the flusher: a bare ``_thread`` thread (not in the program's ``threading.enumerate()``);
        #: its ident, and a lock it holds until its loop has ended (the join)
        self._thread: int | None = None
        self._running = _thread.allocate_lock()
        #: flushes by the flusher thread, their wake-ups' delay (s), their duration (s), the
        #: flusher's CPU (s), the conversion's duration (s); kept for ``--wpp`` (meta ``wpp.feed``)
        self.flusher_stats = [0, 0.0, 0.0, 0.0, 0.0]
        self.events = 0
        self.counter_base = 0
        self.state = RunState()
        #: The run-time objects instrumented code gets as constants (``instrument.loader.Registry``).
        self.constants = runtime_objects(self.state)
        self.exc_edges: dict[tuple[int, int, int], int] = {}
        self.suspendable = False   # some instrumented code may be a generator or coroutine
        #: The run ends inside the program (a ``multiprocessing`` child's exit finaliser, before
        #: ``os._exit``): the stopping thread's instrumented frames are unfinished too, and
        #: suspended generators are not closed (``runtime.children``).
        self.ends_inside = False
        #: Threads given a call of headroom for trace probes (Python 3.11, ``runtime.recursion``).
        self.headroom_threads: set[int] = set()
        self.registered: set[int] = set()   # streams whose row the flusher has written
        self.state.streams.on_new = self._on_new_stream
        self.values = None
        if mode == "full":      # WET capture: value probes and the value log (runtime.values)
            from wholetrace.runtime.values import ValueLog
            streams = self.state.streams
            self.values = ValueLog(writer, lambda: streams.current.get() or streams.new())
            self.values.serve()     # the split server, forked while this process has one thread
            self.constants.update(self.values.probes())

    # -- the instrumenter's registry (instrument.loader.Registry), and new streams
    def plan(self, file: str, cfg: CFG, base: int) -> ProbePlan:
        """The probe plan of one function (weights from ``--weights`` when it has some)."""
        return make_plan(self.mode, cfg, base, self.weights.get((file, cfg.qualname, cfg.fingerprint)))

    def weights_token(self, file: str) -> str:
        mine = sorted((q, fp, list(v)) for (f, q, fp), v in self.weights.items() if f == file)
        return repr(mine) if mine else ""

    def register_file(self, file: str, entry: FileEntry) -> tuple[int, int]:
        """Give the functions of one file consecutive ids and counters, and store the file's
        registry as one row (its blob comes ready from the code cache); returns (first fid,
        first counter id).  Per function only the statement spans are handed to the sites."""
        n = len(entry["qualnames"])
        with self.lock:
            fid_base, counter_base = self.n_functions, self.counter_base
            self.files.append((file, fid_base, counter_base, entry))
            self._index = None
            self.n_functions += n
            self.counter_base += entry["counters"]
            if not self.traces:
                self.state.file_counts[counter_base] = new_counts(entry["counters"])
            self.suspendable = self.suspendable or entry["suspendable"]
            self.state.sites.spans.update(zip(range(fid_base, fid_base + n), entry["spans"]))
        self.writer.add_file(fid_base, path=file, n_functions=n, counter_base=counter_base,
                             registry=entry["registry"])
        return fid_base, counter_base

    def code_index(self) -> tuple[dict[tuple[str, str], int], list[int]]:
        """(file, qualname) -> fid, and fid -> global id of its first counter (built when
        the run ends, not per registration)."""
        if self._index is not None:
            return self._index
        by_code: dict[tuple[str, str], int] = {}
        bases: list[int] = []
        for file, fid_base, counter_base, entry in self.files:
            for i, (q, off) in enumerate(zip(entry["qualnames"], entry["offsets"])):
                by_code[(file, q)] = fid_base + i
                bases.append(counter_base + off)
        self._index = (by_code, bases)
        return self._index

    def _on_new_stream(self, st: Stream) -> None:
        """A thread's first trace probe: its probes (C calls) get one call of headroom.  The
        stream's row is written by the flusher (SQLite releases the GIL: a thread pausing
        there would let other threads run where they would not have)."""
        if self.traces and C_CALLS_COUNT and st.thread_ident not in self.headroom_threads:
            self.headroom_threads.add(st.thread_ident)  # type: ignore[arg-type]
            if st.thread_ident != self.state.streams.main_ident:   # the runner sees to the main thread
                recursion.shift(1)
        if self.values is not None:     # full mode: the stream's value list, made in its context;
            # the append the stream's probes hold (``wt.a``), so value probes know it by identity
            self.values.on_new(st.sid, self.state.streams.current.get() or st.buf.append)

    # -- flushing
    def start(self) -> None:
        """Start the flusher thread (a daemon thread of ``_thread``, as ``threading``'s daemon
        threads are: the interpreter does not wait for it)."""
        running = self._running = _thread.allocate_lock()
        running.acquire()
        try:
            self._thread = _thread.start_new_thread(self._run, (running,))
        except BaseException:
            running.release()
            raise

    def _run(self, running: Any) -> None:
        try:
            self._loop()
        finally:
            _as_plain()
            running.release()

    def _loop(self) -> None:
        # the WPP builder's writer asks for more; read from the class: a fork child's lazy part
        # writer (``runtime.children``) would make its file on an attribute lookup
        interval = getattr(type(self.writer), "flush_seconds", FLUSH_SECONDS)
        timed = getattr(type(self.writer), "flusher_stats", None) is not None
        gettrace, getprofile, settrace, setprofile = sys.gettrace, sys.getprofile, sys.settrace, sys.setprofile
        if not timed:
            if self.values is not None and self.values.child:
                self.values.prepare()                  # a fork child: its own split server asked for
                _as_plain()
            while not self._stop.wait(interval):
                if gettrace() is not None or getprofile() is not None:   # before any Python call
                    settrace(None), setprofile(None)
                self.flush()
                _as_plain()
            return
        # The WPP builder: a flush every ``interval`` from the start of the last one (not from its
        # end: the wake-up waits for the GIL, the pipe write gives it up and waits again), at
        # least a quarter interval apart; its statistics for meta ``wpp.feed``: how late the
        # wake-ups are, how long the flushes take, the flusher thread's CPU.
        clock, stats, pace = time.perf_counter, self.flusher_stats, getattr(self.writer, "flush_interval", None)
        due = clock() + interval
        while True:
            wait = max(due - clock(), interval / 4)
            t = clock()
            if self._stop.wait(wait):
                break
            t1 = clock()
            if gettrace() is not None or getprofile() is not None:   # before any Python call
                settrace(None), setprofile(None)
            self.flush()
            _as_plain()
            due = t1 + (pace() if pace is not None else interval)
            stats[0] += 1
            stats[1] += t1 - t - wait
            stats[2] += clock() - t1
            stats[3] = time.thread_time()

    def flush(self, limits: dict[int, int] | None = None, edge_limit: int | None = None) -> None:
        """Move what every stream (trace modes) or the exception-edge list (count modes) holds
        now into the store, at most ``limits[sid]`` values of a stream and ``edge_limit`` of
        the list; appends racing with this stay queued."""
        with self._flush_lock:
            # One list for both loops: a stream a program thread makes meanwhile waits for
            # the next flush (listed again, it would get events before its row).
            streams = list(self.state.streams.all)
            for st in streams:
                if st.sid not in self.registered:
                    self.writer.add_stream(st.sid, kind=st.kind, name=st.name, thread_ident=st.thread_ident,
                                           parent=st.parent)
                    self.registered.add(st.sid)
            if not self.traces:
                edges = self.state.xedges
                n = len(edges) if edge_limit is None else min(len(edges), edge_limit)
                n -= n % 3
                if n:
                    chunk = edges[:n]
                    del edges[:n]
                    self.events += n
                    self._tally_exception_edges(chunk)
                return
            for st in streams:
                n = len(st.buf) if limits is None else min(len(st.buf), limits.get(st.sid, 0))
                if not n:
                    continue
                if self.values is not None:
                    # full mode: value records sit in the list too; split takes them off it
                    # piece by piece (runtime.values)
                    chunk = self.values.split(st.sid, st.buf, n)
                else:
                    t = time.perf_counter()
                    chunk = take_events(st.buf, n)
                    self.flusher_stats[4] += time.perf_counter() - t
                self.events += len(chunk)
                st.flushed += len(chunk)
                self.writer.append_events(st.sid, chunk)

    def _tally_exception_edges(self, chunk: list[int]) -> None:
        """Count modes: a chunk is a run of (fid, source statement, target block) triples."""
        for p in range(0, len(chunk), 3):
            key = (chunk[p], chunk[p + 1], chunk[p + 2])
            self.exc_edges[key] = self.exc_edges.get(key, 0) + 1

    def unfinished_frames(self) -> list[tuple[int, FrameType]]:
        """(fid, frame) of every instrumented frame that has not finished: on the stacks of
        the threads still running, or of a generator or coroutine left suspended."""
        frames: list[FrameType] = []
        me = _thread.get_ident()
        for ident, frame in sys._current_frames().items():
            f: FrameType | None = frame
            while f is not None and (ident != me or self.ends_inside):
                frames.append(f)
                f = f.f_back
        if self.suspendable:
            frames += [f for _obj, f in _suspended()]
        out: list[tuple[int, FrameType]] = []
        by_code = self.code_index()[0]
        for f in frames:
            fid = by_code.get((f.f_code.co_filename, f.f_code.co_qualname))
            if fid is not None:
                out.append((fid, f))
        return out

    def snapshot_counts(self) -> tuple[array, list[tuple[int, int]], int]:
        """Count modes, at one instant (``unfinished.at_one_instant``): the counters plus
        the counts still held in the locals of unfinished frames, the early exits (fid,
        statement of each unfinished frame), and how much of the exception-edge list
        belongs to the run."""
        def take() -> tuple[array, list[tuple[int, int]], int]:
            counts, early = self.counts_with(self.unfinished_frames())
            return counts, early, len(self.state.xedges)

        return unfinished.at_one_instant(take, lambda: len(self.state.xedges))

    def counts_with(self, frames: list[tuple[int, FrameType]]) -> tuple[array, list[tuple[int, int]]]:
        """The counters plus the counts held in the locals of ``frames`` (fid, frame), and
        those frames as early exits (fid, statement in flight)."""
        counts = array("q", [0] * max(self.counter_base, 1))
        for base, obj in list(self.state.file_counts.items()):
            for j, c in enumerate(read_counts(obj)):
                counts[base + j] = int(c)
        early: list[tuple[int, int]] = []
        bases = self.code_index()[1]
        for fid, f in frames:
            early.append((fid, self.state.sites.resolve(fid, f.f_code, f.f_lasti)))
            for name, value in f.f_locals.items():
                if name.startswith(LOCAL_COUNTER) and isinstance(value, float):
                    counts[bases[fid] + int(name[len(LOCAL_COUNTER):])] += int(value)
        return counts, early

    def close_suspended(self) -> None:
        """Close the instrumented generators and coroutines the program left suspended, once the
        recording is closed (``runner.record``, the process ending: full mode and record's
        KeyboardInterrupt exit).

        Nothing closes them while the recording is open: the interpreter closes them as it shuts
        down, after the recording, unrecorded (early exits in it), as plain Python does (a
        recorded subprocess too, since it finalises as plain: docs/design.md, wave 22).  Full
        mode's recorder can keep the interpreter from getting there, and record's
        KeyboardInterrupt exit kills the process with SIGINT before
        any shutdown (docs/design.md, "The end of a recording, wave 21"), so there they are
        closed here, after ``atexit`` (earlier than the interpreter would).  Coroutines an
        asyncio task owns and async generators (which need their event loop) are left alone —
        closing them would change what asyncio reports at exit.  Nothing is closed while another
        thread still runs: plain Python never runs the cleanup of a daemon thread's generators,
        and which thread owns one is not known.
        """
        if not self.suspendable or self.ends_inside:
            return
        me, flusher = _thread.get_ident(), self._thread
        if any(ident != me and ident != flusher for ident in sys._current_frames()):
            return
        aio = sys.modules.get("asyncio")
        by_code = self.code_index()[0]
        for obj, f in _suspended():
            if (f.f_code.co_filename, f.f_code.co_qualname) not in by_code:
                continue
            if type(obj) is types.GeneratorType:
                _close(obj)
            elif type(obj) is types.CoroutineType and not (
                    aio is not None and any(isinstance(r, aio.Future) for r in gc.get_referrers(obj))):
                _close(obj)

    def hand_over(self) -> None:
        """With the online WPP's writer (``wpp.online.OnlineWpp``, whose class has ``flusher_stats``):
        flush now, so the builder builds what the buffers hold while the run's end is worked out
        instead of on the tail (docs/design.md, "The builder's tail, wave 24"); a flush the flusher
        could have made at this moment itself.  Other writers: nothing (their flush is as slow here
        as later)."""
        if self.traces and self.values is None and getattr(type(self.writer), "flusher_stats", None) is not None:
            self.flush()

    def stop(self) -> None:
        """Stop the flusher and flush the rest; streams of threads still running keep what they had."""
        self._stop.set()
        if self._thread is not None and self._thread != _thread.get_ident():
            self._running.acquire()     # the flusher's join
            self._running.release()
        forkwarn.drop_due(force=True)
        note = getattr(type(self.writer), "flusher_stats", None)
        if note is not None:
            note(self.writer, self.flusher_stats)
        self.hand_over()   # before the facts and the snapshot below
        self.state.clear_held()  # release the tracebacks held while the program's code can still run
        facts = recording_facts([(fid_base, entry.get("facts", b"")) for _f, fid_base, _c, entry in self.files])
        if facts:   # what reports list for functions that never ran (instrument.facts)
            self.writer.put_array("report.facts", facts)
        if self.traces:
            tails, lengths = unfinished.snapshot(self.state, self.code_index()[0],
                                                 _suspended if self.suspendable else list, mine=self.ends_inside)
            self.flush(lengths)
            self.state.streams.on_new = None
            for sid, events in tails.items():   # close the activations still open (early exits)
                self.writer.append_events(sid, array("i", events))
            if self.values is not None:
                self.values.finish()
            return
        counts, early, edges = self.snapshot_counts()
        self.flush(edge_limit=edges)
        self.state.streams.on_new = None
        self.writer.put_array("counters", counts)
        rows = [v for (f, s, d), c in sorted(self.exc_edges.items()) for v in (f, s, d, c)]
        self.writer.put_array("exception_edges", array("q", rows), shape=(len(rows) // 4, 4))
        self.writer.put_array("early_exits", array("q", [v for pair in early for v in pair]),
                              shape=(len(early), 2))


_SUSPENDABLE = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)


def _suspended() -> list[tuple[Any, FrameType]]:
    """(object, frame) of the generators, coroutines and async generators started but not finished."""
    out: list[tuple[Any, FrameType]] = []
    for obj in gc.get_objects():
        t = type(obj)
        if t not in _SUSPENDABLE:
            continue
        if t is types.GeneratorType:
            if obj.gi_suspended:
                out.append((obj, obj.gi_frame))
        elif t is types.CoroutineType:
            if obj.cr_suspended:
                out.append((obj, obj.cr_frame))
        else:  # 3.11 has no ag_suspended
            f = obj.ag_frame
            if f is not None and not obj.ag_running and f.f_lasti > 0:
                out.append((obj, f))
    return out


def _close(obj: Any) -> None:
    """Close a generator or coroutine as the interpreter would when it is collected,
    reporting what its cleanup raises as the interpreter does ("Exception ignored in", the
    traceback from the generator's frame down)."""
    try:
        obj.close()
    except BaseException as exc:  # noqa: BLE001 - reported like an unraisable exception
        tb = exc.__traceback__
        report_unraisable(exc.with_traceback(tb.tb_next if tb is not None else None), None, obj)
