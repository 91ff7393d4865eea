"""Invariants of the CFG builder on every function of real code (stdlib packages and the
pyperformance benchmarks), plus a differential check against CPython's own compiler:
every line CPython emits code for is covered by a live statement of our CFG."""

from __future__ import annotations

import ast
import functools
import glob
import importlib.util
import json
import os
import textwrap
from collections import defaultdict

import pytest

from wholetrace.ids import ENTRY, EXIT, FIRST_BLOCK
from wholetrace.instrument.cfg import (EDGE_KINDS, STMT_KINDS, CFG, build_cfg, build_module,
                                       fingerprint, iter_functions)

_STD = os.path.dirname(os.__file__)


def _corpus() -> list[str]:
    files: list[str] = []
    for pkg in ("json", "tomllib", "re", "asyncio"):
        files += sorted(glob.glob(os.path.join(_STD, pkg, "*.py")))
    files += [os.path.join(_STD, "difflib.py"), os.path.join(_STD, "_pydecimal.py")]
    spec = importlib.util.find_spec("pyperformance")
    assert spec is not None and spec.submodule_search_locations, "pyperformance is a dev dependency"
    loc = spec.submodule_search_locations[0]
    bms = sorted(glob.glob(os.path.join(loc, "data-files", "benchmarks", "bm_*", "run_benchmark.py")))
    assert len(bms) >= 12
    return files + bms


CORPUS = _corpus()


def _id(path: str) -> str:
    return os.path.relpath(path, _STD) if path.startswith(_STD) else path.split(os.sep)[-2]


@functools.lru_cache(maxsize=None)
def _load(path: str) -> tuple[str, ast.Module, list[CFG]]:
    with open(path, encoding="utf-8") as f:
        source = f.read()
    tree = ast.parse(source, path)
    return source, tree, [build_cfg(fn, q) for fn, q in iter_functions(tree)]


# --------------------------------------------------------------------------- invariants

#: statement kinds that may end a block with two or more successors
BRANCHING = {"if", "while", "for-next", "case", "finally-end", "with-exit"}


def _order_key(cfg: CFG, i: int) -> tuple[int, int, int]:
    s = cfg.stmts[i]
    if s.kind in ("for-iter", "for-next"):      # the iterable is evaluated before the step
        node = s.node
        assert node is not None
        return (node.lineno, node.col_offset, 0 if s.kind == "for-iter" else 1)  # type: ignore[attr-defined]
    return (s.line, s.col, 0)


