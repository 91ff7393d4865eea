"""Read a .wt recording read-only, validating it first; every failure is a one-line StoreError."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from types import TracebackType
from typing import Any, Self

import numpy as np
import zstandard

from wholetrace.errors import StoreError
from wholetrace.lines import source_lines
from wholetrace.store import fdguard, registry, schema
from wholetrace.store.cmods import sqlite3   # ``_sqlite3`` as the writer has it: not the package (store/cmods.py)

__all__ = ["FunctionInfo", "Recording", "StreamInfo", "open_recording"]


@dataclass(frozen=True)
class FunctionInfo:
    """One row of the function registry; ``cfg`` is decoded on first access."""

    fid: int
    file: str
    qualname: str
    firstline: int
    lastline: int
    source: str
    fingerprint: str
    cfg_blob: bytes = field(default=b"", repr=False, compare=False)
    load: Callable[[], dict[str, Any]] | None = field(default=None, repr=False, compare=False)
    #: From a file's registry header (None for rows of the per-function table, whose CFG holds
    #: them): the function's kind and its first counter's global id, so that readers can list
    #: and place a function without parsing its CFG.
    kind: str | None = field(default=None, compare=False)
    counter_base: int | None = field(default=None, compare=False)
    #: ``source`` as ``(lines, start, stop)``: it is ``"".join(lines[start:stop])``, where
    #: ``lines`` are its file's lines with their line ends, shared by the file's functions
    #: (reports slice them instead of splitting every function's source).
    source_lines: tuple[list[str], int, int] | None = field(default=None, repr=False, compare=False)

    @cached_property
    def cfg(self) -> dict[str, object]:
        """The function's CFG as the JSON dict the writer was given (parsed on first access)."""
        if self.load is not None:
            return self.load()
        what = f"cfg of function {self.fid}"
        value = schema.decode_json(schema.decompress(self.cfg_blob, None, what), what)
        if not isinstance(value, dict):
            raise StoreError(f"{what} is corrupt (not a JSON object)")
        return value


@dataclass(frozen=True)
class StreamInfo:
    """One event stream (an OS thread or an asyncio task) and the size of its chunks."""

    sid: int
    kind: str
    name: str
    thread_ident: int | None
    parent: int | None
    n_events: int
    n_chunks: int
    stored_bytes: int


