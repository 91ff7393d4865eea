"""Kernels: per-rule stack-transformer summaries (matching scheme 2) and the fold over S.

A summary of a rule, for one query (target function, path of length m), is its effect on
the scheme-1 stack of ``kernels.automaton`` (see ``docs/design.md``, "Path matching"):

* ``r_d[r]``: levels popped below the level that is on top when the rule starts;
* ``r_toff[r]``: where its ``r_d[r] + 1`` *tails* start in ``tails``: one transfer id per
  pre-existing level, the top first; only the last one's output state survives;
* ``r_poff[r]``, ``r_plen[r]``: the states of the levels it leaves pushed, bottom first;
* ``r_cnt[r]``: occurrences inside invocations that start within the rule (context-free);
* ``r_len[r]``: length of its expansion.

A *transfer* ``t`` maps the KMP state ``q in 0..m`` of one level to ``t_out[t, q]`` and
counts ``t_cnt[t, q]`` occurrences completed on the way; state -1 maps to itself with no
count.  Transfer 0 is the identity; transfers ``1 ..`` are the leaves (one per column of the
KMP table).  Rules are summarised bottom-up (``collect`` lists the ones still missing in
post-order, ``summarize`` composes each from its children by the left fold of the spec's
``compose``), then ``fold`` applies them to a concrete stack item by item, skipping whole
segments of S that the segment index shows cannot touch the target (scheme 4), and
descending into an item only where an occurrence position is still wanted.
"""

from __future__ import annotations

import numpy as np

from wholetrace.kernels._jit import kernel
from wholetrace.kernels.automaton import S_COUNT, S_NENDS, S_POS, S_STATUS, S_TOP, ST_BAD, ST_FOUND, _symbol

# r_state values
R_NONE = 0
R_LISTED = 1     # structure (d, plen, len) known, summary not built yet
R_DONE = 2

# meta slots of the transfer and pool fill levels
M_NTRANS = 0
M_NTAILS = 1
M_NPUSH = 2
META_SIZE = 3


@kernel(nrt=False)
def collect(off, rhs, lo, hi, r_state, r_d, r_plen, r_len, order, frame_rule, frame_k, need):  # type: ignore[no-untyped-def]
    """List, in post-order, the rules reachable from items ``lo..hi-1`` of S that have no
    summary yet; fill their structure (``r_d``, ``r_plen``, ``r_len``).  Returns how many were
    listed; ``need`` receives [tails, pushed states, transfers, widest fold (tails), widest
    fold (pushed states)] for them (-1 in need[0] if the descent outgrew ``frame_*``)."""
    n = 0
    nf = frame_rule.shape[0]
    for i in range(need.shape[0]):
        need[i] = 0
    for item in range(lo, hi):
        x = rhs[item]
        if x >= 0 or r_state[-x] != R_NONE:
            continue
        frame_rule[0] = -x
        frame_k[0] = off[-x]
        r_state[-x] = R_LISTED
        depth = 1
        while depth > 0:
            r = frame_rule[depth - 1]
            k = frame_k[depth - 1]
            if k < off[r + 1]:
                frame_k[depth - 1] = k + 1
                y = rhs[k]
                if y < 0 and r_state[-y] == R_NONE:
                    if depth >= nf:
                        need[0] = -1
                        return n
                    r_state[-y] = R_LISTED
                    frame_rule[depth] = -y
                    frame_k[depth] = off[-y]
                    depth += 1
                continue
            depth -= 1
            d = 0
            plen = 0
            widest = 0
            length = 0
            for j in range(off[r], off[r + 1]):
                y = rhs[j]
                if y >= 0:
                    cd = 1 if y == 0 else 0
                    cp = 1 if (y & 1) == 1 else 0
                    length += 1
                else:
                    cd = r_d[-y]
                    cp = r_plen[-y]
                    length += r_len[-y]
                if cd < plen:
                    plen = plen - cd + cp
                else:
                    d += cd - plen
                    plen = cp
                if plen > widest:
                    widest = plen
            r_d[r] = d
            r_plen[r] = plen
            r_len[r] = length
            order[n] = r
            n += 1
            need[0] += d + 1
            need[1] += plen
            need[2] += off[r + 1] - off[r]
            if d + 1 > need[3]:
                need[3] = d + 1
            if widest > need[4]:
                need[4] = widest
    return n


