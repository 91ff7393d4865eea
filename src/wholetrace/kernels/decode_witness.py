"""The decoding kernel's witness mode: the blocks between two witnesses, implicit calls, exceptions (Ball & Larus, TOPLAS 1994, section 4)."""

# Split from ``kernels.decode`` (wave 17), whose header describes the walk, its input and
# its output; ``kernels.decode`` re-exports every name and keys the numba cache of all its parts
# on all of them (``_jit.cache_depends``).

from __future__ import annotations

from wholetrace.kernels._jit import kernel
from wholetrace.kernels.decode_layout import (BAD_CHOICE, BAD_CYCLE, BAD_HANDLER, BAD_LEAVE, BAD_LEFT, BAD_MISMATCH,
                                              BAD_RESUME, BAD_WITNESS, BK_FLAGS, BK_NSUCC, BK_SUCC, ED_DST, ED_SRC,
                                              ED_WIT, EID_EXC, ENTRY, EOF, EXIT, FN_BBASE, FN_EBASE, FN_NB, FN_NW,
                                              FN_NY, FN_SBASE, FN_WBASE, FN_YBASE, FR_ACT, FR_EXC, FR_FID, FR_HOLD,
                                              FR_PC, FR_ST, F_CALL, F_DYN, F_REACH, F_SUSPEND, M_HPOS,
                                              SC_DST, SC_EID, S_AFTER_EXC, S_DONE, S_PENDING, S_RUN, _bad, _choice,
                                              _emit)

_hot = kernel(nrt=False)
_inl = kernel(nrt=False, inline=True)


@_inl
def _route(fn, blk, succ, edg, chs, stack, meta, out, d, w):  # type: ignore[no-untyped-def]
    """Figure 7's step: the blocks witness ``w`` proves, from the frame's pc to its edge's target."""
    f = stack[d, FR_FID]
    bb = fn[f, FN_BBASE]
    eb = fn[f, FN_EBASE]
    pc = stack[d, FR_PC]
    act = stack[d, FR_ACT]
    for _ in range(fn[f, FN_NB] + 1):
        g = bb + pc
        n = blk[g, BK_NSUCC]
        if n == 1:
            e = succ[blk[g, BK_SUCC], SC_EID]
        else:
            e = _choice(blk, chs, g, w)
            if e < 0:
                return _bad(meta, BAD_CHOICE, w, pc)
        own = edg[eb + e, ED_WIT]
        if own >= 0 and own != w:
            return _bad(meta, BAD_MISMATCH, w, own)
        dst = edg[eb + e, ED_DST]
        _emit(out, meta, act, f, pc, dst, e, -1)
        pc = dst
        stack[d, FR_PC] = pc
        if own >= 0:
            if pc == EXIT:
                stack[d, FR_ST] = S_DONE
            return 0
    return _bad(meta, BAD_CYCLE, w, f)


@_inl
def _chain_next(fn, blk, succ, edg, f, pc):  # type: ignore[no-untyped-def]
    """The successor slot of the certain, witness-free edge out of block ``pc`` of function
    ``f``, or -1 where such a chain stops: a call block, a branch, a witnessed edge, or an
    edge into a block that never runs."""
    g = fn[f, FN_BBASE] + pc
    if (blk[g, BK_FLAGS] & F_CALL) != 0 or blk[g, BK_NSUCC] != 1:
        return -1
    k = blk[g, BK_SUCC]
    if (edg[fn[f, FN_EBASE] + succ[k, SC_EID], ED_WIT] >= 0
            or (blk[fn[f, FN_BBASE] + succ[k, SC_DST], BK_FLAGS] & F_REACH) == 0):
        return -1
    return k


@_inl
def _to_call(fn, blk, succ, edg, stack, meta, out, d):  # type: ignore[no-untyped-def]
    """Advance a frame along its certain witness-free chain to its next call block."""
    f = stack[d, FR_FID]
    pc = stack[d, FR_PC]
    for _ in range(fn[f, FN_NB] + 1):
        k = _chain_next(fn, blk, succ, edg, f, pc)
        if k < 0:
            break
        nxt = succ[k, SC_DST]
        _emit(out, meta, stack[d, FR_ACT], f, pc, nxt, succ[k, SC_EID], -1)
        pc = nxt
    stack[d, FR_PC] = pc


