"""Online interning of trace events as WPP terminals: (kind, function, value) keys -> dense ids by first appearance.

A stream chunk (int32, ``wholetrace.events`` encoding) becomes one terminal per event: a
value ``v >= 0`` of the running function f is (``value_kind``, f, v), ENTER f is (ENTER, f, 0),
LEAVE is (LEAVE, -1, 0), EXC s is (EXC, f, s).  Keys pack (kind, fid, value) into a
non-negative int64 and live in an open-addressing hash table shared by every stream; the
first appearance of a key gives it the next dense id, as PPCompress numbers paths (Larus
1999 §3.3).  Per-stream state (the function stack, an EXC split from its statement by a
chunk boundary) survives between chunks.  Kernels never fail on odd data: an event outside
any activation belongs to function -1, a LEAVE on an empty stack pops nothing.

Exception records carry operands that are not events (``wholetrace.events``): the register
``r`` of a function recorded with path ids (``EXC s r``, ``RERAISE s x r``; ``fpath[f] == 1``,
its plan strategy ``paths``) and the statements of ``RERAISE s x``.  They may be negative
(``r = -1``: no path open), so they are read by position, never by value: each becomes the
terminal (value kind, f, operand).  RERAISE itself is the terminal (value kind, -1, RERAISE).

Fused ENTER (``fuse``, path mode; docs/design.md, "The WPP's terminals, wave 10"): ENTER f
directly followed by a value v of the activation it opens (its first path record, or
``LEAVE_PATH + p`` for an activation of one path) is ONE terminal (ENTER_PATH, f, v), which
expands back to the two events.  ENTERs that directly follow each other (an entry block that
calls at once) wrap the fused terminal of the innermost one: (ENTER_CHAIN, f, t) is ENTER f and
then terminal t (an ENTER_PATH or ENTER_CHAIN interned before it), so ENTER f ENTER g p is one
terminal too.  ENTERs followed by anything else stay (ENTER, f, 0) each.  Waiting ENTERs are
the top ``S_PEND`` frames of the stream's function stack, kept across chunk boundaries; the
stream's last call passes ``final`` so trailing ENTERs are not left behind.
"""

from __future__ import annotations

import numpy as np

from wholetrace.events import ENTER_BASE, EXC, LEAVE, RERAISE
from wholetrace.kernels._jit import cache_depends, kernel

# terminal kinds (the same numbers as wholetrace.wpp.symbols)
K_BLOCK, K_ENTER, K_LEAVE, K_EXC, K_PATH, K_ENTER_PATH, K_ENTER_CHAIN, K_SEQ = 0, 1, 2, 3, 4, 5, 6, 7

# what a terminal begins / ends with, for grouping (``group``): the seams a group may span
C_OTHER, C_FUSED, C_VALUE, C_CUT, C_EXIT, C_LEAVE = 0, 1, 2, 3, 4, 5
#: The largest terminal id a group's head may have (it is packed in the fid field).
SEQ_MAX_HEAD = (1 << 28) - 3

ST_DONE = 0
ST_NEED_TABLE = 1     # the hash table is half full: grow it (``rehash``) and call again
ST_NEED_SYMBOLS = 2   # the key list is full: enlarge it and call again
ST_NEED_STACK = 3     # the stream's function stack is full: enlarge it and call again

# per-stream state (``sstate``)
S_SP = 0              # depth of the function stack
S_EXC = 1             # 1: the last chunk ended with EXC, its statement comes first in this one
S_OPS = 2             # operands of an exception record still to come (read by position)
S_PEND = 3            # ENTERs waiting for their next event (``fuse``): the top frames of the stack
S_INNER = 4           # id + 1 of the fused terminal being wrapped by the waiting ENTERs, else 0
S_LOW = 5             # stack index of the outermost waiting ENTER while they are wrapped
S_ITAIL = 6           # what the fused terminal being wrapped ends with (C_CUT, C_EXIT, C_OTHER)
S_GRP = 7             # id + 1 of the group waiting for its next terminal (``group``), else 0
S_GLEN = 8            # terminals in that group
S_GTAIL = 9           # what that group ends with
S_SIZE = 10

