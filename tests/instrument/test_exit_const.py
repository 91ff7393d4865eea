"""Constant closing records (``instrument.pathforms.single_exit_record``, docs/design.md "Path mode,
wave 13"): where every way out of a function ends the same path, the epilogue appends that
path's ``LEAVE_PATH + id`` as a constant and the edges into EXIT store nothing.

The oracle for "every way out ends the same path" is brute force on the *original* CFG
(``test_pathnum``'s ``enumerate_paths``, which never looks at the numbering's DAG): every path
of the function that reaches EXIT, from ENTRY, a cut's target or a handler, must record the
plan's constant, and a function whose brute-force paths end at EXIT with one id (and whose
edges into EXIT can hold a probe) must get it.  The compiled code is checked for what it keeps:
the constant in the ``finally``, no ``wt.o`` at all, and the closing call found by
``runtime.unfinished`` (``_leave_calls``, and ``_closes_with_constant``: such a frame closed at the
end records register 0).  Exceptions through such frames are regenerated against
``blocks`` event for event in ``tests/regen/test_path_mode.py`` (inline programs
``register_free``, ``exit_const``) and a frame the recorder closes at the end in
``tests/runtime/test_unfinished_frames.py``.
"""

from __future__ import annotations

import dis

import pytest
from test_pathnum import END_EXIT, enumerate_paths, oracle_starts, simulate
from test_register_free import _codes, corpus_cfgs  # noqa: F401 (a fixture)
from wholetrace.events import LEAVE_PATH
from wholetrace.ids import EXIT
from wholetrace.instrument.emit import O
from wholetrace.instrument.flowgraph import from_cfg
from wholetrace.instrument.modes import path_plan


def test_constant_closing_records_are_the_only_way_out(corpus_cfgs: list[object]) -> None:  # noqa: F811
    const = multi = table = 0
    for cfg in corpus_cfgs:
        plan = path_plan(cfg)  # type: ignore[arg-type]
        num = plan.numbering
        if plan.strategy != "paths" or num is None or num.num_paths > 10**4:
            continue
        g = from_cfg(cfg)  # type: ignore[arg-type]
        dynamic = {b.id for b in cfg.blocks if b.dynamic_entry}  # type: ignore[attr-defined]
        paths = enumerate_paths(g, num.cuts, oracle_starts(g, num.cuts, dynamic), 10**4)
        ids = {simulate(num, p)[0] for p in paths if p.end == END_EXIT}
        exits = [e for e, edge in enumerate(cfg.edges) if edge.dst == EXIT]  # type: ignore[attr-defined]
        if plan.exit_const is not None:
            const += 1
            assert ids == {plan.exit_const - LEAVE_PATH}, (cfg.qualname, ids, plan.exit_const)  # type: ignore[attr-defined]
            assert all(plan.path_probes[e].kind == "none" for e in exits)   # nothing stored on the way out
            assert not any(e in plan.edge_values for e in exits)
        elif exits and all(plan.path_probes[e].kind == "none" for e in exits):   # ``table_exits`` / ``exit_table``
            table += 1
            for p in paths:     # the register is the id on every way out: ``T[wt.p]`` is the record
                recorded, regs = simulate(num, p)  # (``exit_table``: the table shifted by the exits' one K)
                if p.end == END_EXIT and plan.exit_table is None:
                    assert regs and recorded == regs[-1][1], (cfg.qualname, p)  # type: ignore[attr-defined]
                elif p.end == END_EXIT:
                    assert regs and plan.exit_table[regs[-1][1]] == LEAVE_PATH + recorded, (cfg.qualname, p)  # type: ignore[attr-defined,operator]
        else:
            multi += len(ids) > 1
            folded = [plan.path_probes[e].kind for e in exits]
            if len(ids) == 1 and folded and all(k == "leave-const" for k in folded):  # pragma: no cover
                raise AssertionError(f"{cfg.qualname}: one way out, no constant closing record")  # type: ignore[attr-defined]
    assert const > 300 and multi > 50 and table > 5, (const, multi, table)


SOURCE = '''
def single(o, x):
    o.x = x
    if x:
        y = 1
    else:
        y = 2
    return o.f(y)

def find(self, update=False):
    reference = self.reference
    if reference.pos != self.pos:
        reference = reference.find(update)
        if update:
            self.reference = reference
    return reference

def two_returns(a):
    if a > 0:
        return "pos"
    return "zero"
'''