def check_invariants(cfg: CFG) -> None:  # noqa: C901 - one block per invariant
    where = cfg.qualname
    n = len(cfg.blocks)
    # block ids dense from 2, ENTRY = 0 and EXIT = 1 empty pseudo-blocks
    assert [b.id for b in cfg.blocks] == list(range(n)), where
    assert cfg.blocks[ENTRY].stmts == [] and cfg.blocks[EXIT].stmts == [], where
    assert not cfg.blocks[ENTRY].dynamic_entry and not cfg.blocks[EXIT].dynamic_entry, where
    for b in cfg.blocks[FIRST_BLOCK:]:
        assert b.stmts, f"{where}: empty block B{b.id}"
    # blocks are numbered in source order of their first statement
    firsts = [b.stmts[0] for b in cfg.blocks[FIRST_BLOCK:]]
    assert firsts == sorted(firsts), where

    # statement ids dense and in source order
    assert [s.id for s in cfg.stmts] == list(range(len(cfg.stmts))), where
    keys = [_order_key(cfg, i) for i in range(len(cfg.stmts))]
    assert keys == sorted(keys), where
    for s in cfg.stmts:
        assert s.kind in STMT_KINDS, where
        assert (s.line, s.col) <= (s.end_line, s.end_col), f"{where}: span of s{s.id}"
        assert cfg.firstline <= s.line and s.end_line <= cfg.lastline or cfg.kind == "module", where
        assert not s.suspends or s.calls, f"{where}: s{s.id} suspends without being call-capable"

    # every statement in exactly one block, or dead (block -1)
    seen: dict[int, int] = {}
    for b in cfg.blocks:
        for sid in b.stmts:
            assert sid not in seen, f"{where}: s{sid} in B{seen[sid]} and B{b.id}"
            seen[sid] = b.id
    for s in cfg.stmts:
        assert s.block == seen.get(s.id, -1), f"{where}: s{s.id}.block"
    live = set(seen)
    for b in cfg.blocks[FIRST_BLOCK:]:
        # call-capable statements start blocks, suspending ones end them
        for pos, sid in enumerate(b.stmts):
            st = cfg.stmts[sid]
            assert not st.calls or pos == 0, f"{where}: call-capable s{sid} inside B{b.id}"
            assert not st.suspends or pos == len(b.stmts) - 1, f"{where}: yield s{sid} inside B{b.id}"

    # edges: kinds, uniqueness, ENTRY/EXIT
    succ: dict[int, list[int]] = defaultdict(list)
    pred: dict[int, list[int]] = defaultdict(list)
    pairs = set()
    for e in cfg.edges:
        assert 0 <= e.src < n and 0 <= e.dst < n, where
        assert e.kind in EDGE_KINDS, f"{where}: edge kind {e.kind}"
        assert (e.src, e.dst) not in pairs, f"{where}: duplicate edge B{e.src}->B{e.dst}"
        pairs.add((e.src, e.dst))
        succ[e.src].append(e.dst)
        pred[e.dst].append(e.src)
        last = cfg.stmts[cfg.blocks[e.src].stmts[-1]] if e.src >= FIRST_BLOCK else None
        if e.kind in ("next", "exhausted"):
            assert last is not None and last.kind == "for-next", where
        if e.kind in ("true", "false"):
            assert last is not None and last.kind in ("if", "while", "case"), where
        if e.kind == "finally-dispatch":
            assert last is not None and last.kind == "finally-end", where
        if e.back:
            assert e.dst in cfg.loop_headers, f"{where}: back edge to non-header B{e.dst}"
    assert not succ[EXIT] and not pred[ENTRY], where
    assert len(succ[ENTRY]) == 1, where
    for b in cfg.blocks[FIRST_BLOCK:]:
        last = cfg.stmts[b.stmts[-1]]
        if len(succ[b.id]) > 1:
            assert last.kind in BRANCHING, f"{where}: B{b.id} branches after {last.kind} {last.label}"
        if not succ[b.id]:
            # raise, or the end of a finally entered only by an exception (it re-raises)
            assert last.label == "Raise" or last.kind == "finally-end", \
                f"{where}: B{b.id} has no successor after {last.label}"
    for h in cfg.loop_headers:
        assert cfg.stmts[cfg.blocks[h].stmts[0]].kind in ("while", "for-next"), where

    # reachability: from ENTRY, and from dynamic entries (handlers, finally bodies, __exit__)
    reach: set[int] = set()
    stack = [ENTRY] + [b.id for b in cfg.blocks if b.dynamic_entry]
    while stack:
        v = stack.pop()
        if v not in reach:
            reach.add(v)
            stack.extend(succ[v])
    assert reach >= set(range(FIRST_BLOCK, n)), f"{where}: unreachable blocks {set(range(2, n)) - reach}"

    # back edges break every cycle (Ball-Larus numbering needs a DAG)
    indeg = [0] * n
    fwd: dict[int, list[int]] = defaultdict(list)
    for e in cfg.edges:
        if not e.back:
            fwd[e.src].append(e.dst)
            indeg[e.dst] += 1
    ready = [v for v in range(n) if indeg[v] == 0]
    done = 0
    while ready:
        v = ready.pop()
        done += 1
        for w in fwd[v]:
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(w)
    assert done == n, f"{where}: cycle without a back edge"

    # the rewriter finds every live statement through its anchor
    assert sorted(cfg.anchors.values()) == list(range(len(cfg.stmts))), where
    assert live <= set(range(len(cfg.stmts)))

    # JSON round trip (determinism across processes: test_fingerprints_and_placements_in_another_process)
    back = CFG.from_json(json.loads(json.dumps(cfg.to_json())))
    assert back == cfg, where
    assert back.fingerprint == fingerprint(back), where