# shared table state (``tstate``)
T_COUNT = 0           # keys interned so far (= next id)
T_BITS = 1            # log2 of the table's slot count
T_SEQ = 2             # SEQ keys among them (``group``)
T_SEQ_MIN = 3         # SEQ keys always allowed (the budget's floor) ...
T_SEQ_K = 4           # ... and per terminal that is not a SEQ: past max(floor, k x those), no new SEQ key
T_SIZE = 5

#: The SEQ budget's defaults (docs/design.md, "The WPP's terminals, wave 12", review fixes).
SEQ_BUDGET_MIN = 1024
SEQ_BUDGET_K = 4

EMPTY = -1
#: unsigned indices: numba then emits no negative-index wrap-around (a compare and select an access)
_U = np.uint64
_FID_BITS = 28
_FID_MASK = (1 << _FID_BITS) - 1
_VALUE_MASK = (1 << 32) - 1


@kernel
def pack(kind, fid, value):  # type: ignore[no-untyped-def]
    """The key of (kind, fid, value): kind in bits 60-62, fid + 1 in 32-59, value in 0-31."""
    return (np.int64(kind) << 60) | (np.int64((fid + 1) & _FID_MASK) << 32) | np.int64(value & _VALUE_MASK)


@kernel
def unpack(keys):  # type: ignore[no-untyped-def]
    """(kind, fid, value) arrays of packed keys (values sign-extended from 32 bits)."""
    n = len(keys)
    kind = np.empty(n, np.int8)
    fid = np.empty(n, np.int32)
    value = np.empty(n, np.int64)
    for i in range(n):
        k = keys[i]
        kind[i] = np.int8(k >> 60)
        fid[i] = np.int32(((k >> 32) & _FID_MASK) - 1)
        v = k & _VALUE_MASK
        value[i] = v - (1 << 32) if v >= (1 << 31) else v
    return kind, fid, value


@kernel
def _slot(key, bits):  # type: ignore[no-untyped-def]
    h = np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)
    return np.int64(h >> np.uint64(64 - bits))


@kernel(inline=True)
def _lookup(key, table_keys, bits, mask):  # type: ignore[no-untyped-def]
    """(the slot of ``key`` in the table or the empty slot where it goes (linear probing), what
    that slot holds: ``key``, or EMPTY (keys are never negative))."""
    s = _U(_slot(key, bits))
    k = table_keys[s]
    while k != key and k != EMPTY:
        s = (s + _U(1)) & mask
        k = table_keys[s]
    return s, k


@kernel(inline=True)
def _put_state(sstate, tstate, sp, exc, ops, pend, inner, low, itail, grp, glen, gtail, count, nseq):  # type: ignore[no-untyped-def]
    """Store the state :func:`intern_chunk` keeps in locals (at each of its returns)."""
    sstate[S_SP] = sp
    sstate[S_EXC] = exc
    sstate[S_OPS] = ops
    sstate[S_PEND] = pend
    sstate[S_INNER] = inner
    sstate[S_LOW] = low
    sstate[S_ITAIL] = itail
    sstate[S_GRP] = grp
    sstate[S_GLEN] = glen
    sstate[S_GTAIL] = gtail
    tstate[T_COUNT] = count
    tstate[T_SEQ] = nseq