@kernel(nrt=False, inline=True)
def _seq(t1, t2, t_out, t_cnt, meta, m):  # type: ignore[no-untyped-def]
    """The transfer of t1 followed by t2 (a new transfer unless one of them is the identity)."""
    if t1 == 0:
        return t2
    if t2 == 0:
        return t1
    t = meta[M_NTRANS]
    meta[M_NTRANS] = t + 1
    for q in range(m + 1):
        o = t_out[t1, q]
        t_out[t, q] = t_out[t2, o]
        t_cnt[t, q] = t_cnt[t1, q] + t_cnt[t2, o]
    return t


@kernel(nrt=False)
def summarize(off, rhs, order, n_order, r_state, r_d, r_plen, r_toff, r_poff, r_cnt, tails, push,
              t_out, t_cnt, meta, leaf_tr, col, target, m, acc_tails, acc_push):  # type: ignore[no-untyped-def]
    """Build the summaries of ``order[:n_order]`` (children first); the pools and the
    transfer table must have the room ``collect`` reported.  Returns 0, or 1 if a rule's
    composed shape disagreed with its structure (corrupt grammar)."""
    enter = 2 * target + 1
    other = leaf_tr.shape[0] - 1
    for oi in range(n_order):
        r = order[oi]
        acc_d = 0
        acc_tails[0] = 0
        plen = 0
        cnt = 0
        for k in range(off[r], off[r + 1]):
            x = rhs[k]
            if x == 0:                      # E: pops a pushed level, or one more old level
                if plen > 0:
                    plen -= 1
                else:
                    acc_d += 1
                    acc_tails[acc_d] = 0
            elif x > 0 and (x & 1) == 1:    # F
                acc_push[plen] = 0 if x == enter else -1
                plen += 1
            elif x > 0:                     # B
                b = (x >> 1) - 1
                t = leaf_tr[col[b]] if b < col.shape[0] else leaf_tr[other]
                if plen > 0:
                    s = acc_push[plen - 1]
                    if s >= 0:
                        cnt += t_cnt[t, s]
                        acc_push[plen - 1] = t_out[t, s]
                else:
                    acc_tails[acc_d] = _seq(acc_tails[acc_d], t, t_out, t_cnt, meta, m)
            else:                           # rule c: compose(acc, summary(c))
                c = -x
                cd = r_d[c]
                ct = r_toff[c]
                cp = r_poff[c]
                cnt += r_cnt[c]
                for j in range(min(cd, plen - 1) + 1):
                    s = acc_push[plen - 1 - j]
                    if s >= 0:
                        cnt += t_cnt[tails[ct + j], s]
                if cd < plen:
                    idx = plen - cd - 1
                    s = acc_push[idx]
                    if s >= 0:
                        acc_push[idx] = t_out[tails[ct + cd], s]
                    for j in range(r_plen[c]):
                        acc_push[idx + 1 + j] = push[cp + j]
                    plen = idx + 1 + r_plen[c]
                else:
                    acc_tails[acc_d] = _seq(acc_tails[acc_d], tails[ct + plen], t_out, t_cnt, meta, m)
                    for j in range(plen + 1, cd + 1):
                        acc_d += 1
                        acc_tails[acc_d] = tails[ct + j]
                    for j in range(r_plen[c]):
                        acc_push[j] = push[cp + j]
                    plen = r_plen[c]
        if acc_d != r_d[r] or plen != r_plen[r]:
            return 1
        nt = meta[M_NTAILS]
        r_toff[r] = nt
        for j in range(acc_d + 1):
            tails[nt + j] = acc_tails[j]
        meta[M_NTAILS] = nt + acc_d + 1
        npu = meta[M_NPUSH]
        r_poff[r] = npu
        for j in range(plen):
            push[npu + j] = acc_push[j]
        meta[M_NPUSH] = npu + plen
        r_cnt[r] = cnt
        r_state[r] = R_DONE
    return 0


@kernel(nrt=False, inline=True)
def _peek(c, stk, top, r_d, r_toff, r_cnt, tails, t_cnt):  # type: ignore[no-untyped-def]
    """Occurrences rule ``c`` completes when applied to the stack (the stack is unchanged)."""
    n = r_cnt[c]
    ct = r_toff[c]
    for j in range(r_d[c] + 1):
        s = stk[top - 1 - j]
        if s >= 0:
            n += t_cnt[tails[ct + j], s]
    return n


