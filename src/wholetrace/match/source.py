"""Where the matcher reads a stream's recorded events: the one place to switch readers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np


def event_chunks(rec: Any, sid: int) -> Iterator[np.ndarray]:
    """Stream ``sid``'s block-trace events (regenerated for witness/branches recordings)."""
    from wholetrace.trace.session import Trace

    return Trace(rec).blocks(sid)
