"""The codecs without a predictor, for short or patternless streams: raw little-endian u64,
fixed-width fields above the minimum (packed), and zigzag-delta varints."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import ClassVar, Final, Protocol

import numpy as np

from wholetrace.errors import StreamError
from wholetrace.kernels import varint as V
from wholetrace.streams import sections


#: "no segment buffer": a body's ``fill`` then decodes only the values asked for
NO_KEEP: Final = np.zeros(0, np.uint64)


class Segmented(Protocol):
    """A body decoded a segment at a time by ``fill`` (every body: cursors and ranges use it)."""

    keeps: ClassVar[bool]

    def fill(self, s: int, keep: np.ndarray, lo: int, hi: int, out: np.ndarray, first: int,
             step: int) -> np.ndarray | None: ...


def range_of_segments(body: Segmented, segment: int, i: int, j: int) -> np.ndarray:
    """Values ``[i, j)`` of a stream, each segment decoded straight into the result."""
    out = np.empty(max(0, j - i), np.uint64)
    s = i // segment
    if j - s * segment <= segment:  # within one segment (short streams): no loop
        if j > i:
            body.fill(s, NO_KEEP, i - s * segment, j - s * segment, out, 0, 1)
        return out
    for s in range(i // segment, -(-j // segment)):
        base = s * segment
        lo, hi = max(i, base) - base, min(j, base + segment) - base
        body.fill(s, NO_KEEP, lo, hi, out, base + lo - i, 1)
    return out


def inflate_error(status: int, what: str, s: int, n: int) -> StreamError:
    """The StreamError for a failed :func:`kernels.varint.inflate` of segment ``s``."""
    why = {V.ERR_TRUNCATED: "its bytes end early", V.ERR_OVERLONG: "an overlong varint",
           V.ERR_TRAILING: "bytes after the last value"}.get(status, f"status {status}")
    return StreamError(f"{what} is corrupt (segment {s} does not hold {n} values: {why})")


@dataclass
class RawBody:
    """Values as they are (8 bytes each)."""

    #: whether a cursor needs a segment buffer for ``fill`` to decode into
    keeps: ClassVar[bool] = False

    values: np.ndarray  # uint64
    segment: int

    @property
    def m(self) -> int:
        return int(self.values.shape[0])

    def decode_range(self, i: int, j: int) -> np.ndarray:
        return self.values[i:j].copy()

    def fill(self, s: int, keep: np.ndarray, lo: int, hi: int, out: np.ndarray, first: int,
             step: int) -> np.ndarray:
        """Values ``lo..hi-1`` of segment ``s`` to ``out[first + step * k]``; the segment (a view)."""
        vals = self.values[s * self.segment:(s + 1) * self.segment]
        V.copy_run(vals, lo, hi, out, first, step)
        return vals

    def to_bytes(self) -> bytes:
        return self.values.astype("<u8").tobytes()

    @classmethod
    def from_bytes(cls, body: bytes, m: int, segment: int) -> "RawBody":
        rd = sections.Reader(body, "raw stream")
        vals = np.frombuffer(rd.take(8 * m), "<u8").astype(np.uint64)
        rd.finish()
        return cls(vals, segment)


@dataclass
class PackedBody:
    """Every value minus the minimum in ``width`` bits (frame of reference): O(1) access."""

    #: whether a cursor needs a segment buffer for ``fill`` to decode into
    keeps: ClassVar[bool] = False

    words: np.ndarray  # uint64
    base: int
    width: int
    m: int
    segment: int
    _HEAD = struct.Struct("<QB")

    def __post_init__(self) -> None:
        self.base_u64 = np.uint64(self.base)  # made once: a numpy scalar costs as much as a short decode

    @classmethod
    def build(cls, values: np.ndarray, segment: int, signed: bool) -> "PackedBody":
        m = int(values.shape[0])
        if m == 0:
            return cls(np.zeros(1, np.uint64), 0, 0, 0, segment)
        view = values.view(np.int64) if signed else values
        lo, hi = int(view.min()), int(view.max())
        width = (hi - lo).bit_length()
        words = np.zeros((m * width + 63) // 64 + 1, np.uint64)
        base = lo & ((1 << 64) - 1)
        V.pack_fixed(values, np.uint64(base), width, words)
        return cls(words, base, width, m, segment)

    def decode_range(self, i: int, j: int) -> np.ndarray:
        out = np.empty(max(0, j - i), np.uint64)
        V.unpack_run(self.words, self.base_u64, self.width, i, max(i, j), out, 0, 1)
        return out

    def fill(self, s: int, keep: np.ndarray, lo: int, hi: int, out: np.ndarray, first: int,
             step: int) -> None:
        """Values ``lo..hi-1`` of segment ``s`` unpacked to ``out[first + step * k]``; None:
        nothing to keep, every value is one field away."""
        start = s * self.segment
        V.unpack_run(self.words, self.base_u64, self.width, start + lo, start + hi, out, first, step)

    def to_bytes(self) -> bytes:
        nbytes = (self.m * self.width + 7) // 8
        return self._HEAD.pack(self.base, self.width) + self.words.astype("<u8").tobytes()[:nbytes]

    @classmethod
    def from_bytes(cls, body: bytes, m: int, segment: int) -> "PackedBody":
        rd = sections.Reader(body, "packed stream")
        base, width = cls._HEAD.unpack(rd.take(cls._HEAD.size))
        if width > 64:
            raise rd.bad(f"field width {width}")
        nbytes = (m * width + 7) // 8
        data = rd.take(nbytes)
        rd.finish()
        words = np.zeros((m * width + 63) // 64 + 1, "<u8")
        words.view(np.uint8)[:nbytes] = np.frombuffer(data, np.uint8)
        return cls(words.astype(np.uint64), base, width, m, segment)


@dataclass
class VarintBody:
    """Per segment, LEB128 of the zigzag deltas (the first one from 0): seekable per segment."""

    #: whether a cursor needs a segment buffer for ``fill`` to decode into
    keeps: ClassVar[bool] = True

    data: np.ndarray     # uint8, every segment's bytes back to back
    offsets: np.ndarray  # int64 [nseg + 1]: byte range of each segment
    m: int
    segment: int

    @classmethod
    def build(cls, values: np.ndarray, segment: int) -> "VarintBody":
        m = int(values.shape[0])
        out = np.empty(m * V.MAX_BYTES, np.uint8)
        offsets = [0]
        z = np.empty(min(m, segment), np.uint64)
        for start in range(0, m, segment):
            vals = values[start:start + segment]
            V.zigzag_deltas(vals, z)
            offsets.append(V.encode_uvarints(z[:vals.shape[0]], out, offsets[-1]))
        return cls(out[:offsets[-1]].copy(), np.array(offsets, np.int64), m, segment)

    def fill(self, s: int, keep: np.ndarray, lo: int, hi: int, out: np.ndarray, first: int,
             step: int) -> np.ndarray:
        """Values ``lo..hi-1`` of segment ``s`` to ``out[first + step * k]`` and, if ``keep``
        has room for the segment, all of them to ``keep``; returns ``keep``."""
        n = min(self.segment, self.m - s * self.segment)
        status = V.inflate(self.data, self.offsets[s], self.offsets[s + 1], n, True, keep, lo, hi, out, first, step)
        if status < 0:
            raise inflate_error(status, "varint stream", s, n)
        return keep

    def decode_range(self, i: int, j: int) -> np.ndarray:
        return range_of_segments(self, self.segment, i, j)

    def to_bytes(self) -> bytes:
        return sections.pack_uvarints(np.diff(self.offsets).astype(np.uint64)) + self.data.tobytes()

    @classmethod
    def from_bytes(cls, body: bytes, m: int, segment: int) -> "VarintBody":
        rd = sections.Reader(body, "varint stream")
        nseg = -(-m // segment)
        lens = rd.uvarints(nseg)
        rest = len(body) - rd.pos
        counts = np.minimum(segment, m - np.arange(nseg, dtype=np.int64) * segment)
        if (lens > np.uint64(rest)).any() or int(lens.sum()) != rest or (lens.astype(np.int64) < counts).any():
            raise rd.bad("segment lengths do not match the data")
        data = np.frombuffer(rd.take(rest), np.uint8).copy()
        rd.finish()
        offsets = np.concatenate([[0], np.cumsum(lens.astype(np.int64))]).astype(np.int64)
        return cls(data, offsets, m, segment)
