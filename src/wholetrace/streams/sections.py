"""Byte sections of a stream blob: uvarint arrays, zigzag, and a bounds-checked reader."""

from __future__ import annotations

import numpy as np

from wholetrace.errors import StreamError
from wholetrace.kernels import varint as V


def pack_uvarints(values: np.ndarray) -> bytes:
    """LEB128 bytes of a uint64 array."""
    vals = np.ascontiguousarray(values, dtype=np.uint64)
    out = np.empty(vals.shape[0] * V.MAX_BYTES, np.uint8)
    end = V.encode_uvarints(vals, out, 0)
    return out[:end].tobytes()


def zigzag(values: np.ndarray) -> np.ndarray:
    """Two's-complement uint64 values mapped so that small magnitudes are small."""
    v = np.asarray(values, np.uint64)
    return (v << np.uint64(1)) ^ (np.uint64(0) - (v >> np.uint64(63)))


def unzigzag(values: np.ndarray) -> np.ndarray:
    v = np.asarray(values, np.uint64)
    return (v >> np.uint64(1)) ^ (np.uint64(0) - (v & np.uint64(1)))


class Reader:
    """Sequential reader over a blob body; every failure is a one-line StreamError."""

    def __init__(self, data: bytes, what: str) -> None:
        self.buf = np.frombuffer(data, np.uint8)
        self.pos = 0
        self.what = what

    def bad(self, why: str) -> StreamError:
        return StreamError(f"{self.what} is corrupt ({why})")

    def uvarints(self, count: int) -> np.ndarray:
        """The next ``count`` LEB128 values (uint64)."""
        if count < 0 or count > self.buf.shape[0] - self.pos:  # every value takes a byte
            raise self.bad("truncated")
        out = np.empty(count, np.uint64)
        end = V.decode_uvarints(self.buf, self.pos, self.buf.shape[0], out)
        if end < 0:
            raise self.bad("truncated" if end == V.ERR_TRUNCATED else "overlong varint")
        self.pos = end
        return out

    def take(self, n: int) -> bytes:
        """The next ``n`` raw bytes."""
        if n < 0 or n > self.buf.shape[0] - self.pos:
            raise self.bad("truncated")
        out = self.buf[self.pos:self.pos + n].tobytes()
        self.pos += n
        return out

    def finish(self) -> None:
        """Every byte must have been read."""
        if self.pos != self.buf.shape[0]:
            raise self.bad(f"{self.buf.shape[0] - self.pos} unexpected trailing bytes")
