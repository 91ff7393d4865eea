"""The codecs without a predictor, for short or patternless streams: raw little-endian u64,
fixed-width fields above the minimum (packed), and zigzag-delta varints."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable

import numpy as np

from wholetrace.kernels import varint as V
from wholetrace.streams import sections


def range_of_segments(segment_values: Callable[[int], np.ndarray], segment: int, i: int, j: int) -> np.ndarray:
    """Values ``[i, j)`` of a stream decoded one segment at a time by ``segment_values``."""
    out = np.empty(max(0, j - i), np.uint64)
    for s in range(i // segment, -(-j // segment) if j > i else 0):
        base = s * segment
        vals = segment_values(s)
        lo, hi = max(i, base), min(j, base + vals.shape[0])
        out[lo - i:hi - i] = vals[lo - base:hi - base]
    return out


@dataclass
class RawBody:
    """Values as they are (8 bytes each)."""

    values: np.ndarray  # uint64
    segment: int

    @property
    def m(self) -> int:
        return int(self.values.shape[0])

    def decode_range(self, i: int, j: int) -> np.ndarray:
        return self.values[i:j].copy()

    def segment_values(self, s: int) -> np.ndarray:
        return self.values[s * self.segment:(s + 1) * self.segment]

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

    words: np.ndarray  # uint64
    base: int
    width: int
    m: int
    segment: int
    _HEAD = struct.Struct("<QB")

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
        V.unpack_fixed(self.words, np.uint64(self.base), self.width, i, max(i, j), out)
        return out

    def segment_values(self, s: int) -> np.ndarray:
        return self.decode_range(s * self.segment, min(self.m, (s + 1) * self.segment))

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

    def segment_values(self, s: int) -> np.ndarray:
        n = min(self.segment, self.m - s * self.segment)
        z = np.empty(n, np.uint64)
        rd = sections.Reader(b"", "varint stream")
        end = V.decode_uvarints(self.data, int(self.offsets[s]), int(self.offsets[s + 1]), z)
        if end != self.offsets[s + 1]:
            raise rd.bad(f"segment {s} does not hold {n} values")
        out = np.empty(n, np.uint64)
        V.undo_zigzag_deltas(z, out)
        return out

    def decode_range(self, i: int, j: int) -> np.ndarray:
        return range_of_segments(self.segment_values, self.segment, i, j)

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
