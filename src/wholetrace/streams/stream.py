"""CompressedStream: one integer stream under one codec, its blob format, and codec selection."""

from __future__ import annotations

import struct
import zlib
from typing import Any, Final, Union

import numpy as np

from wholetrace.errors import StreamError, UsageError
from wholetrace.streams.blocks import ZstdBody
from wholetrace.streams.codecs import BY_ID, BY_NAME, CODECS, MAX_TABLE_BITS, MIN_TABLE_BITS, PACKED, RAW, VARINT, \
    ZDELTA, ZVALUE, Codec, lookup, table_bits
from wholetrace.streams.cursor import BufferedCursor, Cursor, PredictedCursor
from wholetrace.streams.predicted import PredictedBody
from wholetrace.streams.simple import PackedBody, RawBody, VarintBody

MAGIC: Final = b"WTCS"
VERSION: Final = 1
#: magic, version, codec id, table bits, flags, length, segment size, segment count, and the
#: crc32 of the header (this field as zero) and the body
_HEAD: Final = struct.Struct("<4sBBBBQIII")
FLAG_SIGNED: Final = 1

#: values per segment (the seek unit: a seek walks at most about half of one)
DEFAULT_SEGMENT: Final = 1 << 16
#: values compressed with every codec to choose one
DEFAULT_SAMPLE: Final = 1 << 15
MAX_SEGMENT: Final = 1 << 24
#: predictor-coded streams of at most this many values get buffered cursors by default
#: (32 KiB of decoded values; see ``CompressedStream.cursor``)
SHORT_WALK: Final = 1 << 12

Body = Union[PredictedBody, RawBody, PackedBody, VarintBody, ZstdBody]


