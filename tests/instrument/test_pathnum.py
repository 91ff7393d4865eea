"""Ball–Larus path numbering checked against brute-force path enumeration on the original CFG.

The oracle (``enumerate_paths``) walks the *original* flow graph: a path starts at ENTRY (by
an uncut edge), at the target of a cut or at a dynamic entry, follows uncut edges and ends
at EXIT, by a cut edge, or at a block without successors.  It never looks at the DAG the
numbering builds.  Every path's id must be distinct and in 0..N-1 (so a permutation),
``decode`` must invert ``encode``, the probes simulated along the path (chord increments,
folded initial values, resets and record constants) must record the id, and the register
at every block along the path must decode (truncated) to the prefix.
"""

from __future__ import annotations

import random
from pathlib import Path as FsPath

import pytest
from hypothesis import given, settings, strategies as st

from corpus import PROGRAMS
from wholetrace.errors import InternalError
from wholetrace.instrument.cfg import build_module
from wholetrace.instrument.flowgraph import FlowGraph, from_cfg, random_flow_graph
from wholetrace.instrument.pathnum import (
    END_DEAD,
    END_EXIT,
    END_TRUNCATED,
    MAX_PATHS,
    Path,
    PathNumbering,
    choose_cuts,
    number_cfg,
    number_paths,
    unplaced_edges,
)

BRUTE_LIMIT = 10**4


def oracle_starts(g: FlowGraph, cuts: frozenset[int], dynamic: set[int]) -> set[int]:
    """Cut targets, dynamic entries, and nodes no start reaches that have no uncut way in."""
    starts = {g.edges[e][1] for e in cuts} | (dynamic - {g.entry, g.exit})
    uncut_in = {d for e, (_s, d) in enumerate(g.edges) if e not in cuts}

    def reached() -> set[int]:
        seen = {g.entry, *starts}
        todo = list(seen)
        while todo:
            v = todo.pop()
            for e in g.out_edges[v]:
                w = g.edges[e][1]
                if e not in cuts and w not in seen:
                    seen.add(w)
                    todo.append(w)
        return seen

    r = reached()
    starts |= {v for v in range(g.num_nodes) if v not in r and v not in uncut_in and v not in (g.entry, g.exit)}
    return starts


def enumerate_paths(g: FlowGraph, cuts: frozenset[int], starts: set[int], cap: int) -> list[Path]:
    """Every acyclic path (see module doc); stops early once more than ``cap`` are found."""
    out: list[Path] = []

    def walk(start: int, node: int, edges: list[int]) -> None:
        if len(out) > cap:
            return
        if node == g.exit:
            out.append(Path(start, tuple(edges), END_EXIT))
            return
        outs = g.out_edges[node]
        if not outs and node != g.entry:
            out.append(Path(start, tuple(edges), END_DEAD))
            return
        for e in outs:
            if e in cuts:
                out.append(Path(start, tuple(edges), e))
            else:
                edges.append(e)
                walk(start, g.edges[e][1], edges)
                edges.pop()

    for e in g.out_edges[g.entry]:
        if e not in cuts:
            walk(g.entry, g.edges[e][1], [e])
    for v in sorted(starts):
        walk(v, v, [])
    return out


def simulate(num: PathNumbering, p: Path) -> tuple[int | None, list[tuple[int, int]]]:
    """Run the folded probes along ``p``: (recorded value, [(block, register on entering it)])."""
    g = num.graph
    regs: list[tuple[int, int]] = []
    recorded: int | None = None
    edges = list(p.edges)
    if p.start == g.entry:
        first = num.probes[edges.pop(0)]
        assert first.kind in ("init", "init-exit"), first
        r = first.value
        node = g.edges[p.edges[0]][1]
        if first.kind == "init-exit":
            recorded = r
    else:
        r = num.start_value[p.start]
        node = p.start
    if node != g.exit:
        regs.append((node, r))
    for e in edges:
        probe = num.probes[e]
        assert probe.kind in ("add", "none", "exit"), probe
        if probe.kind == "exit":
            recorded = r + probe.value
        else:
            r += probe.value
            node = g.edges[e][1]
            regs.append((node, r))
    if p.end >= 0:
        probe = num.probes[p.end]
        assert probe.kind == "cut"
        assert probe.reset == num.start_value[g.edges[p.end][1]]
        recorded = r + probe.value
    return recorded, regs


