"""The .wt store: one SQLite file per recording (writer, validating reader, format constants)."""

from wholetrace.store.reader import FunctionInfo, Recording, StreamInfo, open_recording
from wholetrace.store.schema import MAGIC, SCHEMA_VERSION
from wholetrace.store.writer import RecordingWriter

__all__ = [
    "MAGIC",
    "SCHEMA_VERSION",
    "FunctionInfo",
    "Recording",
    "RecordingWriter",
    "StreamInfo",
    "open_recording",
]
