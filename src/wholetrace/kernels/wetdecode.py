"""WET decoding kernel: statement instances, dynamic control parents, calls and the location access log.

The pass of Zhang and Gupta, "Whole Execution Traces and Their Applications", ACM TACO 2(3),
2005, §2 (every executed statement is an instance ``(s, t)``; its control parent is the latest
instance of a predicate it is control dependent on), done over a ``blocks`` trace with the
``full``-mode value records interleaved by position.  The rules (lazy statement starts,
partial defs on exceptions, generator resumptions, whole-object effects) are those of
docs/design.md "WET dependences"; ``wet/decode.py`` flattens the static facts into the
tables below and wraps the result.  The slow reference twin is ``tests/wet/decode_reference.py``.

Everything is an int64 array.  Growable buffers are enlarged only at *safe points* (before
each event or record), by at least the most one step can add (``room``), so the helpers
write without bounds checks.  Hash maps use open addressing with linear probing.

Invariant: instance ids increase with the start of the statement instances in one stream,
so within a stream they are the execution order.
"""

from __future__ import annotations

import numpy as np

from wholetrace.kernels._jit import kernel

# access-log operations and location kinds (the same numbers as wet/decode.py); NS: an entry of
# a class namespace as the class statement ends (``kernels/wetdeps.py``)
USE, DEF, WUSE, WDEF, NS = 0, 1, 2, 3, 4
LOCAL, GLOBAL, ATTR, ELEM, WHOLE, RET = 0, 1, 2, 3, 4, 5
STMT, RESUME = 0, 1
OBJ = 8
# name modes of a use/def entry
M_LOCAL, M_CLOSURE, M_GLOBAL = 0, 1, 2
# slot kinds and ops
K_DEF, K_OBJ, K_KEY = 0, 1, 2
OP_READ, OP_WRITE, OP_RW, OP_DEL, OP_READBACK, OP_BIND = 0, 1, 2, 3, 4, 5
# effects of a method of a built-in mutable type
E_UNKNOWN, E_DEF, E_USE = 0, 1, 2
# events
LEAVE, EXC, ENTER_BASE = -1, -2, 8
ENTRY = 0
# function table columns
F_SBASE, F_BBASE, F_NBLOCKS, F_ENTRYB, F_GEN, F_CLASS, F_MODULE, F_KNOWN = range(8)
# block table columns: statements [bs0, bs1) of bs_stmt, predicates [cd0, cd1) of cd_pred
B_BS0, B_BS1, B_CD0, B_CD1, B_DYN = range(5)
# statement table columns: [u0,u1) uses, [d0,d1) defs, [k0,k1) kills in the name-entry table
S_BLOCK, S_POS, S_AUG, S_RETURN, S_SUSP, S_UNKNOWN, S_U0, S_U1, S_D0, S_D1, S_K0, S_K1 = range(12)
# slot table columns: [n0, n1) names in the name-entry table
SL_FID, SL_SID, SL_KIND, SL_OP, SL_RET, SL_SUB, SL_WHAT, SL_N0, SL_N1 = range(9)
# activation columns
A_FRAME, A_AR, A_ENTRY, A_FID, A_BLOCK, A_BS0, A_BSN, A_NXT, A_CUR, A_CURSID, A_SUBS, A_SUBOP, \
    A_EXC, A_FIRST, A_B0, A_I0, A_P0, A_C0 = range(18)
N_ACOLS = 18
# frame columns
FR_ENTRY, FR_SUSP, FR_BELOW = range(3)
# counters
C_INST, C_ACC, C_CALLS, C_LOCS, C_KEYS, C_UNKNOWN, C_FRAMES, C_ACTS, C_BINDS, C_IMPL, C_PREC, C_CLS, \
    C_PM, C_IM, C_S, C_I, C_R, C_DEPTH = range(18)
N_COUNTERS = 18
# status
OK, BAD_FUNCTION, BAD_BLOCK, BAD_STATEMENT, NEED_ROOM = 0, 1, 2, 3, 4


@kernel(nrt=False)
def _hash3(a: int, b: int, c: int) -> int:
    h = np.uint64(np.int64(a)) * np.uint64(0x9E3779B97F4A7C15)      # wraps (int64 casts keep
    h ^= np.uint64(np.int64(b)) * np.uint64(0xC2B2AE3D27D4EB4F)    # negative keys valid when
    h ^= np.uint64(np.int64(c)) * np.uint64(0x165667B19E3779F9)    # run as Python)
    h ^= h >> np.uint64(31)
    return np.int64(h & np.uint64(0x7FFFFFFFFFFFFFFF))


@kernel
def _grow(a: np.ndarray, need: int) -> np.ndarray:
    """``a`` with at least ``need`` rows (doubling), old rows copied."""
    cap = a.shape[0]
    if need <= cap:
        return a
    while cap < need:
        cap *= 2
    b = np.empty((cap, a.shape[1]), np.int64)
    b[:a.shape[0]] = a
    return b


# ---------------------------------------------------------------------------- hash maps

@kernel(nrt=False)
def _table_find(tab: np.ndarray, keys: np.ndarray, k0: int, k1: int, k2: int) -> int:
    """Slot of ``tab`` (ids into ``keys`` rows, -1 empty) holding key (k0, k1, k2), or the empty slot."""
    mask = tab.shape[0] - 1
    j = _hash3(k0, k1, k2) & mask
    while True:
        r = tab[j]
        if r < 0 or (keys[r, 0] == k0 and keys[r, 1] == k1 and keys[r, 2] == k2):
            return j
        j = (j + 1) & mask


@kernel
def _table_rehash(keys: np.ndarray, n: int, cap: int) -> np.ndarray:
    tab = np.full(cap, -1, np.int64)
    mask = cap - 1
    for r in range(n):
        j = _hash3(keys[r, 0], keys[r, 1], keys[r, 2]) & mask
        while tab[j] >= 0:
            j = (j + 1) & mask
        tab[j] = r
    return tab


@kernel(nrt=False)
def _map_find(tab: np.ndarray, k0: int, k1: int) -> int:
    """Slot of a (k0 >= 0, k1) -> value map (rows k0, k1, value; k0 = -1 empty)."""
    mask = tab.shape[0] - 1
    j = _hash3(k0, k1, 0) & mask
    while True:
        if tab[j, 0] < 0 or (tab[j, 0] == k0 and tab[j, 1] == k1):
            return j
        j = (j + 1) & mask


@kernel(nrt=False)
def _map_get(tab: np.ndarray, k0: int, k1: int, default: int) -> int:
    j = _map_find(tab, k0, k1)
    return tab[j, 2] if tab[j, 0] >= 0 else default


@kernel(nrt=False)
def _map_put(tab: np.ndarray, cnt: np.ndarray, which: int, k0: int, k1: int, v: int) -> None:
    j = _map_find(tab, k0, k1)
    if tab[j, 0] < 0:
        tab[j, 0] = k0
        tab[j, 1] = k1
        cnt[which] += 1
    tab[j, 2] = v


@kernel
def _map_rehash(tab: np.ndarray, cap: int) -> np.ndarray:
    out = np.full((cap, 3), -1, np.int64)
    mask = cap - 1
    for r in range(tab.shape[0]):
        if tab[r, 0] >= 0:
            j = _hash3(tab[r, 0], tab[r, 1], 0) & mask
            while out[j, 0] >= 0:
                j = (j + 1) & mask
            out[j] = tab[r]
    return out


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
