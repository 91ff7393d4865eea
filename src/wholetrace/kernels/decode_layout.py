"""The decoding kernel's array layouts, frame states, row columns and statuses, and the row helpers every mode uses."""

# Split from ``kernels.decode`` (wave 17), whose header describes the walk, its input and
# its output; ``kernels.decode`` re-exports every name and keys the numba cache of all its parts
# on all of them (``_jit.cache_depends``).

from __future__ import annotations

from wholetrace.kernels._jit import kernel

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
