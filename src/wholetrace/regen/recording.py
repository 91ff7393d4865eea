"""A read-only view of a `witness`/`branches` recording whose streams are the regenerated
`blocks` streams, regenerated on the fly (streaming) whenever a stream is read.

``as_blocks(rec)`` returns ``rec`` itself for any other recording, so readers of block
traces (``trace``, ``counts``) can take any trace recording.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from wholetrace.instrument.witnesses import PLAN_KINDS


class RegeneratedRecording:
    """Wraps an open :class:`wholetrace.store.Recording`; ``iter_chunks``/``events`` regenerate."""

    def __init__(self, rec: Any, kind: str | None = None) -> None:
        from wholetrace.regen.driver import recording_plans

        self.rec = rec
        self.kind = kind or str(rec.meta.get("mode"))
        self.plans = recording_plans(rec, self.kind)

    def iter_chunks(self, sid: int) -> Iterator[np.ndarray]:
        from wholetrace.regen.driver import regenerate_stream

        return regenerate_stream(_Reread(self.rec, sid), self.plans)

    def events(self, sid: int) -> np.ndarray:
        chunks = list(self.iter_chunks(sid))
        return np.concatenate(chunks) if chunks else np.zeros(0, np.int32)

    def __getattr__(self, name: str) -> Any:   # meta, functions(), streams(), sizes() ...
        return getattr(self.rec, name)


class _Reread:
    """The chunks of one stored stream, read afresh from the store each time it is iterated
    (the regenerator reads a stream twice without holding it in memory)."""

    def __init__(self, rec: Any, sid: int) -> None:
        self.rec, self.sid = rec, sid

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter(self.rec.iter_chunks(self.sid))


def is_regenerated(rec: Any) -> bool:
    return rec.meta.get("mode") in PLAN_KINDS


def as_blocks(rec: Any) -> Any:
    """``rec`` as a blocks recording: regenerated for witness/branches recordings."""
    return RegeneratedRecording(rec) if is_regenerated(rec) else rec