@kernel
def intern_chunk(events, pos, value_kind, leave_at, fpath, fuse, group, final, stack, sstate, table_keys, table_ids, tstate, sym_keys, out, m):  # type: ignore[no-untyped-def]
    """Intern ``events[pos:]`` into ``out[m:]``; returns (next event position, next out position,
    status).  Status ST_DONE when the chunk is consumed, else what to enlarge before calling again
    from the returned positions (nothing of the stopped event was consumed).  ``leave_at > 0``:
    a value ``v >= leave_at`` also ends the activation (path mode's ``LEAVE_PATH + p``).
    ``fpath[f]`` is 1 when function f records path ids (a register follows its statements);
    functions past its end record none.  ``fuse == 1``: ENTERs and the value right after them
    are one terminal (ENTER_PATH, wrapped in ENTER_CHAIN for each outer ENTER); ``group >= 2``:
    up to ``group`` of those terminals in a row are one (SEQ, head, last) terminal when each
    seam is a call (a value or LEAVE, then a fused ENTER terminal) or a return (``LEAVE_PATH +
    p``, then a value), and its (head, last) key exists or the SEQ budget (``tstate[T_SEQ]`` below
    max(``T_SEQ_MIN``, ``T_SEQ_K`` x the terminals that are not SEQ)) allows a new one; ``final == 1``: the stream ends with this chunk (ENTERs still waiting
    become (ENTER, f, 0), a waiting group is written).  ``out`` (int32: what the SEQUITUR
    builder takes without a copy; ids stay below the table's 2**31 slots) holds at least
    ``len(events) - pos + sstate[S_PEND] + 2``.

    The stream's and the table's state live in locals while the kernel runs (stored back at each
    return: ``_put_state``): kept in the arrays, every store to the table or ``out`` made LLVM
    reload them (no aliasing information), ~125 instructions an event on richards (wave 14)."""
    n = len(events)
    bits = tstate[T_BITS]
    limit = (np.int64(1) << bits) >> 1
    mask = (_U(1) << _U(bits)) - _U(1)
    nsyms = len(sym_keys)
    nstack = len(stack)
    nfpath = len(fpath)
    seq_min = tstate[T_SEQ_MIN]
    seq_k = tstate[T_SEQ_K]
    count = tstate[T_COUNT]
    nseq = tstate[T_SEQ]
    sp = sstate[S_SP]
    exc = sstate[S_EXC]
    ops = sstate[S_OPS]
    pend = sstate[S_PEND]
    inner = sstate[S_INNER]
    low = sstate[S_LOW]
    itail = sstate[S_ITAIL]
    grp = sstate[S_GRP]
    glen = sstate[S_GLEN]
    gtail = sstate[S_GTAIL]
    why = np.int64(ST_DONE)
    # room for two keys (the terminal and its group): count + 1 < limit and count + 2 <= nsyms,
    # one test an event against the smaller bound (the table's status first, as two tests gave)
    cap = min(limit - 1, nsyms - 1)
    fin = final == 1
    while pos < n or inner > 0 or (fin and pend > 0):
        if count >= cap:
            why = np.int64(ST_NEED_TABLE) if count >= limit - 1 else np.int64(ST_NEED_SYMBOLS)
            break
        k = pend
        emit = True
        hc = np.int64(C_OTHER)     # what the terminal begins with
        tc = np.int64(C_OTHER)     # ... and ends with
        if inner > 0:   # wrapping the fused terminal in the next outer waiting ENTER
            key = pack(K_ENTER_CHAIN, stack[_U(low + k - 1)], inner - 1)
            pend = k - 1
            emit = k == 1
            hc = np.int64(C_FUSED)
            tc = itail
        elif k > 0 and (pos >= n or events[_U(pos)] > -ENTER_BASE):   # (never amid a record's operands)
            if pos < n and events[_U(pos)] >= 0:   # the innermost activation's first value: fuse
                v = np.int64(events[_U(pos)])
                low = sp - k
                key = pack(K_ENTER_PATH, stack[_U(sp - 1)], v)
                if leave_at > 0 and v >= leave_at:
                    sp -= 1
                    tc = np.int64(C_EXIT)
                else:
                    tc = np.int64(C_CUT)
                pos += 1
                pend = k - 1
                emit = k == 1
                hc = np.int64(C_FUSED)
                itail = tc
            else:   # anything else: the outermost waiting ENTER alone (the event comes on a later turn)
                key = pack(K_ENTER, stack[_U(sp - k)], 0)
                pend = k - 1
        else:
            v = np.int64(events[_U(pos)])
            f = stack[_U(sp - 1)] if sp > 0 else np.int64(-1)
            if exc == 1:
                key = pack(K_EXC, f, v)
                exc = 0
                ops = 1 if 0 <= f < nfpath and fpath[_U(f)] == 1 else 0
            elif ops > 0:
                key = pack(value_kind, f, v)
                ops -= 1
                if v >= 0:
                    hc = np.int64(C_VALUE)
                    tc = np.int64(C_EXIT) if leave_at > 0 and v >= leave_at else np.int64(C_CUT)
            elif v >= 0:
                key = pack(value_kind, f, v)
                hc = np.int64(C_VALUE)
                if leave_at > 0 and v >= leave_at:
                    if sp > 0:
                        sp -= 1
                    tc = np.int64(C_EXIT)
                else:
                    tc = np.int64(C_CUT)
            elif v <= -ENTER_BASE:
                if sp == nstack:
                    why = np.int64(ST_NEED_STACK)
                    break
                stack[_U(sp)] = -v - ENTER_BASE
                sp += 1
                if fuse == 1:
                    pend = k + 1
                    pos += 1
                    continue
                key = pack(K_ENTER, -v - ENTER_BASE, 0)
            elif v == RERAISE:
                key = pack(value_kind, -1, v)
                ops = (3 if 0 <= f < nfpath and fpath[_U(f)] == 1 else 2)
            elif v == LEAVE:
                if sp > 0:
                    sp -= 1
                key = pack(K_LEAVE, -1, 0)
                tc = np.int64(C_LEAVE)
            elif v == EXC:
                exc = 1
                pos += 1
                continue
            else:  # a code trace streams never hold: keep it, as a value of function -1
                key = pack(value_kind, -1, v)
            pos += 1
        joined = False
        tid = np.int64(0)
        for rep in range(2):      # the terminal, then (if it joins the waiting group) the group's SEQ
            s, held = _lookup(key, table_keys, bits, mask)
            if held == EMPTY:
                t = count
                if rep == 1:     # a new SEQ key: only within the budget, else the group ends here
                    if nseq >= max(seq_min, seq_k * (t - nseq)):   # (looked up, never inserted: ``tid`` stays the terminal's)
                        joined = False
                        break
                    nseq += 1
                table_keys[s] = key
                table_ids[s] = t
                sym_keys[_U(t)] = key
                count = t + 1
            tid = table_ids[s]
            if rep == 1 or not emit or group < 2:
                break
            if grp == 0 or grp - 1 > SEQ_MAX_HEAD or glen >= group:
                break
            if (hc == C_FUSED and (gtail == C_CUT or gtail == C_EXIT or gtail == C_LEAVE)) or (hc == C_VALUE and gtail == C_EXIT):
                key = pack(K_SEQ, grp - 1, tid)
                joined = True   # (undone when the key is new and the budget is spent)
            else:
                break
        if not emit:
            inner = tid + 1
            continue
        inner = 0
        if group > 1:
            if joined:
                if glen + 1 >= group:   # full: written now
                    out[_U(m)] = tid
                    m += 1
                    grp = 0
                else:
                    grp = tid + 1
                    glen += 1
                    gtail = tc
                continue
            if grp > 0:
                out[_U(m)] = grp - 1
                m += 1
                grp = 0
            if tc == C_CUT or tc == C_EXIT or tc == C_LEAVE:   # may begin a group: wait for the next one
                grp = tid + 1
                glen = 1
                gtail = tc
                continue
        out[_U(m)] = tid
        m += 1
    if why == ST_DONE and final == 1 and grp > 0:
        out[_U(m)] = grp - 1
        m += 1
        grp = 0
    _put_state(sstate, tstate, sp, exc, ops, pend, inner, low, itail, grp, glen, gtail, count, nseq)
    return pos, m, why