def check_numbering(num: PathNumbering, dynamic: set[int] = set(), limit: int = BRUTE_LIMIT) -> int:
    """All oracle checks for one numbering; returns the number of paths checked (-1: skipped)."""
    g = num.graph
    if num.fallback or num.num_paths > limit:
        return -1
    starts = oracle_starts(g, num.cuts, dynamic)
    assert set(num.starts) == starts
    paths = enumerate_paths(g, num.cuts, starts, BRUTE_LIMIT)
    assert len(paths) == num.num_paths
    ids = [num.encode(p) for p in paths]
    assert sorted(ids) == list(range(num.num_paths))
    for pid, p in zip(ids, paths):
        assert num.decode(pid) == p
        recorded, regs = simulate(num, p)
        assert num.recorded_value(p) == pid
        if p.end != END_DEAD:
            assert recorded == pid, (p, recorded, pid)
        for k, (block, r) in enumerate(regs):
            prefix_edges = p.edges[:k + (1 if p.start == g.entry else 0)]
            assert num.decode_truncated(r, block) == Path(p.start, prefix_edges, END_TRUNCATED)
        if p.end >= 0:  # a d_out names its cut edge, hence where the next path starts
            assert g.edges[num.decode(pid).end][1] in starts
    return len(paths)


# ---------------------------------------------------------------- hand-made graphs

def test_diamond_loop_numbering() -> None:
    # ENTRY -> 2 -> {3,4} -> 5 -> 2 (back) ; 5 -> EXIT
    g = FlowGraph(6, 0, 1, ((0, 2), (2, 3), (2, 4), (3, 5), (4, 5), (5, 2), (5, 1)), frozenset({5}))
    num = number_paths(g)
    assert num.cuts == {5}
    assert num.num_paths == 8  # {ENTRY, after the back edge} x {3, 4} x {back edge, EXIT}
    assert check_numbering(num) == 8


def test_call_blocks_are_cut_except_from_entry() -> None:
    g = FlowGraph(5, 0, 1, ((0, 2), (2, 3), (3, 4), (4, 1)), call_nodes=frozenset({2, 4}))
    num = number_paths(g)
    assert num.cuts == {2}  # the edge into call block 4; ENTRY->2 stays (ENTER says it)
    assert num.probes[0].kind == "init" and num.probes[2].kind == "cut" and num.probes[3].kind == "exit"
    assert [num.blocks(p) for _, p in num.iter_paths()] == [[2, 3], [4]]
    assert number_paths(g, policy="loops").num_paths == 1
    with pytest.raises(InternalError):
        number_paths(g, cuts={0})


def test_thirty_ifs_overflow_then_fallback() -> None:
    # 31 sequential if/else diamonds: 2**31 paths > MAX_PATHS
    edges: list[tuple[int, int]] = [(0, 2)]
    node = 2
    n = 3
    for _ in range(31):
        a, b, j = n, n + 1, n + 2
        edges += [(node, a), (node, b), (a, j), (b, j)]
        node, n = j, n + 3
    edges.append((node, 1))
    g = FlowGraph(n, 0, 1, tuple(edges))
    num = number_paths(g)
    assert not num.fallback and num.overflow_cuts and num.num_paths <= MAX_PATHS
    small = number_paths(g, limit=100)
    assert not small.fallback and small.num_paths <= 100
    assert check_numbering(small) == small.num_paths
    # a single block with more successors than the limit cannot be cut down
    fan = FlowGraph(8, 0, 1, ((0, 2),) + tuple((2, k) for k in range(3, 8)) + tuple((k, 1) for k in range(3, 8)))
    assert number_paths(fan, limit=4).fallback
    with pytest.raises(InternalError):
        number_paths(fan, limit=4).decode(0)


