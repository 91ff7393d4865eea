"""The entropy-coded block codecs: each segment's zigzag deltas (or values) as LEB128, one zstd frame per segment."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import ClassVar, Final

import numpy as np
import zstandard

from wholetrace.errors import StreamError
from wholetrace.kernels import varint as V
from wholetrace.streams import sections
from wholetrace.streams.simple import inflate_error, range_of_segments

#: zstd level of the frames.  Measured on the streams of ``benchmarks/streams.py``: level 11
#: is within 10 % of level 19 on timestamp and label streams at 3-10x its encode speed;
#: level 9 is faster again but erratic (one label stream 6x larger than at level 3);
#: level 15 saves a few % more at twice the encode time (a stored WET then takes 3x the
#: CPU time of one without block codecs to pack, against 1.9x at 11)
LEVEL: Final = 11

#: one zstd decompressor per thread (making one costs several microseconds; sharing one
#: between threads is not allowed)
_LOCAL = threading.local()


def _decompressor() -> zstandard.ZstdDecompressor:
    d = getattr(_LOCAL, "dctx", None)
    if d is None:
        d = _LOCAL.dctx = zstandard.ZstdDecompressor()
    return d


@dataclass
class ZstdBody:
    """Per segment, one zstd frame of the LEB128 bytes of the zigzag deltas (``delta``; the
    first one from 0, so segments are independent) or of the zigzag values.  A cursor
    decodes one whole segment (the seek unit) and walks it from memory in either
    direction, so both directions cost the same and a seek costs one segment's decoding."""

    frames: list[bytes]
    m: int
    segment: int
    delta: bool
    keeps: ClassVar[bool] = True

    def _count(self, s: int) -> int:
        return min(self.segment, self.m - s * self.segment)

    @classmethod
    def build(cls, values: np.ndarray, segment: int, delta: bool) -> "ZstdBody":
        m = int(values.shape[0])
        zc = zstandard.ZstdCompressor(level=LEVEL)
        out = np.empty(min(m, segment) * V.MAX_BYTES, np.uint8)
        z = np.empty(min(m, segment), np.uint64)
        frames = []
        for start in range(0, m, segment):
            vals = values[start:start + segment]
            n = vals.shape[0]
            if delta:
                V.zigzag_deltas(vals, z)
            else:
                z[:n] = sections.zigzag(vals)
            end = V.encode_uvarints(z[:n], out, 0)
            frames.append(zc.compress(out[:end].tobytes()))
        return cls(frames, m, segment, delta)

    def fill(self, s: int, keep: np.ndarray, lo: int, hi: int, out: np.ndarray, first: int,
             step: int) -> np.ndarray:
        """Inflate segment ``s``: values ``lo..hi-1`` to ``out[first + step * k]`` and, if
        ``keep`` has room for the segment, all of them to ``keep`` (returned); a damaged frame
        is a StreamError."""
        n = self._count(s)
        try:
            raw = _decompressor().decompress(self.frames[s])
        except zstandard.ZstdError as err:
            why = str(err).splitlines()[0] if str(err) else "zstd error"
            raise StreamError(f"{self.codec_name} stream is corrupt (segment {s}: {why})") from None
        status = V.inflate(raw, 0, len(raw), n, self.delta, keep, lo, hi, out, first, step)
        if status < 0:
            raise inflate_error(status, f"{self.codec_name} stream", s, n)
        return keep

    @property
    def codec_name(self) -> str:
        return "zdelta" if self.delta else "zvalue"

    def decode_range(self, i: int, j: int) -> np.ndarray:
        return range_of_segments(self, self.segment, i, j)

    def to_bytes(self) -> bytes:
        lens = np.array([len(f) for f in self.frames], np.uint64)
        return sections.pack_uvarints(lens) + b"".join(self.frames)

    @classmethod
    def from_bytes(cls, body: bytes, m: int, segment: int, delta: bool) -> "ZstdBody":
        """Parse and check the frame table: lengths add up, and every frame's header names a
        decoded size a segment's varints can have (so decoding never allocates more)."""
        rd = sections.Reader(body, f"{'zdelta' if delta else 'zvalue'} stream")
        nseg = -(-m // segment)
        lens = rd.uvarints(nseg)
        rest = len(body) - rd.pos
        if (lens > np.uint64(rest)).any() or int(lens.sum()) != rest:
            raise rd.bad("frame lengths do not match the data")
        frames = []
        for s, n in enumerate(lens.tolist()):
            frame = rd.take(n)
            count = min(segment, m - s * segment)
            try:
                size = zstandard.frame_content_size(frame)
            except zstandard.ZstdError:
                raise rd.bad(f"segment {s} is not a zstd frame") from None
            if not count <= size <= count * V.MAX_BYTES:
                raise rd.bad(f"segment {s} claims {size} bytes for {count} values")
            frames.append(frame)
        rd.finish()
        return cls(frames, m, segment, delta)