@kernel
def rehash(old_keys, old_ids, new_keys, new_ids, bits):  # type: ignore[no-untyped-def]
    """Move every key of the old table into the (empty) new one of 2**bits slots."""
    mask = (np.int64(1) << bits) - 1
    for i in range(len(old_keys)):
        key = old_keys[i]
        if key == EMPTY:
            continue
        s = _slot(key, bits)
        while new_keys[s] != EMPTY:
            s = (s + 1) & mask
        new_keys[s] = key
        new_ids[s] = old_ids[i]


@kernel
def terminal_widths(kind, fid, value):  # type: ignore[no-untyped-def]
    """Events each terminal stands for: 2 for EXC and ENTER_PATH, 1 + its inner terminal's for
    ENTER_CHAIN, the sum of its two parts' for SEQ (parts are interned before: ids in order),
    1 otherwise."""
    n = len(kind)
    out = np.ones(n, np.int64)
    for t in range(n):
        k = kind[t]
        if k == K_EXC or k == K_ENTER_PATH:
            out[t] = 2
        elif k == K_ENTER_CHAIN:
            inner = value[t]
            out[t] = 1 + out[inner] if 0 <= inner < t else 1
        elif k == K_SEQ:
            head, last = fid[t], value[t]
            out[t] = (out[head] if 0 <= head < t else 0) + (out[last] if 0 <= last < t else 0)
    return out


