"""The WPP builder process: reads a recording's event chunks from a pipe, interns them and builds one SEQUITUR grammar per stream.

Started by :class:`wholetrace.wpp.spawn.BuilderProcess` through ``wholetrace.wpp.startup``
(``python -S -c ... MODE LOOKAHEAD QUEUE_EVENTS SPAWNED PATH...``: no site, numpy's core only;
docs/design.md, wave 11), or as ``python -m wholetrace.wpp.builder MODE LOOKAHEAD QUEUE_EVENTS
[SPAWNED]`` (``SPAWNED``: ``time.time()`` at the start).  Input (fd 0): frames ``<sid:int32><n:int32>`` followed by
``n`` int32 events; a *file* frame (``sid == FILE_FRAME``, ``n`` bytes: ``<fid_base:int32>
<n_functions:int32>`` and the file's registry blob) tells which functions record path ids
(their exception records carry a register); a frame with ``sid == END_FRAME`` ends the input.  Output (fd 1), once the input
has ended and every grammar is finished: one dict (``result``) in ``marshal``'s format (plain types
only; the recorded process reads it without importing ``pickle``, which brings ``re`` along).

Two threads: the *reader* takes frames off the pipe as fast as they come (the recorded
process never waits on a full pipe while this process imports numba or builds), the main
thread interns and builds (the kernels release the GIL, so the reader is not held up).
Invariant: nothing is dropped and memory stays bounded: at most ``QUEUE_EVENTS`` events wait
in memory; a chunk beyond that, and every later chunk until the queue has drained, is
appended to a temporary spill file and read back in its turn, so chunks are built in the
order they arrived (per stream too).
"""

from __future__ import annotations

import collections
import gc
import marshal
import os
import struct
import sys
import _thread   # not threading (2.8 M instructions of the start-up): one reader thread, one condition
import time
TYPE_CHECKING = False   # typing is not imported by the builder (~11 M instructions of its start-up)
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any

import numpy as np

from wholetrace.errors import InternalError
from wholetrace.wpp.fileframes import FRAME, _strategies, path_functions  # noqa: F401 - re-exported (tests)

PROGRESS = struct.Struct("<q")   # events built so far, in wpp.spawn's progress file
# = wpp.spawn's PROGRESS_BYTES, PROGRESS_SEALS, PROGRESS_UNMAPPED (a test keeps them equal): not
# imported from there, whose import (with store.fdguard) was 3.1 M instructions of the start-up
PROGRESS_BYTES, PROGRESS_SEALS, PROGRESS_UNMAPPED = 64, 1 | 2 | 4, -1
FILE_FRAME = -2
END_FRAME = -1
#: the builder process's switch interval (docs/design.md, "The recorder-to-builder handoff, wave 12")
SWITCH_SECONDS = 0.0005


class _Condition:
    """``threading.Condition``'s ``with``/``wait``/``notify`` on ``_thread`` locks, for the queue's
    one waiter (the build loop) and one notifier (the reader thread); not re-entrant."""

    __slots__ = ("_lock", "_waiters")

    def __init__(self) -> None:
        self._lock = _thread.allocate_lock()
        self._waiters: collections.deque[Any] = collections.deque()

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    def wait(self) -> None:
        """Released while waiting for a :meth:`notify` (as ``threading.Condition.wait``), held again after."""
        waiter = _thread.allocate_lock()
        waiter.acquire()
        self._waiters.append(waiter)
        self._lock.release()
        try:
            waiter.acquire()
        finally:
            self._lock.acquire()
            if waiter in self._waiters:      # left by an exception (KeyboardInterrupt), not notified
                self._waiters.remove(waiter)

    def notify(self) -> None:
        """Wake the oldest waiter, if any (called with the lock held)."""
        if self._waiters:
            self._waiters.popleft().release()


