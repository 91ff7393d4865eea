"""Numba kernel decoding event streams of every trace mode into rows, one per edge taken.

Input: int32 chunks of one stream (``wholetrace.events``: ``B k`` k >= 0, LEAVE, ``EXC s``,
``RERAISE s r``, ``ENTER f``).  What a non-negative event means depends on the running function's *mode*
(``fn[f, FN_MODE]``): a block id (``blocks``, and functions a reduced recording recorded
with block ids), or a witness id (``witness``/``branches``, Ball & Larus, "Optimally
Profiling and Tracing Programs", TOPLAS 16(4), 1994, section 4: the blocks between two
witnesses are the unique witness-free path their witness sets choose).  After ``EXC s`` (or
``RERAISE s r``: ``r`` the re-raise site that raised) a witness-mode function records its
handler's block id; the exception leaves the block of the statement that raised (``r``, else
``s``).

Implicit calls before an exception (``regen.driver``, "ENTER"): at a child's ENTER a witness
frame advances along its certain chain to its next call block, unless the first pass over the
stream (``trace.lookahead``, given as the sorted activation numbers ``hkey`` of the first
children of such groups and the statements ``hval`` that raised) says that an exception
record of the parent ends this group of children and its raising block lies before that
call block: the frame then stops at the raising block and holds there (``FR_HOLD``) until
its next own event.

Path mode (``path`` recordings, ``FN_MODE`` 2; Ball & Larus, "Efficient Path Profiling",
MICRO-29, 1996, and Larus, "Whole Program Paths", PLDI 1999): a non-negative event is a path
id ``p`` ended at a cut edge, or ``LEAVE_PATH + p`` ended at EXIT (the activation returns).
Decoding walks the numbering's DAG (``pdg``: out-edges of each node by increasing Val) from
ENTRY, taking at each node the out-edge with the largest Val not above what remains of the
id.  Blocks are emitted eagerly: ENTER (or START for a generator) emits the entry edge, a cut
emits the cut edge (its target, a call block or loop header, runs next, so children that
follow belong to it), an exception record ``EXC s r [H]`` emits the path the register ``r``
names up to the raising block (``r`` plus the Val-0 completion of that block is a full id
whose walk passes the block with nothing left), then the exception edge.  A resumed
generator (ENTER without START) stands nowhere until its next path, which starts at the
``yield`` block it suspended in (already emitted).  Forced chains (``pathnum.forced_chain_edges``:
blocks that cannot call, one uncut DAG edge each, into a call block whose cut was left out) are
emitted when a child starts (``_path_to_call``): the frame then stands on its path, ahead of
where the path began, and the path's record emits only the edges after it.  Old numberings have
no uncut edge into a call block but out of ENTRY, so nothing moves for them.

Output: rows in the columns of ``out`` (int64, shape (6, capacity)), in stream order:
``R_ACT`` activation (numbered from 0 in ENTER order), ``R_FID``, ``R_SRC``, ``R_DST``
(local blocks; ENTRY 0, EXIT 1), ``R_EID`` (static edge id, or EID_EXC for an exception
edge, EID_ENTER / EID_LEAVE for an activation's start and end) and ``R_AUX`` (the origin
statement of an exception edge, the parent activation of ENTER/LEAVE rows).  An exception
edge whose target is not known yet when the stream ends has ``R_DST`` -1.

Invariant: the rows are a pure function of the events read so far and of the tables, and
the same whatever the chunking; all state lives in ``stack``, ``meta`` and ``pool``, so a
stream can be fed chunk by chunk (offline, or online by the recorder's flusher).  Every id
read from the stream is checked against the tables: a malformed stream stops with ST_BAD
(``meta[M_BAD]`` says why, ``pos`` is the bad event), never with an out-of-range access.

Growth by status, as in ``kernels.sequitur``: ST_NEED_OUT (the caller takes the rows and
resets ``meta[M_NOUT]``), ST_NEED_STACK (a deeper stack), ST_NEED_FUNC (the tables of
function ``meta[M_ARG]`` are not loaded yet).  The event at ``pos`` is then read again.
"""

from __future__ import annotations

import numpy as np

from wholetrace.events import ENTER_BASE, EXC, LEAVE, LEAVE_PATH, NO_PATH, RERAISE, START
from wholetrace.kernels._jit import cache_depends, kernel

_hot = kernel(nrt=False)
_inl = kernel(nrt=False, inline=True)

