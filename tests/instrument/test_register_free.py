"""Register-free path functions (``instrument.modes.register_free``, docs/design.md "Path mode,
wave 11"): where no probe keeps the path register, exception records carry the constant 0.

The oracle for "0 is the register" is brute force on the *original* CFG (``test_pathnum``'s
``enumerate_paths``, which never looks at the numbering's DAG): on every path of every corpus
function the plan calls register-free, the numbering's own probes (chord increments, folded
initial value) leave the register at 0 at every block, and a truncated decode of register 0 at
every block of the path gives that path's prefix.  The compiled code is checked for what it
keeps: no ``wt.p`` local in a register-free function, one in a function that needs it.  The
regenerated traces of exceptions in such functions are checked against ``blocks`` in
``tests/regen/test_path_mode.py`` (inline program ``register_free``) and, for a frame the
recorder closes at the end, ``tests/runtime/test_unfinished_frames.py`` (``spin``).
"""

from __future__ import annotations

from pathlib import Path as FsPath

import pytest

from test_pathnum import _corpus_files, enumerate_paths, oracle_starts, simulate
from wholetrace.instrument.cfg import build_module
from wholetrace.instrument.emit import O, P
from wholetrace.instrument.flowgraph import from_cfg
from wholetrace.instrument.modes import path_plan


@pytest.fixture(scope="module")
def corpus_cfgs(tmp_path_factory: pytest.TempPathFactory) -> list[object]:
    out: list[object] = []
    for f in _corpus_files(tmp_path_factory.mktemp("corpus")):
        out += build_module(FsPath(f).read_text(encoding="utf-8"), f)
    return out


def test_register_free_functions_keep_the_register_at_zero(corpus_cfgs: list[object]) -> None:
    free = other = with_cuts = 0
    for cfg in corpus_cfgs:
        plan = path_plan(cfg)  # type: ignore[arg-type]
        if plan.strategy != "paths":
            continue
        if not plan.register_free:
            other += 1
            continue
        free += 1
        num = plan.numbering
        assert num is not None
        g = from_cfg(cfg)  # type: ignore[arg-type]
        dynamic = {b.id for b in cfg.blocks if b.dynamic_entry}  # type: ignore[attr-defined]
        assert not dynamic and num.free_records
        paths = enumerate_paths(g, num.cuts, oracle_starts(g, num.cuts, dynamic), 10**4)
        assert paths and len(paths) <= 10**4
        for p in paths:
            _recorded, regs = simulate(num, p)
            for i, (block, r) in enumerate(regs):
                assert r == 0, (cfg.qualname, p, block, r)   # type: ignore[attr-defined]
                prefix = num.decode_truncated(0, block)
                assert num.blocks(prefix) == [b for b, _r in regs[:i + 1]], (cfg.qualname, p, block)  # type: ignore[attr-defined]
            if p.start != g.entry:      # a path after a cut starts with the register reset to 0
                assert num.start_value[p.start] == 0
        # and the plan's own probes keep nothing: no store at entry or after a cut, constant records
        assert all(q.kind in ("none", "leave-const") or (q.kind == "cut-const" and q.reset == 0)
                   for q in plan.path_probes)
        with_cuts += bool(num.cuts)
    # most of the corpus' functions: every block has one way in from its path's start
    assert free > 400 and with_cuts > 100 and other > 100


SOURCE = '''
def one_block(o, x):
    o.x = x
    return o.x + 1

def to_returns(a):
    if a > 0:
        return "pos"
    elif a < 0:
        return "neg"
    return "zero"

def loops(n):
    s = 0
    for i in range(n):
        s += i
    return s

def join(a):
    if a:
        b = 1
    else:
        b = 2
    c = b
    return c

def handler(x):
    try:
        return int(x)
    except ValueError:
        return -1

def gen(n):
    yield n
'''


def _codes(source: str = SOURCE) -> dict[str, object]:
    """The path-mode code objects of the functions of ``source``, by name."""
    import ast

    from wholetrace.instrument.cfg import build_cfg, iter_functions
    from wholetrace.instrument.rewrite import compile_tree, rewrite_tree

    tree = ast.parse(source)
    fns = [(fn, build_cfg(fn, q)) for fn, q in iter_functions(tree)]
    items = [(fn, cfg, 3_141_592_653_000_000 + i, path_plan(cfg)) for i, (fn, cfg) in enumerate(fns)]
    rewrite_tree(tree, items)
    code = compile_tree(tree, "<path>", items)
    return {c.co_name: c for c in code.co_consts if hasattr(c, "co_varnames")}


def test_register_free_code_stores_no_register() -> None:
    codes = _codes()
    plans = {cfg.qualname: path_plan(cfg) for cfg in build_module(SOURCE)}
    assert {n for n, p in plans.items() if p.register_free} == {"one_block", "to_returns", "loops"}
    for name in ("one_block", "to_returns", "loops"):     # (loops: its cut records a constant, resets nothing)
        varnames = codes[name].co_varnames  # type: ignore[attr-defined]
        closing = O in varnames or plans[name].exit_const is not None   # ``wt.o``, or a constant (wave 13)
        assert P not in varnames and closing, (name, varnames)
    for name in ("join", "handler", "gen"):     # two ways into a block, a handler's start value, a yield
        assert P in codes[name].co_varnames, name  # type: ignore[attr-defined]


def test_increment_rules_give_the_same_ids(corpus_cfgs: list[object]) -> None:
    """Records as free chords move increments, never ids: on every path (brute force) both
    rules record the same value, and a renumbering of a recording made before wave 11
    (``stored_free_records`` False) gets the increments it was recorded with."""
    from wholetrace.instrument.modes import numbering_json, path_numbering, stored_free_records

    moved = 0
    for cfg in corpus_cfgs:
        new = path_numbering(cfg)  # type: ignore[arg-type]
        old = path_numbering(cfg, free_records=False)  # type: ignore[arg-type]
        if new is None or old is None or new.num_paths > 2000:
            continue
        assert new.val == old.val and new.num_paths == old.num_paths
        moved += new.inc != old.inc
        for pid, p in new.iter_paths():
            assert new.recorded_value(p) == old.recorded_value(p) == pid
        assert stored_free_records({"plan": {"paths": numbering_json(new)}})
        assert not stored_free_records({"plan": {"paths": numbering_json(old)}})
    assert moved > 100