class ChunkQueue:
    """FIFO of (sid, events) with ``bound`` events at most in memory and the rest in a spill file."""

    def __init__(self, bound: int) -> None:
        self.bound = max(0, int(bound))
        self._cond = _Condition()
        self._items: collections.deque[tuple[int, Any, int]] = collections.deque()  # (sid, array | offset, n)
        self._spill: Any = None
        self._spill_end = 0
        self._spilling = 0          # spilled chunks still queued: later chunks spill too (order)
        self.ended = False
        self.end_time = 0.0
        self.end_wall = 0.0         # time.time() of the end frame
        self.first_wall = 0.0       # time.time() of the first chunk
        # statistics
        self.received = 0
        self.in_memory = 0
        self.max_backlog = 0
        self.backlog = 0            # received, not yet built (memory and spill)
        self.backlog_at_end = 0
        self.spilled_events = 0
        self.spilled_chunks = 0
        self.arrivals: list[tuple[float, int]] = []   # (time.time(), events) of every chunk
        self.idle = 0.0             # seconds get() waited for a chunk before the end frame
        self.idle_from = 0.0        # ... counted from this perf_counter() on (the builder ready)

    def put(self, sid: int, raw: Any) -> None:
        """A chunk of ``raw`` (a writeable buffer of int32 events: bytearray or uint8 array)."""
        n = len(raw) // 4
        if n == 0:
            return
        with self._cond:
            if not self.received:
                self.first_wall = time.time()
            self.received += n
            self.backlog += n
            self.arrivals.append((time.time(), n))
            if not self._spilling and self.in_memory + n <= self.bound:
                self._items.append((sid, np.frombuffer(raw, np.int32), n))
                self.in_memory += n
                self.max_backlog = max(self.max_backlog, self.in_memory)
                self._cond.notify()
                return
        if self._spill is None:
            import tempfile   # only when spilling: with shutil and random, 4-6 ms of every start-up

            self._spill = tempfile.TemporaryFile(prefix="wholetrace-wpp-spill-")
        off = self._spill_end
        os.pwrite(self._spill.fileno(), raw, off)
        self._spill_end += len(raw)
        with self._cond:
            self._items.append((sid, off, n))
            self._spilling += 1
            self.spilled_events += n
            self.spilled_chunks += 1
            self._cond.notify()

    def put_file(self, payload: bytearray) -> None:
        """A file frame, kept in order with the chunks (its functions' events come after it)."""
        with self._cond:
            self._items.append((FILE_FRAME, payload, 0))
            self._cond.notify()

    def end(self) -> None:
        with self._cond:
            self.ended = True
            self.end_time = time.perf_counter()
            self.end_wall = time.time()
            self.backlog_at_end = self.backlog
            self._cond.notify()

    def get(self) -> tuple[int, np.ndarray, bool] | None:
        """The next chunk and whether it was spilled (waits for one), or None once the input
        has ended and all is taken."""
        with self._cond:
            if not self._items and not self.ended:
                t = time.perf_counter()
                while not self._items and not self.ended:
                    self._cond.wait()
                if self.idle_from:
                    self.idle += time.perf_counter() - max(t, self.idle_from)
            if not self._items:
                return None
            sid, where, n = self._items.popleft()
        if sid == FILE_FRAME:
            return sid, where, False
        if isinstance(where, np.ndarray):
            return sid, where, False
        # into a bytearray: an array over ``bytes`` is read-only, and the compiled kernels take
        # writeable arrays only (a read-only chunk would run the interner on numba's JIT)
        data = bytearray(4 * n)
        if os.preadv(self._spill.fileno(), [data], where) != len(data):
            raise InternalError("the WPP builder's spill file ended early")
        return sid, np.frombuffer(data, np.int32), True

    def done(self, chunk: np.ndarray, spilled: bool) -> None:
        with self._cond:
            self.backlog -= len(chunk)
            if spilled:
                self._spilling -= 1
            else:
                self.in_memory -= len(chunk)


def _read_exactly(f: Any, n: int, events: bool = False) -> Any:
    """``n`` bytes from ``f`` (None at EOF): a bytearray, or with ``events`` a writeable uint8
    array, which unlike ``bytearray(n)`` is not zero-filled before the read (wave 16: the memset
    was ~1% of the builder's instructions on richards)."""
    buf = np.empty(n, np.uint8) if events else bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = f.readinto(view[got:])
        if not k:
            return None
        got += k
    return buf


def read_frames(f: Any, q: ChunkQueue) -> None:
    """The reader thread: frames into the queue until the end frame (or EOF: the recorded
    process died; what came is still built, the result is then not read by anyone)."""
    try:
        while True:
            head = _read_exactly(f, FRAME.size)
            if head is None:
                break
            sid, n = FRAME.unpack(head)
            if sid == FILE_FRAME:
                payload = _read_exactly(f, n)
                if payload is None:
                    break
                q.put_file(payload)
                continue
            if sid < 0:
                break
            raw = _read_exactly(f, 4 * n, events=True)
            if raw is None:
                break
            q.put(sid, raw)
    finally:
        q.end()