def _anchor_kinds(s: ast.stmt) -> list[tuple[ast.AST, str]]:
    if isinstance(s, ast.If):
        return [(s, "if")]
    if isinstance(s, ast.While):
        return [(s, "while")]
    if isinstance(s, (ast.For, ast.AsyncFor)):
        return [(s, "for-iter"), (s, "for-next")]
    if isinstance(s, (ast.With, ast.AsyncWith)):
        return [(it, k) for it in s.items for k in ("with-enter", "with-exit")]
    if isinstance(s, ast.Match):
        return [(s, "match")] + [(c, "case") for c in s.cases]
    if isinstance(s, (ast.Try, ast.TryStar)):
        return []
    if isinstance(s, (ast.Global, ast.Nonlocal)):
        return []
    return [(s, "simple")]


def _own_statements(fn: ast.AST) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    stack = list(reversed(fn.body))  # type: ignore[attr-defined]
    while stack:
        s = stack.pop()
        out.append(s)
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        inner: list[ast.stmt] = []
        for field in ("body", "orelse", "finalbody"):
            inner += getattr(s, field, [])
        for h in getattr(s, "handlers", []):
            inner += h.body
        for c in getattr(s, "cases", []):
            inner += c.body
        stack.extend(reversed(inner))
    return out


@pytest.mark.parametrize("path", CORPUS, ids=_id)
def test_invariants_on_real_code(path: str) -> None:
    _source, tree, cfgs = _load(path)
    assert cfgs[0].qualname == "<module>" and cfgs[0].kind == "module"
    for (fn, q), cfg in zip(iter_functions(tree), cfgs):
        assert cfg.qualname == q and cfg.node is fn
        check_invariants(cfg)
        # every statement of the function's own body (headers included) has an anchor
        for s in _own_statements(fn):
            for node, kind in _anchor_kinds(s):
                assert cfg.stmt_at(node, kind) is not None, f"{q}: no {kind} anchor at line {s.lineno}"
        if cfg.kind == "class" or cfg.kind == "module":
            assert not cfg.is_generator


@pytest.mark.parametrize("path", CORPUS, ids=_id)
def test_every_line_cpython_compiles_is_live(path: str) -> None:
    """Our dead-code exclusion never drops a statement CPython keeps code for, and the
    function registry matches CPython's code objects (qualnames)."""
    source, tree, cfgs = _load(path)
    skip = {0}                         # RESUME at line 0; ``try:`` NOPs; handler type tests
    for nd in ast.walk(tree):
        if isinstance(nd, (ast.Try, ast.TryStar)):
            skip.add(nd.lineno)
        elif isinstance(nd, ast.ExceptHandler):
            skip.update(range(nd.lineno, (nd.type.end_lineno or nd.lineno) + 1 if nd.type else nd.lineno + 1))
    by_name: dict[str, list[CFG]] = defaultdict(list)
    for c in cfgs:
        by_name[c.qualname].append(c)
    stack = [(compile(tree, path, "exec", dont_inherit=True), "<module>")]
    names = set()
    while stack:
        code, q = stack.pop()
        names.add(q)
        for k in code.co_consts:
            if hasattr(k, "co_qualname") and not k.co_name.startswith("<"):
                stack.append((k, k.co_qualname))
        lines = {ln for *_, ln in code.co_lines() if ln is not None} - skip - {code.co_firstlineno}
        candidates = by_name.get(q, [])
        assert candidates, f"no CFG for {q}"
        misses = []
        for c in candidates:
            live: set[int] = set()
            for s in c.stmts:
                if s.block >= 0:
                    live.update(range(s.line, s.end_line + 1))
            misses.append(sorted(lines - live))
        assert [] in misses, f"{q}: CPython has code on lines {min(misses, key=len)} our CFG calls dead"
    assert names == set(by_name)


