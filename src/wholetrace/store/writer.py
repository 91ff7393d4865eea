"""Write a .wt recording; each append_events batch is committed on its own (crash-safe)."""

# Durability policy: ``append_events`` commits its chunk before returning, together with
# everything written since the last commit (functions, streams, meta, arrays).  A crash
# of the process (exception, SIGKILL, os._exit) therefore keeps every chunk that
# append_events returned from, and loses at most what was written after the last
# append/commit/close.  The journal is a rollback journal (journal_mode=PERSIST, kept
# open by renew.HOLD and removed by close; synchronous=NORMAL): an interrupted transaction
# leaves ``<path>-journal`` hot, which the next opener rolls back (the reader does this
# itself, see reader.py), so a half-written transaction is never seen.  Against power loss, synchronous=NORMAL leaves SQLite's small
# documented risk; one fsync per chunk is the cost of this policy, so callers should append
# large batches (tens of thousands of events), not single events.
# Once the recording ends, ``hold_commits`` (called by the runner after the program finished)
# makes the last flush's chunks commit together with the end meta in ``close``: one commit
# (three fdatasyncs) instead of one per stream and one more; a crash in between loses only
# what the program's end produced, exactly as a crash before the last flush always did.

from __future__ import annotations

import _thread
import os
import sys
import time
from types import TracebackType

# ``array`` without collections.abc, the C module ``sqlite3`` re-exports without functools
# (``sqlite3.dbapi2`` imports datetime: record's start-up; store/cmods.py)
from wholetrace.store.cmods import array, sqlite3

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:
    from collections.abc import Iterator   # (collections.abc, contextlib: not imported at start-up)
    from contextlib import AbstractContextManager
    from typing import Any, Self

    import numpy as np

import wholetrace
from wholetrace.errors import StoreError
from wholetrace.store import fdguard, schema
from wholetrace.store.renew import HOLD, Renewing, pragmas

__all__ = ["RecordingWriter"]

_SIDE_FILES = ("-journal", "-wal", "-shm")


def python_build() -> dict[str, str]:
    """``platform.python_version()`` and ``python_implementation()``, without importing
    ``platform`` (~2 ms of record's start-up) on CPython, where they are the first word of
    ``sys.version`` and "CPython"."""
    if sys.implementation.name != "cpython":  # pragma: no cover - other interpreters
        import platform

        return {"python_version": platform.python_version(), "python_implementation": platform.python_implementation()}
    return {"python_version": sys.version.split()[0], "python_implementation": "CPython"}


def _product(shape: tuple[int, ...]) -> int:
    """``math.prod(shape)`` (``math`` is not imported at start-up: a shared library to load)."""
    n = 1
    for d in shape:
        n *= d
    return n


