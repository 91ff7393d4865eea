"""Terminals of a trace grammar: `blocks` events interned as (kind, function, value) symbols, with costs."""

from __future__ import annotations

from collections.abc import Sequence
TYPE_CHECKING = False   # typing is not imported by the WPP builder (~11 M instructions of its start-up)

import numpy as np

from wholetrace.errors import StoreError
from wholetrace.plain import FrozenRecord   # not dataclasses: the WPP builder's start-up imports this module
from wholetrace.kernels import hot_terminals as K

if TYPE_CHECKING:  # annotations only: the WPP builder process imports this module (instrument.cfg: ~0.07 s)
    from wholetrace.grammar import Grammar
    from wholetrace.instrument.cfg import CFG

#: Terminal kinds.  PATH (a Ball-Larus path id of a function) is for `path` recordings, and so are
#: the fused kinds of wave 10 (``kernels.wpp_intern``): ENTER_PATH (f, v) is ENTER f and the value
#: right after it, the first path record of the activation it opens; ENTER_CHAIN (f, t) is ENTER f
#: and then terminal t (a fused terminal: ENTERs in a row, the last one's first path).  SEQ (h, u)
#: (wave 12; its ``fid`` holds h) is terminal h and then terminal u: a group of terminals in a row
#: joined at calls and returns, nested to the left (h may be a SEQ, u is not).  Each stands for
#: its events; :func:`split_entered` gives the analyses one terminal an event back.
BLOCK, ENTER, LEAVE, EXC, PATH, ENTER_PATH, ENTER_CHAIN, SEQ = range(8)
KIND_NAMES = ("B", "F", "E", "X", "P", "FP", "FC", "S")
FUSED = (ENTER_PATH, ENTER_CHAIN, SEQ)

_WHY = {K.ST_BAD_EVENT: "an unknown event code", K.ST_BAD_FUNCTION: "an unknown function id",
        K.ST_BAD_BLOCK: "a block outside its function", K.ST_OUTSIDE: "an event outside any activation"}