@_inl
def _witness_leave(fn, blk, succ, edg, chs, stack, meta, out, d):  # type: ignore[no-untyped-def]
    """LEAVE: the witness-free way from pc to EXIT (a return) or to a yield block (a suspension)."""
    f = stack[d, FR_FID]
    bb = fn[f, FN_BBASE]
    eb = fn[f, FN_EBASE]
    pc = stack[d, FR_PC]
    for _ in range(fn[f, FN_NB] + 1):
        g = bb + pc
        if pc == EXIT or (blk[g, BK_FLAGS] & F_SUSPEND) != 0:
            return 0
        e = -1
        if blk[g, BK_NSUCC] == 1:
            e = succ[blk[g, BK_SUCC], SC_EID]
            if edg[eb + e, ED_WIT] >= 0:
                e = -1
        if e < 0:
            e = _choice(blk, chs, g, EOF)
            if e < 0 or edg[eb + e, ED_WIT] >= 0:
                return _bad(meta, BAD_LEAVE, pc, f)
        dst = edg[eb + e, ED_DST]
        _emit(out, meta, stack[d, FR_ACT], f, pc, dst, e, -1)
        pc = dst
        stack[d, FR_PC] = pc
    return _bad(meta, BAD_CYCLE, pc, f)


@_hot
def _find_path(fn, blk, succ, edg, scratch, meta, f, pc, r):  # type: ignore[no-untyped-def]
    """The witness-free path from block ``pc`` to block ``r`` of function ``f`` (breadth
    first): its number of edges, stored backwards in ``scratch[3 * cap:]``, or -1 if there is
    none."""
    if pc == r:
        return 0
    bb = fn[f, FN_BBASE]
    eb = fn[f, FN_EBASE]
    cap = scratch.shape[0] // 4
    # the search's mark: one counter for every decoder sharing ``scratch`` (its last slot); a
    # decoder's own counter restarted at 0 and met another decoder's stale marks (review23b HIGH-1)
    epoch = scratch[4 * cap] + 1
    scratch[4 * cap] = epoch
    head, tail = 0, 1
    scratch[0] = pc
    scratch[cap + pc] = epoch
    while head < tail and scratch[cap + r] != epoch:
        u = scratch[head]
        head += 1
        o = blk[bb + u, BK_SUCC]
        for k in range(o, o + blk[bb + u, BK_NSUCC]):
            x = succ[k, SC_DST]
            if edg[eb + succ[k, SC_EID], ED_WIT] < 0 and scratch[cap + x] != epoch:
                scratch[cap + x] = epoch
                scratch[2 * cap + x] = succ[k, SC_EID]
                scratch[tail] = x
                tail += 1
    if scratch[cap + r] != epoch:
        return -1
    n = 0
    v = r
    while v != pc:
        if n == cap:                 # (a path visits each block once: damaged tables, not a path)
            return -1
        e = scratch[2 * cap + v]
        scratch[3 * cap + n] = e
        n += 1
        v = edg[eb + e, ED_SRC]
    return n


@_inl
def _emit_path(fn, edg, scratch, stack, meta, out, d, n):  # type: ignore[no-untyped-def]
    """Emit the ``n`` edges :func:`_find_path` stored, forwards; the frame's pc becomes their end."""
    f = stack[d, FR_FID]
    eb = fn[f, FN_EBASE]
    cap = scratch.shape[0] // 4
    act = stack[d, FR_ACT]
    for i in range(n - 1, -1, -1):
        e = scratch[3 * cap + i]
        _emit(out, meta, act, f, edg[eb + e, ED_SRC], edg[eb + e, ED_DST], e, -1)
        stack[d, FR_PC] = edg[eb + e, ED_DST]


@_hot
def _raise_at(fn, blk, succ, edg, stm, scratch, stack, meta, out, d, raised):  # type: ignore[no-untyped-def]
    """Emit the witness-free path from the frame's pc to the raising block (the block of
    statement ``raised`` if a witness-free path leads there, the pc itself included, else the
    pc); returns that block."""
    f = stack[d, FR_FID]
    pc = stack[d, FR_PC]
    b = stm[fn[f, FN_SBASE] + raised] if raised >= 0 else -1
    if b >= 0:
        n = _find_path(fn, blk, succ, edg, scratch, meta, f, pc, b)
        if n >= 0:
            _emit_path(fn, edg, scratch, stack, meta, out, d, n)
            return b
    return pc


@_hot
def _chain_end(fn, blk, succ, edg, f, pc):  # type: ignore[no-untyped-def]
    """Where :func:`_to_call` would stop, without emitting."""
    for _ in range(fn[f, FN_NB] + 1):
        k = _chain_next(fn, blk, succ, edg, f, pc)
        if k < 0:
            break
        pc = succ[k, SC_DST]
    return pc


@_inl
def _held(hkey, hval, meta, act):  # type: ignore[no-untyped-def]
    """The statement that raised the exception ending the group of children that activation
    ``act`` starts, or -1 (``act`` never decreases between calls)."""
    p = meta[M_HPOS]
    while p < hkey.shape[0] and hkey[p] < act:
        p += 1
    meta[M_HPOS] = p
    if p < hkey.shape[0] and hkey[p] == act:
        return hval[p]
    return -1