# ---------------------------------------------------------------- table layouts (trace/tables.py)
# fn: int64 (functions, FN_W)
FN_READY, FN_BBASE, FN_NB, FN_SBASE, FN_NS, FN_EBASE, FN_NE, FN_WBASE, FN_NW = 0, 1, 2, 3, 4, 5, 6, 7, 8
FN_GEN, FN_MODE, FN_YBASE, FN_NY = 9, 10, 11, 12
FN_NPATHS, FN_ENTRY_E, FN_ENTRY_B = 13, 14, 15   # path mode: paths, the edge out of ENTRY and its target
FN_W = 16
# blk: int32 (blocks of all functions, BK_W), row bbase[f] + b
BK_FLAGS, BK_SUCC, BK_NSUCC, BK_CH, BK_NCH = 0, 1, 2, 3, 4
BK_PD, BK_NPD, BK_COMP = 5, 6, 7   # path mode: DAG out-edges (rows of pdg), Val-0 completion's Inc sum
BK_W = 8
F_DYN, F_SUSPEND, F_CALL, F_REACH = 1, 2, 4, 16
# succ: int32 (K, 2) successors of each block in edge-id order; edg: int32 (edges, ED_W)
SC_DST, SC_EID = 0, 1
ED_SRC, ED_DST, ED_WIT = 0, 1, 2
ED_W = 3
# chs: int32 (K, 2) witness choices of branching blocks: witness (or EOF) -> out-edge
CH_W, CH_EID = 0, 1
EOF = -1
# pdg: int64 (DAG edges of path functions, PD_W), each node's out-edges by increasing Val
PD_DST, PD_KIND, PD_REF, PD_VAL = 0, 1, 2, 3
PD_W = 4
#: DAG edge kinds (``instrument.modes.DAG_KINDS``): a CFG edge not cut (``PD_REF`` its id), a
#: path start at block ``PD_REF``, a cut edge ``PD_REF`` ending a path, a block without successors
K_REAL, K_DIN, K_DOUT, K_DEAD = 0, 1, 2, 3
MODE_BLOCKS, MODE_WITNESS, MODE_PATH = 0, 1, 2
ENTRY, EXIT = 0, 1

# ---------------------------------------------------------------- state
FR_FID, FR_PC, FR_ACT, FR_ST, FR_EXC, FR_CHILD, FR_HOLD = 0, 1, 2, 3, 4, 5, 6
FR_W = 7
#: frame states: running; started, no block seen yet (blocks mode); generator whose resume
#: point is not known yet (witness mode); exception recorded, target not yet; reached EXIT
S_RUN, S_FRESH, S_PENDING, S_AFTER_EXC, S_DONE = 0, 1, 2, 3, 4
(M_DEPTH, M_NEXT_ACT, M_PEND, M_PEND_S, M_NOUT, M_MARGIN, M_EPOCH, M_BAD, M_ARG, M_ARG2,
 M_PEND_R, M_HPOS, M_REG) = range(13)
META_SIZE = 13
#: ``meta[M_PEND]``: after EXC (its statement next); a witness frame's record read, its handler
#: next; after RERAISE (its statement next); after RERAISE s (the re-raise site next).
P_EXC, P_HANDLER, P_RERAISE, P_SITE, P_REGISTER = 1, 2, 3, 4, 5   # (path mode: the register next)

# ---------------------------------------------------------------- rows and statuses
R_ACT, R_FID, R_SRC, R_DST, R_EID, R_AUX = 0, 1, 2, 3, 4, 5
ROW_W = 6
EID_EXC, EID_ENTER, EID_LEAVE = -1, -2, -3
ST_DONE, ST_NEED_OUT, ST_NEED_STACK, ST_NEED_FUNC, ST_BAD = 0, 1, 2, 3, 4
(BAD_CODE, BAD_FUNC, BAD_OUTSIDE, BAD_BLOCK, BAD_STMT, BAD_WITNESS, BAD_EDGE, BAD_START,
 BAD_HANDLER, BAD_LEAVE, BAD_CHOICE, BAD_MISMATCH, BAD_LEFT, BAD_RESUME, BAD_CYCLE, BAD_PATH,
 BAD_REGISTER) = range(1, 18)


@_inl
def _emit(out, meta, act, fid, src, dst, eid, aux):  # type: ignore[no-untyped-def]
    k = meta[M_NOUT]
    out[R_ACT, k] = act
    out[R_FID, k] = fid
    out[R_SRC, k] = src
    out[R_DST, k] = dst
    out[R_EID, k] = eid
    out[R_AUX, k] = aux
    meta[M_NOUT] = k + 1


