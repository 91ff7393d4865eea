"""Read the rows of a damaged SQLite file page by page, without SQLite: every table leaf
cell that still parses, wherever its page sits, with the pages that hold it.

SQLite refuses a whole database (or a whole table) when one page of a b-tree is damaged,
although the rows on the other pages are intact.  This module reads the file format
itself (https://www.sqlite.org/fileformat2.html): it takes the page size from the header
(or, if the header is damaged, the size under which most pages look like b-tree pages),
walks the schema and the table b-trees where they are intact, and then scans *every*
page for table leaves (free pages too), so a leaf whose parent is damaged is still found.
A leaf cell's
payload is followed through its overflow chain and decoded as a record.  Nothing here
decides whether a row is right: the caller checks each row's crc (``schema.row_crc``).

Invariant: every function returns or skips; no input (any bytes, any length) raises
anything but :class:`~wholetrace.errors.StoreError` for an unreadable file.
"""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass, field

from wholetrace.errors import StoreError
from wholetrace.store import schema

#: b-tree page types (first byte of the page header).
INTERIOR_TABLE = 5
LEAF_TABLE = 13
INDEX_PAGES = (2, 10)

_PAGE_SIZES = tuple(1 << k for k in range(9, 17))   # 512 .. 65536


class _Bad(Exception):
    """A cell or page that does not parse (caught here, never leaves the module)."""


@dataclass(frozen=True)
class Cell:
    """One table leaf cell: its rowid, record values and the pages holding it (leaf first)."""

    rowid: int
    values: tuple[object, ...]
    pages: tuple[int, ...]


@dataclass
class PageScan:
    """What a scan found: the cells of every table leaf page, and which tree holds each page."""

    page_size: int
    n_pages: int
    cells: dict[int, list[Cell]] = field(default_factory=dict)   # leaf page -> its cells
    tree_of: dict[int, str] = field(default_factory=dict)        # page -> table whose b-tree reaches it
    tables: dict[str, int] = field(default_factory=dict)         # table name -> root page (schema)
    unreadable: list[int] = field(default_factory=list)          # table leaves whose cell array is damaged


def _varint(buf: bytes | mmap.mmap, pos: int, end: int) -> tuple[int, int]:
    """(value, next position) of the SQLite varint at ``pos`` (1 to 9 bytes, big-endian)."""
    value = 0
    for i in range(9):
        if pos >= end:
            raise _Bad("varint runs past the page")
        b = buf[pos]
        pos += 1
        if i == 8:
            return (value << 8) | b, pos
        value = (value << 7) | (b & 0x7F)
        if b < 0x80:
            return value, pos
    raise _Bad("unreachable")  # pragma: no cover


def _record(payload: bytes) -> tuple[object, ...]:
    """The column values of a record (NULL, int, float, text, blob); _Bad if malformed."""
    n = len(payload)
    hsize, pos = _varint(payload, 0, n)
    if hsize < pos or hsize > n:
        raise _Bad("record header size")
    types = []
    while pos < hsize:
        t, pos = _varint(payload, pos, hsize)
        types.append(t)
    if pos != hsize:
        raise _Bad("record header")
    out: list[object] = []
    body = hsize
    for t in types:
        if t == 0:
            out.append(None)
            continue
        if t in (8, 9):
            out.append(t - 8)
            continue
        if t in (10, 11):
            raise _Bad("reserved serial type")
        size = (1, 2, 3, 4, 6, 8, 8)[t - 1] if t < 8 else (t - 12) // 2 if t % 2 == 0 else (t - 13) // 2
        if body + size > n:
            raise _Bad("record body")
        raw = payload[body:body + size]
        body += size
        if t < 7:
            out.append(int.from_bytes(raw, "big", signed=True))
        elif t == 7:
            out.append(struct.unpack(">d", raw)[0])
        elif t % 2 == 0:
            out.append(bytes(raw))
        else:
            try:
                out.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                raise _Bad("text is not UTF-8") from None
    if body != n:
        raise _Bad("record length")
    return tuple(out)