@_hot
def _before_child(fn, blk, succ, edg, stm, scratch, hkey, hval, stack, meta, out, d, act):  # type: ignore[no-untyped-def]
    """A witness frame about to get child ``act``: the certain chain to its next call block,
    or (an exception of this frame ends the group, raised before that call block) the path
    to the raising block, where the frame then holds."""
    raised = _held(hkey, hval, meta, act)
    if raised >= 0:
        f = stack[d, FR_FID]
        pc = stack[d, FR_PC]
        c = _chain_end(fn, blk, succ, edg, f, pc)
        b = stm[fn[f, FN_SBASE] + raised]
        if c != pc and b >= 0:
            n = _find_path(fn, blk, succ, edg, scratch, meta, f, pc, b)
            if n >= 0:
                cap = scratch.shape[0] // 4
                eb = fn[f, FN_EBASE]
                through = False
                for i in range(n):
                    if edg[eb + scratch[3 * cap + i], ED_DST] == c:
                        through = True
                        break
                if not through:
                    _emit_path(fn, edg, scratch, stack, meta, out, d, n)
                    stack[d, FR_HOLD] = 1
                    return
    _to_call(fn, blk, succ, edg, stack, meta, out, d)


@_inl
def _to_handler(fn, blk, stack, meta, out, d, src, s, handler):  # type: ignore[no-untyped-def]
    """The exception edge from block ``src`` (statement ``s``) into ``handler``; -1: none
    recorded, the exception leaves the activation (the edge to EXIT is emitted at LEAVE)."""
    f = stack[d, FR_FID]
    stack[d, FR_EXC] = s
    if handler < 0:
        stack[d, FR_ST] = S_AFTER_EXC
        return 0
    if handler < 2 or handler >= fn[f, FN_NB] or (blk[fn[f, FN_BBASE] + handler, BK_FLAGS] & F_DYN) == 0:
        return _bad(meta, BAD_HANDLER, handler, f)
    _emit(out, meta, stack[d, FR_ACT], f, src, handler, EID_EXC, s)
    stack[d, FR_PC] = handler
    stack[d, FR_ST] = S_RUN
    return 0


@_hot
def _witness_exc(fn, blk, succ, edg, stm, ysl, scratch, stack, meta, out, d, s, raised, handler):  # type: ignore[no-untyped-def]
    """``EXC s H`` (``raised`` = ``s``) or ``RERAISE s r H`` (``raised`` = ``r``); ``handler``
    -1: no handler recorded, the exception leaves the activation."""
    f = stack[d, FR_FID]
    st = stack[d, FR_ST]
    bb = fn[f, FN_BBASE]
    stack[d, FR_HOLD] = 0
    if st == S_PENDING:                         # thrown in at a yield of a suspended generator
        q = raised if raised >= 0 else s
        y = stm[fn[f, FN_SBASE] + q] if q >= 0 else -1
        if y < 0 or (blk[bb + y, BK_FLAGS] & F_SUSPEND) == 0:
            if fn[f, FN_NY] != 1:
                return _bad(meta, BAD_RESUME, s, f)
            y = ysl[fn[f, FN_YBASE]]
        stack[d, FR_PC] = y
    elif st == S_DONE:
        return _bad(meta, BAD_LEFT, s, f)
    elif st == S_AFTER_EXC:
        _emit(out, meta, stack[d, FR_ACT], f, stack[d, FR_PC], -1, EID_EXC, stack[d, FR_EXC])
    r = _raise_at(fn, blk, succ, edg, stm, scratch, stack, meta, out, d, raised)
    return _to_handler(fn, blk, stack, meta, out, d, r, s, handler)


@_inl
def _witness_event(fn, blk, succ, edg, wit, chs, stack, meta, out, d, w):  # type: ignore[no-untyped-def]
    f = stack[d, FR_FID]
    if w >= fn[f, FN_NW]:
        return _bad(meta, BAD_WITNESS, w, f)
    st = stack[d, FR_ST]
    if st == S_PENDING:                         # a generator's first witness: start or resumption
        src = edg[fn[f, FN_EBASE] + wit[fn[f, FN_WBASE] + w], ED_SRC]
        if src != ENTRY and (blk[fn[f, FN_BBASE] + src, BK_FLAGS] & F_SUSPEND) == 0:
            return _bad(meta, BAD_RESUME, w, f)
        stack[d, FR_PC] = src
        stack[d, FR_ST] = S_RUN
    elif st != S_RUN:
        return _bad(meta, BAD_LEFT, w, f)
    stack[d, FR_HOLD] = 0
    return _route(fn, blk, succ, edg, chs, stack, meta, out, d, w)
