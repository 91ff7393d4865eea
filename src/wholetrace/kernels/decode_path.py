"""The decoding kernel's path mode: a path id walked on its numbering's DAG (Ball & Larus, MICRO-29 1996; Larus, PLDI 1999)."""

# Split from ``kernels.decode`` (wave 17), whose header describes the walk, its input and
# its output; ``kernels.decode`` re-exports every name and keys the numba cache of all its parts
# on all of them (``_jit.cache_depends``).

from __future__ import annotations

from wholetrace.events import LEAVE, LEAVE_PATH, NO_PATH
from wholetrace.kernels._jit import kernel
from wholetrace.kernels.decode_layout import (BAD_LEFT, BAD_PATH, BAD_REGISTER, BAD_RESUME, BAD_START, BK_COMP,
                                              BK_FLAGS, BK_NPD, BK_PD, ED_DST, EID_EXC, ENTRY, EXIT, FN_BBASE,
                                              FN_EBASE, FN_ENTRY_B, FN_ENTRY_E, FN_NB, FN_NPATHS, FN_NY, FN_SBASE,
                                              FN_YBASE, FR_ACT, FR_EXC, FR_FID, FR_PC, FR_ST, F_CALL, F_SUSPEND,
                                              K_DIN, K_DOUT, K_REAL, PD_DST, PD_KIND, PD_REF, PD_VAL, S_AFTER_EXC,
                                              S_DONE, S_PENDING, S_RUN, _bad, _emit)
from wholetrace.kernels.decode_witness import _to_handler

_hot = kernel(nrt=False)
_inl = kernel(nrt=False, inline=True)


@_hot
def _path_walk(fn, blk, pdg, scratch, f, rem, stop):  # type: ignore[no-untyped-def]
    """The DAG edges (rows of ``pdg``) of the path from ENTRY whose Val sum is ``rem``, up to
    EXIT (``stop`` -1) or up to block ``stop`` with nothing left: their number, stored
    forwards in ``scratch[3 * cap:]``, or -1 if there is no such path."""
    bb = fn[f, FN_BBASE]
    cap = scratch.shape[0] // 4
    node = ENTRY
    n = 0
    for _ in range(fn[f, FN_NB] + 1):
        if node == EXIT or node == stop:
            break
        g = bb + node
        o = blk[g, BK_PD]
        k = blk[g, BK_NPD]
        if k == 0:
            return -1
        j = o
        for t in range(o + 1, o + k):
            if pdg[t, PD_VAL] > rem:
                break
            j = t
        rem -= pdg[j, PD_VAL]
        scratch[3 * cap + n] = j
        n += 1
        node = pdg[j, PD_DST]
    if rem != 0 or n == 0 or (stop >= 0 and node != stop) or (stop < 0 and node != EXIT):
        return -1
    return n


@_inl
def _path_chain(blk, pdg, bb, nb, pc):  # type: ignore[no-untyped-def]
    """Where the forced chain from block ``pc`` ends: the call block reached by uncut edges
    through blocks without calls, each with that one DAG out-edge (``pathnum.forced_chain_edges``:
    the cut into the call block was left out), or ``pc`` itself if there is no such chain."""
    v = pc
    for _ in range(nb):
        if v < 2 or (blk[bb + v, BK_FLAGS] & F_CALL) != 0 or blk[bb + v, BK_NPD] != 1:
            return pc
        j = blk[bb + v, BK_PD]
        if pdg[j, PD_KIND] != K_REAL:
            return pc
        v = pdg[j, PD_DST]
        if v >= 2 and (blk[bb + v, BK_FLAGS] & F_CALL) != 0:
            return v
    return pc


@_hot
def _path_to_call(fn, blk, edg, pdg, stack, meta, out, d):  # type: ignore[no-untyped-def]
    """A path frame about to get a child: emit its forced chain to the call block the child
    runs in, if it stands at the start of one (else the child belongs where it stands)."""
    f = stack[d, FR_FID]
    bb = fn[f, FN_BBASE]
    pc = stack[d, FR_PC]
    c = _path_chain(blk, pdg, bb, fn[f, FN_NB], pc)
    if c == pc:
        return
    eb = fn[f, FN_EBASE]
    act = stack[d, FR_ACT]
    for _ in range(fn[f, FN_NB]):
        if pc == c:
            break
        j = blk[bb + pc, BK_PD]
        e = pdg[j, PD_REF]
        dst = edg[eb + e, ED_DST]
        _emit(out, meta, act, f, pc, dst, e, -1)
        pc = dst
    stack[d, FR_PC] = pc


