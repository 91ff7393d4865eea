"""Spec §6.8 oracle (b): a naive replay of the raw access log with a plain dict gives the same
data-dependence pairs as the kernel, on the golden programs; and the slicing closure equals a
brute-force search over the materialised graph with the same time bounds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from golden import GOLDEN
from wholetrace.store import Recording
from wholetrace.wet.capture import load
from decode_reference import Decoder
from wholetrace.wet.decode import ATTR, DEF, ELEM, USE, WDEF, WHOLE, WUSE
from wholetrace.wet.graph import build
from wholetrace.wet.static import function_facts
from wtutil import run_recorded


def naive_pairs(dec: Decoder) -> set[tuple[int, int, int]]:
    """Last writer per location with dicts; whole-object uses collect element writes since the
    last whole write (merge nodes flattened: a whole use depends on all of them)."""
    last: dict[int, int] = {}
    whole: dict[int, int] = {}
    since: dict[int, list[int]] = {}
    locs = list(dec.locs)
    out: set[tuple[int, int, int]] = set()
    for inst, op, loc, fb in zip(dec.a_inst, dec.a_op, dec.a_loc, dec.a_fb):
        k, a, _b = locs[loc]
        w = dec.locs.get((WHOLE, a, 0)) if k in (ATTR, ELEM) else None
        if op == USE:
            d = last.get(loc, -1)
            if w is not None and whole.get(w, -1) > d:
                d = whole[w]
            d = d if d >= 0 else fb
            if d >= 0 and d != inst:
                out.add((inst, d, 0))
        elif op == DEF:
            last[loc] = inst
            if w is not None:
                since.setdefault(w, []).append(inst)
        elif op == WUSE:
            for d in ([whole[loc]] if loc in whole else []) + since.get(loc, []):
                if d != inst:
                    out.add((inst, d, 1))
        elif op == WDEF:
            last[loc] = whole[loc] = inst
            since[loc] = []
    return out


def flatten(w) -> set[tuple[int, int, int]]:
    """Kernel pairs with merge nodes expanded to the instances they stand for."""
    n = w.n_inst
    deps: dict[int, list[int]] = {}
    for u, d in zip(w.d_use.tolist(), w.d_def.tolist()):
        deps.setdefault(u, []).append(d)

    def real(d: int, seen: set[int]) -> list[int]:
        if d < n:
            return [d]
        out = []
        for x in deps.get(d, []):
            if x not in seen:
                seen.add(x)
                out += real(x, seen)
        return out

    out = set()
    for u, ds in deps.items():
        if u >= n:
            continue
        for d in ds:
            for r in real(d, set()):
                if r != u:
                    out.add((u, r, int(d >= n)))
    return out


def brute_backward(edges: dict[int, set[int]], start: int) -> set[int]:
    """Backward closure from ``start`` over plain ``node -> what it depends on`` edges (ids
    are times), by a search over (node, ceiling) states: ``d`` is followed only below the
    ceiling, and a node reached from ``v`` gets ``min(ceiling, v)`` unless it is later than
    ``v`` (a call using its callee's return value)."""
    best: dict[int, float] = {start: float("inf")}
    todo = [(start, float("inf"))]
    while todo:
        v, c = todo.pop()
        if best[v] != c:
            continue
        for t in edges.get(v, ()):
            if t >= c:
                continue
            nb = min(c, v) if t < v else c
            if nb > best.get(t, -2):
                best[t] = nb
                todo.append((t, nb))
    return set(best)


def brute_slice(w, start: int) -> set[int]:
    """Backward closure over the kernel's graph with merge nodes expanded (``flatten``): each
    whole-object use depends directly on the element defs it merges."""
    edges: dict[int, set[int]] = {}
    for u, d, _m in flatten(w):
        edges.setdefault(u, set()).add(d)
    for u, c in enumerate(w.cd.tolist()[:w.n_inst]):
        if c >= 0:
            edges.setdefault(u, set()).add(c)
    for s, d in zip(w.c_src.tolist(), w.c_dst.tolist()):
        edges.setdefault(d, set()).add(s)
    return brute_backward(edges, start)


@pytest.mark.parametrize("name", sorted(GOLDEN)[:12] + ["items_written_in_callee"])
def test_naive_replay_and_brute_slice(name: str, tmp_path: Path) -> None:
    script = tmp_path / "prog.py"
    script.write_text(GOLDEN[name][0])
    wt = tmp_path / "prog.wt"
    assert run_recorded(script, wt, mode="full").returncode == 0
    with Recording(wt) as rec:
        log = load(rec)
        dec = Decoder(function_facts(rec, log), log)
        for st in rec.streams():
            sl = log.streams[st.sid]
            dec.stream_pass(st.sid, rec.events(st.sid), sl.pos, sl.slot, sl.tag, sl.val)
        w = build(rec, log)
    naive = naive_pairs(dec)
    mine = flatten(w)
    assert {(u, d) for u, d, _m in mine} == {(u, d) for u, d, _m in naive}
    assert len(naive) > 0
    for start in range(0, w.n_inst, max(1, w.n_inst // 7)):
        assert set(w.slice(np.array([start])).tolist()) == brute_slice(w, start)