@kernel
def _plain_events(t, kind, fid, value, out, m):  # type: ignore[no-untyped-def]
    """Write the events of terminal ``t`` (not a SEQ) at ``out[m:]``; the next position, or -1."""
    k = kind[t]
    while k == K_ENTER_CHAIN:
        out[m] = -(ENTER_BASE + fid[t])
        m += 1
        inner = value[t]
        if inner < 0 or inner >= t:
            return -1
        t = inner
        k = kind[t]
    if k == K_BLOCK or k == K_PATH:
        out[m] = value[t]
    elif k == K_ENTER:
        out[m] = -(ENTER_BASE + fid[t])
    elif k == K_LEAVE:
        out[m] = LEAVE
    elif k == K_EXC:
        out[m] = EXC
        m += 1
        out[m] = value[t]
    elif k == K_ENTER_PATH:
        out[m] = -(ENTER_BASE + fid[t])
        m += 1
        out[m] = value[t]
    else:
        return -1
    return m + 1


@kernel
def terminal_events(codes, kind, fid, value, out):  # type: ignore[no-untyped-def]
    """The events of terminal ids ``codes`` (inverse of ``intern_chunk``): one event each, two for
    EXC and ENTER_PATH, ENTER f and its inner terminal's for ENTER_CHAIN, its head's then its last
    terminal's for SEQ (a group nests to the left: its parts are read back by walking it, no
    recursion).  Returns the number written to ``out`` (at least ``terminal_widths`` of ``codes``
    long), or -1 - i when terminal ``codes[i]`` is unknown."""
    m = 0
    nt = len(kind)
    for i in range(len(codes)):
        t = codes[i]
        if t < 0 or t >= nt:
            return -1 - i
        if kind[t] != K_SEQ:
            m = _plain_events(t, kind, fid, value, out, m)
            if m < 0:
                return -1 - i
            continue
        depth = 0            # SEQs down the head side to the group's first terminal
        u = t
        while kind[u] == K_SEQ:
            head = fid[u]
            if head < 0 or head >= u or value[u] < 0 or value[u] >= u:
                return -1 - i
            u = head
            depth += 1
        m = _plain_events(u, kind, fid, value, out, m)
        if m < 0:
            return -1 - i
        for j in range(depth - 1, -1, -1):   # the last terminal of the SEQ j levels below t
            u = t
            for _ in range(j):
                u = fid[u]
            last = value[u]
            if kind[last] == K_SEQ:
                return -1 - i
            m = _plain_events(last, kind, fid, value, out, m)
            if m < 0:
                return -1 - i
    return m


# numba keys a kernel only on its own file: key these on events.py too, whose codes they inline
cache_depends(("wholetrace.events", __name__))
