"""The decoding kernel's blocks mode: a non-negative event is the block the running function enters."""

# Split from ``kernels.decode`` (wave 17), whose header describes the walk, its input and
# its output; ``kernels.decode`` re-exports every name and keys the numba cache of all its parts
# on all of them (``_jit.cache_depends``).

from __future__ import annotations

from wholetrace.kernels._jit import kernel
from wholetrace.kernels.decode_layout import (BAD_BLOCK, BAD_EDGE, BAD_HANDLER, BAD_LEAVE, BAD_LEFT, BAD_START,
                                              BK_FLAGS, EID_EXC, ENTRY, EXIT, FN_BBASE, FN_GEN, FN_NB, FN_NY,
                                              FN_SBASE, FN_YBASE, FR_ACT, FR_CHILD, FR_EXC, FR_FID, FR_PC, FR_ST,
                                              F_DYN, F_SUSPEND, S_AFTER_EXC, S_FRESH, S_RUN, _bad, _edge, _emit)

_hot = kernel(nrt=False)
_inl = kernel(nrt=False, inline=True)


@_hot
def _resume_src(fn, blk, succ, ysl, pool, f, v, pooled):  # type: ignore[no-untyped-def]
    """A yield block of generator ``f`` with an edge to ``v`` (``pooled``: only one where an
    activation is suspended, which is then used up); returns (block, edge) or (-1, -1)."""
    bb = fn[f, FN_BBASE]
    yb = fn[f, FN_YBASE]
    for k in range(yb, yb + fn[f, FN_NY]):
        y = ysl[k]
        if pooled and pool[bb + y] <= 0:
            continue
        e = _edge(blk, succ, bb + y, v)
        if e >= 0:
            if pooled:
                pool[bb + y] -= 1
            return y, e
    return -1, -1


@_inl
def _block_event(fn, blk, succ, ysl, pool, stack, meta, out, d, v):  # type: ignore[no-untyped-def]
    f = stack[d, FR_FID]
    bb = fn[f, FN_BBASE]
    if v < 2 or v >= fn[f, FN_NB]:
        return _bad(meta, BAD_BLOCK, v, f)
    st = stack[d, FR_ST]
    pc = stack[d, FR_PC]
    act = stack[d, FR_ACT]
    if st == S_AFTER_EXC:
        if (blk[bb + v, BK_FLAGS] & F_DYN) == 0:
            return _bad(meta, BAD_HANDLER, v, f)
        _emit(out, meta, act, f, pc, v, EID_EXC, stack[d, FR_EXC])
    elif st == S_RUN:
        e = _edge(blk, succ, bb + pc, v)
        if e < 0:
            return _bad(meta, BAD_EDGE, pc, v)
        _emit(out, meta, act, f, pc, v, e, -1)
    elif st == S_FRESH:
        src, e = -1, -1
        if fn[f, FN_GEN] != 0:
            src, e = _resume_src(fn, blk, succ, ysl, pool, f, v, True)
        if e < 0:
            e = _edge(blk, succ, bb + ENTRY, v)
            src = ENTRY
        if e < 0 and fn[f, FN_GEN] != 0:       # resumed from a suspension not seen in this stream
            src, e = _resume_src(fn, blk, succ, ysl, pool, f, v, False)
        if e < 0:
            return _bad(meta, BAD_START, v, f)
        _emit(out, meta, act, f, src, v, e, -1)
    else:
        return _bad(meta, BAD_LEFT, v, f)
    stack[d, FR_PC] = v
    stack[d, FR_ST] = S_RUN
    return 0


@_hot
def _block_exc(fn, blk, stm, pool, stack, meta, out, d, s):  # type: ignore[no-untyped-def]
    """``EXC s`` read in a blocks-mode frame: the edge is emitted when its target is known."""
    f = stack[d, FR_FID]
    st = stack[d, FR_ST]
    if st == S_AFTER_EXC:   # a second exception before any handler block: target unknown
        _emit(out, meta, stack[d, FR_ACT], f, stack[d, FR_PC], -1, EID_EXC, stack[d, FR_EXC])
    elif st == S_FRESH and fn[f, FN_GEN] != 0 and s >= 0:
        # thrown in at a suspended yield: the exception leaves that yield block
        bb = fn[f, FN_BBASE]
        y = stm[fn[f, FN_SBASE] + s]
        if y >= 0 and (blk[bb + y, BK_FLAGS] & F_SUSPEND) != 0:
            if pool[bb + y] > 0:
                pool[bb + y] -= 1
            stack[d, FR_PC] = y
    stack[d, FR_ST] = S_AFTER_EXC
    stack[d, FR_EXC] = s
    return 0


@_inl
def _block_leave(fn, blk, succ, ysl, pool, stack, meta, out, d):  # type: ignore[no-untyped-def]
    f = stack[d, FR_FID]
    bb = fn[f, FN_BBASE]
    st = stack[d, FR_ST]
    pc = stack[d, FR_PC]
    act = stack[d, FR_ACT]
    if st == S_AFTER_EXC:
        _emit(out, meta, act, f, pc, EXIT, EID_EXC, stack[d, FR_EXC])
        pc = EXIT
    elif st == S_RUN:
        if (blk[bb + pc, BK_FLAGS] & F_SUSPEND) != 0:
            pool[bb + pc] += 1                  # suspended at a yield
        else:
            e = _edge(blk, succ, bb + pc, EXIT)
            if e < 0:
                return _bad(meta, BAD_LEAVE, pc, f)
            _emit(out, meta, act, f, pc, EXIT, e, -1)
            pc = EXIT
    elif st == S_FRESH:
        if fn[f, FN_GEN] != 0:
            # resumed, left without a block: from a yield with an edge to EXIT unless it
            # re-suspended (``yield from``: its delegate ran as a child)
            if stack[d, FR_CHILD] == 0:
                y, e = _resume_src(fn, blk, succ, ysl, pool, f, EXIT, True)
                if e >= 0:
                    _emit(out, meta, act, f, y, EXIT, e, -1)
                    pc = EXIT
        else:
            e = _edge(blk, succ, bb + ENTRY, EXIT)
            if e >= 0:
                _emit(out, meta, act, f, ENTRY, EXIT, e, -1)
                pc = EXIT
    return 0