def test_decode_rejects_bad_ids() -> None:
    g = FlowGraph(4, 0, 1, ((0, 2), (2, 3), (2, 1), (3, 1)))
    num = number_paths(g)
    with pytest.raises(InternalError):
        num.decode(num.num_paths)
    with pytest.raises(InternalError):
        num.decode_truncated(-5, 2)
    with pytest.raises(InternalError):
        num.decode_truncated(0, 1)


# ---------------------------------------------------------------- random graphs

graph_params = dict(seed=st.integers(0, 2**32), n=st.integers(1, 14), extra=st.integers(0, 8),
                    loops=st.integers(0, 5), calls=st.floats(0, 1), dyn=st.integers(0, 3))


def random_numbering(seed: int, n: int, extra: int, loops: int, calls: float, dyn: int, random_weights: bool,
                     policy: str = "calls") -> tuple[PathNumbering, set[int]]:
    """The numbering of a random flow graph (``graph_params``) and its dynamic entries."""
    rng = random.Random(seed)
    g = random_flow_graph(rng, n, extra_edges=extra, loops=loops, call_fraction=calls)
    dynamic = {rng.randrange(2, g.num_nodes) for _ in range(dyn)} if g.num_nodes > 2 else set()
    weights = None
    if random_weights:
        from wholetrace.instrument.weighting import EdgeWeights
        weights = EdgeWeights(tuple(rng.random() * 10 for _ in g.edges), 1.0)
    return number_paths(g, policy=policy, starts=dynamic, weights=weights), dynamic  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None)
@given(**graph_params, policy=st.sampled_from(["calls", "loops"]), random_weights=st.booleans())
def test_random_graphs(seed: int, n: int, extra: int, loops: int, calls: float, dyn: int,
                       policy: str, random_weights: bool) -> None:
    num, dynamic = random_numbering(seed, n, extra, loops, calls, dyn, random_weights, policy)
    assert check_numbering(num, dynamic) == num.num_paths or num.num_paths > BRUTE_LIMIT


@settings(max_examples=80, deadline=None)
@given(**graph_params, limit=st.integers(1, 40))
def test_random_graphs_overflow_cutting(seed: int, n: int, extra: int, loops: int, calls: float,
                                        dyn: int, limit: int) -> None:
    rng = random.Random(seed)
    g = random_flow_graph(rng, n, extra_edges=extra + 6, loops=loops, call_fraction=calls)
    num = number_paths(g, policy="loops", limit=limit)
    if num.fallback:
        return
    assert num.num_paths <= limit
    assert check_numbering(num) == num.num_paths


# ---------------------------------------------------------------- corpus functions

def _corpus_files(tmp: FsPath) -> list[str]:
    files: set[str] = set()
    for name, prog in PROGRAMS.items():
        files |= prog.files(tmp / name) if prog.write(tmp / name) else set()
    return sorted(files)


@pytest.fixture(scope="module")
def corpus_cfgs(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, object]]:
    out = []
    for f in _corpus_files(tmp_path_factory.mktemp("corpus")):
        source = FsPath(f).read_text(encoding="utf-8")
        out += [(f, c) for c in build_module(source, f)]
    return out


def test_corpus_functions(corpus_cfgs: list[tuple[str, object]]) -> None:
    checked = skipped = fallback = 0
    for f, cfg in corpus_cfgs:
        num = number_cfg(cfg)  # type: ignore[arg-type]
        # the spanning tree keeps increments off edges without a probe site; what is left there
        # is a record (a cut or a return through `finally`/`with`), for path mode's regions
        assert {num.probes[e].kind for e in unplaced_edges(cfg, num)} <= {"cut", "exit"}  # type: ignore[arg-type]
        dynamic = {b.id for b in cfg.blocks if b.dynamic_entry}  # type: ignore[attr-defined]
        fallback += num.fallback
        n = check_numbering(num, dynamic)
        if n < 0:
            skipped += 1
        else:
            checked += 1
    # 926 functions in the 45 source files of the 17 programs; all have <= 10**4 paths
    assert checked > 800 and skipped <= checked // 100 and fallback == 0


