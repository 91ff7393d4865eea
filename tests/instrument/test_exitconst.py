"""Closing records folded into the compiled copies of the activation's ``finally`` (``instrument.exitconst``,
docs/design.md "Path mode, wave 15").

The oracle for *which* constant each way out appends is brute force on the original CFG, as in
``test_exit_const``: every path of the function that reaches EXIT records ``LEAVE_PATH + id``, and
the set of those ids is what the compiled code must append, no more (the pass folded some copy to a
value no way out ends with) and no less (a way out lost its record).  What the folded code keeps is
checked on the bytecode: in a function whose edges into EXIT all store constants, ``wt.o`` is never
read and every store of it is jumped over.  Each copy's constant is checked against the paths that
leave through a block on the copy's line, and the exceptional copy (the guard's handler) must
append a plain LEAVE; regenerating ``blocks`` event for event checks it again
(``tests/regen/test_path_mode.py``, inline program ``exit_copies``, and the corpus).
"""

from __future__ import annotations

import ast
import dis
from pathlib import Path as FsPath
from types import CodeType

import pytest

from test_pathnum import END_EXIT, _corpus_files, enumerate_paths, oracle_starts, simulate
from wholetrace.events import LEAVE, LEAVE_PATH
from wholetrace.ids import EXIT
from wholetrace.instrument.cfg import build_cfg, iter_functions
from wholetrace.instrument.emit import A, O
from wholetrace.instrument.exitconst import fold_exit_records
from wholetrace.instrument.flowgraph import from_cfg
from wholetrace.instrument.modes import path_plan
from wholetrace.instrument.rewrite import compile_tree, rewrite_tree


def _compiled(source: str, filename: str, mode_plan=path_plan) -> list[tuple[object, object, CodeType]]:
    """(cfg, plan, code object) of every function of ``source`` compiled in path mode."""
    tree = ast.parse(source, filename)
    fns = [(fn, build_cfg(fn, q)) for fn, q in iter_functions(tree)]
    items = [(fn, cfg, 3_141_592_653_000_000 + i, mode_plan(cfg)) for i, (fn, cfg) in enumerate(fns)]
    lines = {(getattr(fn, "name", "<module>"), getattr(fn, "lineno", 1)): (cfg, plan) for fn, cfg, _i, plan in items}
    rewrite_tree(tree, items)
    code = compile_tree(tree, filename, items)
    out = []
    stack = [code]
    while stack:
        c = stack.pop()
        stack += [k for k in c.co_consts if isinstance(k, CodeType)]
        first = c.co_firstlineno
        for (name, line), (cfg, plan) in lines.items():
            if name == c.co_name and (line == first or any(d.lineno == first for d in getattr(cfg, "decorators", ()))):
                out.append((cfg, plan, c))
    return out


def _closing_constants(code: CodeType) -> set[int]:
    """Every ``K >= LEAVE_PATH`` the code appends as ``wt.a(K)`` (closing records appended as constants)."""
    ins = [i for i in dis.get_instructions(code) if i.opname not in ("PUSH_NULL", "NOP", "PRECALL")]
    out = set()
    for a, k, call in zip(ins, ins[1:], ins[2:]):
        loads_append = A in (a.argval if isinstance(a.argval, tuple) else (a.argval,))[-1:]
        if (loads_append and "LOAD_FAST" in a.opname and k.opname == "LOAD_CONST" and type(k.argval) is int
                and k.argval >= LEAVE_PATH and call.opname == "CALL"):
            out.add(k.argval)
    return out


def _closing_calls(code: CodeType, offsets: bool = False) -> list[tuple[int | None, int]]:
    """(line, or offset, of the call; K) of every ``wt.a(K)`` with an int constant ``K``."""
    ins = [i for i in dis.get_instructions(code) if i.opname not in ("PUSH_NULL", "NOP", "PRECALL")]
    out = []
    for a, k, call in zip(ins, ins[1:], ins[2:]):
        if ("LOAD_FAST" in a.opname and A in (a.argval if isinstance(a.argval, tuple) else (a.argval,))[-1:]
                and k.opname == "LOAD_CONST" and type(k.argval) is int and call.opname == "CALL"):
            out.append((call.offset if offsets else call.positions.lineno, k.argval))
    return out


def _handler_offsets(code: CodeType) -> set[int]:
    """Offsets of the activation guard's handler code: from its last ``PUSH_EXC_INFO`` to the
    next ``RERAISE`` (the exceptional copy of the activation's ``finally``)."""
    ins = list(dis.get_instructions(code))
    starts = [k for k, i in enumerate(ins) if i.opname == "PUSH_EXC_INFO"]
    out: set[int] = set()
    for k in starts[-1:]:
        for i in ins[k:]:
            out.add(i.offset)
            if i.opname == "RERAISE":
                break
    return out


