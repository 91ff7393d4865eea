"""One numba signature per events array: the arrays the decoder's kernels only read, handed over read-only."""

from __future__ import annotations

import numpy as np


def read_only(a: np.ndarray) -> np.ndarray:
    """``a`` as a read-only view (itself when it is read-only already).

    numba types a read-only array apart from a writable one, so a kernel fed both (chunks read
    from a recording are read-only buffers; joined or regenerated chunks are writable) is compiled
    twice on a cold cache (``decode`` alone: 7.2 CPU-s on 3.12; docs/design.md, "Test suite time,
    wave 24").  Here rather than in ``kernels/``: a kernel source change would
    make the builder's ahead-of-time module stale."""
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a
