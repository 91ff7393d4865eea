"""What fused and SEQ WPP terminals stand for, for the readers: the terminals a set of terminals is made of."""

from __future__ import annotations

from wholetrace.kernels._jit import kernel
from wholetrace.kernels.wpp_intern import K_ENTER_CHAIN, K_SEQ


@kernel
def close_parts(kind, fid, value, need):  # type: ignore[no-untyped-def]
    """Mark in ``need`` (bool, one per terminal, in place) every terminal a marked one is made of:
    an ENTER_CHAIN (f, t) is made of t, a SEQ (h, u) (``fid`` holds h) of h and u, transitively.
    One pass from the last terminal down: a terminal's parts were interned before it (smaller
    ids).  A part outside ``0 <= part < t`` (a malformed table) is not marked, as
    ``wpp_intern.terminal_widths`` reads it: the kernel never writes outside ``need``.  Returns how
    many terminals are marked."""
    n = len(kind)
    for t in range(n - 1, -1, -1):
        if need[t]:
            k = kind[t]
            if k == K_ENTER_CHAIN or k == K_SEQ:
                inner = value[t]
                if 0 <= inner < t:
                    need[inner] = True
                if k == K_SEQ:
                    head = fid[t]
                    if 0 <= head < t:
                        need[head] = True
    c = 0
    for t in range(n):
        if need[t]:
            c += 1
    return c