class Terminals(FrozenRecord):
    """The symbol table: terminal ``t`` is (``kind[t]``, ``fid[t]``, ``value[t]``): a block id
    (BLOCK), nothing (ENTER: the function; LEAVE: fid -1), or a statement id (EXC, -1 unknown)."""

    __slots__ = ("kind", "fid", "value")
    kind: np.ndarray
    fid: np.ndarray
    value: np.ndarray

    def __init__(self, kind: np.ndarray, fid: np.ndarray, value: np.ndarray) -> None:
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "fid", fid)
        object.__setattr__(self, "value", value)

    def __len__(self) -> int:
        return len(self.kind)

    def components(self, t: int) -> list[int]:
        """The terminals a SEQ terminal joins, in order (no recursion); ``[t]`` for any other."""
        lasts = []
        while int(self.kind[t]) == SEQ:
            lasts.append(int(self.value[t]))
            t = int(self.fid[t])
        return [t] + lasts[::-1]

    def label(self, t: int) -> str:
        """``B3@7`` (block 3 of function 7), ``F7``, ``E``, ``X12@7``, ``F7P12`` (ENTER 7 and path 12),
        ``F3>F7P12`` (ENTER 3, ENTER 7, path 12), ``P4@3+F7P12`` (a SEQ: path 4 of 3, then F7P12)."""
        if int(self.kind[t]) == SEQ:
            return "+".join(self._label(c) for c in self.components(t))
        return self._label(t)

    def _label(self, t: int) -> str:
        head = ""
        while int(self.kind[t]) == ENTER_CHAIN:     # a loop: chains are as deep as the recursion
            head += f"F{int(self.fid[t])}>"
            t = int(self.value[t])
        k, f, v = int(self.kind[t]), int(self.fid[t]), int(self.value[t])
        if k == ENTER:
            return f"{head}F{f}"
        if k == ENTER_PATH:
            return f"{head}F{f}P{v}"
        if k == LEAVE:
            return head + "E"
        return f"{head}{KIND_NAMES[k]}{v}@{f}"

    def describe(self, t: int, cfgs: dict[int, CFG], files: dict[int, str]) -> dict[str, object]:
        """What a renderer shows for terminal ``t``: kind, function, file, and for a block its
        id and first/last source lines (``cfgs``/``files``: fid -> CFG / file name)."""
        k, f, v = int(self.kind[t]), int(self.fid[t]), int(self.value[t])
        out: dict[str, object] = {"kind": KIND_NAMES[k]}
        if k == LEAVE:
            return out
        if k == SEQ:      # its fid is a terminal: the parts say what it stands for
            out.update(events=[list(x) for x in self.parts(t)])
            return out
        cfg = cfgs[f]
        out.update(function=cfg.qualname, file=files.get(f, ""))
        if k == BLOCK:
            stmts = [cfg.stmts[s] for s in cfg.blocks[v].stmts]
            out.update(block=v, lines=[min(s.line for s in stmts), max(s.end_line for s in stmts)] if stmts else [])
        elif k == EXC:
            out.update(statement=v, lines=[cfg.stmts[v].line] if v >= 0 else [])
        elif k in FUSED:
            out.update(events=[list(x) for x in self.parts(t)],
                       lines=[cfg.firstline, cfg.lastline])
        else:
            out.update(lines=[cfg.firstline, cfg.lastline])
        return out

    def parts(self, t: int) -> list[tuple[int, int, int]]:
        """(kind, fid, value) of each event terminal ``t`` stands for: itself, or for a fused
        terminal its ENTERs and the (PATH, f, v) of the path after them, for a SEQ those of
        each terminal it joins."""
        if int(self.kind[t]) == SEQ:
            return [p for c in self.components(t) for p in self._parts(c)]
        return self._parts(t)

    def _parts(self, t: int) -> list[tuple[int, int, int]]:
        out = []
        while int(self.kind[t]) == ENTER_CHAIN:
            out.append((ENTER, int(self.fid[t]), 0))
            t = int(self.value[t])
        k, f, v = int(self.kind[t]), int(self.fid[t]), int(self.value[t])
        return out + ([(ENTER, f, 0), (PATH, f, v)] if k == ENTER_PATH else [(k, f, v)])

    def statement_costs(self, cfgs: dict[int, CFG]) -> np.ndarray:
        """Cost of each terminal in statements: the statements of a block, 0 for markers."""
        out = np.zeros(len(self), np.int64)
        for t in np.flatnonzero(self.kind == BLOCK):
            out[t] = len(cfgs[int(self.fid[t])].blocks[int(self.value[t])].stmts)
        return out


def split_entered(grammars: "Sequence[Grammar]", terms: Terminals) -> "tuple[list[Grammar], Terminals]":
    """``grammars`` (over ``terms``) with each fused terminal replaced by a rule of two symbols:
    (ENTER, f, 0) and, for ENTER_PATH (f, v), the terminal (PATH, f, v), for ENTER_CHAIN (f, t),
    t's own rule; for SEQ (h, u), h and u (each its own rule if it is fused).  Grammars over the
    terminals the analyses read (one per event, as before wave 10), expanding to the same events.  Terminals missing from the table are appended (the
    fused ones stay, unused); the rules are appended after each grammar's own, so its rule
    numbers keep their meaning.  Grammars that use no fused terminal are returned as they are,
    with ``terms`` itself (recordings before wave 10, other modes, grammars split already)."""
    from wholetrace.grammar import Grammar
    from wholetrace.kernels.wpp_parts import close_parts   # (not at import: the WPP builder imports this module)

    fused = np.flatnonzero(np.isin(terms.kind, FUSED))
    n = len(terms)
    is_fused = np.zeros(n + 1, bool)         # (n: a rule's place, never fused)
    is_fused[fused] = True
    at = [np.where(g.rhs >= 0, g.rhs, n) for g in grammars]     # each symbol's terminal, n for a rule
    hits = [is_fused[a] for a in at]
    if not any(h.any() for h in hits):
        return list(grammars), terms        # no fused terminal used: nothing to split (or split already)
    first, second, first_ref, second_ref, table = _split_rules(terms, fused, is_fused[:n])
    out = []
    for g, a, hit in zip(grammars, at, hits):
        rhs = g.rhs
        need = np.zeros(n, np.bool_)
        need[a[hit]] = True
        close_parts(terms.kind, terms.fid, terms.value, need)    # and the fused terminals they are made of
        used = np.flatnonzero(need & is_fused[:n])
        if not len(used):
            out.append(g)
            continue
        nr = len(g.off) - 1
        rule_of = np.zeros(n + 1, np.int64)
        rule_of[used] = nr + np.arange(len(used))
        new_rhs = np.where(hit, -rule_of[a], rhs)
        pair = []
        for sym, ref in ((first[used], first_ref[used]), (second[used], second_ref[used])):
            # (a terminal id may be >= n: one appended above)
            pair.append(np.where(ref, -rule_of[np.where(ref, sym, 0)], sym))
        tail = np.stack(pair, axis=1)
        new_rhs = np.concatenate([new_rhs, tail.reshape(-1)])
        new_off = np.concatenate([g.off, g.off[-1] + 2 * np.arange(1, len(used) + 1)])
        out.append(Grammar(new_off, new_rhs, lookahead=g.lookahead))
    return out, table


