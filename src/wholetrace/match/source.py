"""Where the matcher reads a stream's recorded events: the one place to switch readers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from wholetrace.match.symbols import DepthStats, rows_symbols


def symbol_chunks(rec: Any, sid: int, stats: DepthStats) -> Iterator[np.ndarray]:
    """Stream ``sid``'s F/B/E symbols straight from the decoding kernel's rows (any trace
    mode); each array is valid until the next is requested."""
    from wholetrace.trace.session import Trace

    return rows_symbols(Trace(rec).rows(sid, copy=False), stats)
