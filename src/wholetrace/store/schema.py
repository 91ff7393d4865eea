"""On-disk format of a .wt recording: SQLite DDL, version and magic, and the blob codecs."""

from __future__ import annotations

import _thread
import os
import sys
import zlib

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:
    from typing import Any, Final

    import numpy as np

from wholetrace import jsontext
from wholetrace.errors import StoreError
from wholetrace.store.cmods import array   # without collections.abc (store/cmods.py)
from wholetrace.zstdc import zstandard   # the C backend without the package's __init__

#: Version of the table layout below and of what its rows hold; stored as ``PRAGMA user_version``
#: (and as meta ``schema_version``).  Readers refuse newer versions and versions they do not
#: know; they read the older ones of READABLE_VERSIONS, and a reader that needs something an
#: older file does not hold refuses with a one-line error instead of guessing.
#:
#: Version history:
#: 1: meta, functions (source, zstd JSON CFG with the probe plan under "plan"), streams,
#:    chunks (zstd int32 events), arrays.
#:    Added later without a new version (readers check what is there): the ``files``
#:    table (the function registry of a file as one row), ``crc`` on every row, chunk
#:    ``start`` positions, and the ``totals`` meta key (see DDL below).
#: 2: the plans of ``witness``/``branches`` functions store their witnessed edges
#:    (``plan["witnessed"]``, witness id = position); readers decode with them and never
#:    recompute a placement (a version 1 witness recording is refused by the decoder).
#: 3: witness/branches streams record a re-raise as ``RERAISE s r`` (``events.py``), and
#:    trace-mode streams close the activations still open at the end with ``EXC s`` LEAVE;
#:    the decoder places exceptions by them and refuses witness recordings of version < 3
#:    (their re-raises are not marked).  Blocks and count recordings of older versions read
#:    as before.
SCHEMA_VERSION: Final = 3
READABLE_VERSIONS: Final = frozenset({1, 2, 3})
#: The first version whose witness/branches streams the decoder reads.
WITNESS_STREAMS_SINCE: Final = 3

#: ``PRAGMA application_id`` of every .wt file: the bytes ``b"WTRC"`` as a big-endian int32.
MAGIC: Final = int.from_bytes(b"WTRC", "big")

#: Bytes every SQLite 3 database file starts with.
SQLITE_HEADER: Final = b"SQLite format 3\x00"

#: Events are int32, stored little-endian whatever the machine (numpy dtype string, bytes each).
EVENT_DTYPE: Final = "<i4"
EVENT_BYTES: Final = 4

#: Meta keys the writer sets itself and :meth:`RecordingWriter.set_meta` refuses.
RESERVED_META: Final = frozenset({"schema_version", "totals"})

#: ``numpy.dtype.kind`` values put_array/get_array accept: plain bytes, never objects.
ARRAY_KINDS: Final = frozenset("biufcSU")

#: zstd level for event chunks and blobs (fast, ~3x on raw block traces).
ZSTD_LEVEL: Final = 3

#: Largest blob the reader decodes when the row does not say its size (cfg JSON).
MAX_UNSIZED_BLOB: Final = 1 << 30

