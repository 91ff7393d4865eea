"""Path numbering on real executions: simulate what the `path` probes of ``number_cfg`` would
record along `blocks` traces, decode it, and require the original block sequences back.

The simulation follows every activation of a recorded `blocks` trace: ENTER starts the register
with the init probe of the ENTRY edge; each transition applies the probe of its CFG edge (add,
cut: record then reset, exit: record); an exception records its truncated register with the
block it left; a handler restarts at its start value; a generator resumes with the register of
its yield block (a call block, so its path started there).  Decoding the records (``decode``,
``decode_truncated``) must give back every block of every activation, in order.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from naive_decode import raw_events as iter_events
from wholetrace.instrument.cfg import CFG
from wholetrace.errors import InternalError
from wholetrace.instrument.pathnum import Path as Path_, PathNumbering, number_cfg
from wholetrace.store import Recording
from wtutil import record_program

SOURCE = textwrap.dedent('''
    def gen(n):
        for i in range(n):
            if i % 3:
                yield i
            else:
                yield -i
        return n

    def risky(x):
        try:
            if x % 4 == 0:
                raise ValueError(x)
            return 10 // (x % 3)
        except ZeroDivisionError:
            return -1
        finally:
            pass

    def main():
        total = 0
        for v in gen(20):
            try:
                total += risky(v)
            except ValueError:
                total += 1000
            while total > 50:
                total -= 7
                if total % 2:
                    continue
        print(total)

    main()
''')


class Frame:
    """One activation segment (a generator's segment ends at each suspension).

    A resumed generator may have left from several ``yield`` blocks leading to the block it
    resumes in; the trace does not say which (the `path` runtime's register does).  Each
    possibility is a *world* (register, blocks of the open path before ``blocks[start:]``,
    block it is in); a record keeps the worlds whose register decodes to what ran.
    """

    def __init__(self, fid: int) -> None:
        self.fid = fid
        self.last = -2                  # -2: just entered; -1: after an exception
        self.worlds: list[tuple[int, tuple[int, ...], int]] = []
        self.blocks: list[int] = []
        self.start = 0                  # where the open path starts in ``blocks``


def suspends(cfg: CFG, b: int) -> bool:
    return any(cfg.stmts[s].suspends for s in cfg.blocks[b].stmts)


def edge(num: PathNumbering, u: int, v: int) -> int:
    g = num.graph
    (e,) = [e for e in g.out_edges[u] if g.edges[e][1] == v]
    return e


def record(fr: Frame, num: PathNumbering, decode: Callable[[int, int], Path_]) -> None:
    """A record: keep the worlds whose register decodes to the open path's blocks (at least one)."""
    kept = []
    for reg, head, at in fr.worlds:
        try:
            p = decode(reg, at)
        except InternalError:
            continue
        if num.blocks(p) == list(head) + fr.blocks[fr.start:]:
            kept.append((reg, head, at))
    assert kept, f"no register of {fr.worlds} decodes to {fr.blocks[fr.start:]}"
    fr.worlds = kept


def simulate(path: Path, limit: int = 10**9) -> tuple[int, int]:
    """Simulate and check every stream of a `blocks` recording (the first ``limit`` events of
    each); returns (segments, records)."""
    with Recording(path) as rec:
        cfgs = {f.fid: CFG.from_json(f.cfg) for f in rec.functions()}
        nums: dict[int, PathNumbering] = {}
        segments = records = 0
        for st in rec.streams():
            stack: list[Frame] = []
            for k, (kind, v) in enumerate(iter_events(rec.iter_chunks(st.sid))):
                if k == limit:
                    break
                if kind == "F":
                    if v not in nums:
                        nums[v] = number_cfg(cfgs[v])
                        assert not nums[v].fallback
                    stack.append(Frame(v))
                    continue
                fr = stack[-1]
                num, cfg = nums[fr.fid], cfgs[fr.fid]
                g = num.graph
                if kind == "B":
                    records += enter_block(fr, num, cfg, v)
                elif kind == "X":
                    if fr.worlds and fr.last != -1:  # the truncated path: register and the block it left
                        record(fr, num, lambda r, at: num.decode_truncated(r, at))
                        records += 1
                    fr.last = -1
                else:  # E: a return records its path; a suspension and an exception record nothing more
                    stack.pop()
                    segments += 1
                    if fr.last >= 0 and suspends(cfg, fr.last) and cfg.is_generator:
                        assert fr.blocks[fr.start:] in ([fr.last], [])  # the open path starts at the yield
                    elif fr.last >= 0:
                        probe = num.probes[edge(num, fr.last, g.exit)]
                        assert probe.kind in ("exit", "init-exit")
                        record(fr, num, lambda r, at: num.decode(r + probe.value))
                        records += 1
    return segments, records


def enter_block(fr: Frame, num: PathNumbering, cfg: CFG, v: int) -> int:
    """Apply the probe of the transition into ``v`` in every world; return the records made."""
    g = num.graph
    if fr.last == -2:
        entry = [e for e in g.out_edges[g.entry] if g.edges[e][1] == v]
        if entry:  # a fresh activation: the init probe of the ENTRY edge
            fr.worlds = [(num.probes[entry[0]].value, (), v)]
            fr.blocks, fr.last = [v], v
            return 0
        # a resumed generator: its open path started at some yield block y before v
        worlds = []
        for y in {u for u in g.predecessors(v) if suspends(cfg, u)}:
            regs = {num.start_value[y]} if y in num.start_value else set()
            regs |= {num.probes[e].value for e in g.out_edges[g.entry] if g.edges[e][1] == y}
            worlds += [(r, (y,), y) for r in regs]
        assert worlds
        fr.worlds, fr.blocks, fr.start = worlds, [], 0
    elif fr.last == -1:  # a handler entered by an exception: START
        fr.worlds = [(num.start_value[v], (), v)]
        fr.start = len(fr.blocks)
        fr.blocks.append(v)
        fr.last = v
        return 0
    made = 0
    cut: set[tuple[int, tuple[int, ...], int]] = set()
    kept: set[tuple[int, tuple[int, ...], int]] = set()
    want = fr.blocks[fr.start:]
    for r, head, at in fr.worlds:
        e = edge(num, at, v)
        probe = num.probes[e]
        if probe.kind == "cut":  # record the path ending with this cut; the next one starts at v
            made = 1
            try:
                p = num.decode(r + probe.value)
            except InternalError:
                continue
            if num.blocks(p) == list(head) + want and p.end == e:
                cut.add((probe.reset, (), v))
        else:
            assert probe.kind in ("add", "none"), probe
            kept.add((r + probe.value, head, v))
    if made:  # the open path restarts at v: worlds that did not cut keep theirs in ``head``
        kept = {(r, head + tuple(want), at) for r, head, at in kept}
        fr.start = len(fr.blocks)
    fr.worlds = sorted(cut | kept)
    assert fr.worlds, f"no register decodes to {want}"
    fr.blocks.append(v)
    fr.last = v
    return made


def test_inline_program(tmp_path: Path) -> None:
    segments, records = simulate(record_program(tmp_path, "prog", SOURCE))
    assert segments > 20 and records > segments


@pytest.mark.parametrize("name", ["nqueens", "json", "tomllib"])
def test_corpus_programs(name: str, tmp_path: Path) -> None:
    segments, records = simulate(record_program(tmp_path, name), limit=120_000)
    assert segments > 100 and records > segments