@_inl
def _bad(meta, why, arg, arg2):  # type: ignore[no-untyped-def]
    meta[M_BAD] = why
    meta[M_ARG] = arg
    meta[M_ARG2] = arg2
    return why


@_inl
def _edge(blk, succ, g, v):  # type: ignore[no-untyped-def]
    """The static edge id from block row ``g`` to local block ``v``, or -1."""
    o = blk[g, BK_SUCC]
    for k in range(o, o + blk[g, BK_NSUCC]):
        if succ[k, SC_DST] == v:
            return succ[k, SC_EID]
    return -1


@_inl
def _choice(blk, chs, g, w):  # type: ignore[no-untyped-def]
    """The out-edge of branching block row ``g`` whose witness set holds ``w``, or -1."""
    o = blk[g, BK_CH]
    for k in range(o, o + blk[g, BK_NCH]):
        if chs[k, CH_W] == w:
            return chs[k, CH_EID]
    return -1


@_inl
def _parent_act(stack, d):  # type: ignore[no-untyped-def]
    return stack[d - 1, FR_ACT] if d > 0 else -1


# ---------------------------------------------------------------- blocks mode

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


# ---------------------------------------------------------------- witness mode

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
    epoch = meta[M_EPOCH] + 1
    meta[M_EPOCH] = epoch
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


# ---------------------------------------------------------------- path mode

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


# ---------------------------------------------------------------- the walk

