"""WET decoding kernel: statement instances, dynamic control parents, calls and the location access log.

The pass of Zhang and Gupta, "Whole Execution Traces and Their Applications", ACM TACO 2(3),
2005, §2 (every executed statement is an instance ``(s, t)``; its control parent is the latest
instance of a predicate it is control dependent on), done over a ``blocks`` trace with the
``full``-mode value records interleaved by position.  The rules (lazy statement starts,
partial defs on exceptions, generator resumptions, whole-object effects) are those of
docs/design.md "WET dependences"; ``wet/decode.py`` flattens the static facts into the
tables of ``wetdecode_layout`` and wraps the result.  The slow reference twin is
``tests/wet/decode_reference.py``.

Everything is an int64 array.  Growable buffers are enlarged only at *safe points* (before
each event or record), by at least the most one step can add (``room``), so the helpers
write without bounds checks.  Hash maps use open addressing with linear probing.

Invariant: instance ids increase with the start of the statement instances in one stream,
so within a stream they are the execution order.
"""

from __future__ import annotations

import numpy as np

from wholetrace.kernels._jit import cache_depends, kernel
# the codes, hash maps and steps are modules of their own since wave 18: every public name is imported
# here as before (``wet.decode``, ``wet.classes``: ``kernels.wetdecode.X``), and the helpers ``_run`` calls
from wholetrace.kernels.wetdecode_layout import (ATTR, A_AR, A_B0, A_BLOCK, A_BS0, A_BSN, A_C0, A_CUR,  # noqa: F401
                                                 A_CURSID, A_ENTRY, A_EXC, A_FID, A_FIRST, A_FRAME, A_I0, A_NXT, A_P0,
                                                 A_SUBOP, A_SUBS, BAD_BLOCK, BAD_FUNCTION, BAD_STATEMENT, B_BS0, B_BS1,
                                                 B_CD0, B_CD1, B_DYN, C_ACC, C_ACTS, C_BINDS, C_CALLS, C_CLS, C_DEPTH,
                                                 C_FRAMES, C_I, C_IM, C_IMPL, C_INST, C_KEYS, C_LOCS, C_PM, C_PREC, C_R,
                                                 C_S, C_UNKNOWN, DEF, ELEM, ENTER_BASE, ENTRY, EXC, E_DEF, E_UNKNOWN,
                                                 E_USE, FR_BELOW, FR_ENTRY, FR_SUSP, F_BBASE, F_CLASS, F_ENTRYB, F_GEN,
                                                 F_KNOWN, F_MODULE, F_NBLOCKS, F_SBASE, GLOBAL, K_DEF, K_KEY, K_OBJ,
                                                 LEAVE, LOCAL, M_CLOSURE, M_GLOBAL, M_LOCAL, NEED_ROOM, NS, N_ACOLS,
                                                 N_COUNTERS, OBJ, OK, OP_BIND, OP_DEL, OP_READ, OP_READBACK, OP_RW,
                                                 OP_WRITE, RESUME, RET, SL_FID, SL_KIND, SL_N0, SL_N1, SL_OP, SL_RET,
                                                 SL_SID, SL_SUB, SL_WHAT, STMT, S_AUG, S_BLOCK, S_D0, S_D1, S_K0, S_K1,
                                                 S_POS, S_RETURN, S_SUSP, S_U0, S_U1, S_UNKNOWN, USE, WDEF, WHOLE, WUSE)
from wholetrace.kernels.wetdecode_maps import _grow, _map_get, _map_put, _map_rehash, _table_find, _table_rehash
from wholetrace.kernels.wetdecode_steps import (_access, _caller_inst, _exc, _finish, _flush_sub, _heap, _leave, _loc,
                                                _name_loc, _new_inst, _start)