@pytest.fixture(scope="module")
def corpus_code(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[object, object, CodeType]]:
    out = []
    for f in _corpus_files(tmp_path_factory.mktemp("corpus")):
        out += _compiled(FsPath(f).read_text(encoding="utf-8"), f)
    return out


def test_every_way_out_appends_its_own_constant(corpus_code: list[tuple[object, object, CodeType]]) -> None:
    folded = copies = 0
    for cfg, plan, code in corpus_code:
        num = plan.numbering
        if plan.strategy != "paths" or num is None or num.num_paths > 10**4 or O not in code.co_varnames:
            continue
        exits = [e for e, edge in enumerate(cfg.edges) if edge.dst == EXIT]
        if not all(plan.path_probes[e].kind == "leave-const" for e in exits):
            continue   # some way out stores ``T[wt.p + K]``: its copy keeps the load
        g = from_cfg(cfg)
        dynamic = {b.id for b in cfg.blocks if b.dynamic_entry}
        paths = enumerate_paths(g, num.cuts, oracle_starts(g, num.cuts, dynamic), 10**4)
        ids = {LEAVE_PATH + simulate(num, p)[0] for p in paths if p.end == END_EXIT}
        ins = list(dis.get_instructions(code))
        assert _closing_constants(code) == ids, (cfg.qualname, _closing_constants(code), ids)
        # each copy appends its own way out's constant: the copy of a ``return`` sits on the
        # return's lines, and its constant is the id of a path whose last edge leaves the
        # return's block (copies of fall-off exits can carry a neighbour's line: not checked)
        by_line: dict[int, set[int]] = {}
        for p in paths:
            if p.end == END_EXIT:
                for sid in cfg.blocks[g.edges[p.edges[-1]][0]].stmts:
                    st = cfg.stmts[sid]
                    for line in range(st.line, st.end_line + 1) if st.label == "Return" else ():
                        by_line.setdefault(line, set()).add(LEAVE_PATH + simulate(num, p)[0])
        returns = {line for line in by_line if all(cfg.stmts[q].label == "Return" for q in range(len(cfg.stmts))
                                                   if cfg.stmts[q].line <= line <= cfg.stmts[q].end_line
                                                   and cfg.stmts[q].kind == "simple")}
        for line, k in _closing_calls(code):
            if line in returns and k >= LEAVE_PATH:
                assert k in by_line.get(line, ()), (cfg.qualname, line, k, by_line.get(line))
                copies += 1
        # the finally's exceptional copy (in a handler: after PUSH_EXC_INFO) appends a plain LEAVE
        handler = _handler_offsets(code)
        assert {k for off, k in _closing_calls(code, offsets=True) if off in handler} == {LEAVE}, cfg.qualname
        loads = [i for i in ins if i.opname.startswith("LOAD_FAST") and O in (
            i.argval if isinstance(i.argval, tuple) else (i.argval,))]
        assert not loads, (cfg.qualname, loads)
        for k, i in enumerate(ins):   # every store of wt.o is jumped over (3.13: its fused load stays)
            if i.opname == "STORE_FAST" and i.argval == O:
                assert ins[k - 1].opname == "JUMP_FORWARD" and ins[k - 1].argval == ins[k + 1].offset, cfg.qualname
            assert not (i.opname == "STORE_FAST_LOAD_FAST" and i.argval[0] == O), cfg.qualname
        folded += 1
    assert folded > 100 and copies > folded, (folded, copies)


def test_mixed_ways_out_keep_the_load_where_the_record_is_computed() -> None:
    source = '''
def mixed(xs, d):
    for x in xs:
        if x:
            d.get(x)
        if x > 3:
            return x
    if d:
        return d.get(1)
    return 0
'''
    [(cfg, plan, code)] = [t for t in _compiled(source, "<mixed>") if t[0].qualname == "mixed"]
    kinds = {plan.path_probes[e].kind for e, edge in enumerate(cfg.edges) if edge.dst == EXIT}
    assert kinds == {"leave", "leave-const"}, kinds
    ins = list(dis.get_instructions(code))
    assert any(i.opname.startswith("LOAD_FAST") and i.argval == O for i in ins)   # ``wt.a(wt.o)`` left
    assert _closing_constants(code)                                                 # and some folded


def test_code_without_a_closing_local_is_left_alone() -> None:
    from wholetrace.instrument.modes import witness_plan

    source = "def f(x):\n    if x:\n        return g(x)\n    return 2\n"
    tree = ast.parse(source)
    code = compile(tree, "<w>", "exec")
    assert fold_exit_records(code) is code
    for _cfg, _plan, c in _compiled(source, "<w>", lambda cfg: witness_plan(cfg, "witness")):
        assert fold_exit_records(c) is c