class Recording:
    """A validated, read-only view of one .wt file.

    Opening checks, in order: the file exists and is an SQLite file, its application_id
    is wholetrace's, its schema version is known, ``PRAGMA quick_check`` passes (skip with
    ``check=False``), and the required tables and columns exist.  Nothing from the file is
    ever executed: blobs are zstd + JSON or raw numbers, never pickles.  One exception to
    "read-only": if a writer died mid-transaction, SQLite must roll its hot journal back
    before anyone can read; the reader does that through one short read-write open,
    which restores the file to the writer's last commit.
    """

    def __init__(self, path: str | os.PathLike[str], *, check: bool = True) -> None:
        """Open and validate ``path``; ``check=False`` skips ``PRAGMA quick_check`` (O(file))."""
        self.path = os.fspath(path)
        self._where = schema.where(self.path)
        self._conn: sqlite3.Connection | None = None
        self._columns: dict[str, set[str]] = {}
        self._files: dict[int, list[FunctionInfo]] = {}
        self._sniff()
        try:
            self._conn = self._connect()
            with self._guard("open"):
                self._validate(check)
                self.meta: dict[str, object] = self._load_meta()
        except BaseException:
            self.close()
            raise

    # -- opening and validation -------------------------------------------------------

    def _fail(self, why: str) -> StoreError:
        return StoreError(f"cannot open recording {self._where}: {why}")

    def _sniff(self) -> None:
        try:
            with open(self.path, "rb") as fh:
                head = fh.read(len(schema.SQLITE_HEADER))
        except FileNotFoundError:
            raise self._fail("no such file") from None
        except IsADirectoryError:
            raise self._fail("it is a directory") from None
        except OSError as exc:
            raise self._fail(schema.one_line(exc.strerror or exc)) from None
        if not head:
            raise self._fail("the file is empty (nothing was recorded)")
        if head != schema.SQLITE_HEADER:
            raise self._fail("not a wholetrace recording (file is not a database)")

    def _connect(self) -> sqlite3.Connection:
        uri = fdguard.uri(self.path, "ro")   # lock-free if our own leaked lock would block us
        try:
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            conn.text_factory = _text
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.Error as exc:
            if getattr(exc, "sqlite_errorname", "") != "SQLITE_READONLY_ROLLBACK":
                raise self._fail(self._explain(exc)) from None
        except UnicodeDecodeError:   # SQLite's own message quoted damaged bytes of the schema
            raise self._fail("the file is truncated or corrupt (damaged schema)") from None
        # The writer died inside a transaction: let SQLite roll the hot journal back
        # (restoring the last commit) through one read-write open, then reopen read-only.
        try:
            rw = sqlite3.connect(uri.replace("?mode=ro", "?mode=rw"), uri=True)
            try:
                rw.execute("SELECT count(*) FROM sqlite_master").fetchone()
            finally:
                rw.close()
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            conn.text_factory = _text
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise self._fail("interrupted write left a journal that cannot be rolled back "
                             f"({self._explain(exc)}); open it once with write access") from None

    @staticmethod
    def _explain(exc: sqlite3.Error | UnicodeDecodeError) -> str:
        text = schema.one_line(exc)
        if "not a database" in text:
            return "not a wholetrace recording (file is not a database)"
        if "malformed" in text:
            return f"the file is truncated or corrupt ({text})"
        return text

    def _validate(self, check: bool) -> None:
        conn = self._db
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        if app_id != schema.MAGIC:
            raise self._fail(f"not a wholetrace recording (SQLite application_id {app_id:#x})")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > schema.SCHEMA_VERSION:
            raise self._fail(f"it was written by a newer wholetrace (schema {version} > "
                             f"{schema.SCHEMA_VERSION}); upgrade wholetrace")
        if version not in schema.READABLE_VERSIONS:
            raise self._fail(f"unknown schema version {version}")
        self.schema_version = int(version)
        if check:
            rows = conn.execute("PRAGMA quick_check(1)").fetchall()
            if rows != [("ok",)]:
                lines = str(rows[0][0]).splitlines() if rows else ["no result"]
                detail = schema.one_line(next((ln for ln in lines if not ln.startswith("***")), lines[0]))
                raise self._fail(f"the file is truncated or corrupt ({detail})")
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        missing = [t for t in schema.REQUIRED_TABLES if t not in tables]
        if missing:
            raise self._fail(f"the file is damaged (missing table {', '.join(missing)})")
        for table in (*schema.REQUIRED_TABLES, "files"):
            self._columns[table] = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
        for table, columns in schema.REQUIRED_TABLES.items():
            lacking = [c for c in columns if c not in self._columns[table]]
            if lacking:
                raise self._fail(f"the file is damaged (table {table} lacks {', '.join(lacking)})")

    def _crc(self, table: str) -> str:
        """``", crc"`` if ``table`` has checksums (files written since issue 9), else ``", NULL"``."""
        return ", crc" if "crc" in self._columns.get(table, ()) else ", NULL"

    def _check(self, table: str, crc: object, what: str, *values: object) -> None:
        """A row read with its crc: StoreError if the crc is there and does not match."""
        if crc is not None and crc != schema.row_crc(table, *values):
            raise StoreError(f"{what} is corrupt (checksum mismatch)")

    def _load_meta(self) -> dict[str, object]:
        meta: dict[str, object] = {}
        for key, value, crc in self._db.execute(f"SELECT key, value{self._crc('meta')} FROM meta ORDER BY key"):
            if not isinstance(value, (str, bytes)):
                raise StoreError(f"meta value {key!r} in {self._where} is corrupt (not text)")
            self._check("meta", crc, f"meta value {key!r} in {self._where}", key, value)
            meta[str(key)] = schema.decode_json(value, f"meta value {key!r} in {self._where}")
        return meta

    # -- plumbing ---------------------------------------------------------------------

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"recording {self._where} is closed")
        return self._conn

    @contextmanager
    def _guard(self, what: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise StoreError(f"cannot {what} recording {self._where}: "
                             f"{self._explain(exc)}") from exc
        except OSError as exc:
            raise StoreError(f"cannot {what} recording {self._where}: "
                             f"{schema.one_line(exc.strerror or exc)}") from exc
        except (TypeError, ValueError, OverflowError, MemoryError) as exc:  # wrong column types
            raise StoreError(f"cannot {what} recording {self._where}: the file is corrupt "
                             f"({schema.one_line(exc)})") from exc

    def _stream_row(self, sid: int) -> None:
        if self._db.execute("SELECT 1 FROM streams WHERE sid = ?", (sid,)).fetchone() is None:
            raise StoreError(f"recording {self._where} has no stream {sid}")

    # -- public API -------------------------------------------------------------------

    @property
    def ended(self) -> str | None:
        """How the run ended ("exit", "exception", ...), or None if the writer never closed."""
        value = self.meta.get("ended")
        return value if isinstance(value, str) else None

    _FUNCTION_COLUMNS = "fid, file, qualname, firstline, lastline, source, cfg, fingerprint"

    def functions(self) -> list[FunctionInfo]:
        """Every registered function, by id (rows of ``functions`` and of each file in ``files``)."""
        with self._guard("read functions of"):
            rows = self._db.execute(f"SELECT {self._FUNCTION_COLUMNS}{self._crc('functions')} "
                                    "FROM functions ORDER BY fid").fetchall()
            out = [self._function(r) for r in rows]
            if self._columns.get("files"):
                for row in self._db.execute("SELECT fid_base, path, n_functions, counter_base, blob, crc "
                                            "FROM files ORDER BY fid_base").fetchall():
                    out += self._file_functions(row)
        out.sort(key=lambda f: f.fid)
        for a, b in zip(out, out[1:]):
            if a.fid == b.fid:
                raise StoreError(f"function registry of {self._where} is corrupt (function {a.fid} twice)")
        return out

    def function(self, fid: int) -> FunctionInfo:
        """The function with id ``fid``; StoreError if there is none."""
        with self._guard("read function of"):
            row = self._db.execute(f"SELECT {self._FUNCTION_COLUMNS}{self._crc('functions')} "
                                   "FROM functions WHERE fid = ?", (fid,)).fetchone()
            if row is not None:
                return self._function(row)
            if self._columns.get("files"):
                row = self._db.execute("SELECT fid_base, path, n_functions, counter_base, blob, crc FROM files "
                                       "WHERE fid_base <= ? ORDER BY fid_base DESC LIMIT 1", (fid,)).fetchone()
                if row is not None and isinstance(row[0], int) and isinstance(row[2], int) \
                        and fid < row[0] + row[2]:
                    return self._file_functions(row)[fid - row[0]]
            raise StoreError(f"recording {self._where} has no function {fid}")

    def _function(self, row: tuple[Any, ...]) -> FunctionInfo:
        fid, file, qualname, first, last, source, blob, fingerprint, crc = row
        if not isinstance(blob, bytes):
            raise TypeError(f"cfg of function {fid} is not a blob")
        self._check("functions", crc, f"function {fid} in {self._where}", *row[:-1])
        return FunctionInfo(int(fid), str(file), str(qualname), int(first), int(last),
                            str(source), str(fingerprint), blob)

    def _file_functions(self, row: tuple[Any, ...]) -> list[FunctionInfo]:
        """The functions one ``files`` row registers (decoded once per file)."""
        fid_base, path, n, counter_base, blob, crc = row
        hit = self._files.get(fid_base)
        if hit is not None:
            return hit
        what = f"function registry of file {schema.one_line(path)[:80]!r} in {self._where}"
        if not all(isinstance(v, int) for v in (fid_base, n, counter_base)) or not isinstance(path, str) or n < 0:
            raise StoreError(f"{what} is corrupt (bad row)")
        self._check("files", crc, what, *row[:-1])
        source, rows = registry.decode_registry(blob, n, counter_base, what)
        lines = source_lines(source, keepends=True)
        out = [FunctionInfo(fid_base + i, path, q, first, last, registry.function_source(source, lines, kind, first, last),
                            fingerprint, load=load, kind=kind, counter_base=counters,
                            source_lines=(lines, 0, len(lines)) if kind == "module" else (lines, first - 1, last))
               for i, (q, kind, first, last, fingerprint, load, counters) in enumerate(rows)]
        self._files[fid_base] = out
        return out

    def streams(self) -> list[StreamInfo]:
        """Every stream with its event, chunk and stored-byte totals, by id."""
        with self._guard("read streams of"):
            crc = self._crc("streams").replace("crc", "s.crc")
            rows = self._db.execute(
                "SELECT s.sid, s.kind, s.name, s.thread_ident, s.parent, "
                "coalesce(sum(c.n_events), 0), count(c.seq), coalesce(sum(length(c.blob)), 0)"
                f"{crc} FROM streams s LEFT JOIN chunks c ON c.sid = s.sid "
                "GROUP BY s.sid ORDER BY s.sid").fetchall()
            for row in rows:
                self._check("streams", row[-1], f"stream {row[0]} in {self._where}", *row[:5])
            return [StreamInfo(int(sid), str(kind), str(name), schema.ident_from_db(ident),
                               None if parent is None else int(parent), int(n), int(k), int(b))
                    for sid, kind, name, ident, parent, n, k, b, _crc in rows]

    def iter_chunks(self, sid: int) -> Iterator[np.ndarray]:
        """Stream ``sid``'s chunks as int32 arrays, in order; one chunk in memory at a time."""
        with self._guard("read events of"):
            self._stream_row(sid)
            cur = self._db.execute(f"SELECT seq, n_events, blob{self._chunk_extra()} FROM chunks WHERE sid = ? "
                                   "ORDER BY seq", (sid,))
        expected = 0
        position = 0
        while True:
            with self._guard("read events of"):
                row = cur.fetchone()
                if row is None:
                    return
                arr = self._chunk(sid, row, expected, position)
            expected += 1
            position += len(arr)
            yield arr

    def streams_chunks(self, sids: list[int]) -> Iterator[tuple[int, list[np.ndarray]]]:
        """``(sid, its chunks)`` for each of the streams ``sids`` (ascending ids of streams
        that exist), read in one query over their id range: for many small streams, where a
        query per stream costs more than the events (each stream is held whole: the caller
        gives small ones).  The chunks are checked as :meth:`iter_chunks` checks them."""
        if not sids:
            return
        wanted = iter(sids)
        sid = next(wanted)
        held: list[np.ndarray] = []
        position = 0
        with self._guard("read events of"):
            cur = self._db.execute(f"SELECT sid, seq, n_events, blob{self._chunk_extra()} FROM chunks "
                                   "WHERE sid BETWEEN ? AND ? ORDER BY sid, seq", (sids[0], sids[-1]))
        while True:
            with self._guard("read events of"):
                row = cur.fetchone()
            while sid is not None and (row is None or row[0] > sid):   # sid's chunks are all read
                yield sid, held
                held, position = [], 0
                sid = next(wanted, None)
            if sid is None:
                return
            if row[0] != sid:      # a stream in the range that was not asked for
                continue
            with self._guard("read events of"):
                arr = self._chunk(sid, row[1:], len(held), position)
            held.append(arr)
            position += len(arr)

    def _chunk_extra(self) -> str:
        return ", start, crc" if "crc" in self._columns["chunks"] else ", NULL, NULL"

    def _chunk(self, sid: int, row: tuple[Any, ...], expected: int, position: int) -> np.ndarray:
        """Chunk ``expected`` of stream ``sid`` (starting at event ``position``) from its row
        ``(seq, n_events, blob, start, crc)``, checked and decompressed."""
        seq, n_events, blob, start, crc = row
        what = f"chunk {seq} of stream {sid} in {self._where}"
        self._check("chunks", crc, what, sid, seq, n_events, blob, start)
        if seq != expected:
            raise StoreError(f"chunk {expected} of stream {sid} in {self._where} is missing")
        if not isinstance(n_events, int) or n_events < 0:
            raise StoreError(f"{what} is corrupt (bad event count)")
        if start is not None and start != position:
            raise StoreError(f"{what} is corrupt (starts at event {start}, not {position})")
        raw = schema.decompress(blob, n_events * schema.EVENT_BYTES, what)
        return np.frombuffer(raw, dtype=schema.EVENT_DTYPE).astype(np.int32, copy=False)

    def events(self, sid: int) -> np.ndarray:
        """All of stream ``sid``'s events concatenated (int32)."""
        total = 0
        with self._guard("read events of"):
            self._stream_row(sid)
            # Size the result from the zstd frame headers, not from the n_events column
            # alone, so a tampered count cannot trigger a huge allocation.
            for seq, n_events, head in self._db.execute(
                    "SELECT seq, n_events, substr(blob, 1, 18) FROM chunks WHERE sid = ?",
                    (sid,)):
                what = f"chunk {seq} of stream {sid} in {self._where}"
                if not isinstance(n_events, int) or not isinstance(head, bytes):
                    raise StoreError(f"{what} is corrupt (bad row)")
                try:
                    size = zstandard.frame_content_size(head)
                except zstandard.ZstdError:
                    raise StoreError(f"{what} is corrupt (not a zstd frame)") from None
                if size != n_events * schema.EVENT_BYTES or n_events < 0:
                    raise StoreError(f"{what} is corrupt (frame size {size}, "
                                     f"expected {n_events * schema.EVENT_BYTES})")
                total += n_events
            out = np.empty(total, dtype=np.int32)
        pos = 0
        for chunk in self.iter_chunks(sid):
            if pos + chunk.size > out.size:
                raise StoreError(f"stream {sid} in {self._where} is corrupt (event count)")
            out[pos:pos + chunk.size] = chunk
            pos += chunk.size
        if pos != out.size:
            raise StoreError(f"stream {sid} in {self._where} is corrupt (event count)")
        return out

    def get_array(self, name: str, key: str = "") -> np.ndarray | None:
        """The array stored under ``(name, key)``, or None if there is none."""
        what = f"array {name!r}/{key!r} in {self._where}"
        with self._guard("read arrays of"):
            row = self._db.execute(f"SELECT dtype, shape, blob{self._crc('arrays')} FROM arrays "
                                   "WHERE name = ? AND key = ?", (name, key)).fetchone()
            if row is None:
                return None
            dtype_text, shape_text, blob, crc = row
            self._check("arrays", crc, what, name, key, dtype_text, shape_text, blob)
            try:
                dtype = np.dtype(str(dtype_text))
            except (TypeError, ValueError):
                raise StoreError(f"{what} is corrupt (dtype {dtype_text!r})") from None
            schema.check_array_dtype(dtype, what)
            shape = schema.decode_json(shape_text, f"shape of {what}")
            if not isinstance(shape, list) or not all(
                    isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
                raise StoreError(f"{what} is corrupt (shape {schema.one_line(shape_text)})")
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            raw = schema.decompress(blob, nbytes, what)
            return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()

    def array_sizes(self, prefix: str = "") -> list[tuple[str, str, int]]:
        """``(name, key, stored bytes)`` of every array whose name starts with ``prefix``."""
        with self._guard("list arrays of"):
            rows = self._db.execute("SELECT name, key, length(blob) FROM arrays WHERE substr(name, 1, ?) = ? "
                                    "ORDER BY name, key", (len(prefix), prefix)).fetchall()
            return [(str(n), str(k), int(b or 0)) for n, k, b in rows]

    def sizes(self) -> dict[str, int]:
        """Bytes: the file, events raw and stored, and per table when SQLite has dbstat."""
        with self._guard("measure"):
            n_events, stored = self._db.execute(
                "SELECT coalesce(sum(n_events), 0), coalesce(sum(length(blob)), 0) "
                "FROM chunks").fetchone()
            out = {"file": os.path.getsize(self.path),
                   "events_raw": int(n_events) * schema.EVENT_BYTES,
                   "events_stored": int(stored)}
            try:
                rows = self._db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name")
                out.update({f"table:{name}": int(size) for name, size in rows})
            except sqlite3.OperationalError:  # SQLite built without SQLITE_ENABLE_DBSTAT_VTAB
                pass
            return out

    def close(self) -> None:
        """Close the file; idempotent."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _text(raw: bytes) -> str:
    """TEXT values as str even when damaged (their crc, or the JSON parser, then refuses them)."""
    return raw.decode("utf-8", "surrogateescape")


def open_recording(path: str | os.PathLike[str], *, check: bool = True) -> Recording:
    """Open and validate the .wt file at ``path`` (see :class:`Recording`)."""
    return Recording(path, check=check)