def test_constant_closing_record_code() -> None:
    from wholetrace.instrument.cfg import build_module
    from wholetrace.runtime.unfinished import _closes_with_constant, _leave_calls

    plans = {cfg.qualname: path_plan(cfg) for cfg in build_module(SOURCE)}
    assert plans["single"].exit_const is not None and plans["two_returns"].exit_const is None
    codes = _codes(SOURCE)
    single = codes["single"]
    stores = stored_names(single)
    assert O not in single.co_varnames and O not in stores   # type: ignore[attr-defined]   # no wt.o at all
    assert plans["single"].exit_const in single.co_consts   # type: ignore[attr-defined]
    assert _leave_calls(single), "the epilogue's wt.a(K) is a closing call for runtime.unfinished"
    assert _closes_with_constant(single)   # (register 0 when runtime.unfinished closes it)
    assert not _closes_with_constant(codes["find"])  # type: ignore[arg-type]
    # two ways out with two ids: the plan keeps the wave-10 form (``wt.o`` set on each edge into
    # EXIT), and since wave 15 each compiled copy of the ``finally`` appends its own constant
    # (``instrument.exitconst``): the stores are jumped over, ``wt.o`` is never read
    two = codes["two_returns"]
    assert O in two.co_varnames  # type: ignore[attr-defined]
    assert _closes_with_constant(two)  # type: ignore[arg-type]
    assert not any(i.opname.startswith("LOAD_FAST") and i.argval == O for i in dis.get_instructions(two))  # type: ignore[arg-type]
    # the register is the id at the one way out: the epilogue appends ``T[wt.p]``, no ``wt.o``
    from wholetrace.instrument.emit import P
    from wholetrace.instrument.pathforms import table_exits
    find = codes["find"]
    assert plans["find"].exit_const is None and P in find.co_varnames and O not in find.co_varnames  # type: ignore[attr-defined]
    assert any(isinstance(c, tuple) and c[-1] == -1 and c[0] == LEAVE_PATH for c in find.co_consts)  # type: ignore[attr-defined]
    assert _leave_calls(find)
    # two ways out with two ids record two constants, not ``T[wt.p]`` (each function with its own
    # probes: ``build_module(SOURCE)[2]`` was find's CFG, whose edges into EXIT come after the
    # five probes zipped with it, so the assertion held whatever ``table_exits`` said)
    cfgs = {cfg.qualname: cfg for cfg in build_module(SOURCE)}
    assert not table_exits(cfgs["two_returns"], plans["two_returns"].path_probes)


def stored_names(code: object) -> list[str]:
    """The locals each store writes (3.13 fuses ``STORE_FAST_LOAD_FAST``, ``STORE_FAST_STORE_FAST``)."""
    out: list[str] = []
    for i in dis.get_instructions(code):  # type: ignore[arg-type]
        if i.opname == "STORE_FAST":
            out.append(i.argval)
        elif i.opname == "STORE_FAST_LOAD_FAST":
            out.append(i.argval[0])
        elif i.opname == "STORE_FAST_STORE_FAST":
            out += list(i.argval)
    return out


RAISING = '''
def div(x):
    return 10 // x

def reraise(x):
    try:
        y = 10 // x
    except KeyError:
        raise
    return y

def gen(x):
    yield 10 // x
'''


def _call_of(ins: list[dis.Instruction], load: int) -> int:
    """The index of the ``CALL`` that consumes the method ``ins[load]`` loads: the first after
    which the stack is back at its depth before the load (calls inside the arguments, such as a
    handler probe's ``sys.exc_info()``, end deeper)."""
    depth = 0
    for k in range(load, len(ins)):
        depth += dis.stack_effect(ins[k].opcode, ins[k].arg, jump=False) if ins[k].opcode >= dis.HAVE_ARGUMENT \
            else dis.stack_effect(ins[k].opcode, jump=False)
        if ins[k].opname == "CALL" and depth == 0:
            return k
    raise AssertionError(f"no call of {ins[load].argval} after offset {ins[load].offset}")


@pytest.mark.compat   # 3.13 fuses the store before ``wt.a``'s load (found there, wave 23)
def test_closing_exception_record_is_a_closing_call() -> None:
    """The handler of a constant-closing function appends ``EXC s r`` LEAVE, then switches ``wt.a``
    to ``skip`` (review13d, defect 1: the switch used to come first, inside the record's
    arguments).  Oracle, from the code's shape: the calls of ``extend`` whose result is stored
    into ``wt.a`` (the switch) are the closing ones; ``runtime.unfinished`` counts those (a frame
    stopped there has appended its record), and no other record's ``extend``."""
    from wholetrace.instrument.cfg import build_module
    from wholetrace.instrument.emit import A
    from wholetrace.runtime.unfinished import _leave_calls

    plans = {cfg.qualname: path_plan(cfg) for cfg in build_module(RAISING)}
    assert all(plans[n].exit_const is not None for n in ("div", "reraise", "gen"))
    for name, code in _codes(RAISING).items():
        ins = list(dis.get_instructions(code))  # type: ignore[arg-type]
        closing, other = set(), set()
        for j, i in enumerate(ins):
            if i.argval != "extend":
                continue
            call = _call_of(ins, j)
            then = next(k for k in range(call + 1, len(ins)) if ins[k].opname.startswith("STORE") or ins[k].opname == "CALL")
            stored = ins[then].argval if ins[then].opname == "STORE_FAST" else (ins[then].argval or ("",))[0]
            if ins[then].opname != "CALL" and stored == A:   # (up to the switch: the record is appended)
                closing |= {x.offset for x in ins[call:then + 1]}
            else:
                other.add(ins[call].offset)
        assert closing, name
        leaves = _leave_calls(code)  # type: ignore[arg-type]
        assert closing <= leaves and not other & leaves, (name, closing, other, sorted(leaves))
        # the switch comes after the record: nothing stores ``wt.a`` between the extend's load and its call
        for j, i in enumerate(ins):
            if i.argval == "extend":
                call = _call_of(ins, j)
                assert not any(x.opname.startswith("STORE") and A in str(x.argval) for x in ins[j:call]), name