@_inl
def _path_start(blk, pdg, scratch, stack, d, bb, nb, n):  # type: ignore[no-untyped-def]
    """The block the walked path (``n`` DAG edges) starts at, if the frame stands there (or,
    resumed, may stand there: a ``yield`` block; or, moved to the call block at the end of the
    path's forced chain by a child, stands on the path), else -1."""
    cap = scratch.shape[0] // 4
    first = scratch[3 * cap]
    start = pdg[first, PD_DST]
    if pdg[first, PD_KIND] != K_REAL and pdg[first, PD_KIND] != K_DIN:
        return -1
    st = stack[d, FR_ST]
    if st == S_PENDING:
        if start < 2 or (blk[bb + start, BK_FLAGS] & F_SUSPEND) == 0:
            return -1
        return start
    pc = stack[d, FR_PC]
    if pc == start or (pc == ENTRY and pdg[first, PD_KIND] == K_REAL):
        return start
    if pc >= 2 and start >= 2 and _path_chain(blk, pdg, bb, nb, start) == pc:
        for i in range(1, n):
            if pdg[scratch[3 * cap + i], PD_DST] == pc:
                return start
    return -1


@_hot
def _path_emit(fn, edg, pdg, scratch, stack, meta, out, d, n):  # type: ignore[no-untyped-def]
    """Emit the walked path's edges from where the frame stands (its start block was emitted,
    unless the frame stands at ENTRY); the frame's pc becomes the path's last block, or the
    target of the cut that ends it."""
    f = stack[d, FR_FID]
    eb = fn[f, FN_EBASE]
    cap = scratch.shape[0] // 4
    act = stack[d, FR_ACT]
    pc = stack[d, FR_PC]
    first = scratch[3 * cap]
    ahead = False                                 # moved along the forced chain by a child
    if stack[d, FR_ST] == S_PENDING:
        pc = pdg[first, PD_DST]
    elif pc == ENTRY:                             # the edge out of ENTRY goes to EXIT: not emitted yet
        _emit(out, meta, act, f, ENTRY, pdg[first, PD_DST], pdg[first, PD_REF], -1)
        pc = pdg[first, PD_DST]
    else:
        ahead = pc != pdg[first, PD_DST]
    for i in range(1, n):
        j = scratch[3 * cap + i]
        kind = pdg[j, PD_KIND]
        if ahead:                                 # (emitted already, up to the frame's block)
            if pdg[j, PD_DST] == pc:
                ahead = False
            continue
        if kind == K_REAL or kind == K_DOUT:
            e = pdg[j, PD_REF]
            dst = edg[eb + e, ED_DST]
            _emit(out, meta, act, f, pc, dst, e, -1)
            pc = dst
    stack[d, FR_PC] = pc
    stack[d, FR_ST] = S_RUN


@_hot
def _path_event(fn, blk, edg, pdg, scratch, stack, meta, out, d, v):  # type: ignore[no-untyped-def]
    """A path record: ``p`` (ends at a cut) or ``LEAVE_PATH + p`` (ends at EXIT)."""
    f = stack[d, FR_FID]
    st = stack[d, FR_ST]
    if st != S_RUN and st != S_PENDING:
        return _bad(meta, BAD_LEFT, v, f)
    returns = v >= LEAVE_PATH
    pid = v - LEAVE_PATH if returns else v
    if pid >= fn[f, FN_NPATHS]:
        return _bad(meta, BAD_PATH, pid, f)
    n = _path_walk(fn, blk, pdg, scratch, f, pid, -1)
    if n < 0:
        return _bad(meta, BAD_PATH, pid, f)
    cap = scratch.shape[0] // 4
    last = scratch[3 * cap + n - 1]
    kind = pdg[last, PD_KIND]
    if (returns and kind != K_REAL) or (not returns and kind != K_DOUT):
        return _bad(meta, BAD_PATH, pid, f)
    if _path_start(blk, pdg, scratch, stack, d, fn[f, FN_BBASE], fn[f, FN_NB], n) < 0:
        return _bad(meta, BAD_START, pdg[scratch[3 * cap], PD_DST], f)
    _path_emit(fn, edg, pdg, scratch, stack, meta, out, d, n)
    if returns:
        stack[d, FR_ST] = S_DONE
    return 0


