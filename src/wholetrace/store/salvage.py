"""`--salvage`: the intact rows of a damaged recording as a read-only view shaped like
:class:`~wholetrace.store.reader.Recording`, and a report of what was lost.

Rows come from :func:`wholetrace.store.pages.scan` (every table leaf cell that still parses,
wherever it lies).  A row is taken only if its crc matches (``schema.row_crc``; files
written before rows had crcs fall back to their column types and, for chunks, to a
decodable zstd frame of the declared size), so a returned chunk is exactly the chunk the
writer stored, and a chunk is never dropped because a neighbouring page is damaged.
What is missing is measured against the ``totals`` the writer leaves at close (when that
row survived), the chunk sequence numbers and the ``start`` of each chunk.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

import numpy as np

from wholetrace.errors import StoreError
from wholetrace.lines import source_lines
from wholetrace.store import registry, schema
from wholetrace.store.pages import PageScan, scan
from wholetrace.store.reader import FunctionInfo, StreamInfo

#: Columns of each table in files with crcs (the INTEGER PRIMARY KEY first where there is one,
#: stored as NULL and taken from the rowid), and the column types of files written before.
COLUMNS = {"meta": 3, "functions": 9, "streams": 6, "chunks": 6, "arrays": 6, "files": 6}
ROWID_KEY = ("functions", "streams", "files")
_LEGACY: dict[str, tuple[tuple[type, ...], ...]] = {
    "meta": ((str,), (str,)),
    "functions": ((int,), (str,), (str,), (int,), (int,), (str,), (bytes,), (str,)),
    "streams": ((int,), (str,), (str,), (int, type(None)), (int, type(None))),
    "chunks": ((int,), (int,), (int,), (bytes,)),
    "arrays": ((str,), (str,), (str,), (str,), (bytes,)),
}
_KEY = {"meta": (0,), "functions": (0,), "streams": (0,), "chunks": (0, 1), "arrays": (0, 1), "files": (0,)}


@dataclass
class Row:
    table: str
    values: tuple[Any, ...]
    pages: tuple[int, ...]
    in_tree: bool          # found on its own table's b-tree (preferred over stray copies)
    checked: bool = True   # its crc matched (False: a row of a file written before crcs)


def classify(found: PageScan) -> tuple[dict[str, dict[tuple[Any, ...], Row]], int]:
    """The valid rows of each table, by primary key, and how many cells matched no table."""
    rows: dict[str, dict[tuple[Any, ...], Row]] = {t: {} for t in COLUMNS}
    rejected = 0
    candidates = []
    for page, cells in found.cells.items():
        owner = found.tree_of.get(page)
        if owner is not None and owner not in COLUMNS:
            continue   # sqlite_master and tables this version does not read
        for cell in cells:
            # its own tree's table first; any table if that fails (a damaged parent may point astray)
            order = [owner] + [t for t in COLUMNS if t != owner] if owner else list(COLUMNS)
            row = _match(cell.values, cell.rowid, order, cell.pages)
            if row is None:
                rejected += 1
                continue
            row.in_tree = owner == row.table
            candidates.append(row)
    legacy = not any(r.checked for r in candidates)   # type-only matches count only in files without crcs
    for row in candidates:
        if row.checked or legacy:
            key = tuple(row.values[i] for i in _KEY[row.table])
            old = rows[row.table].get(key)
            if old is None or (row.in_tree and not old.in_tree):
                rows[row.table][key] = row
    return rows, rejected


def _match(values: tuple[Any, ...], rowid: int, tables: list[str], pages: tuple[int, ...]) -> Row | None:
    for table in tables:
        vals = list(values)
        if table in ROWID_KEY and vals and vals[0] is None:
            vals[0] = rowid
        if len(vals) == COLUMNS[table] and type(vals[-1]) is int:
            if vals[-1] == schema.row_crc(table, *vals[:-1]):
                return Row(table, tuple(vals[:-1]), pages, False)
        elif table in _LEGACY and len(vals) == len(_LEGACY[table]) and all(
                type(v) in ok for v, ok in zip(vals, _LEGACY[table])):
            return Row(table, tuple(vals) + ((None,) if table == "chunks" else ()), pages, False, checked=False)
    return None


@dataclass
class Lost:
    """What a salvage could not bring back."""

    chunks: list[tuple[int, int, int | None, int | None, int | None]] = field(default_factory=list)
    #: (stream, first seq, last seq or None if unknown, first event or None, end event or None)
    streams: list[int] = field(default_factory=list)            # stream rows lost (chunks may remain)
    functions: list[tuple[int, int | None]] = field(default_factory=list)   # fid ranges, end exclusive
    arrays: list[str] = field(default_factory=list)
    unfinished: bool = False                                     # no totals: the end cannot be checked
    rejected_cells: int = 0
    pages: int = 0

    @property
    def anything(self) -> bool:
        return bool(self.chunks or self.streams or self.functions or self.arrays or self.rejected_cells)

    def lines(self) -> list[str]:
        """One line per loss, for stderr."""
        out = []
        for sid, a, b, e0, e1 in self.chunks:
            seqs = f"chunk {a}" if a == b else f"chunks {a}-{'?' if b is None else b}"
            ev = f"events {'?' if e0 is None else f'{e0:,}'}-{'end' if e1 is None else f'{e1 - 1:,}'}"
            out.append(f"stream {sid}: {seqs} lost ({ev})")
        out += [f"stream {sid}: its description was lost (kind and name unknown)" for sid in self.streams]
        for a, b in self.functions:
            out.append(f"functions {a}-{'?' if b is None else b - 1} lost" if b != a + 1 else f"function {a} lost")
        out += [f"array {name!r} lost" for name in self.arrays]
        if self.rejected_cells:
            out.append(f"{self.rejected_cells} damaged row(s) found and left out")
        if self.unfinished:
            out.append("the recording's totals were lost or never written: later chunks may be missing unnoticed")
        return out

    def to_json(self) -> dict[str, Any]:
        return {"chunks": [{"stream": s, "first_seq": a, "last_seq": b, "first_event": e0, "end_event": e1}
                           for s, a, b, e0, e1 in self.chunks],
                "streams": self.streams, "functions": [list(r) for r in self.functions], "arrays": self.arrays,
                "unfinished": self.unfinished, "rejected_rows": self.rejected_cells, "pages": self.pages}


class SalvagedRecording:
    """The intact part of a damaged .wt file, read without SQLite (see the module doc)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._where = schema.where(self.path)
        found = scan(self.path)
        rows, rejected = classify(found)
        self.meta = self._meta(rows["meta"])
        self._chunks: dict[int, dict[int, Row]] = {}
        for (sid, seq), row in sorted(rows["chunks"].items()):
            if type(sid) is int and type(seq) is int and self._decodes(row):
                self._chunks.setdefault(sid, {})[seq] = row
        self._streams = {sid: r for (sid,), r in rows["streams"].items()}
        self._arrays = {k: r for k, r in rows["arrays"].items()}
        self._functions, bad_files = self._registry(rows)
        if not self._chunks and not self._functions and not self.meta:
            raise StoreError(f"cannot salvage {self._where}: no intact recording data found")
        self.lost = self._losses(rejected + bad_files, found.n_pages)

    # -- decoding rows ----------------------------------------------------------------

    def _meta(self, rows: dict[tuple[Any, ...], Row]) -> dict[str, object]:
        meta: dict[str, object] = {}
        for (key,), row in sorted(rows.items()):
            try:
                meta[str(key)] = schema.decode_json(row.values[1], "meta")
            except StoreError:
                continue
        return meta

    def _decodes(self, row: Row) -> bool:
        sid, seq, n, blob = row.values[:4]
        if type(n) is not int or n < 0 or not isinstance(blob, bytes):
            return False
        try:
            schema.decompress(blob, n * schema.EVENT_BYTES, "chunk")
        except StoreError:
            return False
        return True

    def _registry(self, rows: dict[str, dict[tuple[Any, ...], Row]]) -> tuple[dict[int, FunctionInfo], int]:
        out: dict[int, FunctionInfo] = {}
        bad = 0
        for (fid,), row in rows["functions"].items():
            _fid, file, qual, first, last, source, blob, fingerprint = row.values[:8]
            out[fid] = FunctionInfo(fid, file, qual, first, last, source, fingerprint, blob)
        for (fid_base,), row in rows["files"].items():
            _base, path, n, counter_base, blob = row.values
            try:
                source, funcs = registry.decode_registry(blob, n, counter_base, "registry")
            except StoreError:
                bad += 1
                continue
            lines = source_lines(source, keepends=True)
            for i, (q, kind, first, last, fingerprint, load, counters) in enumerate(funcs):
                out[fid_base + i] = FunctionInfo(fid_base + i, path, q, first, last,
                                                 registry.function_source(source, lines, kind, first, last),
                                                 fingerprint, load=load, kind=kind, counter_base=counters)
        return out, bad

    # -- what was lost ----------------------------------------------------------------

    def _losses(self, rejected: int, n_pages: int) -> Lost:
        lost = Lost(rejected_cells=rejected, pages=n_pages)
        totals = self.meta.get(schema.TOTALS_KEY)
        totals = totals if isinstance(totals, dict) else None
        lost.unfinished = totals is None
        per_stream = totals.get("streams") if totals and isinstance(totals.get("streams"), dict) else {}
        expected: dict[int, tuple[int, int]] = {}
        for k, v in per_stream.items():
            if str(k).isdigit() and isinstance(v, list) and len(v) == 2 and all(type(x) is int for x in v):
                expected[int(k)] = (v[0], v[1])
        for sid in sorted(set(self._chunks) | set(expected) | set(self._streams)):
            lost.chunks += self._chunk_gaps(sid, expected.get(sid))
            if sid not in self._streams:
                lost.streams.append(sid)
        n_funcs = totals.get("functions") if totals else None
        lost.functions = _gaps(sorted(self._functions), n_funcs if type(n_funcs) is int else None)
        if self.meta.get("mode") in ("count", "count-naive") and self.meta.get("ended") is not None:
            lost.arrays = [a for a in ("counters", "exception_edges", "early_exits") if (a, "") not in self._arrays]
        return lost

    def _chunk_gaps(self, sid: int, expected: tuple[int, int] | None) -> list[tuple[int, int, int | None, int | None, int | None]]:
        have = self._chunks.get(sid, {})
        out = []
        prev_end: int | None = 0
        nxt = 0
        for seq in sorted(have):
            start, n = have[seq].values[4], have[seq].values[2]
            if seq > nxt:
                out.append((sid, nxt, seq - 1, prev_end, start if type(start) is int else None))
            prev_end = start + n if type(start) is int else None
            nxt = seq + 1
        if expected is not None and expected[0] > nxt:
            out.append((sid, nxt, expected[0] - 1, prev_end, expected[1]))
        return out

    # -- the Recording interface -------------------------------------------------------

    @property
    def ended(self) -> str | None:
        value = self.meta.get("ended")
        return value if isinstance(value, str) else None

    def functions(self) -> list[FunctionInfo]:
        return [self._functions[f] for f in sorted(self._functions)]

    def function(self, fid: int) -> FunctionInfo:
        if fid not in self._functions:
            raise StoreError(f"function {fid} of {self._where} was lost")
        return self._functions[fid]

    def streams(self) -> list[StreamInfo]:
        out = []
        for sid in sorted(set(self._chunks) | set(self._streams)):
            chunks = self._chunks.get(sid, {})
            n = sum(r.values[2] for r in chunks.values())
            stored = sum(len(r.values[3]) for r in chunks.values())
            row = self._streams.get(sid)
            kind, name, ident, parent = row.values[1:5] if row else ("?", "?", None, None)
            out.append(StreamInfo(sid, str(kind), str(name), schema.ident_from_db(ident), parent,
                                  n, len(chunks), stored))
        return out

    def chunk_rows(self, sid: int) -> dict[int, Row]:
        """The intact chunks of stream ``sid`` by sequence number (values: sid, seq, n, blob, start)."""
        return self._chunks.get(sid, {})

    def segments(self, sid: int) -> list[list[int]]:
        """Runs of consecutive intact chunk numbers of stream ``sid``."""
        runs: list[list[int]] = []
        for seq in sorted(self._chunks.get(sid, {})):
            if runs and runs[-1][-1] == seq - 1:
                runs[-1].append(seq)
            else:
                runs.append([seq])
        return runs

    def chunk(self, sid: int, seq: int) -> np.ndarray:
        sid_, seq_, n, blob = self._chunks[sid][seq].values[:4]
        raw = schema.decompress(blob, n * schema.EVENT_BYTES, f"chunk {seq} of stream {sid}")
        return np.frombuffer(raw, dtype=schema.EVENT_DTYPE).astype(np.int32)

    def iter_chunks(self, sid: int) -> Iterator[np.ndarray]:
        for seq in sorted(self._chunks.get(sid, {})):
            yield self.chunk(sid, seq)

    def events(self, sid: int) -> np.ndarray:
        chunks = list(self.iter_chunks(sid))
        return np.concatenate(chunks) if chunks else np.zeros(0, np.int32)

    def get_array(self, name: str, key: str = "") -> np.ndarray | None:
        row = self._arrays.get((name, key))
        if row is None:
            return None
        _n, _k, dtype_text, shape_text, blob = row.values[:5]
        what = f"array {name!r}/{key!r}"
        try:
            dtype = np.dtype(str(dtype_text))
            schema.check_array_dtype(dtype, what)
            shape = schema.decode_json(shape_text, what)
            if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
                raise StoreError(f"{what} is corrupt (shape)")
            raw = schema.decompress(blob, int(np.prod(shape, dtype=np.int64)) * dtype.itemsize, what)
        except (StoreError, TypeError, ValueError):
            return None
        return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()

    def sizes(self) -> dict[str, int]:
        chunks = [r for per in self._chunks.values() for r in per.values()]
        return {"file": os.path.getsize(self.path),
                "events_raw": sum(r.values[2] for r in chunks) * schema.EVENT_BYTES,
                "events_stored": sum(len(r.values[3]) for r in chunks)}

    def close(self) -> None:
        """Nothing to close (the file was read once); kept for the Recording interface."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _gaps(have: list[int], total: int | None) -> list[tuple[int, int | None]]:
    """Ranges [a, b) of ids in 0..total missing from the sorted ``have``."""
    out: list[tuple[int, int | None]] = []
    nxt = 0
    for f in have:
        if f > nxt:
            out.append((nxt, f))
        nxt = f + 1
    if total is not None and total > nxt:
        out.append((nxt, total))
    return out
