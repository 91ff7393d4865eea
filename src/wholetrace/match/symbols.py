"""The F/B/E alphabet of compressed control-flow traces: E = 0, F(f) = 2f + 1, B(b) = 2b + 2."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from wholetrace.errors import InternalError, StoreError
from wholetrace.kernels import automaton_index as K

#: the symbol of LEAVE (the universal exit marker of the paper)
E: Final = 0


def sym_f(fid: int) -> int:
    """The symbol of ENTER ``fid``."""
    return 2 * fid + 1


def sym_b(block: int) -> int:
    """The symbol of block ``block`` (local to its function)."""
    return 2 * block + 2


def kind(sym: int) -> tuple[str, int]:
    """``("E", 0)``, ``("F", fid)`` or ``("B", block)`` for one symbol."""
    if sym == E:
        return ("E", 0)
    if sym & 1:
        return ("F", sym >> 1)
    return ("B", (sym >> 1) - 1)


@dataclass
class DepthStats:
    """Depth range of a stream: 0 at its start, +1 per F, -1 per E."""

    events: int = 0      # recorded events read
    symbols: int = 0     # F/B/E symbols produced
    dmin: int = 0        # lowest depth (below 0 only if the stream starts inside invocations)
    dmax: int = 0
    final: int = 0       # depth at the end (invocations still open)


def _update(stats: DepthStats, st: np.ndarray, n: int) -> None:
    """``stats`` after a kernel call that wrote ``n`` symbols (state ``st``: ``C_*`` slots)."""
    stats.events = int(st[K.C_SEEN])
    stats.symbols += int(n)
    stats.dmin, stats.dmax, stats.final = int(st[K.C_DMIN]), int(st[K.C_DMAX]), int(st[K.C_DEPTH])


def to_symbols(chunks: Iterable[np.ndarray], stats: DepthStats) -> Iterator[np.ndarray]:
    """F/B/E symbols (int32) of recorded event chunks; EXC pairs are dropped, ``stats`` filled."""
    st = np.zeros(K.C_SIZE, np.int64)
    for chunk in chunks:
        ev = np.ascontiguousarray(chunk, dtype=np.int32)
        out = np.empty(len(ev), np.int32)
        n = K.to_symbols(ev, out, st)
        if st[K.C_BAD]:
            raise StoreError(f"unknown event code at event {int(st[K.C_BAD]) - 1} of a trace stream")
        _update(stats, st, n)
        if n:
            yield out[:n]


def rows_symbols(batches: Iterable[Any], stats: DepthStats) -> Iterator[np.ndarray]:
    """F/B/E symbols (int32) of decoded row batches (``trace.decode.Rows``: the kernel's
    decoding of any trace mode), ``stats`` filled; each array is valid until the next."""
    from wholetrace.kernels.decode import R_DST, R_EID, R_FID

    st = np.zeros(K.C_SIZE, np.int64)
    out = np.empty(0, np.int32)
    for rows in batches:
        data = rows.data
        if data.shape[1] > len(out):
            out = np.empty(max(data.shape[1], 2 * len(out)), np.int32)
        n = K.rows_to_symbols(data[R_FID], data[R_DST], data[R_EID], out, st)
        if st[K.C_BAD]:
            raise InternalError(f"decoded row of unknown kind at row {int(st[K.C_BAD]) - 1} of a batch")
        _update(stats, st, n)
        if n:
            yield out[:n]