@_hot
def _path_truncated(fn, blk, pdg, scratch, stack, d, reg, b):  # type: ignore[no-untyped-def]
    """Walk the prefix register ``reg`` names up to block ``b`` (it must start where the frame
    stands): its number of DAG edges, or -1."""
    f = stack[d, FR_FID]
    bb = fn[f, FN_BBASE]
    if b < 2 or b >= fn[f, FN_NB]:
        return -1
    pid = reg + blk[bb + b, BK_COMP]
    if pid < 0 or pid >= fn[f, FN_NPATHS]:
        return -1
    n = _path_walk(fn, blk, pdg, scratch, f, pid, b)
    if n < 0 or _path_start(blk, pdg, scratch, stack, d, bb, fn[f, FN_NB], n) < 0:
        return -1
    return n


@_hot
def _path_exc(fn, blk, edg, stm, ysl, pdg, scratch, stack, meta, out, d, s, raised, reg, handler):  # type: ignore[no-untyped-def]
    """``EXC s r H`` (``raised`` = ``s``) or ``RERAISE s x r H`` (``raised`` = ``x``): the path
    register ``reg`` names up to the raising block (the block of ``raised``; else where the frame
    stands; else the first block a path through which ``reg`` names), then the exception edge."""
    f = stack[d, FR_FID]
    st = stack[d, FR_ST]
    bb = fn[f, FN_BBASE]
    if st == S_DONE:
        return _bad(meta, BAD_LEFT, s, f)
    if st == S_AFTER_EXC:
        _emit(out, meta, stack[d, FR_ACT], f, stack[d, FR_PC], -1, EID_EXC, stack[d, FR_EXC])
        stack[d, FR_ST] = S_RUN
        st = S_RUN
    q = raised if raised >= 0 else s
    b = stm[fn[f, FN_SBASE] + q] if q >= 0 else -1
    if reg != LEAVE and reg > NO_PATH:      # a register (negative too: Inc < 0), not "no path open"
        n = _path_truncated(fn, blk, pdg, scratch, stack, d, reg, b)
        if n < 0 and st == S_RUN:
            n = _path_truncated(fn, blk, pdg, scratch, stack, d, reg, stack[d, FR_PC])
        for c in range(2, fn[f, FN_NB]):
            if n >= 0:
                break
            n = _path_truncated(fn, blk, pdg, scratch, stack, d, reg, c)
        if n >= 0:
            _path_emit(fn, edg, pdg, scratch, stack, meta, out, d, n)
        elif handler >= 0:
            return _bad(meta, BAD_REGISTER, reg, f)
        # else: an exit without handler whose register names no path from here: a closing
        # record (``runtime.unfinished``) of a frame stopped between a cut's record and its
        # reset; the exception edge leaves from where the frame stands
    elif st == S_PENDING:                       # thrown in at a yield, no path open
        if b < 0 or (blk[bb + b, BK_FLAGS] & F_SUSPEND) == 0:
            if fn[f, FN_NY] != 1:
                return _bad(meta, BAD_RESUME, s, f)
            b = ysl[fn[f, FN_YBASE]]
        stack[d, FR_PC] = b
        stack[d, FR_ST] = S_RUN
    return _to_handler(fn, blk, stack, meta, out, d, stack[d, FR_PC], s, handler)


@_inl
def _path_entry(fn, stack, meta, out, d):  # type: ignore[no-untyped-def]
    """An activation of a path function starts at ENTRY: the edge out of it, unless it goes
    straight to EXIT (then the path record that returns emits it)."""
    f = stack[d, FR_FID]
    b = fn[f, FN_ENTRY_B]
    stack[d, FR_ST] = S_RUN
    if b >= 2:
        _emit(out, meta, stack[d, FR_ACT], f, ENTRY, b, fn[f, FN_ENTRY_E], -1)
        stack[d, FR_PC] = b
    else:
        stack[d, FR_PC] = ENTRY