def build(mode: str, lookahead: bool, q: ChunkQueue, spawned: float = 0.0, progress: Any = None) -> dict[str, Any]:
    """Intern and build every chunk the queue gives; the result the recorded process stores.
    ``spawned``: ``time.time()`` when the recorded process started this one (0: unknown);
    ``progress``: the progress file mapped (:func:`progress_map`), or None."""
    t0 = time.perf_counter()
    from wholetrace.wpp.aot import JIT_FALLBACKS, install

    t = time.thread_time()
    kernels = install()   # "aot": the compiled kernels, no numba import; else the JIT's reason
    loaded = time.thread_time() - t   # the compiled module's load (jit_seconds: with the warm-up's)
    if kernels != "aot" or JIT_FALLBACKS:
        # numba compiles (cold cache) or loads: ~12 M cyclic objects of garbage that a collector
        # left off would keep, and gc.freeze() below would keep for the whole build (0.8 GB)
        gc.enable()
    from wholetrace.grammar import GrammarBuilder
    from wholetrace.grammar.encoding import encode_explicit
    from wholetrace.wpp.intern import interner_for, terminals_to_array

    imported = time.perf_counter()
    t = time.thread_time()
    if kernels != "aot":   # the JIT: compile or load the kernels from numba's cache before the first chunk
        warm = GrammarBuilder(lookahead=lookahead)
        warm.feed(interner_for(mode).codes(0, np.array([-8, 0, 1, 0, 1, -2, 0, -1], np.int32), final=True))
        encode_explicit(warm.finish(), fast=True)
    # the compiled kernels need no warm-up: it built and encoded a grammar nobody reads (~1.7 M
    # instructions of every builder; docs/design.md, "The builder's own layer, wave 20")
    jit = loaded + time.thread_time() - t
    if not gc.isenabled():
        # wpp.startup.CODE disables the collector for the start-up (its collections were ~6% of
        # the start-up's instructions, nothing to collect); what the start-up made is frozen,
        # never scanned again.  Only with the compiled kernels: the JIT path enabled it above
        gc.freeze()
        gc.enable()
    interner = interner_for(mode)
    ready = q.idle_from = time.perf_counter()
    ready_wall = time.time() - spawned if spawned else ready - t0
    builders: dict[int, Any] = {}
    built = 0
    debug: list[tuple[float, float]] | None = [] if os.environ.get("WHOLETRACE_WPP_DEBUG") else None
    cpu: dict[int, float] = {}
    events: dict[int, int] = {}
    while True:
        item = q.get()
        if item is None:
            break
        sid, chunk, spilled = item
        if sid == FILE_FRAME:
            fid_base, n_functions, fids = path_functions(chunk)
            interner.set_path_functions(fids, fid_base + n_functions)
            continue
        b = builders.get(sid)
        if b is None:
            b = builders[sid] = GrammarBuilder(lookahead=lookahead)
            cpu[sid] = 0.0
            events[sid] = 0
        t, w = time.thread_time(), time.time()
        b.feed(interner.codes(sid, chunk, scratch=True))
        cpu[sid] += time.thread_time() - t
        if debug is not None:
            debug.append((w, time.time()))
        events[sid] += len(chunk)
        q.done(chunk, spilled)
        built += len(chunk)
        if progress is not None:
            PROGRESS.pack_into(progress, 0, built)
    built_wall = time.time()
    grammars: dict[int, bytes] = {}
    streams: dict[str, dict[str, Any]] = {}
    finished: dict[int, Any] = {}
    for sid in sorted(builders):
        t = time.thread_time()
        builders[sid].feed(interner.finish(sid))   # an ENTER the stream ended with (fused ENTERs)
        finished[sid] = builders[sid].finish()
        cpu[sid] += time.thread_time() - t
    finished_wall = time.time()
    for sid, g in finished.items():
        t = time.thread_time()
        enc = encode_explicit(g, fast=True)   # on the tail: zstd only (docs/design.md, wave 9)
        cpu[sid] += time.thread_time() - t
        grammars[sid] = enc
        streams[str(sid)] = {"events": events[sid], "symbols": len(g), "rules": g.num_rules,
                             "rhs": g.num_symbols, "len_S": g.start_length,
                             "encoded_bytes": len(enc), "build_seconds": round(cpu[sid], 4)}
    symbols = terminals_to_array(interner.terminals())
    # plain bytes (int64, 3 a terminal): the recorded process stores them without importing numpy;
    # every value plain data (main marshals the result)
    return {"grammars": grammars, "symbols": symbols.astype("<i8").tobytes(), "streams": streams,
            "stats": {"max_backlog_events": q.max_backlog, "backlog_at_end_events": q.backlog_at_end,
                      "spilled_events": q.spilled_events, "spilled_chunks": q.spilled_chunks,
                      "received_events": q.received, "jit_seconds": round(jit, 4), "kernels": _kernels_used(kernels),
                      "import_seconds": round(imported - t0, 4),
                      "ready_seconds": round(ready_wall, 4),
                      "built_after_end_seconds": round(max(0.0, time.perf_counter() - q.end_time), 4),
                      "timeline": _timeline(spawned, first=q.first_wall, end=q.end_wall, built=built_wall,
                                            finished=finished_wall, encoded=time.time()),
                      "feed": feed_stats(q, spawned, debug) | {"progress_mapped": progress is not None},
                      "cpu_seconds": round(_cpu(), 4)}}