class _File:
    """The raw pages of one file (memory-mapped), with its page geometry."""

    def __init__(self, data: bytes | mmap.mmap, page_size: int, reserved: int) -> None:
        self.data = data
        self.page_size = page_size
        self.usable = page_size - reserved
        self.n_pages = (len(data) + page_size - 1) // page_size

    def page(self, no: int) -> bytes:
        if not 1 <= no <= self.n_pages:
            raise _Bad(f"page {no} is outside the file")
        start = (no - 1) * self.page_size
        return bytes(self.data[start:start + self.page_size])

    def header_at(self, no: int) -> int:
        return 100 if no == 1 else 0

    def cell_offsets(self, no: int, page: bytes) -> list[int]:
        h = self.header_at(no)
        if len(page) < h + 8:
            raise _Bad("short page")
        kind = page[h]
        n = int.from_bytes(page[h + 3:h + 5], "big")
        head = h + (12 if kind in (2, 5) else 8)
        if head + 2 * n > min(len(page), self.usable):
            raise _Bad("cell pointer array")
        return [int.from_bytes(page[head + 2 * i:head + 2 * i + 2], "big") for i in range(n)]

    def leaf_cell(self, no: int, page: bytes, off: int) -> Cell:
        """Decode the table leaf cell at ``off`` of page ``no`` (following its overflow chain)."""
        end = min(len(page), self.usable)
        if not self.header_at(no) + 8 <= off < end:
            raise _Bad("cell offset")
        size, pos = _varint(page, off, end)
        rowid, pos = _varint(page, pos, end)
        if rowid >= 1 << 63:
            rowid -= 1 << 64
        u = self.usable
        x = u - 35
        if size <= x:
            local = size
        else:
            m = ((u - 12) * 32 // 255) - 23
            k = m + (size - m) % (u - 4)
            local = k if k <= x else m
        if pos + local > end:
            raise _Bad("cell runs past the page")
        parts = [page[pos:pos + local]]
        pages = [no]
        if local < size:
            if pos + local + 4 > end:
                raise _Bad("overflow pointer")
            nxt = int.from_bytes(page[pos + local:pos + local + 4], "big")
            remaining = size - local
            while remaining > 0:
                if nxt in pages:
                    raise _Bad("overflow chain loops")
                over = self.page(nxt)
                take = min(remaining, u - 4)
                if len(over) < 4 + take:
                    raise _Bad("overflow page cut short")
                pages.append(nxt)
                parts.append(over[4:4 + take])
                remaining -= take
                nxt = int.from_bytes(over[:4], "big")
        return Cell(rowid, _record(b"".join(parts)), tuple(pages))

    def table_leaf(self, no: int, page: bytes) -> list[Cell]:
        cells = []
        for off in self.cell_offsets(no, page):
            try:
                cells.append(self.leaf_cell(no, page, off))
            except _Bad:
                continue
        return cells

    def tree_pages(self, root: int) -> list[int]:
        """The leaf pages of the table b-tree at ``root`` that can be reached intact."""
        leaves: list[int] = []
        seen: set[int] = set()
        todo = [root]
        while todo:
            no = todo.pop()
            if no in seen or not 1 <= no <= self.n_pages:
                continue
            seen.add(no)
            try:
                page = self.page(no)
                kind = page[self.header_at(no)]
                if kind == LEAF_TABLE:
                    leaves.append(no)
                elif kind == INTERIOR_TABLE:
                    h = self.header_at(no)
                    todo.append(int.from_bytes(page[h + 8:h + 12], "big"))
                    for off in self.cell_offsets(no, page):
                        if off + 4 <= len(page):
                            todo.append(int.from_bytes(page[off:off + 4], "big"))
            except (_Bad, IndexError):
                continue
        return leaves


def _looks_like_page(data: bytes | mmap.mmap, start: int, size: int) -> bool:
    """Whether a b-tree page header plausibly starts at ``start`` for page size ``size``."""
    if start + 8 > len(data):
        return False
    kind = data[start]
    if kind not in (INTERIOR_TABLE, LEAF_TABLE, *INDEX_PAGES):
        return False
    n = int.from_bytes(data[start + 3:start + 5], "big")
    content = int.from_bytes(data[start + 5:start + 7], "big") or 65536
    return n * 2 + 8 <= content <= size and (n > 0 or content == size)


def _geometry(data: bytes | mmap.mmap) -> tuple[int, int]:
    """(page size, reserved bytes per page): from the header if it is intact, else the size
    under which the most pages look like b-tree pages."""
    if len(data) >= 100 and bytes(data[:16]) == schema.SQLITE_HEADER:
        raw = int.from_bytes(data[16:18], "big")
        size = 65536 if raw == 1 else raw
        reserved = data[20]
        if size in _PAGE_SIZES and reserved < 64:
            return size, reserved
    best, best_score = 4096, 0
    for size in _PAGE_SIZES:
        n = min(len(data) // size, 4096)
        score = sum(_looks_like_page(data, i * size, size) for i in range(1, n))
        if score * size > best_score:   # a page size's hits weighted by the bytes they cover
            best, best_score = size, score * size
    return best, 0


def scan(path: str | os.PathLike[str]) -> PageScan:
    """Every table leaf cell of the file at ``path`` that still parses (see the module doc)."""
    where = schema.where(path)
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            data: bytes | mmap.mmap = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    except OSError as exc:
        raise StoreError(f"cannot salvage {where}: {schema.one_line(exc.strerror or exc)}") from None
    try:
        if len(data) < 512:
            raise StoreError(f"cannot salvage {where}: the file holds no complete page")
        page_size, reserved = _geometry(data)
        f = _File(data, page_size, reserved)
        out = PageScan(page_size, f.n_pages)
        _schema(f, out)
        for name, root in out.tables.items():
            for no in f.tree_pages(root):
                out.tree_of.setdefault(no, name)
        # Every page, free ones too: a damaged freelist pointer must not hide a live leaf, and
        # stale copies of rows on free pages are identical or lose to rows on their tree.
        for no in range(1, f.n_pages + 1):
            page = f.page(no)
            kind = page[f.header_at(no)] if len(page) > f.header_at(no) else -1
            if kind == LEAF_TABLE:
                try:
                    out.cells[no] = f.table_leaf(no, page)
                except _Bad:
                    out.unreadable.append(no)
        return out
    finally:
        if isinstance(data, mmap.mmap):
            data.close()


def _schema(f: _File, out: PageScan) -> None:
    """Table name -> root page from ``sqlite_master`` (page 1's tree), as far as it is intact."""
    for no in f.tree_pages(1):
        try:
            cells = f.table_leaf(no, f.page(no))
        except _Bad:
            continue
        for c in cells:
            if len(c.values) == 5 and c.values[0] == "table" and isinstance(c.values[1], str) \
                    and isinstance(c.values[3], int) and c.values[3] > 0:
                out.tables[c.values[1]] = c.values[3]
        out.tree_of[no] = "sqlite_master"
