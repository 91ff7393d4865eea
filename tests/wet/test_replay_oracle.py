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
from wholetrace.runtime.values import OBJ
from wholetrace.wet.decode import ATTR, DEF, ELEM, NS, USE, WDEF, WHOLE, WUSE
from wholetrace.wet.graph import build
from wholetrace.wet.static import function_facts
from wtutil import run_recorded


def class_serials(dec: Decoder, log) -> dict[int, int]:
    """Instance -> serial of an object its def records hold (the class statement's class)."""
    out: dict[int, int] = {}
    for st, ri in zip(log.streams.values(), dec.rec_inst):
        for r, inst in enumerate(ri.tolist()):
            info = log.slots.get(int(st.slot[r]))
            if inst >= 0 and info is not None and info.kind == "def" and int(st.tag[r]) == OBJ:
                out[inst] = int(st.val[r])
    return out


def naive_pairs(dec: Decoder, log=None) -> set[tuple[int, int, int]]:
    """Last writer per location with dicts; whole-object uses collect element writes since the
    last whole write (merge nodes flattened: a whole use depends on all of them).  Class
    attributes: a namespace entry's writer becomes the writer of ``(class serial, name)``; a
    read of an attribute no one wrote looks it up along the parent links (instance -> class
    -> base)."""
    last: dict[tuple, int] = {}                         # keyed by what a location names
    whole: dict[int, int] = {}
    since: dict[int, list[int]] = {}
    serials = class_serials(dec, log) if log is not None else {}
    parents = log.parents if log is not None else {}
    locs = list(dec.locs)
    out: set[tuple[int, int, int]] = set()
    for inst, op, loc, fb in zip(dec.a_inst, dec.a_op, dec.a_loc, dec.a_fb):
        key = locs[loc]
        k, a, b = key
        w = dec.locs.get((WHOLE, a, 0)) if k in (ATTR, ELEM) else None
        if op == NS:
            if inst in serials:
                if key in last:
                    last[(ATTR, serials[inst], b)] = last[key]
                continue
            op = USE
        if op == USE:
            d = last.get(key, -1)
            if k == ATTR and d < 0:
                p = parents.get(a)
                while p is not None:
                    if (ATTR, p, b) in last:
                        if last[(ATTR, p, b)] != inst:
                            out.add((inst, last[(ATTR, p, b)], 0))
                        break
                    p = parents.get(p)
            if w is not None and whole.get(w, -1) > d:
                d = whole[w]
            d = d if d >= 0 else fb
            if d >= 0 and d != inst:
                out.add((inst, d, 0))
        elif op == DEF:
            last[key] = inst
            if w is not None:
                since.setdefault(w, []).append(inst)
        elif op == WUSE:
            for d in ([whole[loc]] if loc in whole else []) + since.get(loc, []):
                if d != inst:
                    out.add((inst, d, 1))
        elif op == WDEF:
            last[key] = whole[loc] = inst
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


@pytest.mark.parametrize("name", sorted(GOLDEN)[:12] + ["items_written_in_callee", "class_attribute", "inherited_method",
                                  "instance_reads_class_attribute", "class_attribute_set_later"])
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
    naive = naive_pairs(dec, log)
    mine = flatten(w)
    assert {(u, d) for u, d, _m in mine} == {(u, d) for u, d, _m in naive}
    assert len(naive) > 0
    for start in range(0, w.n_inst, max(1, w.n_inst // 7)):
        assert set(w.slice(np.array([start])).tolist()) == brute_slice(w, start)