@kernel
def decode_streams(events: np.ndarray, ev_ptr: np.ndarray, rec_pos: np.ndarray, rec_slot: np.ndarray,
                   rec_tag: np.ndarray, rec_val: np.ndarray, rec_ptr: np.ndarray, stream_ids: np.ndarray,
                   ftab: np.ndarray, btab: np.ndarray, bs_stmt: np.ndarray, cd_pred: np.ndarray,
                   stab: np.ndarray, ents: np.ndarray, sltab: np.ndarray, sl_names: np.ndarray,
                   ser_sorted: np.ndarray, ser_mut: np.ndarray, effect: np.ndarray, room: int
                   ) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                              np.ndarray]:
    """Decode every stream (events ``events[ev_ptr[s]:ev_ptr[s+1]]``, records likewise by
    ``rec_ptr``) into (status, counters, instances (fid, sid, frame, stream, kind, cd), accesses
    (inst, op, loc, fallback), calls (caller, first callee instance), locations (kind, a, b, -, -),
    keys (tag, val), record -> instance).  ``room`` bounds what one event or record can add.

    This function owns the buffers; the pass itself (``_run``) allocates nothing, so it and its
    helpers run without numba's reference counting, and returns ``NEED_ROOM`` (state saved in
    ``cnt``) whenever a buffer could overflow in the next step."""
    n_fun = ftab.shape[0]
    cnt = np.zeros(N_COUNTERS, np.int64)
    insts = np.empty((1024, 6), np.int64)
    acc = np.empty((4096, 4), np.int64)
    calls = np.empty((256, 2), np.int64)
    locs = np.empty((1024, 5), np.int64)
    ltab = np.full(4096, -1, np.int64)
    keys = np.empty((256, 3), np.int64)
    ktab = np.full(1024, -1, np.int64)
    frames = np.empty((256, 3), np.int64)
    last_frame = np.full(n_fun, -1, np.int64)
    susp_head = np.full(n_fun, -1, np.int64)
    pm = np.full((4096, 3), -1, np.int64)
    im = np.full((4096, 3), -1, np.int64)
    binds = np.empty((256, 3), np.int64)
    impl = np.empty((256, 1), np.int64)
    prec = np.empty((256, 1), np.int64)
    cls = np.empty((256, 1), np.int64)
    stack = np.empty((64, N_ACOLS), np.int64)
    rec_inst = np.full(rec_pos.shape[0], -1, np.int64)
    if ev_ptr.shape[0] > 1:
        cnt[C_R] = rec_ptr[0]
    while True:
        st = _run(events, ev_ptr, rec_pos, rec_slot, rec_tag, rec_val, rec_ptr, stream_ids, ftab, btab, bs_stmt,
                  cd_pred, stab, ents, sltab, sl_names, ser_sorted, ser_mut, effect, room, cnt, insts, acc, calls,
                  locs, ltab, keys, ktab, frames, last_frame, susp_head, pm, im, binds, impl, prec, cls, stack,
                  rec_inst)
        if st != NEED_ROOM:
            return st, cnt, insts, acc, calls, locs, keys, rec_inst
        if cnt[C_INST] + room > insts.shape[0]:
            insts = _grow(insts, cnt[C_INST] + room)
        if cnt[C_ACC] + room + 2 * cnt[C_CLS] > acc.shape[0]:
            acc = _grow(acc, cnt[C_ACC] + room + 2 * cnt[C_CLS])
        if cnt[C_CALLS] + room > calls.shape[0]:
            calls = _grow(calls, cnt[C_CALLS] + room)
        if cnt[C_BINDS] + room > binds.shape[0]:
            binds = _grow(binds, cnt[C_BINDS] + room)
        if cnt[C_IMPL] + room > impl.shape[0]:
            impl = _grow(impl, cnt[C_IMPL] + room)
        if cnt[C_PREC] + room > prec.shape[0]:
            prec = _grow(prec, cnt[C_PREC] + room)
        if cnt[C_CLS] + room > cls.shape[0]:
            cls = _grow(cls, cnt[C_CLS] + room)
        if cnt[C_FRAMES] + 2 > frames.shape[0]:
            frames = _grow(frames, cnt[C_FRAMES] + 2)
        if cnt[C_DEPTH] + 2 > stack.shape[0]:
            stack = _grow(stack, cnt[C_DEPTH] + 2)
        if cnt[C_KEYS] + 2 > keys.shape[0]:
            keys = _grow(keys, cnt[C_KEYS] + 2)
        if cnt[C_LOCS] + room > locs.shape[0]:
            locs = _grow(locs, cnt[C_LOCS] + room)
        if 2 * (cnt[C_LOCS] + room) > ltab.shape[0]:
            cap = ltab.shape[0]
            while 2 * (cnt[C_LOCS] + room) > cap:
                cap *= 2
            ltab = _table_rehash(locs, cnt[C_LOCS], cap)
        if 2 * (cnt[C_KEYS] + 2) > ktab.shape[0]:
            ktab = _table_rehash(keys, cnt[C_KEYS], 2 * ktab.shape[0])
        if 2 * (cnt[C_PM] + room) > pm.shape[0]:
            cap = pm.shape[0]
            while 2 * (cnt[C_PM] + room) > cap:
                cap *= 2
            pm = _map_rehash(pm, cap)
        if 2 * (cnt[C_IM] + room) > im.shape[0]:
            cap = im.shape[0]
            while 2 * (cnt[C_IM] + room) > cap:
                cap *= 2
            im = _map_rehash(im, cap)