@_hot
def decode(ev, pos, fn, blk, succ, stm, edg, wit, chs, ysl, pool, pdg, stack, meta, scratch, hkey, hval, out):  # type: ignore[no-untyped-def]
    """Decode ``ev[pos:]`` into ``out``; returns (position reached, status)."""
    n = ev.shape[0]
    cap = out.shape[1]
    nf = fn.shape[0]
    while pos < n:
        if meta[M_NOUT] + meta[M_MARGIN] > cap:
            return pos, ST_NEED_OUT
        v = np.int64(ev[pos])
        depth = meta[M_DEPTH]
        d = depth - 1
        why = 0
        pend = meta[M_PEND]
        if pend == P_EXC or pend == P_RERAISE or pend == P_SITE:   # a statement of the record
            f = stack[d, FR_FID]
            if v < -1 or v >= fn[f, FN_NS]:
                _bad(meta, BAD_STMT, v, f)
                return pos, ST_BAD
            pos += 1
            if pend == P_RERAISE:
                meta[M_PEND] = P_SITE
                meta[M_PEND_S] = v
                continue
            if pend == P_EXC:
                meta[M_PEND_S] = v
            if fn[f, FN_MODE] == MODE_WITNESS:
                meta[M_PEND] = P_HANDLER
                meta[M_PEND_R] = v
            elif fn[f, FN_MODE] == MODE_PATH:
                meta[M_PEND] = P_REGISTER
                meta[M_PEND_R] = v
            else:                                   # block ids: the last block is known
                meta[M_PEND] = 0
                _block_exc(fn, blk, stm, pool, stack, meta, out, d, meta[M_PEND_S])
            continue
        if pend == P_REGISTER:                  # path mode: the register after the statements
            meta[M_REG] = v
            meta[M_PEND] = P_HANDLER
            pos += 1
            continue
        if pend == P_HANDLER:                   # the handler after the record, if it was caught
            meta[M_PEND] = 0
            if fn[stack[d, FR_FID], FN_MODE] == MODE_PATH:
                why = _path_exc(fn, blk, edg, stm, ysl, pdg, scratch, stack, meta, out, d,
                                meta[M_PEND_S], meta[M_PEND_R], meta[M_REG], v if v >= 0 else -1)
            else:
                why = _witness_exc(fn, blk, succ, edg, stm, ysl, scratch, stack, meta, out, d,
                                   meta[M_PEND_S], meta[M_PEND_R], v if v >= 0 else -1)
            if why != 0:
                return pos, ST_BAD
            if v >= 0:
                pos += 1
                continue
        if v >= 0:
            if depth == 0:
                _bad(meta, BAD_OUTSIDE, v, 0)
                return pos, ST_BAD
            m = fn[stack[d, FR_FID], FN_MODE]
            if m == MODE_PATH:
                why = _path_event(fn, blk, edg, pdg, scratch, stack, meta, out, d, v)
                if why == 0 and v >= LEAVE_PATH:
                    _emit(out, meta, stack[d, FR_ACT], stack[d, FR_FID], EXIT, -1, EID_LEAVE, _parent_act(stack, d))
                    meta[M_DEPTH] = d
            elif m == MODE_WITNESS:
                why = _witness_event(fn, blk, succ, edg, wit, chs, stack, meta, out, d, v)
            else:
                why = _block_event(fn, blk, succ, ysl, pool, stack, meta, out, d, v)
        elif v == LEAVE:
            if depth == 0:
                _bad(meta, BAD_OUTSIDE, v, 0)
                return pos, ST_BAD
            f = stack[d, FR_FID]
            if fn[f, FN_MODE] == MODE_PATH:          # a suspension, or the end of an exception
                if stack[d, FR_ST] == S_AFTER_EXC:
                    _emit(out, meta, stack[d, FR_ACT], f, stack[d, FR_PC], EXIT, EID_EXC, stack[d, FR_EXC])
                    stack[d, FR_PC] = EXIT
                elif fn[f, FN_GEN] == 0 or stack[d, FR_ST] == S_DONE:
                    why = _bad(meta, BAD_LEAVE, stack[d, FR_PC], f)
            elif fn[f, FN_MODE] != MODE_WITNESS:
                why = _block_leave(fn, blk, succ, ysl, pool, stack, meta, out, d)
            elif stack[d, FR_ST] == S_RUN:
                why = _witness_leave(fn, blk, succ, edg, chs, stack, meta, out, d)
            elif stack[d, FR_ST] == S_AFTER_EXC:
                _emit(out, meta, stack[d, FR_ACT], f, stack[d, FR_PC], EXIT, EID_EXC, stack[d, FR_EXC])
            if why == 0:
                _emit(out, meta, stack[d, FR_ACT], f, stack[d, FR_PC], -1, EID_LEAVE, _parent_act(stack, d))
                meta[M_DEPTH] = d
        elif v == START:
            if depth == 0:
                _bad(meta, BAD_OUTSIDE, v, 0)
                return pos, ST_BAD
            f = stack[d, FR_FID]
            if fn[f, FN_MODE] != MODE_PATH or fn[f, FN_GEN] == 0 or stack[d, FR_ST] != S_PENDING:
                _bad(meta, BAD_CODE, v, 0)
                return pos, ST_BAD
            _path_entry(fn, stack, meta, out, d)
        elif v == EXC or v == RERAISE:
            if depth == 0:
                _bad(meta, BAD_OUTSIDE, v, 0)
                return pos, ST_BAD
            meta[M_PEND] = P_EXC if v == EXC else P_RERAISE
        elif v <= -ENTER_BASE:
            f = -v - ENTER_BASE
            if f >= nf or fn[f, FN_READY] < 0:
                _bad(meta, BAD_FUNC, f, 0)
                return pos, ST_BAD
            if fn[f, FN_READY] == 0:
                meta[M_ARG] = f
                return pos, ST_NEED_FUNC
            if depth >= stack.shape[0]:
                return pos, ST_NEED_STACK
            parent = -1
            if depth > 0:
                stack[d, FR_CHILD] = 1
                parent = stack[d, FR_ACT]
            act = meta[M_NEXT_ACT]
            if depth > 0 and fn[stack[d, FR_FID], FN_MODE] == MODE_PATH and stack[d, FR_ST] == S_RUN:
                _path_to_call(fn, blk, edg, pdg, stack, meta, out, d)
            elif depth > 0 and (fn[stack[d, FR_FID], FN_MODE] == MODE_WITNESS and stack[d, FR_ST] == S_RUN
                                and stack[d, FR_HOLD] == 0):
                p = meta[M_HPOS]
                if p >= hkey.shape[0] or hkey[p] > act:    # no group held from here (most calls)
                    _to_call(fn, blk, succ, edg, stack, meta, out, d)
                else:
                    _before_child(fn, blk, succ, edg, stm, scratch, hkey, hval, stack, meta, out, d, act)
            meta[M_NEXT_ACT] = act + 1
            stack[depth, FR_FID] = f
            stack[depth, FR_PC] = ENTRY
            stack[depth, FR_ACT] = act
            if fn[f, FN_MODE] == MODE_WITNESS or fn[f, FN_MODE] == MODE_PATH:
                stack[depth, FR_ST] = S_PENDING if fn[f, FN_GEN] != 0 else S_RUN
            else:
                stack[depth, FR_ST] = S_FRESH
            stack[depth, FR_EXC] = -1
            stack[depth, FR_CHILD] = 0
            stack[depth, FR_HOLD] = 0
            meta[M_DEPTH] = depth + 1
            _emit(out, meta, act, f, -1, -1, EID_ENTER, parent)
            if fn[f, FN_MODE] == MODE_PATH and fn[f, FN_GEN] == 0:
                _path_entry(fn, stack, meta, out, depth)
        else:
            _bad(meta, BAD_CODE, v, 0)
            return pos, ST_BAD
        if why != 0:
            return pos, ST_BAD
        pos += 1
    return pos, ST_DONE


