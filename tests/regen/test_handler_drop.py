"""Finalisers run when a handled exception is dropped (the end of an ``except`` body, a
``break``/``continue`` out of it or out of a ``finally``): blocks mode records those activations
before the next block, and witness/branches regeneration must put them there too (review19d
LOW-2: the witness of the edge leaving the handler was recorded before the drop, so the
``__del__`` came out one block late).  Oracle: the blocks recording of the same run."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from regenutil import compare
from wtutil import run_plain, run_recorded

HEAD = '''\
LOG = []
class Boom(Exception):
    pass
class D:
    def __init__(self, k):
        self.k = k
    def __del__(self):
        LOG.append(("del", self.k))
def t(k):
    d = D(k)
    raise Boom(k)
def mark(s):
    LOG.append(s)
'''

CASES = {
    # the review's reproducer: a call-free block between the handler and the next call
    "fall": '''
        def f():
            try:
                t(1)
            except Boom:
                mark("h")
            x = 1
            mark("after")
    ''',
    # handlers nested: the inner handler's end runs the inner exception's finaliser
    "nested_inner": '''
        def f():
            try:
                t(5)
            except Boom:
                try:
                    t(6)
                except Boom:
                    mark("inner")
                y = 1
                mark("outer")
            z = 2
            mark("after")
    ''',
    # ``except ... as e`` in a loop: the drop also deletes ``e``
    "as_loop": '''
        def f():
            n = 0
            for i in range(3):
                try:
                    t(i)
                except Boom as e:
                    mark(i)
                n += 1
            mark(n)
    ''',
}

# The handler's end is followed directly by a call block (or a loop header reached by
# ``break``/``continue``), or the block after it is also entered by an edge without a call
# separator (``loop_back``): the edge leaving the handler is the only place for the witness
# that separates the two calls at no cost to the normal path, so it is still recorded
# before the drop (design.md, wave 21).
OPEN = {
    "fall_into_call": '''
        def f():
            try:
                t(2)
            except Boom as e:
                mark("h")
            mark("after")
    ''',
    # the handler's end goes back to the loop header, which the loop's entry also reaches
    # without a witness: moving the witness past the header would cost that path one
    "loop_back": '''
        def u(n):
            if n < 2:
                t(n)
        def f():
            n = 0
            while True:
                try:
                    u(n)
                except Boom:
                    mark("h")
                    n += 1
                else:
                    break
            mark("after")
    ''',
    "nocall_handler": '''
        def f():
            n = 0
            for i in range(2):
                try:
                    t(4)
                except Boom:
                    n += 1
                n += 2
            mark(n)
    ''',
}


def _program(body: str) -> str:
    return HEAD + textwrap.dedent(body) + "f()\nf()\nprint(LOG)\n"


def _check(tmp_path: Path, source: str) -> None:
    script = tmp_path / "prog.py"
    script.write_text(source)
    plain = run_plain(script)
    assert plain.returncode == 0 and "del" in plain.stdout
    blocks = tmp_path / "blocks.wt"
    assert run_recorded(script, blocks, mode="blocks").stdout == plain.stdout
    for mode in ("witness", "branches"):
        wt = tmp_path / f"{mode}.wt"
        r = run_recorded(script, wt, mode=mode)
        assert (r.returncode, r.stdout) == (0, plain.stdout)
        compare(blocks, wt, exact=True, twin=True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_finaliser_at_handler_end_regenerates_blocks(tmp_path: Path, name: str) -> None:
    _check(tmp_path, _program(CASES[name]))


@pytest.mark.xfail(strict=True, reason="witness of a handler's exit edge recorded before the drop (design.md wave 21)")
@pytest.mark.parametrize("name", sorted(OPEN))
def test_finaliser_at_handler_end_still_open(tmp_path: Path, name: str) -> None:
    _check(tmp_path, _program(OPEN[name]))


def test_drop_edges_and_the_separator_after_the_drop() -> None:
    """Static: the edge leaving the ``except`` body is a drop edge (hand-checked block ids), the
    placements witness the call-free block's out-edge instead; a CFG read back has no AST."""
    from wholetrace.instrument.cfg import CFG, build_module
    from wholetrace.instrument.witnesses import drop_edges, placement_for

    cfg = next(c for c in build_module(_program(CASES["fall"])) if c.qualname == "f")
    # B2 try body (t), B3 handler (mark "h"), B4 ``x = 1``, B5 mark("after")
    pairs = [(e.src, e.dst) for e in cfg.edges]
    assert [pairs[e] for e in drop_edges(cfg)] == [(3, 4)]
    for kind in ("witness", "branches"):
        witnessed = {pairs[e] for e in placement_for(cfg, kind).witnessed}
        assert (3, 4) not in witnessed and (4, 5) in witnessed
    assert drop_edges(CFG.from_json(cfg.to_json())) == frozenset()


@pytest.mark.parametrize("name", sorted(CASES) + sorted(OPEN))
def test_moved_separator_costs_no_path_a_witness(name: str) -> None:
    """Static (review21c MED-1): against the placement without drop edges, each added witness
    edge leaves a block entered only by drop edges or by edges whose witness went, so no path
    that does not pass a drop edge records more witnesses (the try body's path in ``fall``)."""
    from wholetrace.instrument import witnesses as W
    from wholetrace.instrument.cfg import build_module

    cfg = next(c for c in build_module(_program((CASES | OPEN)[name])) if c.qualname == "f")
    drops = W.drop_edges(cfg)
    for kind in ("witness", "branches"):
        new = set(W.placement_for(cfg, kind).witnessed)
        try:
            saved, W.drop_edges = W.drop_edges, lambda cfg: frozenset()
            old = set(W.placement_for(cfg, kind).witnessed)
        finally:
            W.drop_edges = saved
        assert len(new) <= len(old)
        for a in new - old:
            ins = {i for i, e in enumerate(cfg.edges) if e.dst == cfg.edges[a].src}
            assert ins and ins <= drops | (old - new), (kind, a)
