"""Read a .wt recording read-only, validating it first; every failure is a one-line StoreError."""

from __future__ import annotations

import os
import pathlib
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from types import TracebackType
from typing import Any, Self

import numpy as np
import zstandard

from wholetrace.errors import StoreError
from wholetrace.store import schema

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
    cfg_blob: bytes = field(repr=False, compare=False)

    @cached_property
    def cfg(self) -> dict[str, object]:
        """The function's CFG as the JSON dict the writer was given."""
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
        uri = pathlib.Path(self.path).resolve().as_uri() + "?mode=ro"
        try:
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.Error as exc:
            if getattr(exc, "sqlite_errorname", "") != "SQLITE_READONLY_ROLLBACK":
                raise self._fail(self._explain(exc)) from None
        # The writer died inside a transaction: let SQLite roll the hot journal back
        # (restoring the last commit) through one read-write open, then reopen read-only.
        try:
            rw = sqlite3.connect(uri.replace("?mode=ro", "?mode=rw"), uri=True)
            try:
                rw.execute("SELECT count(*) FROM sqlite_master").fetchone()
            finally:
                rw.close()
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.Error as exc:
            raise self._fail("interrupted write left a journal that cannot be rolled back "
                             f"({self._explain(exc)}); open it once with write access") from None

    @staticmethod
    def _explain(exc: sqlite3.Error) -> str:
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
        if version != schema.SCHEMA_VERSION:
            raise self._fail(f"unknown schema version {version}")
        if check:
            rows = conn.execute("PRAGMA quick_check(1)").fetchall()
            if rows != [("ok",)]:
                detail = schema.one_line(rows[0][0]) if rows else "no result"
                raise self._fail(f"the file is truncated or corrupt ({detail})")
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        missing = [t for t in schema.REQUIRED_TABLES if t not in tables]
        if missing:
            raise self._fail(f"the file is damaged (missing table {', '.join(missing)})")
        for table, columns in schema.REQUIRED_TABLES.items():
            have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
            lacking = [c for c in columns if c not in have]
            if lacking:
                raise self._fail(f"the file is damaged (table {table} lacks {', '.join(lacking)})")

    def _load_meta(self) -> dict[str, object]:
        meta: dict[str, object] = {}
        for key, value in self._db.execute("SELECT key, value FROM meta ORDER BY key"):
            if not isinstance(value, (str, bytes)):
                raise StoreError(f"meta value {key!r} in {self._where} is corrupt (not text)")
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

    def functions(self) -> list[FunctionInfo]:
        """Every registered function, by id."""
        with self._guard("read functions of"):
            rows = self._db.execute("SELECT fid, file, qualname, firstline, lastline, source, "
                                    "fingerprint, cfg FROM functions ORDER BY fid").fetchall()
            return [self._function(r) for r in rows]

    def function(self, fid: int) -> FunctionInfo:
        """The function with id ``fid``; StoreError if there is none."""
        with self._guard("read function of"):
            row = self._db.execute("SELECT fid, file, qualname, firstline, lastline, source, "
                                   "fingerprint, cfg FROM functions WHERE fid = ?",
                                   (fid,)).fetchone()
            if row is None:
                raise StoreError(f"recording {self._where} has no function {fid}")
            return self._function(row)

    @staticmethod
    def _function(row: tuple[Any, ...]) -> FunctionInfo:
        fid, file, qualname, first, last, source, fingerprint, blob = row
        if not isinstance(blob, bytes):
            raise TypeError(f"cfg of function {fid} is not a blob")
        return FunctionInfo(int(fid), str(file), str(qualname), int(first), int(last),
                            str(source), str(fingerprint), blob)

    def streams(self) -> list[StreamInfo]:
        """Every stream with its event, chunk and stored-byte totals, by id."""
        with self._guard("read streams of"):
            rows = self._db.execute(
                "SELECT s.sid, s.kind, s.name, s.thread_ident, s.parent, "
                "coalesce(sum(c.n_events), 0), count(c.seq), coalesce(sum(length(c.blob)), 0) "
                "FROM streams s LEFT JOIN chunks c ON c.sid = s.sid "
                "GROUP BY s.sid ORDER BY s.sid").fetchall()
            return [StreamInfo(int(sid), str(kind), str(name), schema.ident_from_db(ident),
                               None if parent is None else int(parent), int(n), int(k), int(b))
                    for sid, kind, name, ident, parent, n, k, b in rows]

    def iter_chunks(self, sid: int) -> Iterator[np.ndarray]:
        """Stream ``sid``'s chunks as int32 arrays, in order; one chunk in memory at a time."""
        with self._guard("read events of"):
            self._stream_row(sid)
            cur = self._db.execute("SELECT seq, n_events, blob FROM chunks WHERE sid = ? "
                                   "ORDER BY seq", (sid,))
        expected = 0
        while True:
            with self._guard("read events of"):
                row = cur.fetchone()
                if row is None:
                    return
                seq, n_events, blob = row
                what = f"chunk {seq} of stream {sid} in {self._where}"
                if seq != expected:
                    raise StoreError(f"chunk {expected} of stream {sid} in {self._where} "
                                     "is missing")
                if not isinstance(n_events, int) or n_events < 0:
                    raise StoreError(f"{what} is corrupt (bad event count)")
                raw = schema.decompress(blob, n_events * schema.EVENT_BYTES, what)
                arr = np.frombuffer(raw, dtype=schema.EVENT_DTYPE).astype(np.int32, copy=False)
            expected += 1
            yield arr

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
            row = self._db.execute("SELECT dtype, shape, blob FROM arrays WHERE name = ? AND "
                                   "key = ?", (name, key)).fetchone()
            if row is None:
                return None
            dtype_text, shape_text, blob = row
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


def open_recording(path: str | os.PathLike[str], *, check: bool = True) -> Recording:
    """Open and validate the .wt file at ``path`` (see :class:`Recording`)."""
    return Recording(path, check=check)