def test_corpus_functions_loops_policy(corpus_cfgs: list[tuple[str, object]]) -> None:
    """Paths that span calls (cut at back edges only): same checks where they fit."""
    checked = 0
    for f, cfg in corpus_cfgs:
        num = number_cfg(cfg, policy="loops")  # type: ignore[arg-type]
        dynamic = {b.id for b in cfg.blocks if b.dynamic_entry}  # type: ignore[attr-defined]
        checked += check_numbering(num, dynamic, limit=2000) >= 0
    assert checked > 800


def test_from_cfg_starts_cover_handlers() -> None:
    src = "def f(x):\n    try:\n        g(x)\n    except KeyError:\n        return 1\n    finally:\n        h()\n"
    (cfg,) = [c for c in build_module(src) if c.qualname == "f"]
    num = number_cfg(cfg)
    graph = from_cfg(cfg)
    handlers = {b.id for b in cfg.blocks if b.dynamic_entry}
    assert handlers and handlers <= set(num.starts)
    assert check_numbering(num, handlers) == num.num_paths
    assert num.graph == graph


# ---------------------------------------------------------------- `wholetrace cfg --paths`

CLI_SOURCE = '''\
def revise(text, seed):
    out = list(text)
    for i in range(len(out)):
        if out[i] == " ":
            continue
        elif i % 3:
            out[i] = out[i].upper()
        else:
            del out[i]
            break
    return out
'''


def test_cfg_paths_cli(tmp_path: FsPath, capsys: pytest.CaptureFixture[str]) -> None:
    import json
    import re

    from wholetrace.cli import main

    src = tmp_path / "m.py"
    src.write_text(CLI_SOURCE)
    (cfg,) = [c for c in build_module(CLI_SOURCE) if c.qualname == "revise"]
    num = number_cfg(cfg)
    assert main(["cfg", f"{src}:revise", "--paths", "0"]) == 0
    out = capsys.readouterr().out
    assert f"paths: {num.num_paths}  (cuts: {len(num.cuts)}" in out
    listed = re.findall(r"^ +(\d+)  (.*)$", out, re.M)
    assert [int(i) for i, _ in listed] == list(range(num.num_paths))
    for i, text in listed:
        blocks = re.findall(r"\bB(\d+)\b", text.split(" -> ")[0])
        assert [int(b) for b in blocks] == num.blocks(num.decode(int(i)))
    assert main(["cfg", f"{src}:revise", "--paths", "2"]) == 0
    assert f"{num.num_paths - 2:,} more" in capsys.readouterr().out
    assert main(["cfg", f"{src}:revise", "--paths", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)[0]["paths"]
    assert data["num_paths"] == num.num_paths and data["cuts"] == sorted(num.cuts)
    for row in data["paths"]:
        p = Path(row["start"], tuple(row["edges"]), row["end"])
        assert num.encode(p) == row["id"] and num.blocks(p) == row["blocks"]
    assert main(["cfg", f"{src}:revise", "--format", "json"]) == 0
    assert "paths" not in json.loads(capsys.readouterr().out)[0]


LOOPS = '''
def all_call(n):
    i = 0
    while i < n:
        i += g(i)
    return i

def no_call(n):
    i = 0
    while i < n:
        i += 1
    return i

def some_call(n):
    i = 0
    while i < n:
        if i % 2:
            i += g(i)
        else:
            i += 1
    return i
'''


@pytest.mark.parametrize("name, back_cut", [("all_call", False), ("no_call", True), ("some_call", True)])
def test_a_back_edge_is_cut_only_if_an_iteration_can_avoid_every_call_block(name: str, back_cut: bool) -> None:
    """Larus's call cut already ends a path in every iteration of a loop whose body always
    enters a call block: its back edge is then left uncut (one record per iteration, not two)."""
    cfg = next(c for c in build_module(LOOPS) if c.qualname == name)
    g = from_cfg(cfg)
    cuts = choose_cuts(g)
    assert bool(cuts & set(g.back_edges)) is back_cut
    assert set(choose_cuts(g, "loops")) == set(g.back_edges)
    num = number_cfg(cfg)
    ids = sorted(pid for pid, _p in num.iter_paths())
    assert ids == list(range(num.num_paths))   # still a bijection onto 0..N-1
