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

from wholetrace.events import ENTER_BASE, EXC, LEAVE, LEAVE_PATH, NO_PATH, RERAISE, START  # noqa: F401
from wholetrace.kernels._jit import cache_depends, kernel
# the layouts and each mode's steps are modules of their own since wave 17: every name is
# imported here as before (``trace.tables``, ``trace.decode``, tests: ``kernels.decode.X``)
from wholetrace.kernels.decode_layout import (BAD_BLOCK, BAD_CHOICE, BAD_CODE, BAD_CYCLE, BAD_EDGE, BAD_FUNC,
                                              BAD_HANDLER, BAD_LEAVE, BAD_LEFT, BAD_MISMATCH, BAD_OUTSIDE, BAD_PATH,
                                              BAD_REGISTER, BAD_RESUME, BAD_START, BAD_STMT, BAD_WITNESS, BK_CH,
                                              BK_COMP, BK_FLAGS, BK_NCH, BK_NPD, BK_NSUCC, BK_PD, BK_SUCC, BK_W,
                                              CH_EID, CH_W, ED_DST, ED_SRC, ED_W, ED_WIT, EID_ENTER, EID_EXC,
                                              EID_LEAVE, ENTRY, EOF, EXIT, FN_BBASE, FN_EBASE, FN_ENTRY_B,
                                              FN_ENTRY_E, FN_GEN, FN_MODE, FN_NB, FN_NE, FN_NPATHS, FN_NS, FN_NW,
                                              FN_NY, FN_READY, FN_SBASE, FN_W, FN_WBASE, FN_YBASE, FR_ACT, FR_CHILD,
                                              FR_EXC, FR_FID, FR_HOLD, FR_PC, FR_ST, FR_W, F_CALL, F_DYN, F_REACH,
                                              F_SUSPEND, K_DEAD, K_DIN, K_DOUT, K_REAL, META_SIZE, MODE_BLOCKS,
                                              MODE_PATH, MODE_WITNESS, M_ARG, M_ARG2, M_BAD, M_DEPTH, M_EPOCH,
                                              M_HPOS, M_MARGIN, M_NEXT_ACT, M_NOUT, M_PEND, M_PEND_R, M_PEND_S,
                                              M_REG, PD_DST, PD_KIND, PD_REF, PD_VAL, PD_W, P_EXC, P_HANDLER,
                                              P_REGISTER, P_RERAISE, P_SITE, ROW_W, R_ACT, R_AUX, R_DST, R_EID,
                                              R_FID, R_SRC, SC_DST, SC_EID, ST_BAD, ST_DONE, ST_NEED_FUNC,
                                              ST_NEED_OUT, ST_NEED_STACK, S_AFTER_EXC, S_DONE, S_FRESH, S_PENDING,
                                              S_RUN, _bad, _choice, _edge, _emit, _parent_act)  # noqa: F401
from wholetrace.kernels.decode_blocks import (_block_event, _block_exc, _block_leave, _resume_src)  # noqa: F401
from wholetrace.kernels.decode_witness import (_before_child, _chain_end, _chain_next, _emit_path, _find_path, _held,
                                               _raise_at, _route, _to_call, _to_handler, _witness_event,
                                               _witness_exc, _witness_leave)  # noqa: F401
from wholetrace.kernels.decode_path import (_path_chain, _path_emit, _path_entry, _path_event, _path_exc,
                                            _path_start, _path_to_call, _path_truncated, _path_walk)  # noqa: F401

_hot = kernel(nrt=False)


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


# numba's cache watches only the file defining a kernel: key all the decoder's parts on all of them and
# on events.py, whose constants (LEAVE_PATH, NO_PATH) the kernels bake in (LEAVE_PATH moved from 2^30
# to 2^29 in wave 14; a stale cache decoded the old base)
cache_depends(("wholetrace.events", "wholetrace.kernels.decode_layout", "wholetrace.kernels.decode_blocks",
               "wholetrace.kernels.decode_witness", "wholetrace.kernels.decode_path", __name__))
