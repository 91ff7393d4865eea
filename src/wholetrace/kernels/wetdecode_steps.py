"""Steps of the WET decoding kernel: locations, accesses, statement instances started and finished, activations left."""

# Split from ``kernels.wetdecode`` (wave 18), whose header describes the pass, its tables and its
# buffers; ``kernels.wetdecode`` re-exports every public name and keys the numba cache of all
# its parts on all of them (``_jit.cache_depends``).

from __future__ import annotations

import numpy as np

from wholetrace.kernels._jit import kernel
from wholetrace.kernels.wetdecode_layout import (A_AR, A_B0, A_BLOCK, A_BS0, A_BSN, A_C0, A_CUR, A_CURSID, A_ENTRY,
                                                 A_EXC, A_FID, A_FIRST, A_FRAME, A_I0, A_NXT, A_P0, A_SUBOP, A_SUBS,
                                                 B_CD0, B_CD1, C_ACC, C_BINDS, C_CALLS, C_CLS, C_IM, C_IMPL, C_INST,
                                                 C_LOCS, C_PM, C_PREC, C_UNKNOWN, DEF, ENTRY, FR_BELOW, FR_ENTRY,
                                                 FR_SUSP, F_BBASE, F_CLASS, F_GEN, F_MODULE, F_SBASE, GLOBAL, LOCAL,
                                                 M_CLOSURE, M_LOCAL, NS, OBJ, OK, OP_DEL, OP_READ, OP_RW, OP_WRITE, RET,
                                                 STMT, S_AUG, S_D0, S_D1, S_K0, S_K1, S_RETURN, S_SUSP, S_U0, S_U1,
                                                 S_UNKNOWN, USE, WDEF, WHOLE, WUSE)
from wholetrace.kernels.wetdecode_maps import _map_get, _map_put, _table_find


# ---------------------------------------------------------------------------- state

@kernel(nrt=False)
def _loc(locs: np.ndarray, ltab: np.ndarray, cnt: np.ndarray, k: int, a: int, b: int) -> int:
    """Id of location (k, a, b), created (value unknown) if new."""
    j = _table_find(ltab, locs, k, a, b)
    if ltab[j] >= 0:
        return ltab[j]
    r = cnt[C_LOCS]
    cnt[C_LOCS] += 1
    locs[r, 0] = k
    locs[r, 1] = a
    locs[r, 2] = b
    locs[r, 3] = -1
    locs[r, 4] = 0
    ltab[j] = r
    return r


@kernel(nrt=False)
def _access(acc: np.ndarray, cnt: np.ndarray, inst: int, op: int, loc: int, fb: int) -> None:
    r = cnt[C_ACC]
    cnt[C_ACC] += 1
    acc[r, 0] = inst
    acc[r, 1] = op
    acc[r, 2] = loc
    acc[r, 3] = fb


@kernel(nrt=False)
def _name_loc(locs: np.ndarray, ltab: np.ndarray, cnt: np.ndarray, stack: np.ndarray, lv: int, frames: np.ndarray,
              ftab: np.ndarray, last_frame: np.ndarray, mode: int, name: int, cfid: int) -> tuple[int, int]:
    """(location, fallback instance) of a name entry of the statement of activation ``stack[lv]``."""
    if mode == M_LOCAL:
        fr = stack[lv, A_FRAME]
        return _loc(locs, ltab, cnt, LOCAL, fr, name), frames[fr, FR_ENTRY]
    if mode == M_CLOSURE:
        return _loc(locs, ltab, cnt, LOCAL, last_frame[cfid], name), -1
    return _loc(locs, ltab, cnt, GLOBAL, ftab[stack[lv, A_FID], F_MODULE], name), -1


@kernel(nrt=False)
def _new_inst(insts: np.ndarray, calls: np.ndarray, cnt: np.ndarray, stack: np.ndarray, lv: int, fid: int, sid: int,
              frame: int, stream: int, kind: int, cd: int) -> int:
    i = cnt[C_INST]
    cnt[C_INST] += 1
    insts[i, 0] = fid
    insts[i, 1] = sid
    insts[i, 2] = frame
    insts[i, 3] = stream
    insts[i, 4] = kind
    insts[i, 5] = cd
    if stack[lv, A_FIRST] != 0:
        stack[lv, A_FIRST] = 0
        if stack[lv, A_ENTRY] >= 0:
            r = cnt[C_CALLS]
            cnt[C_CALLS] += 1
            calls[r, 0] = stack[lv, A_ENTRY]
            calls[r, 1] = i
    return i