def progress_map(where: str | None) -> Any:
    """The recorded process's progress file mapped here, or None: ``where`` (``wpp.spawn.PROGRESS_ENV``)
    names a descriptor this process inherited at its spawn (``wpp.spawn.PROGRESS_FD``).  Mapped
    only if it is that memfd: a regular file of ``PROGRESS_BYTES``, unlinked, sealed with exactly
    ``PROGRESS_SEALS`` (only a memfd carries seals), holding ``PROGRESS_UNMAPPED``; anything else
    is left untouched.  Once mapped: 0 written (the recorder paces by it from then on) and the
    descriptor closed (the mapping keeps its own).  This process then publishes the events it has
    built there; the recorder's flusher reads them without a system call
    (``wpp.online.OnlineWpp.flush_interval``).  Called first thing in :func:`main`."""
    if not where or not where.isdigit():
        return None
    import fcntl
    import mmap
    import stat

    fd = int(where)
    try:
        st = os.fstat(fd)
        if not (stat.S_ISREG(st.st_mode) and st.st_size == PROGRESS_BYTES and st.st_nlink == 0
                and fcntl.fcntl(fd, fcntl.F_GET_SEALS) == PROGRESS_SEALS
                and os.pread(fd, PROGRESS.size, 0) == PROGRESS.pack(PROGRESS_UNMAPPED)):
            return None
        m = mmap.mmap(fd, PROGRESS_BYTES)
    except (AttributeError, OSError, ValueError):
        return None
    PROGRESS.pack_into(m, 0, 0)
    os.close(fd)
    return m