def _split_rules(terms: Terminals, fused: np.ndarray, is_fused: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Terminals]:
    """The two symbols of each fused terminal's rule (``first``, ``second``; ``*_ref``: the symbol
    is another fused terminal, whose rule it stands for), and the table with the (ENTER, f, 0) and
    (PATH, f, v) terminals they need appended, new ones numbered in the order the fused terminals
    ask for them (ENTER before PATH)."""
    n = len(terms)
    kind = terms.kind.astype(np.int64)
    fid = terms.fid.astype(np.int64)
    value = terms.value.astype(np.int64)
    first = np.zeros(n, np.int64)
    second = np.zeros(n, np.int64)
    first_ref = np.zeros(n, bool)
    second_ref = np.zeros(n, bool)
    seq = fused[kind[fused] == SEQ]           # (h, u): h's rule or terminal, then u's
    first[seq], first_ref[seq] = fid[seq], is_fused[fid[seq]]
    second[seq], second_ref[seq] = value[seq], is_fused[value[seq]]
    ent = fused[kind[fused] != SEQ]           # ENTER_PATH (f, v): ENTER f, PATH v; ENTER_CHAIN (f, t): ENTER f, t's rule
    is_path = kind[ent] == ENTER_PATH
    second[ent[~is_path]], second_ref[ent[~is_path]] = value[ent[~is_path]], True
    # the keys asked for, in order: each one's ENTER, then an ENTER_PATH's PATH
    ask = np.stack([np.stack([np.full(len(ent), ENTER), fid[ent], np.zeros(len(ent), np.int64)], axis=1),
                    np.stack([np.full(len(ent), PATH), fid[ent], value[ent]], axis=1)], axis=1)
    keep = np.stack([np.ones(len(ent), bool), is_path], axis=1).reshape(-1)
    ask = ask.reshape(-1, 3)[keep]
    ids, added = number_rows(np.stack([kind, fid, value], axis=1), ask)
    slot = np.flatnonzero(keep)            # ask's rows: 2 e (ENTER of ent[e]) and 2 e + 1 (its PATH)
    first[ent[slot[slot % 2 == 0] // 2]] = ids[slot % 2 == 0]
    second[ent[slot[slot % 2 == 1] // 2]] = ids[slot % 2 == 1]
    table = Terminals(np.concatenate([terms.kind, added[:, 0]]).astype(np.int8),
                      np.concatenate([terms.fid, added[:, 1]]).astype(np.int32),
                      np.concatenate([terms.value, added[:, 2]]).astype(np.int64))
    return first, second, first_ref, second_ref, table


def number_rows(table: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The id of each row of ``rows`` ((m, 3) int64) in ``table`` ((n, 3), rows distinct): the
    index of the equal row, or for a row ``table`` lacks n, n + 1, ... in the order such rows first
    appear; and those new rows in that order.  (Integer sorts: ``np.unique(axis=0)`` sorts rows as
    bytes, ~20x slower on tables of thousands of SEQ terminals.)"""
    n = len(table)
    both = np.concatenate([table, rows]).reshape(-1, 3)
    if not len(rows):
        return np.zeros(0, np.int64), np.zeros((0, 3), np.int64)
    order = np.lexsort((both[:, 2], both[:, 1], both[:, 0]))
    ranked = both[order]
    starts = np.ones(len(both), bool)
    starts[1:] = np.any(ranked[1:] != ranked[:-1], axis=1)
    key = np.empty(len(both), np.int64)
    key[order] = np.cumsum(starts) - 1          # equal rows, equal key
    at = np.full(int(key.max()) + 1, -1, np.int64)
    at[key[:n]] = np.arange(n)
    ids = at[key[n:]]
    new = ids < 0
    _, first, inverse = np.unique(key[n:][new], return_index=True, return_inverse=True)
    rank = np.empty(len(first), np.int64)
    by_first = np.argsort(first, kind="stable")
    rank[by_first] = np.arange(len(first))
    ids[new] = n + rank[inverse.reshape(-1)]
    return ids, rows[new][first[by_first]]


class BlockSymbols(FrozenRecord):
    """Every stream of a `blocks` trace as terminal ids (one per B, F, E or X event), and the table."""

    __slots__ = ("terminals", "streams")
    terminals: Terminals
    streams: list[np.ndarray]

    def __init__(self, terminals: Terminals, streams: list[np.ndarray]) -> None:
        object.__setattr__(self, "terminals", terminals)
        object.__setattr__(self, "streams", streams)


def intern_block_streams(streams: Sequence[np.ndarray], cfgs: dict[int, CFG]) -> BlockSymbols:
    """Intern `blocks` event streams (int32, ``wholetrace.events`` encoding) against ``cfgs``
    (fid -> CFG; ids dense from 0).  Terminal ids are dense, ordered by (kind, function, value)."""
    nf = max(cfgs) + 1 if cfgs else 0
    nblocks = np.array([len(cfgs[f].blocks) if f in cfgs else 0 for f in range(nf)], np.int64)
    nstmts = np.array([len(cfgs[f].stmts) if f in cfgs else 0 for f in range(nf)], np.int64)
    bbase = np.concatenate([[0], np.cumsum(nblocks)])
    xbase = np.concatenate([[0], np.cumsum(nstmts + 1)])
    enter0 = int(bbase[-1])
    leave = enter0 + nf
    exc0 = leave + 1
    coded = []
    for sid, ev in enumerate(streams):
        codes, _n, status, at = K.block_codes(np.ascontiguousarray(ev, dtype=np.int32), bbase, nblocks,
                                              xbase, nstmts, enter0, leave, exc0)
        if status != K.ST_OK:
            raise StoreError(f"stream {sid}: {_WHY.get(int(status), 'bad data')} at event {at}")
        coded.append(codes)
    used = np.unique(np.concatenate(coded)) if coded else np.zeros(0, np.int64)
    kind = np.empty(len(used), np.int8)
    fid = np.empty(len(used), np.int32)
    value = np.empty(len(used), np.int64)
    blk = used < enter0
    f_of = np.searchsorted(bbase, used[blk], side="right") - 1
    kind[blk], fid[blk], value[blk] = BLOCK, f_of, used[blk] - bbase[f_of]
    ent = (used >= enter0) & (used < leave)
    kind[ent], fid[ent], value[ent] = ENTER, used[ent] - enter0, 0
    lv = used == leave
    kind[lv], fid[lv], value[lv] = LEAVE, -1, 0
    ex = used >= exc0
    x = used[ex] - exc0
    f_of = np.searchsorted(xbase, x, side="right") - 1
    s = x - xbase[f_of]
    kind[ex], fid[ex], value[ex] = EXC, f_of, np.where(s == nstmts[f_of], -1, s)
    terms = Terminals(kind, fid, value)
    return BlockSymbols(terms, [np.searchsorted(used, c) for c in coded])


def recording_block_symbols(rec: object) -> tuple[BlockSymbols, dict[int, CFG]]:
    """Every stream of a `blocks` recording (a ``store.Recording``) interned, with its CFGs."""
    from wholetrace.instrument.cfg import CFG

    cfgs = {f.fid: CFG.from_json(f.cfg) for f in rec.functions()}  # type: ignore[attr-defined]
    streams = [rec.events(s.sid) for s in rec.streams()]  # type: ignore[attr-defined]
    return intern_block_streams(streams, cfgs), cfgs