@kernel(nrt=False)
def _flush_sub(stack: np.ndarray, lv: int, locs: np.ndarray, ltab: np.ndarray, acc: np.ndarray, cnt: np.ndarray,
               inst: int) -> None:
    if stack[lv, A_SUBOP] >= 0:
        op = stack[lv, A_SUBOP]
        stack[lv, A_SUBOP] = -1
        w = _loc(locs, ltab, cnt, WHOLE, stack[lv, A_SUBS], 0)
        _access(acc, cnt, inst, WUSE, w, -1)
        if op != OP_READ:
            _access(acc, cnt, inst, WDEF, w, -1)


@kernel(nrt=False)
def _heap(acc: np.ndarray, cnt: np.ndarray, inst: int, op: int, loc: int) -> None:
    if op == OP_READ or op == OP_RW:
        _access(acc, cnt, inst, USE, loc, -1)
    if op == OP_WRITE or op == OP_RW or op == OP_DEL:
        _access(acc, cnt, inst, DEF, loc, -1)


@kernel(nrt=False)
def _finish(stack: np.ndarray, lv: int, partial: bool, ftab: np.ndarray, btab: np.ndarray, bs_stmt: np.ndarray,
            stab: np.ndarray, ents: np.ndarray, locs: np.ndarray, ltab: np.ndarray, acc: np.ndarray,
            cnt: np.ndarray, frames: np.ndarray, last_frame: np.ndarray, pm: np.ndarray, binds: np.ndarray,
            impl: np.ndarray, prec: np.ndarray, cls: np.ndarray) -> None:
    """Finish the started statement: whole-object effects, then its static defs (unless ``partial``)."""
    inst = stack[lv, A_CUR]
    if inst < 0:
        return
    fid = stack[lv, A_FID]
    gs = ftab[fid, F_SBASE] + stack[lv, A_CURSID]
    _flush_sub(stack, lv, locs, ltab, acc, cnt, inst)
    for q in range(stack[lv, A_I0], cnt[C_IMPL]):
        serial = impl[q, 0]
        seen = False
        for p in range(stack[lv, A_I0], q):
            if impl[p, 0] == serial:
                seen = True
                break
        if seen:
            continue
        for p in range(stack[lv, A_P0], cnt[C_PREC]):
            if prec[p, 0] == serial:
                seen = True
                break
        if seen:
            continue
        w = _loc(locs, ltab, cnt, WHOLE, serial, 0)
        _access(acc, cnt, inst, WUSE, w, -1)
        if stab[gs, S_AUG] != 0:
            _access(acc, cnt, inst, WDEF, w, -1)
        elif stab[gs, S_UNKNOWN] != 0:
            _access(acc, cnt, inst, WDEF, w, -1)
            cnt[C_UNKNOWN] += 1
    if not partial:
        for e in range(stab[gs, S_D0], stab[gs, S_D1]):
            loc, _fb = _name_loc(locs, ltab, cnt, stack, lv, frames, ftab, last_frame, ents[e, 1], ents[e, 0], ents[e, 2])
            _access(acc, cnt, inst, DEF, loc, -1)
            if ftab[fid, F_CLASS] != 0:
                have = False
                for p in range(stack[lv, A_C0], cnt[C_CLS]):
                    if cls[p, 0] == loc:
                        have = True
                        break
                if not have:
                    cls[cnt[C_CLS], 0] = loc
                    cnt[C_CLS] += 1
            locs[loc, 3] = -1
            for p in range(cnt[C_BINDS] - 1, stack[lv, A_B0] - 1, -1):
                if binds[p, 0] == ents[e, 0]:
                    locs[loc, 3] = binds[p, 1]
                    locs[loc, 4] = binds[p, 2]
                    break
        for e in range(stab[gs, S_K0], stab[gs, S_K1]):
            loc, _fb = _name_loc(locs, ltab, cnt, stack, lv, frames, ftab, last_frame, ents[e, 1], ents[e, 0], ents[e, 2])
            _access(acc, cnt, inst, DEF, loc, -1)
            locs[loc, 3] = -1
    n = stack[lv, A_BSN]
    if n > 0 and stack[lv, A_CURSID] == bs_stmt[stack[lv, A_BS0] + n - 1] and stack[lv, A_NXT] == n:
        _map_put(pm, cnt, C_PM, stack[lv, A_FRAME], stack[lv, A_BLOCK], inst)
    stack[lv, A_CUR] = -1
    stack[lv, A_CURSID] = -1
    cnt[C_BINDS] = stack[lv, A_B0]
    cnt[C_PREC] = stack[lv, A_P0]
    cnt[C_IMPL] = stack[lv, A_I0]