# The tables as SQLite stores them (``sqlite_master``): issue 9 (§3 and §5: damaged recordings,
# fixed costs of big packages) added a ``crc`` to every row (:func:`row_crc` of the table name
# and its other columns), so that ``--salvage`` (store/salvage.py) can tell an intact row from
# a damaged one wherever it finds it, each chunk its ``start`` (events of its stream before it),
# so a salvage can say which event ranges were lost, and the ``files`` table, the function
# registry of each instrumented file as one row (written with one insert; the code cache keeps
# the blob ready, store/registry.py), beside the per-function ``functions`` rows older writers
# made.  Older files lack them (NULL, or no ``files`` table); readers check what is there.
# SCHEMA_VERSION was deliberately not bumped for them.  Until wave 13 the columns were added
# by ``ALTER TABLE ... ADD COLUMN`` after the CREATE statements, at every file's creation; the
# statements below are the text SQLite kept after those (hence ``, crc INTEGER)`` after the
# last column's comment), run once: the same tables, root pages and ``sqlite_master`` rows,
# without six schema reloads (2.6 M instructions of every recording's start-up;
# ``tests/store/test_schema_ddl.py`` compares with the wave-9 construction).
DDL: Final = """
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL            -- JSON
, crc INTEGER);
CREATE TABLE functions (
    fid         INTEGER PRIMARY KEY,
    file        TEXT NOT NULL,
    qualname    TEXT NOT NULL,
    firstline   INTEGER NOT NULL,
    lastline    INTEGER NOT NULL,
    source      TEXT NOT NULL,
    cfg         BLOB NOT NULL,     -- zstd(JSON object)
    fingerprint TEXT NOT NULL
, crc INTEGER);
CREATE TABLE streams (
    sid          INTEGER PRIMARY KEY,
    kind         TEXT NOT NULL CHECK (kind IN ('thread', 'task')),
    name         TEXT NOT NULL,
    thread_ident INTEGER,          -- two's complement when >= 2**63
    parent       INTEGER
, crc INTEGER);
CREATE TABLE chunks (
    sid      INTEGER NOT NULL,
    seq      INTEGER NOT NULL,     -- 0, 1, 2, ... per stream
    n_events INTEGER NOT NULL,
    blob     BLOB NOT NULL, start INTEGER, crc INTEGER,        -- zstd(little-endian int32 bytes)
    PRIMARY KEY (sid, seq)
);
CREATE TABLE arrays (
    name  TEXT NOT NULL,
    key   TEXT NOT NULL,
    dtype TEXT NOT NULL,           -- numpy dtype.str, e.g. '<i8'
    shape TEXT NOT NULL,           -- JSON list of ints
    blob  BLOB NOT NULL, crc INTEGER,           -- zstd(C-order bytes)
    PRIMARY KEY (name, key)
);
CREATE TABLE files (
    fid_base     INTEGER PRIMARY KEY,  -- the file's functions are fid_base .. fid_base + n_functions - 1
    path         TEXT NOT NULL,
    n_functions  INTEGER NOT NULL,
    counter_base INTEGER NOT NULL,     -- global id of the file's first counter (count modes)
    blob         BLOB NOT NULL,        -- zstd(JSON header, descriptions), see store/registry.py
    crc          INTEGER NOT NULL
);
"""

#: Meta key written at close: {"streams": {sid: [chunks, events]}, "functions": n}, so a
#: salvage knows what a complete file held.
TOTALS_KEY: Final = "totals"

#: Meta keys of recordings with child processes (``runtime.children`` writes them, ``store.parts``
#: reads them): the root's parts directory, each file's identity.
CHILDREN_KEY: Final = "children"
PROCESS_KEY: Final = "process"
#: Notes in the parts directory (``UNRECORDED_PREFIX`` + pid + ``.json``: argv, why) left by child
#: interpreters that ran code the runner does not reproduce (``runtime.subprocs``).
UNRECORDED_PREFIX: Final = "unrecorded-"
#: Arrays of a fork child in count modes: the counts at the fork (``counters``, ... under this prefix).
BASE_PREFIX: Final = "process.base."

#: Tables (and their columns) a reader needs; anything else in the file is ignored.
REQUIRED_TABLES: Final = {
    "meta": ("key", "value"),
    "functions": ("fid", "file", "qualname", "firstline", "lastline", "source", "cfg",
                  "fingerprint"),
    "streams": ("sid", "kind", "name", "thread_ident", "parent"),
    "chunks": ("sid", "seq", "n_events", "blob"),
    "arrays": ("name", "key", "dtype", "shape", "blob"),
}

STREAM_KINDS: Final = ("thread", "task")

_U64: Final = 1 << 64
_I63: Final = 1 << 63
_local = _thread._local()   # threading.local itself (threading is not imported at start-up)


def one_line(text: object) -> str:
    """``text`` as a single line (newlines and tabs escaped), for error messages."""
    return str(text).replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def where(path: str | os.PathLike[str]) -> str:
    """A path quoted for an error message (repr, so it can never span lines)."""
    return repr(os.fspath(path))


def row_crc(table: str, *values: object) -> int:
    """crc32 of a row: the table name and its values (None, int, str, bytes), each tagged
    with its type and length, so no two different rows share an encoding."""
    crc = zlib.crc32(table.encode())
    for v in values:
        if v is None:
            crc = zlib.crc32(b"N", crc)
        elif isinstance(v, int):
            crc = zlib.crc32(b"I" + v.to_bytes(8, "little", signed=True), crc)
        elif isinstance(v, float):
            crc = zlib.crc32(b"F" + repr(v).encode(), crc)
        else:
            raw = v.encode("utf-8", "surrogatepass") if isinstance(v, str) else bytes(v)  # type: ignore[arg-type]
            crc = zlib.crc32(raw, zlib.crc32((b"T" if isinstance(v, str) else b"B")
                                             + len(raw).to_bytes(8, "little"), crc))
    return crc


