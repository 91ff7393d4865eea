"""Per-activation folding (``instrument.modes.fold_entry``, ``runtime.fold``): the entry block a
function's ENTER implies is neither lost nor duplicated.

Oracles: the sys.settrace line counts (``tests/oracles``) on a program whose functions test
each case (a loop at the top re-enters the entry block: never folded; generators resumed by
``send``/``throw``; exceptions raised in the entry block; the recursion limit hit at entry),
in every trace mode; the stored `blocks` stream read back event by event (every ENTER of a
folded function is followed by its entry block, once); and a naive twin of the unfolding.
"""

from __future__ import annotations

import ast
import random
import textwrap
from pathlib import Path

import numpy as np
import pytest

from oracles.settrace_lines import line_counts
from wtutil import compare_lines, run_plain, run_recorded
from wholetrace.events import ENTER_BASE, LEAVE, enter_code
from wholetrace.instrument.cfg import build_cfg
from wholetrace.instrument.loader import iter_functions
from wholetrace.instrument.modes import folded_entry, make_plan
from wholetrace.runtime.fold import FoldTable, chunk_events, unfolded_length
from wholetrace.store import Recording

FOLD = '''
    import sys

    def plain(x):
        y = x + 1
        return y

    def top_while(n):
        while n > 0:
            n -= 1
        return n

    def top_for(xs):
        for x in xs:
            if x < 0:
                return x
        return 0

    def raises_at_entry(x):
        return 1 // x

    def raises_later(x):
        if x:
            return [][x]
        return x

    def gen(n):
        got = yield n
        while got:
            try:
                got = yield got * 2
            except KeyError:
                got = yield -1
        return "done"

    async def no_await(x):
        return x * 3

    async def awaits(x):
        import asyncio
        await asyncio.sleep(0)
        return x + 1

    class C:
        def __init__(self, v):
            self.v = v

        @property
        def bad(self):
            raise AttributeError("bad")

        def __getattr__(self, name):
            return len(name)

    def run():
        total = 0
        for i in range(4):
            total += plain(i) + top_while(i) + top_for([i, -i])
            try:
                total += raises_at_entry(i % 2)
            except ZeroDivisionError:
                total += 100
            try:
                total += raises_later(i % 2)
            except IndexError:
                total += 1000
        g = gen(2)
        print(next(g), g.send(5), g.throw(KeyError("k")), g.send(0) if False else None)
        try:
            g.send(0)
        except StopIteration as e:
            print("stop", e.value)
        import asyncio
        print(asyncio.run(no_await(4)), asyncio.run(awaits(4)))
        c = C(3)
        print(c.bad, c.v)
        print(total)

    run()
'''


def _cfgs(source: str) -> dict[str, object]:
    tree = ast.parse(textwrap.dedent(source))
    return {q: build_cfg(fn, q) for fn, q in iter_functions(tree)}


def test_which_entry_blocks_fold() -> None:
    cfgs = _cfgs(FOLD)
    folded = {q: folded_entry(c) for q, c in cfgs.items()}  # type: ignore[arg-type]
    assert folded["top_while"] == -1          # the loop header's back edge enters it again
    assert folded["gen"] == -1                # ENTER also marks a resumption
    assert folded["<module>"] == -1           # module and class bodies are not folded
    assert folded["C"] == -1
    for q in ("plain", "top_for", "raises_at_entry", "raises_later", "run", "C.bad", "no_await",
              "awaits"):   # a coroutine's ENTER is its start: an await records no resumption
        assert folded[q] >= 2, q
    for mode in ("blocks", "witness", "branches", "path"):
        plan = make_plan(mode, cfgs["plain"], 0)  # type: ignore[arg-type]
        assert plan.folded_entry == (folded["plain"] if plan.strategy == "trace" else -1), mode
    assert make_plan("full", cfgs["plain"], 0).folded_entry == -1  # type: ignore[arg-type]
    assert make_plan("count", cfgs["plain"], 0).folded_entry == -1  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["blocks", "witness", "branches", "path", "full"])
