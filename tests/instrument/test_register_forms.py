"""Cheaper forms of path-mode register operations (``instrument.pathforms.register_forms``, docs/design.md
"Path mode, wave 16"): a reset that stores what the register already holds is left out, and a record
``wt.p + K`` reads ``T[wt.p]`` from a constant table.  Both must record exactly what the full forms did.

The oracle is brute force on the *original* CFG (``test_pathnum.enumerate_paths``, which never looks
at the plan): along every path of every corpus function, the numbering's own probes (``simulate``)
give the register at each cut and each way out; the plan's left-out reset must equal it, and the
table's entry at it must be the id the addition made.  The compiled code is checked for the forms,
and the streams for being the same in ``tests/regen/test_path_mode.py`` (every inline program,
event for event against ``blocks``).
"""

from __future__ import annotations



from test_pathnum import enumerate_paths, oracle_starts, simulate
from test_register_free import _codes, corpus_cfgs  # noqa: F401 (a fixture)
from wholetrace.events import LEAVE_PATH
from wholetrace.instrument.flowgraph import from_cfg
from wholetrace.instrument.pathforms import UNREAD_ID
from wholetrace.instrument.modes import path_plan


def test_left_out_resets_and_record_tables_record_what_the_register_did(corpus_cfgs: list[object]) -> None:  # noqa: F811
    same_checked = table_cuts = table_exits = epilogue_exits = 0
    for cfg in corpus_cfgs:
        plan = path_plan(cfg)  # type: ignore[arg-type]
        if plan.strategy != "paths" or not (plan.same_resets or plan.reg_tables):
            continue
        assert not plan.register_free
        num = plan.numbering
        assert num is not None
        g = from_cfg(cfg)  # type: ignore[arg-type]
        dynamic = {b.id for b in cfg.blocks if b.dynamic_entry}  # type: ignore[attr-defined]
        paths = enumerate_paths(g, num.cuts, oracle_starts(g, num.cuts, dynamic), 10**4)
        if len(paths) > 10**4:
            continue
        for p in paths:
            recorded, regs = simulate(num, p)
            if p.end >= 0:   # a path ending at a cut: the register at the cut's source
                probe = num.probes[p.end]
                r = recorded - probe.value  # type: ignore[operator]
                if p.end in plan.same_resets:
                    assert plan.path_probes[p.end].kind == "cut-const"
                    assert r == probe.reset, (cfg.qualname, p, r, probe)  # type: ignore[attr-defined]
                    same_checked += 1
                if p.end in plan.reg_tables:
                    table = plan.reg_tables[p.end]
                    assert 0 <= r < len(table) - 1 and table[r] == recorded, (cfg.qualname, p, r)  # type: ignore[attr-defined]
                    assert table[-1] == UNREAD_ID   # -1 (an exception's register) reads no path id
                    table_cuts += 1
            elif p.edges and p.edges[-1] in plan.reg_tables:   # a way out reading the shifted closing table
                e = p.edges[-1]
                assert g.edges[e][1] == g.exit and plan.path_probes[e].kind == "leave"
                r = recorded - num.probes[e].value  # type: ignore[operator]
                table = plan.reg_tables[e]
                assert 0 <= r < len(table) - 1 and table[r] == LEAVE_PATH + recorded, (cfg.qualname, p, r)  # type: ignore[attr-defined,operator]
                assert table[-1] == -1   # after an exception (``wt.p = -1``) the table still closes with LEAVE
                table_exits += 1
            elif plan.exit_table is not None and p.edges and g.edges[p.edges[-1]][1] == g.exit:
                e = p.edges[-1]   # the epilogue indexes the shifted table by the register
                r = recorded - num.probes[e].value  # type: ignore[operator]
                table = plan.exit_table
                assert 0 <= r < len(table) - 1 and table[r] == LEAVE_PATH + recorded, (cfg.qualname, p, r)  # type: ignore[attr-defined,operator]
                assert table[-1] == -1
                epilogue_exits += 1
    assert same_checked > 100 and table_cuts > 100 and table_exits > 10 and epilogue_exits > 10, (
        same_checked, table_cuts, table_exits, epilogue_exits)


SOURCE = '''
def scan(s, i):
    while s[i] == " ":
        i += 1
    return i
'''


def test_compiled_forms() -> None:
    import dis

    from wholetrace.instrument.cfg import build_module
    from wholetrace.instrument.emit import P, leave_table

    code = _codes(SOURCE)["scan"]
    ops = [(i.opname, i.argval) for i in dis.get_instructions(code)]  # type: ignore[arg-type]
    reads = [i for i, (op, a) in enumerate(ops) if op == "LOAD_FAST" and a == P]
    # the way out's closing record is read from a table by the register (the epilogue's): no addition
    assert reads and not any(ops[i + 1][0] == "LOAD_CONST" and ops[i + 2][0] == "BINARY_OP" for i in reads), ops
    assert any(ops[i + 1][0] == "BINARY_SUBSCR" and ops[i - 1][0] == "LOAD_CONST" for i in reads), ops
    # ... and that table is the plan's shifted one (``pathforms.exit_table``, K = 2 here), not the
    # unshifted ``leave_table`` (which would record the wrong ids)
    plan = next(path_plan(cfg) for cfg in build_module(SOURCE) if cfg.qualname == "scan")
    assert plan.exit_table is not None and plan.numbering is not None
    assert plan.exit_table != leave_table(plan.numbering.num_paths)
    epilogue = [ops[i - 1][1] for i in reads if ops[i - 1][0] == "LOAD_CONST" and ops[i + 1][0] == "BINARY_SUBSCR"]
    assert epilogue and set(epilogue) == {plan.exit_table}, (epilogue, plan.exit_table)   # (the compiler copies the finally)


def test_unread_entries_are_refused_by_the_decoder() -> None:
    """A table entry no register should reach (``pathforms.UNREAD_ID``: below the register's lowest,
    and a cut table's index -1) decodes to a loud "path ... does not exist", never a plausible
    id: the failure mode if a register range were ever wrong (docs/design.md "Path mode, wave 16")."""
    import numpy as np
    import pytest

    from wholetrace.errors import StoreError
    from wholetrace.events import ENTER_BASE
    from wholetrace.instrument.cfg import build_module
    from wholetrace.instrument.modes import make_plan
    from wholetrace.instrument.pathnum import MAX_PATHS
    from wholetrace.trace.decode import StreamDecoder
    from wholetrace.trace.shape import parse_shape
    from wholetrace.trace.tables import Tables

    assert UNREAD_ID >= MAX_PATHS and LEAVE_PATH + UNREAD_ID < 2**31   # no path id; an int32
    shapes = {}
    for fid, cfg in enumerate(build_module(SOURCE)):
        desc = cfg.to_json()
        desc["plan"] = make_plan("path", cfg, 0).to_json()
        shapes[fid] = parse_shape(fid, desc, file="t.py")
    fid = next(f for f, sh in shapes.items() if sh.qualname == "scan")
    for record in (UNREAD_ID, LEAVE_PATH + UNREAD_ID):
        dec = StreamDecoder(Tables(shapes, shapes.__getitem__, "path"), what="stream 0")
        with pytest.raises(StoreError, match=f"path {UNREAD_ID} does not exist in function {fid} "):
            for _ in dec.decode([np.array([-(ENTER_BASE + fid), record], np.int32)]):
                pass