def ident_to_db(ident: int | None) -> int | None:
    """Map an unsigned thread ident (up to 2**64-1) onto SQLite's signed int64."""
    if ident is None:
        return None
    if not 0 <= ident < _U64:
        raise StoreError(f"thread_ident {ident} is out of range 0..2**64-1")
    return ident - _U64 if ident >= _I63 else ident


def ident_from_db(value: int | None) -> int | None:
    """Inverse of :func:`ident_to_db`."""
    return None if value is None else (value + _U64 if value < 0 else value)


def _compressor() -> zstandard.ZstdCompressor:
    comp: zstandard.ZstdCompressor | None = getattr(_local, "comp", None)
    if comp is None:  # zstd contexts are not thread-safe: one per thread
        comp = _local.comp = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_content_size=True)
    return comp


def compress(raw: bytes | memoryview) -> bytes:
    """zstd-compress ``raw`` (the frame records its content size)."""
    return _compressor().compress(raw)


def decompress(blob: bytes, expected: int | None, what: str) -> bytes:
    """Decompress one zstd frame; if ``expected`` is given the frame must declare that size.

    The declared size is checked before any allocation, so a hostile frame cannot
    make the reader allocate more than the row says.
    """
    if not isinstance(blob, bytes):
        raise StoreError(f"{what} is not a blob")
    try:
        size = zstandard.frame_content_size(blob)
    except zstandard.ZstdError:
        raise StoreError(f"{what} is corrupt (not a zstd frame)") from None
    limit_ok = expected is not None or size <= MAX_UNSIZED_BLOB
    if size < 0 or not limit_ok or (expected is not None and size != expected):
        raise StoreError(f"{what} is corrupt (frame size {size}, expected {expected})")
    try:
        raw = zstandard.ZstdDecompressor().decompress(blob)
    except zstandard.ZstdError as exc:
        raise StoreError(f"{what} is corrupt ({one_line(exc)})") from None
    if len(raw) != size:
        raise StoreError(f"{what} is corrupt (decoded {len(raw)} bytes, expected {size})")
    return raw


def encode_json(value: object, what: str) -> str:
    """Strict JSON text for ``value`` (no NaN/Infinity), or StoreError."""
    try:
        return jsontext.dumps(value, allow_nan=False, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{what} is not JSON-serialisable ({one_line(exc)})") from None


def decode_json(text: str | bytes, what: str) -> object:
    """Parse JSON text read from a file, or StoreError; never evaluates anything."""
    import json   # not at start-up (wholetrace.jsontext)

    try:
        return json.loads(text)
    except (ValueError, TypeError, RecursionError) as exc:
        raise StoreError(f"{what} is not valid JSON ({one_line(exc)})") from None


def array_typecode(obj: object) -> str | None:
    """``obj.typecode`` if ``obj`` is an ``array.array``, of ``cmods``' module or of any other
    instance of the module ``array`` (the program's own ``import array`` after ``cmods.hide()``
    makes new types: docs/design.md, "Record's start-up, wave 17"), else None."""
    if not isinstance(obj, array.array) and not any(
            c.__module__ == "array" and c.__qualname__ == "array" for c in type(obj).__mro__):
        return None
    code = getattr(obj, "typecode", None)
    return code if isinstance(code, str) else None


def events_to_le_int32(events: object) -> Any:
    """``events`` (numpy array or array.array of integers) as a 1-D little-endian int32
    buffer (an ``array('i')`` as it is on a little-endian machine, else a numpy array)."""
    if array_typecode(events) == "i" and events.itemsize == 4 and sys.byteorder == "little":  # type: ignore[attr-defined]
        return events
    import numpy as np
    try:
        arr = np.asarray(events)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"events are not an array ({one_line(exc)})") from None
    if arr.dtype.kind not in "iu":
        raise StoreError(f"events must be integers, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise StoreError(f"events must be 1-D, got shape {arr.shape}")
    wide = arr.dtype.itemsize > 4 or (arr.dtype.kind == "u" and arr.dtype.itemsize == 4)
    if wide and arr.size and (int(arr.min()) < -(2**31) or int(arr.max()) >= 2**31):
        raise StoreError("events do not fit in int32")
    return np.ascontiguousarray(arr, dtype=EVENT_DTYPE)


def check_array_dtype(dtype: "np.dtype[Any]", what: str) -> None:
    """Refuse dtypes that are not plain bytes (object, structured, void, datetime)."""
    if dtype.kind not in ARRAY_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        kinds = "".join(sorted(ARRAY_KINDS))
        raise StoreError(f"{what} has unsupported dtype {dtype.str} (kinds {kinds} only)")
