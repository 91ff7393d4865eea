"""What one scheme answers for one stream: the count and the end positions it was asked for."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wholetrace.errors import InternalError
from wholetrace.kernels import automaton as K


@dataclass(frozen=True)
class StreamResult:
    """Occurrences in one stream; ``complete`` is False when the scan stopped at the first."""

    sid: int
    count: int
    ends: tuple[int, ...]      # positions of the last block of each occurrence, ascending
    complete: bool


def scan_state(top: int) -> np.ndarray:
    """The state vector of the automaton kernels, for a stack whose top is ``top``."""
    st = np.zeros(K.STATE_SIZE, np.int64)
    st[K.S_TOP] = top
    return st


def finish(sid: int, st: np.ndarray, ends: np.ndarray, scheme: int) -> StreamResult:
    """The result of a finished scan; a broken stack means the stored trace is inconsistent."""
    status = int(st[K.S_STATUS])
    if status == K.ST_BAD:
        raise InternalError(f"scheme {scheme}: the compressed trace of stream {sid} is inconsistent "
                            "(its nesting leaves the depth range it was indexed with)")
    n = min(int(st[K.S_NENDS]), len(ends))
    return StreamResult(sid, int(st[K.S_COUNT]), tuple(int(x) for x in ends[:n]), status != K.ST_FOUND)
