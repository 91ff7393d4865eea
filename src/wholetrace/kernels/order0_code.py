"""Numba order-0 coder of a symbol sequence: each symbol's bits down an adaptive binary tree (compact grammars, version 7).

For memoryless sequences (the context-mixing coder of ``sequitur_code`` then takes its
order-0 model alone) the mixer, its learning and the rank binarisation cost ~85 ns a symbol
and buy nothing.  Here a symbol of ``rawbits`` bits is coded most significant bit first, the
bit's probability from two counts kept at its node of a complete binary tree (node 1 the
root, node 2k + y its child): P(1) = (2 c1 + 1) / (2 (c0 + c1) + 2), the counts halved past
``LIMIT`` so the model follows a slowly drifting source.  Integer arithmetic only, one kernel
for both directions (``decode``), as ``sequitur_code``.  Invariant: decoding the bytes with
the same ``rawbits`` gives back the sequence.
"""

from __future__ import annotations

import numpy as np

from wholetrace.kernels._jit import kernel
from wholetrace.kernels.cm_parts import ST_OK, ST_SHORT, _code_bit

LIMIT = 1 << 16  # counts are halved when their sum reaches this
MAX_RAWBITS = 16  # the tree has 2**rawbits nodes of two counts


@kernel(nrt=False)
def order0_code(a, n, rawbits, buf, decode, cnt):  # type: ignore[no-untyped-def]
    """Code a[:n] into buf (or decode buf into a[:n]); cnt: 2 * 2**rawbits zeros (the tree's
    counts).  -> (bytes written or read, ST_OK or ST_SHORT when buf is too small)."""
    x1 = np.int64(0)
    x2 = np.int64(0xFFFFFFFF)
    xc = np.int64(0)
    bp = np.int64(0)
    if decode:
        for _ in range(4):
            xc = (xc << 8) | (np.int64(buf[bp]) if bp < len(buf) else 0)
            bp += 1
    top = np.int64(1) << rawbits
    for i in range(n):
        v = np.int64(0) if decode else np.int64(a[i])
        node = np.int64(1)
        for b in range(rawbits - 1, -1, -1):
            c0 = cnt[2 * node]
            c1 = cnt[2 * node + 1]
            p = ((2 * c1 + 1) * 4096) // (2 * (c0 + c1) + 2)
            p = 1 if p < 1 else (4095 if p > 4095 else p)
            x1, x2, xc, bp, y = _code_bit(x1, x2, xc, bp, buf, decode, p, (v >> b) & 1)
            if y < 0:
                return bp, ST_SHORT
            cnt[2 * node + y] += 1
            if c0 + c1 + 1 >= LIMIT:
                cnt[2 * node] = (cnt[2 * node] + 1) >> 1
                cnt[2 * node + 1] = (cnt[2 * node + 1] + 1) >> 1
            node = 2 * node + y
        if decode:
            a[i] = node - top
    if not decode:
        for _ in range(4):  # flush x1
            if bp >= len(buf):
                return bp, ST_SHORT
            buf[bp] = x1 >> 24
            bp += 1
            x1 = (x1 << 8) & 0xFFFFFFFF
    return bp, ST_OK
