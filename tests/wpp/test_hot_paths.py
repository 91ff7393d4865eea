"""`wholetrace paths` and path symbols in `hot`: a path-mode stream built by hand from real CFGs and their
path numberings (``pathnum``), with the truth counted while it is generated.

Oracles: the generator's own tally of the paths it emitted (full paths, and truncated ones by
their register), against ``wpp.paths.path_profile`` computed from the grammar's frequencies;
``marker_grams`` against a scan of the expanded sequence (random grammars); the pieces `hot`
renders for path symbols against the blocks of the paths emitted.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from grammars import PARSE_FUNCTIONS, expand, make_grammar, random_grammar
from wholetrace.events import EXC, LEAVE, enter_code
from wholetrace.grammar import sequitur
from wholetrace.instrument.cfg import build_module
from wholetrace.instrument.pathnum import END_DEAD, END_EXIT, PathNumbering, number_cfg
from wholetrace.wpp.intern import PATH_LEAVE_AT, EventInterner
from wholetrace.wpp.meaning import LEAVE_PATH, pieces, terminal_costs
from wholetrace.wpp.paths import path_profile, paths_json
from wholetrace.wpp.queries import marker_grams
from wholetrace.wpp.symbols import FUSED, PATH
from wholetrace.wpp.view import StreamGrammar, WppView, split_view

SOURCE = PARSE_FUNCTIONS
assert LEAVE_PATH == PATH_LEAVE_AT


@settings(max_examples=300, deadline=None)
@given(rules=random_grammar(), k=st.integers(1, 4), marker=st.integers(0, 3))
def test_marker_grams_equal_a_scan_of_the_expansion(rules: list[list[int]], k: int, marker: int) -> None:
    e = expand(rules, 0)
    flags = np.zeros(4, bool)
    flags[marker] = True
    rows, counts = marker_grams(make_grammar(rules), flags, k)
    got = Counter({tuple(r): int(c) for r, c in zip(rows.tolist(), counts.tolist())})
    want = Counter(tuple([x] + [e[i + j] if i + j < len(e) else -1 for j in range(1, k + 1)])
                   for i, x in enumerate(e) if flags[x])
    assert got == want


@pytest.mark.nojit
def test_marker_grams_figure5() -> None:
    """abbcabbcabbc (S -> A A A, A -> B C, B -> a b, C -> b c): every c with the 2 symbols after it."""
    g = make_grammar([[-1, -1, -1], [-2, -3], [0, 1], [1, 2]])
    rows, counts = marker_grams(g, np.array([False, False, True]), 2)
    assert rows.tolist() == [[2, -1, -1], [2, 0, 1]] and counts.tolist() == [1, 2]


class Generator:
    """Random activations of the numbered functions, as `path` mode records them (``events``)."""

    def __init__(self, seed: int) -> None:
        cfgs = build_module(SOURCE, "prog.py")[1:]
        self.cfgs = {i: c for i, c in enumerate(cfgs)}
        self.nums: dict[int, PathNumbering] = {i: number_cfg(c) for i, c in self.cfgs.items()}
        self.rng = random.Random(seed)
        self.truth: Counter[tuple[int, int, bool, tuple[int, ...]]] = Counter()
        self.events: list[int] = []
        self.emitted: list[tuple[int, tuple[int, ...]]] = []   # (fid, blocks) of every path, in order
        self.paths = {f: list(n.iter_paths()) for f, n in self.nums.items()}

    def path(self, f: int, ends: tuple[int, ...], ret: bool) -> None:
        num = self.nums[f]
        pid, p = self.rng.choice([(i, p) for i, p in self.paths[f] if (p.end in ends) == (p.end in (END_EXIT,))
                                  and p.end != END_DEAD])
        self.events.append(LEAVE_PATH + pid if ret else pid)
        blocks = tuple(num.blocks(p))
        self.truth[f, pid, False, blocks] += 1
        self.emitted.append((f, blocks))

    def exception(self, f: int, caught: bool) -> None:
        num = self.nums[f]
        while True:
            pid, p = self.rng.choice(self.paths[f])
            blocks = num.blocks(p)
            if not blocks:
                continue
            b = self.rng.choice(blocks)
            r = pid - num.completion[b]
            try:
                cut = num.decode_truncated(r, b)
            except Exception:
                continue
            break
        stmt = self.cfgs[f].blocks[b].stmts[0]
        self.events += [EXC, int(stmt), r]
        cb = tuple(num.blocks(cut))
        self.truth[f, r + num.completion[b], True, cb] += 1
        self.emitted.append((f, cb))
        if caught:
            self.events.append(self.rng.randrange(2, len(self.cfgs[f].blocks)))   # H

    def activation(self, depth: int) -> None:
        f = self.rng.choice(list(self.cfgs))
        self.events.append(enter_code(f))
        for _ in range(self.rng.randint(0, 3)):
            if depth < 3 and self.rng.random() < 0.3:
                self.activation(depth + 1)
            elif self.rng.random() < 0.15:
                self.exception(f, caught=True)
            else:
                self.path(f, (END_EXIT,), ret=False)
        if self.rng.random() < 0.2:
            self.exception(f, caught=False)
            self.events.append(LEAVE)
        else:
            self.path(f, (END_EXIT,), ret=True)


def view_of(gen: Generator, fuse: bool = False) -> WppView:
    interner = EventInterner(PATH, PATH_LEAVE_AT, fuse=fuse)
    codes = interner.codes(0, np.array(gen.events, np.int32), final=True)
    g = sequitur(codes)
    assert np.array_equal(g.expand(), codes)
    return WppView("synthetic.wt", "path", "stored", interner.terminals(), [StreamGrammar(0, "main", g)],
                   dict(gen.cfgs), {f: "prog.py" for f in gen.cfgs}, dict(gen.nums)), codes


def test_path_profile_counts_equal_the_generated_paths() -> None:
    for seed in range(6):
        gen = Generator(seed)
        for _ in range(150 + 40 * seed):
            gen.activation(0)
        view, _codes = view_of(gen)
        got = Counter({(p.fid, p.pid, p.truncated, p.blocks): p.count for p in path_profile(view)})
        assert got == gen.truth
        assert any(k[2] for k in got) and sum(got.values()) > 300
    out = paths_json(view, path_profile(view), limit=0)
    assert sum(fn["count"] for fn in out) == sum(gen.truth.values())
    for fn in out:
        counts = [p["count"] for p in fn["paths"]]
        assert counts == sorted(counts, reverse=True) and fn["distinct"] == len(fn["paths"])
        cfg = next(c for c in gen.cfgs.values() if c.qualname == fn["function"])
        for p in fn["paths"]:
            assert p["lines"] == [cfg.stmts[s].line for b in p["blocks"] for s in cfg.blocks[b].stmts]
    top = paths_json(view, path_profile(view), function="parse", limit=2)
    assert [fn["function"] for fn in top] == ["parse"] and len(top[0]["paths"]) == 2


def test_pieces_of_path_symbols_are_the_paths_emitted() -> None:
    gen = Generator(11)
    for _ in range(40):
        gen.activation(0)
    view, codes = view_of(gen)
    ps = pieces(view, codes)
    assert [(p.fid, p.blocks) for p in ps if p.blocks] == gen.emitted
    # depth follows ENTER and the returning paths / LEAVE: the first activation's pieces sit at its depth
    assert min(p.depth for p in ps) == 0


def test_pieces_and_costs_of_an_unsplit_view_are_the_split_view_s() -> None:
    """The analyses split fused terminals first (``split_view``), but ``pieces`` and
    ``terminal_costs`` also read a view built straight from a fusing interner (what their fused
    branches are for): the same pieces, and a fused terminal costs what its parts cost."""
    gen = Generator(12)
    for _ in range(60):
        gen.activation(0)
    fused, codes = view_of(gen, fuse=True)
    t = fused.terminals
    assert np.any(np.isin(t.kind[codes], FUSED))
    split = split_view(fused)
    (g,) = [s.grammar for s in split.streams]
    assert pieces(fused, codes) == pieces(split, g.expand())
    cost_fused, cost_split = terminal_costs(fused), terminal_costs(split)
    st_ = split.terminals
    key = {(int(k), int(f), int(v)): x for x, (k, f, v) in enumerate(zip(st_.kind, st_.fid, st_.value))}
    for x in np.unique(codes).tolist():
        assert cost_fused[x] == sum(cost_split[key[p]] for p in t.parts(x))


def test_split_view_keeps_each_function_s_numbering_rule() -> None:
    """Splitting must not forget how each function was numbered: a recording made before free
    records (``old_inc``) renumbered with today's rule decodes truncated paths to other
    prefixes (review12b: old recordings' ``paths`` went wrong through ``split_view``)."""
    gen = Generator(12)
    for _ in range(20):
        gen.activation(0)
    fused, _codes = view_of(gen, fuse=True)
    fused.old_inc = {3, 5}
    fused.quiet = {3: frozenset({1})}
    split = split_view(fused)
    assert split.terminals is not fused.terminals
    assert split.old_inc == {3, 5} and split.quiet == {3: frozenset({1})}


# ---------------------------------------------------------------- real `path` recordings

def expanded_profile(view: WppView, events: list[int]) -> Counter[tuple[int, int, bool, tuple[int, ...]]]:
    """Path counts from a walk over the expanded events (``events`` encoding of `path` streams)."""
    from wholetrace.events import ENTER_BASE, RERAISE
    from wholetrace.instrument.pathnum import END_TRUNCATED  # noqa: F401  (the decoder marks truncation)

    out: Counter[tuple[int, int, bool, tuple[int, ...]]] = Counter()
    stack: list[int] = []
    i = 0
    while i < len(events):
        v = events[i]
        f = stack[-1] if stack else -1
        num = view.numbering(f) if f >= 0 else None
        if v <= -ENTER_BASE:
            stack.append(-v - ENTER_BASE)
        elif v == LEAVE:
            stack.pop()
        elif v in (EXC, RERAISE):
            stmt = events[i + 1]
            i += 2 if v == EXC else 3
            if num is not None:
                r = events[i]
                i += 1
                for b in [int(view.cfgs[f].stmts[stmt].block)] + list(range(2, len(view.cfgs[f].blocks))):
                    try:
                        p = num.decode_truncated(r, b)
                    except Exception:
                        continue
                    out[f, r + num.completion[b], True, tuple(num.blocks(p))] += 1
                    break
                if i < len(events) and events[i] >= 0:
                    i += 1          # the handler block
            continue
        elif v >= 0 and num is not None:
            pid = v - LEAVE_PATH if v >= LEAVE_PATH else v
            out[f, pid, False, tuple(num.blocks(num.decode(pid)))] += 1
            if v >= LEAVE_PATH:
                stack.pop()
        i += 1
    return out


def test_path_recordings_profile_equals_the_expanded_trace(tmp_path: Path) -> None:
    from wholetrace.instrument.modes import MODES

    if "path" not in MODES:
        pytest.skip("record --mode path is not on this branch yet (branch pathport)")
    from wholetrace.wpp.stored import StoredWpp
    from wholetrace.store import Recording
    from wholetrace.wpp.view import open_view
    from wtutil import run_recorded

    script = tmp_path / "prog.py"
    script.write_text(SOURCE + "\nfor l in ['1 2 x 3.5', '10 yy 7', 'a b c', ''] * 30:\n    total(l)\n")
    out = tmp_path / "p.wt"
    proc = run_recorded(script, out, mode="path", options=("--wpp",))
    assert proc.returncode == 0, proc.stderr
    view = open_view(str(out))
    assert view.source == "stored" and view.symbol_kind == "path"
    with Recording(out) as rec:
        wpp = StoredWpp(rec)
        want: Counter[tuple[int, int, bool, tuple[int, ...]]] = Counter()
        for s in wpp.streams:
            want += expanded_profile(view, wpp.events(s.sid).tolist())
    got = Counter({(p.fid, p.pid, p.truncated, p.blocks): p.count for p in path_profile(view)})
    assert got == want and any(k[2] for k in got)
    # recorded without the WPP (the default): a path grammar is built from the raw events, same profile
    import subprocess
    import sys

    from wtutil import ENV

    raw = tmp_path / "raw.wt"
    proc = subprocess.run([sys.executable, "-m", "wholetrace.cli", "record", "--mode", "path", "--no-wpp", "-q",
                           "-o", str(raw), str(script)], capture_output=True, text=True, env=ENV, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    built = open_view(str(raw))
    assert built.source == "built" and built.symbol_kind == "path"
    assert Counter({(p.fid, p.pid, p.truncated, p.blocks): p.count for p in path_profile(built)}) == want
    import json

    from wholetrace.cli import main

    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["paths", str(out), "--json", "--limit", "0"]) == 0
    doc = json.loads(buf.getvalue())
    assert sum(p["count"] for fn in doc["functions"] for p in fn["paths"]) == sum(want.values())
    for fn in doc["functions"]:
        assert set(fn) == {"function", "file", "paths"}
        assert all(set(p) == {"id", "count", "blocks", "lines", "truncated"} for p in fn["paths"])
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["hot", str(out), "--json", "--min-length", "3"]) == 0
    subs = json.loads(buf.getvalue())["subpaths"]
    assert subs and all(p["blocks"] for s in subs for p in s["paths"])