@kernel(nrt=False)
def _run(events: np.ndarray, ev_ptr: np.ndarray, rec_pos: np.ndarray, rec_slot: np.ndarray, rec_tag: np.ndarray,
         rec_val: np.ndarray, rec_ptr: np.ndarray, stream_ids: np.ndarray, ftab: np.ndarray, btab: np.ndarray,
         bs_stmt: np.ndarray, cd_pred: np.ndarray, stab: np.ndarray, ents: np.ndarray, sltab: np.ndarray,
         sl_names: np.ndarray, ser_sorted: np.ndarray, ser_mut: np.ndarray, effect: np.ndarray, room: int,
         cnt: np.ndarray, insts: np.ndarray, acc: np.ndarray, calls: np.ndarray, locs: np.ndarray,
         ltab: np.ndarray, keys: np.ndarray, ktab: np.ndarray, frames: np.ndarray, last_frame: np.ndarray,
         susp_head: np.ndarray, pm: np.ndarray, im: np.ndarray, binds: np.ndarray, impl: np.ndarray,
         prec: np.ndarray, cls: np.ndarray, stack: np.ndarray, rec_inst: np.ndarray) -> int:
    """The pass, from the state saved in ``cnt`` (stream, event index, record index, depth)."""
    n_streams = ev_ptr.shape[0] - 1
    n_fun = ftab.shape[0]
    n_slots = sltab.shape[0]
    while cnt[C_S] < n_streams:
        s = cnt[C_S]
        stream = stream_ids[s]
        e0 = ev_ptr[s]
        n = ev_ptr[s + 1] - e0
        r = cnt[C_R]
        r1 = rec_ptr[s + 1]
        depth = cnt[C_DEPTH]
        i = cnt[C_I]
        while i <= n:
            if (cnt[C_INST] + room > insts.shape[0] or cnt[C_ACC] + room + 2 * cnt[C_CLS] > acc.shape[0]
                    or cnt[C_CALLS] + room > calls.shape[0] or cnt[C_BINDS] + room > binds.shape[0]
                    or cnt[C_IMPL] + room > impl.shape[0] or cnt[C_PREC] + room > prec.shape[0]
                    or cnt[C_CLS] + room > cls.shape[0] or cnt[C_FRAMES] + 2 > frames.shape[0]
                    or depth + 2 > stack.shape[0] or cnt[C_KEYS] + 2 > keys.shape[0]
                    or cnt[C_LOCS] + room > locs.shape[0] or 2 * (cnt[C_LOCS] + room) > ltab.shape[0]
                    or 2 * (cnt[C_KEYS] + 2) > ktab.shape[0] or 2 * (cnt[C_PM] + room) > pm.shape[0]
                    or 2 * (cnt[C_IM] + room) > im.shape[0]):
                cnt[C_I] = i
                cnt[C_R] = r
                cnt[C_DEPTH] = depth
                return NEED_ROOM
            # ---------------------------------------------------------------- one record
            if r < r1 and rec_pos[r] <= i:
                slot = rec_slot[r]
                if depth > 0 and 0 <= slot < n_slots and sltab[slot, SL_FID] == stack[depth - 1, A_FID]:
                    lv = depth - 1
                    tag = rec_tag[r]
                    val = rec_val[r]
                    sid = sltab[slot, SL_SID]
                    fid = stack[lv, A_FID]
                    got = -1
                    if sid < 0:                                   # except ... as name
                        got = stack[lv, A_EXC] if stack[lv, A_EXC] >= 0 else stack[lv, A_CUR]
                        if got >= 0 and sltab[slot, SL_N1] > sltab[slot, SL_N0]:
                            e = sltab[slot, SL_N0]
                            loc, _fb = _name_loc(locs, ltab, cnt, stack, lv, frames, ftab, last_frame,
                                                 sl_names[e, 1], sl_names[e, 0], sl_names[e, 2])
                            _access(acc, cnt, got, DEF, loc, -1)
                            locs[loc, 3] = tag
                            locs[loc, 4] = val
                    else:
                        gs = ftab[fid, F_SBASE] + sid
                        j = stab[gs, S_POS]
                        in_block = j >= 0 and stab[gs, S_BLOCK] == stack[lv, A_BLOCK]
                        here = True
                        if in_block and sid != stack[lv, A_CURSID] and j >= stack[lv, A_NXT]:
                            while stack[lv, A_NXT] <= j:
                                _start(stack, lv, stream, ftab, btab, bs_stmt, cd_pred, stab, ents, insts, calls,
                                       locs, ltab, acc, cnt, frames, last_frame, pm, im, binds, impl, prec, cls)
                        elif not (in_block and sid == stack[lv, A_CURSID]):
                            here = False          # a read-back after the block (for, with)
                            got = _map_get(im, stack[lv, A_FRAME], sid, -1)
                            if sltab[slot, SL_KIND] == K_DEF and sltab[slot, SL_OP] == OP_READBACK and got >= 0 \
                                    and sltab[slot, SL_N1] > sltab[slot, SL_N0]:
                                e = sltab[slot, SL_N0]
                                loc, _fb = _name_loc(locs, ltab, cnt, stack, lv, frames, ftab, last_frame,
                                                     sl_names[e, 1], sl_names[e, 0], sl_names[e, 2])
                                locs[loc, 3] = tag
                                locs[loc, 4] = val
                        if here:
                            got = stack[lv, A_CUR]
                            kind = sltab[slot, SL_KIND]
                            op = sltab[slot, SL_OP]
                            if kind == K_DEF:
                                if sltab[slot, SL_RET] != 0:
                                    _access(acc, cnt, got, DEF, _loc(locs, ltab, cnt, RET, stack[lv, A_AR], 0), -1)
                                else:
                                    for e in range(sltab[slot, SL_N0], sltab[slot, SL_N1]):
                                        q = cnt[C_BINDS]
                                        binds[q, 0] = sl_names[e, 0]
                                        binds[q, 1] = tag
                                        binds[q, 2] = val
                                        cnt[C_BINDS] += 1
                            elif kind == K_KEY:
                                if stack[lv, A_SUBOP] >= 0:
                                    serial = stack[lv, A_SUBS]
                                    sop = stack[lv, A_SUBOP]
                                    stack[lv, A_SUBOP] = -1
                                    kj = _table_find(ktab, keys, tag, val, 0)
                                    if ktab[kj] < 0:
                                        kr = cnt[C_KEYS]
                                        cnt[C_KEYS] += 1
                                        keys[kr, 0] = tag
                                        keys[kr, 1] = val
                                        keys[kr, 2] = 0
                                        ktab[kj] = kr
                                    _heap(acc, cnt, got, sop, _loc(locs, ltab, cnt, ELEM, serial, ktab[kj]))
                            else:
                                _flush_sub(stack, lv, locs, ltab, acc, cnt, got)
                                if tag == OBJ:
                                    q = cnt[C_PREC]
                                    prec[q, 0] = val
                                    cnt[C_PREC] += 1
                                    if sltab[slot, SL_SUB] != 0:
                                        stack[lv, A_SUBS] = val
                                        stack[lv, A_SUBOP] = op
                                    else:
                                        k = np.searchsorted(ser_sorted, val)
                                        m = ser_mut[k] if k < ser_sorted.shape[0] and ser_sorted[k] == val else -1
                                        if m >= 0:
                                            w = _loc(locs, ltab, cnt, WHOLE, val, 0)
                                            eff = effect[m, sltab[slot, SL_WHAT]]
                                            _access(acc, cnt, got, WUSE, w, -1)
                                            if eff != E_USE:
                                                _access(acc, cnt, got, WDEF, w, -1)
                                                if eff == E_UNKNOWN:
                                                    cnt[C_UNKNOWN] += 1
                                        else:
                                            _heap(acc, cnt, got, op,
                                                  _loc(locs, ltab, cnt, ATTR, val, sltab[slot, SL_WHAT]))
                    rec_inst[r] = got
                r += 1
                continue
            if i == n:
                if depth == 0:
                    break
                _leave(stack, depth, stream, ftab, btab, bs_stmt, cd_pred, stab, ents, insts, calls, locs,
                       ltab, acc, cnt, frames, last_frame, susp_head, pm, im, binds, impl, prec, cls)
                depth -= 1
                continue
            # ---------------------------------------------------------------- one event
            ev = events[e0 + i]
            if ev >= 0:
                if depth > 0:
                    lv = depth - 1
                    while stack[lv, A_NXT] < stack[lv, A_BSN]:
                        _start(stack, lv, stream, ftab, btab, bs_stmt, cd_pred, stab, ents, insts, calls,
                               locs, ltab, acc, cnt, frames, last_frame, pm, im, binds, impl, prec, cls)
                    _finish(stack, lv, False, ftab, btab, bs_stmt, stab, ents, locs, ltab, acc, cnt, frames,
                            last_frame, pm, binds, impl, prec, cls)
                    fid = stack[lv, A_FID]
                    if ev >= ftab[fid, F_NBLOCKS]:
                        return BAD_BLOCK
                    gb = ftab[fid, F_BBASE] + ev
                    stack[lv, A_BLOCK] = ev
                    stack[lv, A_BS0] = btab[gb, B_BS0]
                    stack[lv, A_BSN] = btab[gb, B_BS1] - btab[gb, B_BS0]
                    stack[lv, A_NXT] = 0
                    p = btab[gb, B_DYN]
                    if p >= 0 and stack[lv, A_EXC] >= 0:
                        _map_put(pm, cnt, C_PM, stack[lv, A_FRAME], p, stack[lv, A_EXC])
            elif ev == LEAVE:
                if depth > 0:
                    _leave(stack, depth, stream, ftab, btab, bs_stmt, cd_pred, stab, ents, insts, calls, locs,
                           ltab, acc, cnt, frames, last_frame, susp_head, pm, im, binds, impl, prec, cls)
                    depth -= 1
            elif ev == EXC:
                i += 1
                if depth > 0 and i < n:
                    st = _exc(stack, depth - 1, events[e0 + i], stream, ftab, btab, bs_stmt, cd_pred, stab,
                              ents, insts, calls, locs, ltab, acc, cnt, frames, last_frame, pm, im, binds,
                              impl, prec, cls)
                    if st != OK:
                        return st
            elif ev <= -ENTER_BASE:
                fid = -ev - ENTER_BASE
                if fid >= n_fun or ftab[fid, F_KNOWN] == 0:
                    return BAD_FUNCTION
                nxt_event = events[e0 + i + 1] if i + 1 < n else -1
                caller = -1
                if depth > 0:
                    caller = _caller_inst(stack, depth - 1, stream, ftab, btab, bs_stmt, cd_pred, stab, ents,
                                          insts, calls, locs, ltab, acc, cnt, frames, last_frame, pm, im,
                                          binds, impl, prec, cls)
                frame = -1
                if ftab[fid, F_GEN] != 0 and susp_head[fid] >= 0 and nxt_event != ftab[fid, F_ENTRYB]:
                    frame = susp_head[fid]
                    susp_head[fid] = frames[frame, FR_BELOW]
                cnt[C_ACTS] += 1
                lv = depth
                stack[lv, A_FRAME] = frame
                stack[lv, A_AR] = cnt[C_ACTS]
                stack[lv, A_ENTRY] = caller
                stack[lv, A_FID] = fid
                stack[lv, A_BLOCK] = -1
                stack[lv, A_BS0] = 0
                stack[lv, A_BSN] = 0
                stack[lv, A_NXT] = 0
                stack[lv, A_CUR] = -1
                stack[lv, A_CURSID] = -1
                stack[lv, A_SUBS] = 0
                stack[lv, A_SUBOP] = -1
                stack[lv, A_EXC] = -1
                stack[lv, A_FIRST] = 1
                stack[lv, A_B0] = cnt[C_BINDS]
                stack[lv, A_I0] = cnt[C_IMPL]
                stack[lv, A_P0] = cnt[C_PREC]
                stack[lv, A_C0] = cnt[C_CLS]
                depth += 1
                if frame < 0:
                    frame = cnt[C_FRAMES]
                    cnt[C_FRAMES] += 1
                    frames[frame, FR_ENTRY] = caller
                    frames[frame, FR_SUSP] = -1
                    frames[frame, FR_BELOW] = -1
                    last_frame[fid] = frame
                    stack[lv, A_FRAME] = frame
                else:
                    sid = frames[frame, FR_SUSP]
                    frames[frame, FR_SUSP] = -1
                    if sid >= 0:                          # the suspended statement resumes
                        inst = _new_inst(insts, calls, cnt, stack, lv, fid, sid, frame, stream, RESUME, caller)
                        stack[lv, A_CUR] = inst
                        stack[lv, A_CURSID] = sid
                        _map_put(im, cnt, C_IM, frame, sid, inst)
            i += 1
        cnt[C_S] = s + 1
        cnt[C_I] = 0
        cnt[C_R] = rec_ptr[s + 1]
        cnt[C_DEPTH] = 0
    return OK


# numba's cache watches only the file defining a kernel: the parts inline each other's codes and helpers,
# so every kernel of them keys its cache on all of them
cache_depends(("wholetrace.kernels.wetdecode_layout", "wholetrace.kernels.wetdecode_maps",
               "wholetrace.kernels.wetdecode_steps", __name__))