@_hot
def finish(fn, blk, succ, edg, stm, ysl, pool, pdg, stack, meta, scratch, out):  # type: ignore[no-untyped-def]
    """The stream ended: settle a half-read ``EXC`` and emit the exception edges still
    waiting for their target (``R_DST`` -1), oldest first.  Frames stay open (unfinished
    activations).  Needs room for ``meta[M_MARGIN]`` rows plus one per open frame."""
    depth = meta[M_DEPTH]
    pend = meta[M_PEND]
    meta[M_PEND] = 0
    if pend == P_EXC or pend == P_RERAISE:      # a record without its statement
        _block_exc(fn, blk, stm, pool, stack, meta, out, depth - 1, -1)
    elif pend == P_SITE or pend == P_HANDLER or pend == P_REGISTER:   # (a re-raise site unknown: -1)
        f = stack[depth - 1, FR_FID]
        if fn[f, FN_MODE] == MODE_PATH:
            reg = meta[M_REG] if pend == P_HANDLER else -1
            if _path_exc(fn, blk, edg, stm, ysl, pdg, scratch, stack, meta, out, depth - 1, meta[M_PEND_S],
                         meta[M_PEND_R] if pend != P_SITE else -1, reg, -1) != 0:
                return ST_BAD
        elif fn[f, FN_MODE] != MODE_WITNESS:
            _block_exc(fn, blk, stm, pool, stack, meta, out, depth - 1, meta[M_PEND_S])
        elif _witness_exc(fn, blk, succ, edg, stm, ysl, scratch, stack, meta, out, depth - 1,
                          meta[M_PEND_S], meta[M_PEND_R] if pend == P_HANDLER else -1, -1) != 0:
            return ST_BAD
    for d in range(depth):
        if stack[d, FR_ST] == S_AFTER_EXC:
            _emit(out, meta, stack[d, FR_ACT], stack[d, FR_FID], stack[d, FR_PC], -1, EID_EXC,
                  stack[d, FR_EXC])
            stack[d, FR_ST] = S_RUN
    return ST_DONE


@_hot
def tally(out, n, fn, stm, block, edge, cut, enters):  # type: ignore[no-untyped-def]
    """Add the first ``n`` rows of ``out`` into per-block, per-edge, per-statement (exceptions
    started there, cutting their block short) and per-function (ENTER) histograms, indexed
    like the tables' rows."""
    for k in range(n):
        eid = out[R_EID, k]
        f = out[R_FID, k]
        if eid >= 0:
            edge[fn[f, FN_EBASE] + eid] += 1
        elif eid == EID_ENTER:
            enters[f] += 1
            continue
        elif eid != EID_EXC:
            continue
        else:
            s = out[R_AUX, k]
            if s >= 0:
                row = fn[f, FN_SBASE] + s
                if stm[row] == out[R_SRC, k]:
                    cut[row] += 1
        dst = out[R_DST, k]
        if dst >= 2:
            block[fn[f, FN_BBASE] + dst] += 1


@_hot
def count(ev, pos, fn, blk, succ, stm, edg, wit, chs, ysl, pool, pdg, stack, meta, scratch, hkey, hval, out,  # type: ignore[no-untyped-def]
          block, edge, cut, enters):
    """:func:`decode` then :func:`tally` in one call, for counting alone: each time the row
    buffer fills its rows are added into the histograms and the buffer is reused, so the
    rows stay in cache and are never handed out.  Returns (position reached, status) as
    :func:`decode` does; ST_NEED_OUT only when the buffer cannot hold ``meta[M_MARGIN]`` rows.
    The histograms must cover the tables' rows as loaded (ST_NEED_FUNC loads more)."""
    while True:
        pos, status = decode(ev, pos, fn, blk, succ, stm, edg, wit, chs, ysl, pool, pdg, stack, meta, scratch,
                             hkey, hval, out)
        n = meta[M_NOUT]
        tally(out, n, fn, stm, block, edge, cut, enters)
        meta[M_NOUT] = 0
        if status != ST_NEED_OUT or n == 0:
            return pos, status


# numba's cache watches only this file: key it on events.py too, whose constants (LEAVE_PATH, NO_PATH)
# the kernels bake in (LEAVE_PATH moved from 2^30 to 2^29 in wave 14; a stale cache decoded the old base)
cache_depends(("wholetrace.events", __name__))