@kernel(nrt=False)
def _start(stack: np.ndarray, lv: int, stream: int, ftab: np.ndarray, btab: np.ndarray, bs_stmt: np.ndarray,
           cd_pred: np.ndarray, stab: np.ndarray, ents: np.ndarray, insts: np.ndarray, calls: np.ndarray,
           locs: np.ndarray, ltab: np.ndarray, acc: np.ndarray, cnt: np.ndarray, frames: np.ndarray,
           last_frame: np.ndarray, pm: np.ndarray, im: np.ndarray, binds: np.ndarray, impl: np.ndarray,
           prec: np.ndarray, cls: np.ndarray) -> int:
    """Start the next statement of the current block; its instance."""
    _finish(stack, lv, False, ftab, btab, bs_stmt, stab, ents, locs, ltab, acc, cnt, frames, last_frame, pm,
            binds, impl, prec, cls)
    fid = stack[lv, A_FID]
    fr = stack[lv, A_FRAME]
    sid = bs_stmt[stack[lv, A_BS0] + stack[lv, A_NXT]]
    stack[lv, A_NXT] += 1
    gb = ftab[fid, F_BBASE] + stack[lv, A_BLOCK]
    cd = -1
    for q in range(btab[gb, B_CD0], btab[gb, B_CD1]):
        p = cd_pred[q]
        c = stack[lv, A_ENTRY] if p == ENTRY else _map_get(pm, fr, p, -1)
        if c > cd:
            cd = c
    inst = _new_inst(insts, calls, cnt, stack, lv, fid, sid, fr, stream, STMT, cd)
    stack[lv, A_CUR] = inst
    stack[lv, A_CURSID] = sid
    _map_put(im, cnt, C_IM, fr, sid, inst)
    gs = ftab[fid, F_SBASE] + sid
    for e in range(stab[gs, S_U0], stab[gs, S_U1]):
        loc, fb = _name_loc(locs, ltab, cnt, stack, lv, frames, ftab, last_frame, ents[e, 1], ents[e, 0], ents[e, 2])
        _access(acc, cnt, inst, USE, loc, fb)
        if locs[loc, 3] == OBJ:
            impl[cnt[C_IMPL], 0] = locs[loc, 4]
            cnt[C_IMPL] += 1
    return inst



@kernel(nrt=False)
def _caller_inst(stack: np.ndarray, lv: int, stream: int, ftab: np.ndarray, btab: np.ndarray, bs_stmt: np.ndarray,
                 cd_pred: np.ndarray, stab: np.ndarray, ents: np.ndarray, insts: np.ndarray, calls: np.ndarray,
                 locs: np.ndarray, ltab: np.ndarray, acc: np.ndarray, cnt: np.ndarray, frames: np.ndarray,
                 last_frame: np.ndarray, pm: np.ndarray, im: np.ndarray, binds: np.ndarray, impl: np.ndarray,
                 prec: np.ndarray, cls: np.ndarray) -> int:
    """The instance of activation ``stack[lv]`` that makes a call (starting the next statement if none is started)."""
    if stack[lv, A_CUR] >= 0:
        return stack[lv, A_CUR]
    if stack[lv, A_NXT] < stack[lv, A_BSN]:
        return _start(stack, lv, stream, ftab, btab, bs_stmt, cd_pred, stab, ents, insts, calls, locs, ltab, acc,
                      cnt, frames, last_frame, pm, im, binds, impl, prec, cls)
    if stack[lv, A_BSN] > 0:
        return _map_get(im, stack[lv, A_FRAME], bs_stmt[stack[lv, A_BS0] + stack[lv, A_BSN] - 1], stack[lv, A_ENTRY])
    return stack[lv, A_ENTRY]