def feed_stats(q: ChunkQueue, spawned: float, debug: list[tuple[float, float]] | None) -> dict[str, Any]:
    """The builder's side of meta ``wpp.feed``: chunks received, their sizes, the gaps between
    their arrivals (before the end frame), the seconds the build loop waited for one once ready
    (``idle_seconds``), and the first chunk's arrival (s after the spawn).  With
    ``WHOLETRACE_WPP_DEBUG`` set: ``chunks``, every chunk's (arrival, events, build start, build
    end), seconds after the spawn (the end frame's chunks included)."""
    sizes = sorted(n for _, n in q.arrivals)
    times = [w for w, _ in q.arrivals if not q.end_wall or w <= q.end_wall]
    gaps = sorted(b - a for a, b in zip(times, times[1:]))
    out: dict[str, Any] = {
        "chunks": len(sizes), "idle_seconds": round(q.idle, 4),
        "chunk_events": [sizes[0], sizes[len(sizes) // 2], sizes[-1]] if sizes else [],
        "gap_ms": [round(1e3 * g, 1) for g in (gaps[0], gaps[len(gaps) // 2], gaps[-1])] if gaps else []}
    if debug is not None and spawned:
        out["debug"] = [[round(a - spawned, 4), n, round(s - spawned, 4), round(e - spawned, 4)]
                        for (a, n), (s, e) in zip(q.arrivals, debug)]
    return out


def _kernels_used(kernels: str) -> str:
    """``install``'s answer, naming the kernels the compiled module had no export for (their calls
    went to numba's JIT: a slow, silent path otherwise; meta ``wpp.kernels``)."""
    from wholetrace.wpp.aot import JIT_FALLBACKS

    return f"{kernels} (jit: {', '.join(sorted(JIT_FALLBACKS))})" if JIT_FALLBACKS and kernels == "aot" else kernels


def _timeline(spawned: float, **walls: float) -> dict[str, float]:
    """Seconds from the spawn (``time.time()`` of the recorded process) to each moment: the first
    chunk received, the end frame received, every chunk built, every grammar finished, every
    grammar encoded, the result about to be written (``sent``)."""
    if not spawned:
        return {}
    return {k: round(w - spawned, 4) for k, w in walls.items() if w}


def _cpu() -> float:
    """CPU seconds (user + system, every thread) of this process so far: the recorded process's CPU
    figures do not include it (it is nobody's child there).  ``getrusage(RUSAGE_SELF)``'s sum, read
    without importing ``resource``."""
    return time.process_time()


def _close_inherited() -> None:
    """Close the descriptors above 2 this process inherited (the recorded process starts it
    through ``os.posix_spawn``, which, unlike ``subprocess``, closes nothing; the interpreter's
    own are non-inheritable): an inherited pipe held open here would keep its reader waiting."""
    try:
        fds = [int(n) for n in os.listdir("/proc/self/fd")]
    except OSError:   # pragma: no cover - no /proc
        return
    for fd in fds:
        if fd > 2:
            try:
                if os.get_inheritable(fd):
                    os.close(fd)
            except OSError:   # the listing's own descriptor, already closed
                pass


def widen_result_pipe(fd: int, size: int) -> None:
    """Make the result pipe 1 MiB when the result is larger than a default pipe (64 KiB: go at size
    small sends 82 KB), so it crosses in one write instead of pieces that each wait for the
    recorder's read on the tail; only then, as every widened pipe counts against the user's pipe
    pages (``/proc/sys/fs/pipe-user-pages-soft``, docs/design.md, wave 19)."""
    if size > 1 << 16:
        from wholetrace.store.fdguard import widen_pipe   # only then: nothing added to the start-up

        widen_pipe(fd)


def main(argv: list[str]) -> int:
    # first: the descriptor is the recorder's memfd only as inherited (wpp.spawn); checked anyway
    progress = progress_map(os.environ.get("WHOLETRACE_WPP_PROGRESS"))   # wpp.spawn.PROGRESS_ENV
    _close_inherited()
    # numba imports coverage.py when it is installed (to report lines its compiler covers):
    # 0.05-0.1 s of the builder's start-up for nothing, as this process is never measured.
    sys.modules.setdefault("coverage", None)  # type: ignore[arg-type]
    mode, lookahead, bound = argv[0], argv[1] == "1", int(argv[2])
    spawned = float(argv[3]) if len(argv) > 3 else 0.0
    q = ChunkQueue(bound)
    # the reader thread gets the GIL back within 0.5 ms of a readinto (5 ms by default) when the
    # build loop holds it: the recorder's pipe write waits for that turn once the pipe is full
    sys.setswitchinterval(SWITCH_SECONDS)
    inp = open(0, "rb", buffering=0, closefd=False)
    _thread.start_new_thread(read_frames, (inp, q))   # as a daemon thread: the process ends by os._exit
    try:
        result: dict[str, Any] = build(mode, lookahead, q, spawned, progress)
        # how this process started (wpp.startup): numpy "lean" unless something completed it
        from wholetrace.wpp.startup import numpy_state

        result["stats"]["startup"] = {"numpy": numpy_state(), "site": not sys.flags.no_site}
    except BaseException as exc:  # noqa: BLE001 - reported to the recorded process
        result = {"error": f"{type(exc).__name__}: {exc}"}
    timeline = result.get("stats", {}).get("timeline")
    if timeline is not None:   # the result's hand-over starts (the recorder's ``result``: it has read it)
        timeline.update(_timeline(spawned, sent=time.time()))
    try:
        encoded = marshal.dumps(result)
    except ValueError as exc:    # a type marshal does not take: a bug here, reported as such
        encoded = marshal.dumps({"error": f"the builder's result is not plain data: {exc}"})
    data = memoryview(encoded)
    widen_result_pipe(1, len(data))
    while len(data):
        data = data[os.write(1, data):]
    # The recorded process reads the result to EOF: end now rather than after the interpreter's
    # finalization (tearing numba's modules down took 0.2-0.4 s, all of it on the tail), and give
    # it that EOF before this process's teardown (unmapping numpy and the kernels: ~1 ms of every
    # recording's tail; docs/design.md, "The recorder's side of --wpp, wave 14").
    os.close(1)
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