def test_fingerprints_stable_across_builds() -> None:
    # a second build of part of the corpus (all of it would double this module's run time)
    for path in CORPUS[::3]:
        source, _tree, cfgs = _load(path)
        again = build_module(source, path)
        assert [c.fingerprint for c in again] == [c.fingerprint for c in cfgs], path


# --------------------------------------------------------------------------- fingerprint

BASE = """\
def f(a):
    x = abc
    if x:
        return 1
    return 2
def g():
    pass
"""


def _fp(src: str, q: str = "f") -> str:
    return {c.qualname: c.fingerprint for c in build_module(src)}[q]


@pytest.mark.parametrize("changed", [
    BASE.replace("x = abc", "x = a()"),            # same span, now call-capable
    BASE.replace("x = abc", "x = abcd"),           # longer statement
    BASE.replace("x = abc", "x += ab"),            # other statement kind
    BASE.replace("if x:", "while x:"),             # other header
    BASE.replace("return 1", "return 1\n        y = 2"),  # dead statement added
    BASE.replace("return 2", "x = 3\n    return 2"),       # statement added
    BASE.replace("def f(a):", "def h(a):"),        # other function
    BASE.replace("x = abc", "x = (yield)"),        # now suspends
])
def test_fingerprint_changes_when_a_statement_changes(changed: str) -> None:
    q = "h" if "def h" in changed else "f"
    assert _fp(changed, q) != _fp(BASE)
    assert _fp(changed, "g") == _fp(BASE, "g")      # other functions keep theirs


def test_fingerprint_ignores_position_of_the_function_and_other_functions() -> None:
    moved = "import os\n\n\n" + BASE
    assert _fp(moved) == _fp(BASE) and _fp(moved, "g") == _fp(BASE, "g")
    assert _fp(BASE.replace("pass", "return 3")) == _fp(BASE)


_IN_ANOTHER_PROCESS = """
import json, sys
from wholetrace.instrument.cfg import build_module
from wholetrace.instrument.witnesses import branch_placement, witness_placement
print(json.dumps([[c.fingerprint, list(witness_placement(c).witnessed), list(branch_placement(c).witnessed)]
                  for c in build_module(sys.stdin.read())]))
"""


@pytest.mark.parametrize("hashseed", ["1", "4242"])
def test_fingerprints_and_placements_in_another_process(hashseed: str) -> None:
    """Fingerprints and witness placements are deterministic: the rewriter (at recording time)
    and the regenerator (in another process, later) compute the same ones."""
    import subprocess
    import sys

    from wholetrace.instrument.witnesses import branch_placement, witness_placement

    src = BASE + textwrap.dedent("""
        def gen(n):
            for i in range(n):
                if i % 2:
                    yield i
                else:
                    yield -i
            yield 0
    """)
    here = [[c.fingerprint, list(witness_placement(c).witnessed), list(branch_placement(c).witnessed)]
            for c in build_module(src)]
    proc = subprocess.run([sys.executable, "-c", _IN_ANOTHER_PROCESS], input=src, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONHASHSEED=hashseed), check=True)
    assert json.loads(proc.stdout) == here


def test_json_round_trip_keeps_generator_flags() -> None:
    src = textwrap.dedent("""\
        def g(xs):
            for x in xs:
                y = yield x
                try:
                    yield from y
                finally:
                    print(y)
        """)
    (_mod, g) = build_module(src)
    d = json.loads(json.dumps(g.to_json()))
    back = CFG.from_json(d)
    assert back == g
    assert [s.suspends for s in back.stmts] == [s.suspends for s in g.stmts]
    assert any(s.suspends for s in back.stmts) and back.is_generator
    # rows written before ``suspends`` was stored still load
    for row in d["stmts"]:
        del row[8:]
    old = CFG.from_json(d)
    assert [s.calls for s in old.stmts] == [s.calls for s in g.stmts]
