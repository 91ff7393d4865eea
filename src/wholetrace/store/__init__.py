"""The .wt store: one SQLite file per recording (writer, validating reader, format constants)."""

from __future__ import annotations

import sys

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:
    from typing import Any

    from wholetrace.store.reader import FunctionInfo, Recording, StreamInfo, open_recording
    from wholetrace.store.schema import MAGIC, SCHEMA_VERSION
    from wholetrace.store.writer import RecordingWriter

# Names are imported on first use: recording needs only the writer, and the reader pulls in
# numpy, which a recording process should not pay for at start-up.
_WHERE = {"FunctionInfo": "reader", "Recording": "reader", "StreamInfo": "reader", "open_recording": "reader",
          "MAGIC": "schema", "SCHEMA_VERSION": "schema", "RecordingWriter": "writer"}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    __import__(f"{__name__}.{module}")   # (not importlib.import_module: importlib is not imported at start-up)
    return getattr(sys.modules[f"{__name__}.{module}"], name)