@kernel(nrt=False, inline=True)
def _apply(c, stk, top, r_d, r_plen, r_toff, r_poff, r_cnt, tails, push, t_out, t_cnt, st):  # type: ignore[no-untyped-def]
    """Apply rule ``c``'s summary to the stack; returns the new top (0 if out of bounds)."""
    d = r_d[c]
    if top - d < 1 or top - d + r_plen[c] > stk.shape[0]:
        return 0
    st[S_COUNT] += _peek(c, stk, top, r_d, r_toff, r_cnt, tails, t_cnt)
    top -= d
    s = stk[top - 1]
    if s >= 0:
        stk[top - 1] = t_out[tails[r_toff[c] + d], s]
    cp = r_poff[c]
    for j in range(r_plen[c]):
        stk[top + j] = push[cp + j]
    return top + r_plen[c]


@kernel(nrt=False)
def fold(off, rhs, seg_item, seg_pos, seg_min, seg_exit, marked, dmin, stk, st,
         r_d, r_plen, r_len, r_toff, r_poff, r_cnt, tails, push, t_out, t_cnt,
         delta, col, target, m, ends, stop_first, frame_rule, frame_k):  # type: ignore[no-untyped-def]
    """Apply S segment by segment: a segment not ``marked`` is skipped by its index entry
    (the stack is cut to its minimum depth and padded with -1 levels to its exit depth), a
    marked one is applied item by item through the summaries.  Where end positions are still
    wanted (``stop_first`` or room left in ``ends``) an item that completes occurrences is
    descended into.  Returns the status (``st[S_STATUS]``)."""
    top = st[S_TOP]
    enter = 2 * target + 1
    nf = frame_rule.shape[0]
    for g in range(seg_item.shape[0] - 1):
        if not marked[g]:
            lo_top = seg_min[g] - dmin + 1
            hi_top = seg_exit[g] - dmin + 1
            if lo_top < 1 or lo_top > top or hi_top > stk.shape[0]:
                st[S_STATUS] = ST_BAD
                break
            for j in range(lo_top, hi_top):
                stk[j] = -1
            top = hi_top
            continue
        pos = seg_pos[g]
        for item in range(seg_item[g], seg_item[g + 1]):
            x = rhs[item]
            if x >= 0:
                top = _symbol(x, pos, stk, top, enter, delta, col, m, st, ends, stop_first)
                pos += 1
            elif not (stop_first or st[S_NENDS] < ends.shape[0]) or \
                    _peek(-x, stk, top, r_d, r_toff, r_cnt, tails, t_cnt) == 0:
                top = _apply(-x, stk, top, r_d, r_plen, r_toff, r_poff, r_cnt, tails, push, t_out, t_cnt, st)
                pos += r_len[-x]
            else:
                frame_rule[0] = -x
                frame_k[0] = off[-x]
                depth = 1
                while depth > 0 and top > 0:
                    r = frame_rule[depth - 1]
                    k = frame_k[depth - 1]
                    if k == off[r + 1]:
                        depth -= 1
                        continue
                    frame_k[depth - 1] = k + 1
                    y = rhs[k]
                    if y >= 0:
                        top = _symbol(y, pos, stk, top, enter, delta, col, m, st, ends, stop_first)
                        pos += 1
                    elif depth < nf and (stop_first or st[S_NENDS] < ends.shape[0]) and \
                            _peek(-y, stk, top, r_d, r_toff, r_cnt, tails, t_cnt) > 0:
                        frame_rule[depth] = -y
                        frame_k[depth] = off[-y]
                        depth += 1
                    else:
                        top = _apply(-y, stk, top, r_d, r_plen, r_toff, r_poff, r_cnt, tails, push, t_out,
                                     t_cnt, st)
                        pos += r_len[-y]
            if top <= 0:
                break
        if top <= 0:
            break
    if top == -1:
        st[S_STATUS] = ST_FOUND
    elif top == 0:
        st[S_STATUS] = ST_BAD
    else:
        st[S_TOP] = top
    st[S_POS] = 0
    return st[S_STATUS]
