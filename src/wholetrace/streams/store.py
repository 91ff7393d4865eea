"""Keep named compressed streams in a .wt recording (rows of the generic ``arrays`` table)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import numpy as np

from wholetrace.errors import StreamError, UsageError
from wholetrace.streams.stream import CompressedStream

if TYPE_CHECKING:
    from wholetrace.store import Recording, RecordingWriter

#: array names of the streams are this prefix plus the stream's name
PREFIX: Final = "streams."


def _name(name: str) -> str:
    if not isinstance(name, str) or not name:
        raise UsageError(f"a stream name must be a non-empty string, got {name!r}")
    return PREFIX + name


def put_stream(writer: "RecordingWriter", name: str, stream: CompressedStream, *, key: str = "") -> None:
    """Store ``stream`` (its :meth:`~CompressedStream.to_bytes` blob) under ``(name, key)``."""
    writer.put_array(_name(name), np.frombuffer(stream.to_bytes(), np.uint8), key=key)


def get_stream(recording: "Recording", name: str, *, key: str = "") -> CompressedStream | None:
    """The stream stored under ``(name, key)``, or None; a damaged blob is a StreamError."""
    arr = recording.get_array(_name(name), key)
    if arr is None:
        return None
    if arr.dtype != np.uint8 or arr.ndim != 1:
        raise StreamError(f"stream {name!r}/{key!r} is not a byte blob (dtype {arr.dtype}, shape {arr.shape})")
    return CompressedStream.from_bytes(arr.tobytes())