class CompressedStream:
    """An immutable compressed integer stream: random access by range, cursors, bytes."""

    def __init__(self, codec: Codec, body: Body, m: int, segment: int, signed: bool, tbits: int = 0) -> None:
        self._codec = codec
        self._body = body
        self._m = m
        self._segment = segment
        self._signed = signed
        self._tbits = tbits
        self._blob: bytes | None = None

    def __len__(self) -> int:
        return self._m

    def __repr__(self) -> str:
        return f"<CompressedStream {self.codec} of {self._m:,} values, {self.nbytes:,} bytes>"

    @property
    def codec(self) -> str:
        """The codec's name, e.g. ``"bfcm-2"``."""
        return self._codec.name

    @property
    def segment(self) -> int:
        return self._segment

    @property
    def dtype(self) -> np.dtype[Any]:
        return np.dtype(np.int64 if self._signed else np.uint64)

    @property
    def nbytes(self) -> int:
        """Size of :meth:`to_bytes` (header included)."""
        return len(self.to_bytes())

    def decode_range(self, i: int, j: int) -> np.ndarray:
        """Values ``[i, j)`` (``0 <= i <= j <= len``) as an array of the encoded dtype."""
        if type(i) is int and type(j) is int and 0 <= i <= j <= self._m:  # the common case, checked fast
            out = self._body.decode_range(i, j)
            return out.view(np.int64) if self._signed else out
        for x in (i, j):
            if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
                raise UsageError(f"stream range bounds must be integers, got {x!r}")
        if not 0 <= i <= j <= self._m:
            raise UsageError(f"stream range [{i}, {j}) is outside [0, {self._m}]")
        return self._body.decode_range(int(i), int(j)).view(self.dtype)

    def decode(self) -> np.ndarray:
        """All values."""
        return self.decode_range(0, self._m)

    def cursor(self, pos: int = 0, *, step: bool | None = None) -> Cursor:
        """A new cursor at ``pos`` (each cursor has its own state; streams are shared).

        ``step`` matters for the predictor codecs only: ``True`` walks the predictor itself
        (no decoded buffer, a seek costs at most about half a segment of steps; the cursor
        has ``state()``), ``False`` decodes the segment it enters into a buffer, as the
        other codecs do.  By default (``None``) streams of at most ``SHORT_WALK`` values are
        buffered: a whole walk then costs one decoding call instead of a park walk and the
        walk itself."""
        if isinstance(self._body, PredictedBody) and (step or (step is None and self._m > SHORT_WALK)):
            return PredictedCursor(self._body, self._signed, pos)
        return BufferedCursor(self._body, self._m, self._signed, self._segment, pos)

    # ------------------------------------------------------------------ bytes

    def to_bytes(self) -> bytes:
        if self._blob is None:
            body = self._body.to_bytes()
            flags = FLAG_SIGNED if self._signed else 0
            nseg = -(-self._m // self._segment)
            fields = (MAGIC, VERSION, self._codec.id, self._tbits, flags, self._m, self._segment, nseg)
            crc = zlib.crc32(body, zlib.crc32(_HEAD.pack(*fields, 0)))
            self._blob = _HEAD.pack(*fields, crc) + body
        return self._blob

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> "CompressedStream":
        """Parse a blob made by :meth:`to_bytes`; anything else is a one-line StreamError."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise StreamError(f"a compressed stream must be bytes, not {type(data).__name__}")
        data = bytes(data)
        if len(data) < _HEAD.size:
            raise StreamError(f"compressed stream is truncated ({len(data)} bytes, header needs {_HEAD.size})")
        magic, version, cid, tbits, flags, m, segment, nseg, crc = _HEAD.unpack_from(data)
        if magic != MAGIC:
            raise StreamError(f"not a compressed stream (magic {magic!r})")
        if zlib.crc32(data[_HEAD.size:], zlib.crc32(data[:_HEAD.size - 4] + bytes(4))) != crc:
            raise StreamError(f"compressed stream is corrupt (checksum mismatch, {len(data)} bytes)")
        if version != VERSION:
            raise StreamError(f"compressed stream version {version} is not supported (this is {VERSION})")
        codec = BY_ID.get(cid)
        if codec is None:
            raise StreamError(f"compressed stream has unknown codec id {cid}")
        if flags & ~FLAG_SIGNED:
            raise StreamError(f"compressed stream has unknown flags {flags:#x}")
        if not 1 <= segment <= MAX_SEGMENT or nseg != -(-m // segment):
            raise StreamError(f"compressed stream is corrupt (segment size {segment}, {nseg} segments "
                              f"for {m} values)")
        expect_tbits = (MIN_TABLE_BITS <= tbits <= MAX_TABLE_BITS) if codec.tabled else tbits == 0
        if not expect_tbits or (codec.predictive and m == 0):
            raise StreamError(f"compressed stream is corrupt (table bits {tbits} for {codec.name})")
        body = data[_HEAD.size:]
        parsed: Body
        if codec.family == RAW:
            parsed = RawBody.from_bytes(body, m, segment)
        elif codec.family == VARINT:
            parsed = VarintBody.from_bytes(body, m, segment)
        elif codec.family == PACKED:
            parsed = PackedBody.from_bytes(body, m, segment)
        elif codec.family in (ZDELTA, ZVALUE):
            parsed = ZstdBody.from_bytes(body, m, segment, codec.family == ZDELTA)
        else:
            parsed = PredictedBody.from_bytes(body, codec, m, segment, tbits)
        out = cls(codec, parsed, m, segment, bool(flags & FLAG_SIGNED), tbits)
        out._blob = data
        return out


# ---------------------------------------------------------------------- encoding


def as_uint64(values: object) -> tuple[np.ndarray, bool]:
    """``values`` as a contiguous uint64 array (two's complement) and whether it was signed."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise UsageError(f"a stream must be a 1-D array, got shape {arr.shape}")
    if arr.dtype.kind not in "iu" and not (arr.dtype.kind in "fO" and arr.size == 0):
        raise UsageError(f"a stream must hold integers, got dtype {arr.dtype}")
    signed = arr.dtype.kind == "i"
    if arr.dtype.kind not in "iu":
        arr = arr.astype(np.int64)
        signed = True
    wide = arr.astype(np.int64 if signed else np.uint64, copy=False)
    return np.ascontiguousarray(wide).view(np.uint64), signed


def build(values: np.ndarray, codec: Codec, segment: int, signed: bool) -> CompressedStream:
    """Compress uint64 ``values`` with one given codec."""
    m = int(values.shape[0])
    if codec.family == RAW:
        return CompressedStream(codec, RawBody(values.copy(), segment), m, segment, signed)
    if codec.family == VARINT:
        return CompressedStream(codec, VarintBody.build(values, segment), m, segment, signed)
    if codec.family == PACKED:
        return CompressedStream(codec, PackedBody.build(values, segment, signed), m, segment, signed)
    if codec.family in (ZDELTA, ZVALUE):
        return CompressedStream(codec, ZstdBody.build(values, segment, codec.family == ZDELTA), m, segment, signed)
    if m == 0:
        raise UsageError(f"codec {codec.name} needs at least one value (use raw for empty streams)")
    tbits = table_bits(codec, m, segment)
    return CompressedStream(codec, PredictedBody.build(values, codec, segment, tbits), m, segment, signed, tbits)


#: the best estimates from the prefix judged again whatever leads (a prefix can also flatter
#: the codecs sized exactly: a random prefix before a constant tail)
RECHECK: Final = 2
#: a leader is compressed whole (not on windows) in streams of at most this many samples
WHOLE_CHECK: Final = 8
#: codecs whose size on the whole stream is cheap to get exactly (one linear pass, no model)
EXACT: Final = frozenset({RAW, VARINT, PACKED})
#: streams of at most this many values are stored fixed-width (``packed`` or ``raw``, the
#: smaller): below it a zstd frame's or a predictor table's fixed cost per call (3-4 µs, see
#: docs/design.md "The fixed cost of a walk") is more than the whole walk of fixed-width
#: values takes, and the bytes it saves are a few dozen (a counter stream of 89 values:
#: 227 B packed against 172 B for the smallest codec)
SHORT_STREAM: Final = 256


def choose(values: np.ndarray, segment: int, sample: int,
           signed: bool = False) -> tuple[CompressedStream, dict[str, int]]:
    """The codec expected to give the smallest stream, built on the first ``sample`` values,
    and every codec's (estimated) size in bytes for the whole stream; ties go to the earlier
    codec of CODECS.

    A stream no longer than ``sample`` is compressed with every codec and sizes are exact.
    Otherwise a prefix cannot be trusted alone (a label stream may be constant for its first
    32 Ki values, where ``packed`` costs nothing, and then grow): raw, varint and packed are
    sized exactly on the whole stream (one pass); the others on the prefix, scaled to the
    whole length.  Then the ``RECHECK`` best of those, and the leader as long as its
    estimate is a prefix-only one, are compressed again: whole if the stream holds at most
    ``WHOLE_CHECK`` samples, else on windows of ``sample`` values at the middle and at the
    end, its estimate becoming the three windows' size scaled to the whole (a frame's fixed
    cost gets scaled too, so estimates of short windows are rough).

    A stream of at most ``SHORT_STREAM`` values is stored fixed-width: the smaller of
    ``packed`` and ``raw`` (``sizes`` still lists every codec)."""
    m = int(values.shape[0])
    if m <= sample:
        built = {c.name: build(values, c, segment, signed) for c in CODECS if not (c.predictive and m == 0)}
        sizes = {name: cs.nbytes for name, cs in built.items()}
        pool = ("packed", "raw") if m <= SHORT_STREAM else sizes
        name = min(pool, key=lambda n: (sizes[n], NAMES_ORDER[n]))
        return built[name], sizes
    sizes, head = {}, {}
    for c in CODECS:
        if c.family in EXACT:
            sizes[c.name] = build(values, c, segment, signed).nbytes
        else:
            head[c.name] = build(values[:sample], c, segment, signed).nbytes
            sizes[c.name] = _scaled(head[c.name], sample, m)
    windows = [values[(m - sample) // 2:(m - sample) // 2 + sample], values[m - sample:]]
    checked: set[str] = set()

    def recheck(name: str) -> None:
        checked.add(name)
        if m <= WHOLE_CHECK * sample:
            sizes[name] = build(values, BY_NAME[name], segment, signed).nbytes
        else:
            total = head[name] + sum(build(w, BY_NAME[name], segment, signed).nbytes for w in windows)
            sizes[name] = _scaled(total, 3 * sample, m)

    for name in sorted(head, key=lambda n: (sizes[n], NAMES_ORDER[n]))[:RECHECK]:
        recheck(name)
    while True:  # judge the leader again until its size is not from the prefix alone
        name = min(sizes, key=lambda n: (sizes[n], NAMES_ORDER[n]))
        if name not in head or name in checked:
            break
        recheck(name)
    return build(values[:sample], BY_NAME[name], segment, signed), sizes


def _scaled(nbytes: int, n: int, m: int) -> int:
    """``nbytes`` for ``n`` values scaled to ``m`` values."""
    return -(-nbytes * m // n)


NAMES_ORDER: Final = {c.name: k for k, c in enumerate(CODECS)}


def encode(values: object, codec: str = "auto", *, segment: int = DEFAULT_SEGMENT,
           sample: int = DEFAULT_SAMPLE) -> CompressedStream:
    """Compress an integer array (uint64 or int64; other integer types are widened).

    ``codec="auto"`` keeps the codec :func:`choose` expects to be smallest (every codec on
    the first ``sample`` values, the best few again on the middle and the end, the codecs
    without a model sized exactly); otherwise it names one codec
    (``wholetrace.streams.CODEC_NAMES``).
    ``segment`` values form one independently parked segment (the seek unit).
    """
    if isinstance(segment, bool) or not isinstance(segment, int) or not 16 <= segment <= MAX_SEGMENT:
        raise UsageError(f"segment must be an integer in 16..{MAX_SEGMENT}, got {segment!r}")
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 1:
        raise UsageError(f"sample must be a positive integer, got {sample!r}")
    vals, signed = as_uint64(values)
    if codec != "auto":
        return build(vals, lookup(codec), segment, signed)
    best, _ = choose(vals, segment, sample, signed)
    if len(best) == vals.shape[0]:  # the sample was the whole stream
        return best
    return build(vals, BY_NAME[best.codec], segment, signed)