class RecordingWriter(Renewing):
    """Create ``path`` and write one recording into it; thread-safe (one lock).

    Use as a context manager, or call :meth:`close` with how the run ended.
    """


    def __init__(self, path: str | os.PathLike[str], *, overwrite: bool = True, high: bool = False) -> None:
        """``high``: the database's and journal's descriptors >= ``fdguard.HIGH_FD`` (only while no
        other thread runs, before the program: record's start-up; :class:`fdguard.LowTaken`)."""
        self.path = os.fspath(path)
        self._abs = os.path.realpath(self.path)   # for reconnects: the program may chdir
        self._where = schema.where(self.path)
        self._lock = _thread.allocate_lock()
        self._closed = True
        self._next_seq: dict[int, int] = {}
        self._n_events: dict[int, int] = {}
        self._n_functions = 0
        self._held = False
        if os.path.isdir(self.path):
            raise StoreError(f"cannot create recording {self._where}: it is a directory")
        if os.path.lexists(self.path) and not overwrite:
            raise StoreError(f"cannot create recording {self._where}: file exists")
        # A stale journal next to a new database would be "rolled back" into it: remove it.
        fdguard.UNLOCKED.discard(self._abs)    # a new file: no leaked lock on it
        for name in (self.path, *(self.path + s for s in _SIDE_FILES)):
            try:
                os.unlink(name)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise StoreError(f"cannot create recording {self._where}: "
                                 f"{schema.one_line(exc.strerror or exc)}") from None
        # SQLite opens the database and its journal itself, at the lowest free numbers: taken
        # above HIGH_FD while the low ones are held (the connection and its first transaction),
        # and kept open for the whole recording (a persistent journal and renew.HOLD's read lock:
        # no journal opened and closed per commit), so the program's files take the numbers they
        # take in a plain run (docs/design.md, "The program cannot tell, wave 16": descriptors).
        with fdguard.LowTaken(high):
            try:
                self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            except sqlite3.Error as exc:
                raise StoreError(f"cannot create recording {self._where}: "
                                 f"{schema.one_line(exc)}") from None
            self._closed = False
            try:
                with self._guard("create schema"):
                    conn = self._conn
                    pragmas(conn)
                    conn.execute("BEGIN")    # application_id inside: outside, it was a commit of its own
                    conn.execute(f"PRAGMA application_id={schema.MAGIC}")
                    for stmt in schema.DDL.split(";\n"):
                        if stmt.strip():
                            conn.execute(stmt)
                    conn.execute(f"PRAGMA user_version={schema.SCHEMA_VERSION}")
                    self._put_meta({
                        "schema_version": schema.SCHEMA_VERSION,
                        "created": time.time(),
                        "wholetrace_version": wholetrace.__version__,
                        **python_build(),
                    })
                    self._hold = conn.execute(HOLD)     # before the commit: the journal stays open
                    conn.execute("COMMIT")
            except BaseException:
                self._abandon()
                raise
        self._watch()

    # -- plumbing -------------------------------------------------------------------

    def _guard(self, what: str) -> _Guard:
        """Turn sqlite/binding errors raised inside into a one-line StoreError (entering it:
        refused when closed, then a new connection if the program took a descriptor)."""
        return _Guard(self, what)

    def _put_meta(self, items: dict[str, object]) -> None:
        rows = []
        for k, v in items.items():
            text = schema.encode_json(v, f"meta value {k!r}")
            rows.append((k, text, schema.row_crc("meta", k, text)))
        self._x("INSERT OR REPLACE INTO meta(key, value, crc) VALUES (?, ?, ?)", rows, True)

    def _abandon(self) -> None:
        self._closed = True
        if not self._intact():      # the program's descriptors now: leaked, never closed nor unlocked
            fdguard.leak((self._conn, self._hold))
            self._hold = None
            return
        try:
            if self._hold is not None:
                self._hold.close()
                self._hold = None
            self._conn.close()
        except sqlite3.Error:
            pass

    # -- public API -----------------------------------------------------------------

    def set_meta(self, **items: object) -> None:
        """Store JSON-serialisable metadata (tuples come back as lists); last write wins."""
        bad = schema.RESERVED_META.intersection(items)
        if bad:
            raise StoreError(f"meta key {min(bad)!r} is set by wholetrace itself")
        with self._lock, self._guard("write meta"):
            self._put_meta(items)

    def add_function(self, fid: int, *, file: str, qualname: str, firstline: int,
                     lastline: int, source: str, cfg: dict[str, object],
                     fingerprint: str) -> None:
        """Register function ``fid`` (unique) with its source and CFG (a JSON-able dict)."""
        if not isinstance(cfg, dict):
            raise StoreError(f"cfg of function {fid} must be a dict, got {type(cfg).__name__}")
        blob = schema.compress(schema.encode_json(cfg, f"cfg of function {fid}").encode())
        with self._lock, self._guard(f"add function {fid}"):
            row = (fid, file, qualname, firstline, lastline, source, blob, fingerprint)
            row += (schema.row_crc("functions", *row),)
            try:
                self._x("INSERT INTO functions(fid, file, qualname, firstline, lastline, "
                        "source, cfg, fingerprint, crc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
            except sqlite3.IntegrityError:
                raise StoreError(f"function id {fid} is already registered") from None
            self._n_functions += 1

    def add_file(self, fid_base: int, *, path: str, n_functions: int, counter_base: int,
                 registry: bytes) -> None:
        """Register the functions ``fid_base ..`` of one source file with one row: ``registry``
        is their descriptions as :func:`wholetrace.store.registry.encode_registry` made them
        (the code cache keeps it, so registering a cached file costs one insert)."""
        with self._lock, self._guard(f"add file {schema.where(path)}"):
            row = (fid_base, path, n_functions, counter_base, registry)
            row += (schema.row_crc("files", *row),)
            try:
                self._x("INSERT INTO files(fid_base, path, n_functions, counter_base, blob, crc) "
                        "VALUES (?, ?, ?, ?, ?, ?)", row)
            except sqlite3.IntegrityError:
                raise StoreError(f"function id {fid_base} is already registered") from None
            self._n_functions += n_functions

    def add_stream(self, sid: int, *, kind: str, name: str, thread_ident: int | None = None,
                   parent: int | None = None) -> None:
        """Register stream ``sid`` (unique); must precede its first :meth:`append_events`."""
        if kind not in schema.STREAM_KINDS:
            kinds = ", ".join(schema.STREAM_KINDS)
            raise StoreError(f"stream kind must be one of {kinds}, got {kind!r}")
        with self._lock, self._guard(f"add stream {sid}"):
            row = (sid, kind, name, schema.ident_to_db(thread_ident), parent)
            row += (schema.row_crc("streams", *row),)
            if sid in self._next_seq:
                raise StoreError(f"stream id {sid} is already registered")
            self._x("INSERT INTO streams(sid, kind, name, thread_ident, parent, crc) "
                    "VALUES (?, ?, ?, ?, ?, ?)", row)
            self._next_seq[sid] = 0
            self._n_events[sid] = 0

    def append_events(self, sid: int, events: "np.ndarray[Any, Any] | array.array[int]") -> None:
        """Append int32 ``events`` to stream ``sid`` as one new chunk and commit.

        Empty input is a no-op.  Compression happens outside the lock, so the
        flusher thread does not block the main thread while it compresses.
        """
        arr = schema.events_to_le_int32(events)
        size = len(arr)
        if size == 0:
            return
        blob = schema.compress(memoryview(arr).cast("B"))
        with self._lock, self._guard(f"append events to stream {sid}"):
            seq = self._next_seq.get(sid)
            if seq is None:
                raise StoreError(f"cannot append events: stream {sid} was not added")
            start = self._n_events[sid]
            crc = schema.row_crc("chunks", sid, seq, size, blob, start)
            self._x("INSERT INTO chunks(sid, seq, n_events, blob, start, crc) "
                    "VALUES (?, ?, ?, ?, ?, ?)", (sid, seq, size, blob, start, crc))
            if not self._held:
                self._commit()
            self._next_seq[sid] = seq + 1
            self._n_events[sid] = start + size

    def put_array(self, name: str, data: "np.ndarray[Any, Any] | array.array[int] | bytes", *, key: str = "",
                  shape: tuple[int, ...] | None = None) -> int:
        """Store a named numeric/bytes array (dtype and shape kept); replaces ``(name, key)``.
        Returns the stored (compressed) size in bytes.

        ``data`` is a numpy array, or an ``array.array`` of typecode ``q`` (int64; ``shape``
        gives its shape, default 1-D) or a bytes-like object (uint8, 1-D), which need no numpy.
        """
        if isinstance(data, (bytes, bytearray, memoryview)):
            dtype_str, blob_src, shape = "|u1", bytes(data), (len(data),)
        elif (code := schema.array_typecode(data)) is not None:   # any array module's (schema)
            if code != "q":
                raise StoreError(f"array {name!r}: array.array typecode {code!r} (only 'q')")
            n = len(data)   # type: ignore[arg-type]
            shape = shape if shape is not None else (n,)
            if _product(shape) != n:
                raise StoreError(f"array {name!r}: shape {shape} does not hold {n} items")
            raw = data if isinstance(data, array.array) else array.array("q", bytes(memoryview(data)))  # type: ignore[arg-type]
            if sys.byteorder != "little":
                raw = array.array("q", raw)
                raw.byteswap()
            dtype_str, blob_src = "<i8", raw.tobytes()
        else:
            import numpy as np
            arr = np.asarray(data)
            if shape is not None:
                arr = arr.reshape(shape)
            schema.check_array_dtype(arr.dtype, f"array {name!r}")
            dtype_str, blob_src, shape = arr.dtype.str, np.ascontiguousarray(arr).tobytes(), arr.shape
        return self.put_compressed_array(name, schema.compress(blob_src), dtype_str, tuple(shape), key=key)

    def put_compressed_array(self, name: str, blob: bytes, dtype_str: str, shape: tuple[int, ...], *,
                             key: str = "") -> int:
        """Store an array already compressed with ``schema.compress`` (its dtype string, e.g.
        ``"<i4"``, and shape given), as :meth:`put_array` would; returns ``len(blob)``.  Lets a
        producer thread compress while this connection is busy elsewhere."""
        row = (name, key, dtype_str, schema.encode_json(list(shape), "shape"), blob)
        row += (schema.row_crc("arrays", *row),)
        with self._lock, self._guard(f"store array {name!r}"):
            self._x("INSERT OR REPLACE INTO arrays(name, key, dtype, shape, blob, crc) "
                    "VALUES (?, ?, ?, ?, ?, ?)", row)
        return len(blob)

    def delete_arrays(self, name: str, key: str | None = None) -> None:
        """Remove the array ``(name, key)``, or every array called ``name`` if ``key`` is None."""
        with self._lock, self._guard(f"delete array {name!r}"):
            if key is None:
                self._x("DELETE FROM arrays WHERE name = ?", (name,))
            else:
                self._x("DELETE FROM arrays WHERE name = ? AND key = ?", (name, key))

    def hold_commits(self) -> None:
        """From now on ``append_events`` leaves its chunk to the next ``commit`` or ``close``
        (the recording's end: its last chunks and end meta in one transaction)."""
        self._held = True

    def commit(self) -> None:
        """Make everything written so far durable."""
        with self._lock, self._guard("commit"):
            if self._conn.in_transaction:
                self._commit()

    def close(self, *, ended: str, exit_code: int | None, end_time: float | None = None) -> None:
        """Record how the run ended, commit and close; later calls do nothing."""
        with self._lock:
            if self._closed:
                return
            try:
                with self._guard("close"):
                    totals = {"streams": {str(sid): [n, self._n_events[sid]] for sid, n in self._next_seq.items()},
                              "functions": self._n_functions}
                    self._put_meta({"ended": ended, "exit_code": exit_code,
                                    "end_time": time.time() if end_time is None else end_time,
                                    schema.TOTALS_KEY: totals})
                    if self._renewed:
                        self._put_meta({"store.descriptor_renewed": self._renewed})
                    self._commit()
            finally:
                self._abandon()
            if not self._broken:
                self._drop_journal()

    def _drop_journal(self) -> None:
        """After a clean close: remove the persistent journal (its header zeroed by the last commit)."""
        try:
            os.unlink(self._abs + "-journal")
        except OSError:
            pass

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran (or creation failed)."""
        return self._closed

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc is None:
            self.close(ended="exit", exit_code=0)
        elif isinstance(exc, SystemExit):
            code = exc.code if isinstance(exc.code, int) or exc.code is None else 1
            self.close(ended="sys.exit", exit_code=code or 0)
        elif isinstance(exc, KeyboardInterrupt):
            self.close(ended="keyboard-interrupt", exit_code=None)
        else:
            self.close(ended="exception", exit_code=None)


class _Guard:
    """:meth:`RecordingWriter._guard`'s context: a class, not ``contextlib.contextmanager``
    (``contextlib`` is not imported at record's start-up: docs/design.md, "Record's fixed
    cost, wave 14")."""

    __slots__ = ("writer", "what")

    def __init__(self, writer: RecordingWriter, what: str) -> None:
        self.writer, self.what = writer, what

    def __enter__(self) -> None:
        w = self.writer
        if w._closed:
            raise StoreError(f"cannot {self.what}: recording {w._where} is closed")
        try:
            w._check()
        except (sqlite3.Error, OverflowError) as exc:
            raise StoreError(f"cannot {self.what} in {w._where}: {schema.one_line(exc)}") from exc

    def __exit__(self, typ: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc is not None and isinstance(exc, (sqlite3.Error, OverflowError)):
            raise StoreError(f"cannot {self.what} in {self.writer._where}: {schema.one_line(exc)}") from exc


def updating(path: str | os.PathLike[str], *, timeout: float = 5.0) -> AbstractContextManager[RecordingWriter]:
    """Open an existing recording to add derived data (see :func:`_updating`); ``contextlib``
    is imported here, not at record's start-up."""
    from contextlib import contextmanager

    return contextmanager(_updating)(path, timeout=timeout)


def _updating(path: str | os.PathLike[str], *, timeout: float = 5.0) -> Iterator[RecordingWriter]:
    """Open an existing recording to add derived data (``put_array``, ``delete_arrays``,
    ``set_meta``); the caller commits what must survive (``commit()``), the rest is committed
    when the block ends normally and rolled back if it raises or the process dies, so an
    interrupted update leaves the file as its last commit left it.  ``timeout``: seconds to wait
    for another connection's lock before a StoreError."""
    from wholetrace.store.reader import Recording

    Recording(path, check=False).close()  # validates; rolls back a hot journal left by a crash
    w = RecordingWriter.__new__(RecordingWriter)
    w.path = os.fspath(path)
    w._abs = os.path.realpath(w.path)
    w._where = schema.where(w.path)
    w._lock = _thread.allocate_lock()
    w._next_seq = {}
    w._n_events = {}
    w._closed = True
    try:
        w._conn = sqlite3.connect(fdguard.uri(w.path), isolation_level=None, check_same_thread=False, uri=True,
                                  timeout=timeout)
        w._conn.execute("PRAGMA journal_mode=DELETE")
        w._conn.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.Error as exc:
        raise StoreError(f"cannot update recording {w._where}: {schema.one_line(exc)}") from None
    w._closed = False
    try:
        ended = w._conn.execute("SELECT 1 FROM meta WHERE key = 'ended'").fetchone()
    except sqlite3.Error:
        ended = None
    holder = None if ended else _recorder_of(w._abs)
    if holder is not None:
        w._abandon()
        raise StoreError(f"cannot update recording {w._where}: it is still being recorded (process {holder})")
    try:
        for sid, n, events in w._conn.execute("SELECT sid, coalesce(max(seq), -1) + 1, coalesce(sum(n_events), 0) "
                                              "FROM streams LEFT JOIN chunks USING (sid) GROUP BY sid"):
            w._next_seq[int(sid)], w._n_events[int(sid)] = int(n), int(events)
        w._n_functions = int(w._conn.execute("SELECT count(*) FROM functions").fetchone()[0])
        yield w
        w.commit()
    finally:
        if w._conn.in_transaction:
            try:
                w._conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
        w._abandon()


def _recorder_of(path: str) -> int | None:
    """The process holding a shared lock on SQLite's lock bytes of ``path`` (from /proc/locks): a
    recorder keeps one from its first transaction to its close (``renew.HOLD``), so an updater's
    write would deadlock with it; None if none (a recording that crashed) or not known (not Linux)."""
    try:
        st = os.stat(path)
        with open("/proc/locks") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    shared = range(0x40000002, 0x40000002 + 510)     # SQLite's SHARED_FIRST, SHARED_SIZE (os_unix.c)
    for line in lines:
        parts = line.split()
        if "->" in parts:   # a waiter, not a holder
            continue
        try:
            i = parts.index("ADVISORY")
            pid, where, start, end = int(parts[i + 2]), parts[i + 3], int(parts[i + 4]), parts[i + 5]
        except (ValueError, IndexError):
            continue
        last = 1 << 62 if end == "EOF" else int(end)
        if where == dev and pid != os.getpid() and start <= shared[-1] and last >= shared[0]:
            return pid
    return None