@kernel(nrt=False)
def _leave(stack: np.ndarray, depth: int, stream: int, ftab: np.ndarray, btab: np.ndarray, bs_stmt: np.ndarray,
           cd_pred: np.ndarray, stab: np.ndarray, ents: np.ndarray, insts: np.ndarray, calls: np.ndarray,
           locs: np.ndarray, ltab: np.ndarray, acc: np.ndarray, cnt: np.ndarray, frames: np.ndarray,
           last_frame: np.ndarray, susp_head: np.ndarray, pm: np.ndarray, im: np.ndarray, binds: np.ndarray,
           impl: np.ndarray, prec: np.ndarray, cls: np.ndarray) -> None:
    """End the top activation (``stack[depth - 1]``): suspend a generator frame or run the block out."""
    lv = depth - 1
    fid = stack[lv, A_FID]
    n = stack[lv, A_BSN]
    last = bs_stmt[stack[lv, A_BS0] + n - 1] if n > 0 else -1
    gs = ftab[fid, F_SBASE] + last
    suspends = ftab[fid, F_GEN] != 0 and last >= 0 and stack[lv, A_NXT] >= n - 1 and stab[gs, S_RETURN] == 0 \
        and stab[gs, S_SUSP] != 0
    if suspends:
        while stack[lv, A_NXT] < n:
            _start(stack, lv, stream, ftab, btab, bs_stmt, cd_pred, stab, ents, insts, calls, locs, ltab, acc,
                   cnt, frames, last_frame, pm, im, binds, impl, prec, cls)
        _access(acc, cnt, stack[lv, A_CUR], DEF, _loc(locs, ltab, cnt, RET, stack[lv, A_AR], 0), -1)
        _finish(stack, lv, True, ftab, btab, bs_stmt, stab, ents, locs, ltab, acc, cnt, frames, last_frame, pm,
                binds, impl, prec, cls)
        fr = stack[lv, A_FRAME]
        frames[fr, FR_SUSP] = last
        frames[fr, FR_BELOW] = susp_head[fid]
        susp_head[fid] = fr
    else:
        while stack[lv, A_NXT] < n:
            _start(stack, lv, stream, ftab, btab, bs_stmt, cd_pred, stab, ents, insts, calls, locs, ltab, acc,
                   cnt, frames, last_frame, pm, im, binds, impl, prec, cls)
        _finish(stack, lv, False, ftab, btab, bs_stmt, stab, ents, locs, ltab, acc, cnt, frames, last_frame, pm,
                binds, impl, prec, cls)
    if depth > 1:
        inst = stack[lv - 1, A_CUR] if stack[lv - 1, A_CUR] >= 0 else stack[lv, A_ENTRY]
        if inst >= 0:
            _access(acc, cnt, inst, USE, _loc(locs, ltab, cnt, RET, stack[lv, A_AR], 0), -1)
            for p in range(stack[lv, A_C0], cnt[C_CLS]):            # a class is built from its namespace:
                t = locs[cls[p, 0], 3]                              # its methods and objects (implicit
                if t < 0 or t == OBJ:                               # calls), and each entry as a class
                    _access(acc, cnt, inst, USE, cls[p, 0], -1)     # attribute (wet/classes.py)
                _access(acc, cnt, inst, NS, cls[p, 0], -1)
    cnt[C_BINDS] = stack[lv, A_B0]
    cnt[C_IMPL] = stack[lv, A_I0]
    cnt[C_PREC] = stack[lv, A_P0]
    cnt[C_CLS] = stack[lv, A_C0]


@kernel(nrt=False)
def _exc(stack: np.ndarray, lv: int, sid: int, stream: int, ftab: np.ndarray, btab: np.ndarray, bs_stmt: np.ndarray,
         cd_pred: np.ndarray, stab: np.ndarray, ents: np.ndarray, insts: np.ndarray, calls: np.ndarray,
         locs: np.ndarray, ltab: np.ndarray, acc: np.ndarray, cnt: np.ndarray, frames: np.ndarray,
         last_frame: np.ndarray, pm: np.ndarray, im: np.ndarray, binds: np.ndarray, impl: np.ndarray,
         prec: np.ndarray, cls: np.ndarray) -> int:
    """An exception left the block at statement ``sid``: finish it with partial defs."""
    n = stack[lv, A_BSN]
    if n == 0:
        return OK
    b0 = stack[lv, A_BS0]
    j = n - 1
    for q in range(n):
        if bs_stmt[b0 + q] == sid:
            j = q
            break
    sj = bs_stmt[b0 + j]
    if stack[lv, A_CURSID] != sj:
        if stack[lv, A_NXT] > j:                            # already finished: it re-raised
            _finish(stack, lv, False, ftab, btab, bs_stmt, stab, ents, locs, ltab, acc, cnt, frames, last_frame, pm,
                    binds, impl, prec, cls)
            stack[lv, A_EXC] = _map_get(im, stack[lv, A_FRAME], sj, -1)
            stack[lv, A_NXT] = n
            return OK
        while stack[lv, A_NXT] <= j:
            _start(stack, lv, stream, ftab, btab, bs_stmt, cd_pred, stab, ents, insts, calls, locs, ltab, acc,
                   cnt, frames, last_frame, pm, im, binds, impl, prec, cls)
    stack[lv, A_EXC] = stack[lv, A_CUR]
    _finish(stack, lv, True, ftab, btab, bs_stmt, stab, ents, locs, ltab, acc, cnt, frames, last_frame, pm,
            binds, impl, prec, cls)
    stack[lv, A_NXT] = n
    return OK
