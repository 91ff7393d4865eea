"""Kernel: count block executions and exception-truncated statements over one F/B/E event stream."""

from __future__ import annotations

import numpy as np

from wholetrace.kernels._jit import kernel

_LEAVE = -1
_EXC = -2
_ENTER_BASE = 8


@kernel
def count_blocks(ev: np.ndarray, sbase: np.ndarray, block_of: np.ndarray, next_in_block: np.ndarray,
                 bbase: np.ndarray, bcount: np.ndarray, cut: np.ndarray, enters: np.ndarray) -> int:
    """Walk ``ev`` with a stack of (fid, last block); add into ``bcount``/``cut``/``enters``.

    ``sbase[f] + s`` indexes statement ``s`` of function ``f`` in ``block_of``/``cut``/
    ``next_in_block`` (the id of the statement after ``s`` in its block, or -1);
    ``bbase[f] + b`` indexes block ``b`` in ``bcount``.  An EXC whose origin statement lies in
    the activation's last block cuts the statements after it in that block (an unknown
    statement cuts nothing).  Returns the final stack depth (activations still open when the
    stream ended), or -1 at a block or function that does not exist (counting stops there).
    """
    n = ev.shape[0]
    stack_f = np.empty(64, np.int64)
    stack_b = np.empty(64, np.int64)
    depth = 0
    i = 0
    while i < n:
        v = ev[i]
        if v >= 0:
            if depth > 0:
                f = stack_f[depth - 1]
                if bbase[f] + v >= bbase[f + 1]:
                    return -1
                bcount[bbase[f] + v] += 1
                stack_b[depth - 1] = v
        elif v == _LEAVE:
            if depth > 0:
                depth -= 1
        elif v == _EXC:
            i += 1
            if i < n and depth > 0:
                s = ev[i]
                f = stack_f[depth - 1]
                last = stack_b[depth - 1]
                if s >= 0 and sbase[f] + s < sbase[f + 1] and last >= 0 and block_of[sbase[f] + s] == last:
                    t = next_in_block[sbase[f] + s]
                    while t >= 0:
                        cut[sbase[f] + t] += 1
                        t = next_in_block[sbase[f] + t]
        elif v <= -_ENTER_BASE:
            f = -v - _ENTER_BASE
            if f >= enters.shape[0]:
                return -1
            if depth == stack_f.shape[0]:
                grow_f = np.empty(depth * 2, np.int64)
                grow_b = np.empty(depth * 2, np.int64)
                grow_f[:depth] = stack_f[:depth]
                grow_b[:depth] = stack_b[:depth]
                stack_f = grow_f
                stack_b = grow_b
            stack_f[depth] = f
            stack_b[depth] = -1
            depth += 1
            enters[f] += 1
        i += 1
    return depth