def test_fold_program_against_the_oracle(mode: str, tmp_path: Path) -> None:
    script = tmp_path / "fold.py"
    script.write_text(textwrap.dedent(FOLD))
    plain = run_plain(script)
    assert plain.returncode == 0, plain.stderr
    oracle = line_counts(script, [], {str(script)})
    out = tmp_path / f"{mode}.wt"
    proc = run_recorded(script, out, mode=mode, options=("--no-cache",))
    assert (proc.returncode, proc.stdout, proc.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    assert compare_lines(out, {str(script)}, oracle) >= 30


def test_every_folded_enter_is_followed_by_its_entry_block_once(tmp_path: Path) -> None:
    script = tmp_path / "fold.py"
    script.write_text(textwrap.dedent(FOLD))
    out = tmp_path / "blocks.wt"
    assert run_recorded(script, out, options=("--no-cache",)).returncode == 0
    with Recording(out) as rec:
        entry = {f.fid: f.cfg["plan"].get("folded_entry", -1) for f in rec.functions()}
        names = {f.fid: f.qualname for f in rec.functions()}
        ev = np.concatenate([c for st in rec.streams() for c in rec.iter_chunks(st.sid)]).tolist()
    cfgs = _cfgs(FOLD)
    seen = 0
    for i, v in enumerate(ev):
        if v <= -ENTER_BASE:
            fid = -v - ENTER_BASE
            b = folded_entry(cfgs[names[fid]])  # type: ignore[arg-type]
            assert entry[fid] == b, names[fid]
            if b >= 0:
                seen += 1
                assert ev[i + 1] == b, (names[fid], ev[i:i + 3])
                assert ev[i + 2] != b or names[fid] == "top_for", (names[fid], ev[i:i + 3])
    assert seen > 20


DEEP = '''
    import sys

    def deep(n):
        global DEPTH
        DEPTH = n
        return deep(n + 1)

    sys.setrecursionlimit(120)
    try:
        deep(0)
    except RecursionError as e:
        print("limit", type(e).__name__)
    print(DEPTH)
'''


def test_recursion_limit_hit_at_entry(tmp_path: Path) -> None:
    """The settrace oracle cannot count here (its tracer changes the depth reached): the
    program counts its own activations, and each entered one has its entry block once."""
    from wtutil import profiles

    script = tmp_path / "deep.py"
    script.write_text(textwrap.dedent(DEEP))
    plain = run_plain(script)
    out = tmp_path / "blocks.wt"
    proc = run_recorded(script, out, options=("--no-cache",))
    assert proc.returncode == plain.returncode == 0
    depth = int(proc.stdout.split()[-1])
    prof = next(p for (_f, q, _l), p in profiles(out).items() if q == "deep")
    stmt = next(i for i, st in enumerate(prof.cfg.stmts) if st.line == 6)   # DEPTH = n
    assert int(prof.stmts[stmt]) == depth + 1


def _naive_unfold(chunk: list[int], table: list[int]) -> list[int]:
    out: list[int] = []
    for v in chunk:
        out.append(v)
        if v <= -ENTER_BASE and -v - ENTER_BASE < len(table) and table[-v - ENTER_BASE] >= 0:
            out.append(table[-v - ENTER_BASE])
    return out


def test_chunk_events_matches_its_naive_twin() -> None:
    rnd = random.Random(7)
    for _ in range(200):
        nf = rnd.randint(0, 6)
        table = [rnd.choice([-1, 2, 3, 5]) for _ in range(nf)]
        chunk = [rnd.choice([LEAVE, -2, 0, 4, 9, enter_code(rnd.randint(0, nf + 2))]) for _ in range(rnd.randint(0, 30))]
        tab = FoldTable()
        tab.register(0, table)
        got = chunk_events(chunk, tab.array)
        assert got.dtype == np.int32
        assert got.tolist() == _naive_unfold(chunk, table)
        assert unfolded_length(chunk, tab.array) == len(got)


def test_chunk_events_rejects_values_that_are_no_events() -> None:
    from wholetrace.errors import StoreError

    with pytest.raises(StoreError):
        chunk_events([1, 1 << 40], None)
    with pytest.raises(StoreError):
        chunk_events([1, None], None)  # type: ignore[list-item]
