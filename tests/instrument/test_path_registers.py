"""Path registers never look like "no path open" (docs/design.md "Path mode, wave 12").

An exception record of a `path` stream carries the register as the exception left it
(``EXC s r``); the stream format (``events.py``) reserves LEAVE (-1) and everything at or below
``events.NO_PATH`` for "no path open", and every reader (the decoding kernel, the naive twin,
``wpp.meaning``) reads such a record as an exception edge from where the frame stands, without
a truncated path.  So no register the probes can leave at any block may take one of those values:
wave 11's "records as free chords" let negative increments make -1 reachable mid-function and
such records decoded to the wrong prefix (review11c).

The oracle is brute force on the *original* CFG (``test_pathnum.enumerate_paths``, which never
looks at the numbering's DAG): every path of every corpus function that path mode numbers
(``modes.path_plan``) and of random flow graphs, its probes run along it (``simulate``), and the
register at every block is checked against the reserved values (stated here from the stream
format, not taken from the readers' code), then decoded truncated at that block, which must give
the path's prefix.
"""

from __future__ import annotations

from pathlib import Path as FsPath

import pytest
from hypothesis import given, settings, strategies as st

from test_pathnum import BRUTE_LIMIT, enumerate_paths, graph_params, oracle_starts, random_numbering, simulate
from test_register_free import corpus_cfgs  # noqa: F401 (a fixture)
from wholetrace.instrument.cfg import build_module
from wholetrace.instrument.flowgraph import from_cfg
from wholetrace.instrument.modes import path_plan
from wholetrace.instrument.pathnum import END_TRUNCATED, Path, PathNumbering

#: The stream format's "no path open" registers: -1 (LEAVE) and 1 + 2**29 below it or lower (2**30 before wave 14).
LEAVE_CODE = -1
NO_PATH_AT_MOST = -1 - (1 << 29)


def no_path_open(r: int) -> bool:
    return r == LEAVE_CODE or r <= NO_PATH_AT_MOST


def check_registers(num: PathNumbering, dynamic: set[int], where: str) -> int:
    """Every register reachable at a block is a register (not "no path open"), fits an int32,
    and decodes (truncated) to the prefix; the number of paths walked."""
    g = num.graph
    starts = oracle_starts(g, num.cuts, dynamic)
    paths = enumerate_paths(g, num.cuts, starts, BRUTE_LIMIT)
    assert len(paths) == num.num_paths, where
    for p in paths:
        _recorded, regs = simulate(num, p)
        for k, (block, r) in enumerate(regs):
            assert not no_path_open(r), (where, p, block, r)
            assert -(1 << 31) <= r < (1 << 31), (where, p, block, r)
            prefix = p.edges[:k + (1 if p.start == g.entry else 0)]
            assert num.decode_truncated(r, block) == Path(p.start, prefix, END_TRUNCATED), (where, p, block, r)
    return len(paths)


STDLIB = ("json/decoder.py", "json/encoder.py", "tomllib/_parser.py", "argparse.py", "email/_header_value_parser.py",
          "email/feedparser.py", "ast.py")


@pytest.fixture(scope="module")
def stdlib_cfgs() -> list[object]:
    """The modules where review11c found -1 reachable with wave 11's placement (20 of 851 functions)."""
    import sysconfig

    lib = FsPath(sysconfig.get_paths()["stdlib"])
    out: list[object] = []
    for name in STDLIB:
        f = lib / name
        if f.exists():
            out += build_module(f.read_text(encoding="utf-8"), str(f))
    return out


def _check_plans(cfgs: list[object]) -> tuple[int, int]:
    checked = skipped = 0
    for cfg in cfgs:
        plan = path_plan(cfg)  # type: ignore[arg-type]
        num = plan.numbering
        if plan.strategy != "paths" or num is None:
            continue
        if num.num_paths > BRUTE_LIMIT:
            skipped += 1
            continue
        assert num.graph == from_cfg(cfg)  # type: ignore[arg-type]
        dynamic = {b.id for b in cfg.blocks if b.dynamic_entry}  # type: ignore[attr-defined]
        check_registers(num, dynamic, cfg.qualname)  # type: ignore[attr-defined]
        checked += 1
    return checked, skipped


def test_corpus_registers_are_never_no_path(corpus_cfgs: list[object]) -> None:
    checked, skipped = _check_plans(corpus_cfgs)
    assert checked > 700 and skipped <= checked // 100   # 776 on main


def test_stdlib_registers_are_never_no_path(stdlib_cfgs: list[object]) -> None:
    checked, skipped = _check_plans(stdlib_cfgs)
    assert checked > 450 and skipped <= checked // 50   # 499 on main


@settings(max_examples=300, deadline=None)
@given(**graph_params, random_weights=st.booleans())
def test_random_graph_registers_are_never_no_path(seed: int, n: int, extra: int, loops: int, calls: float,
                                                  dyn: int, random_weights: bool) -> None:
    num, dynamic = random_numbering(seed, n, extra, loops, calls, dyn, random_weights)
    if not num.fallback and num.num_paths <= BRUTE_LIMIT:
        check_registers(num, dynamic, f"seed {seed}")


def _all_registers(num: PathNumbering, inc: list[int]) -> set[int]:
    """Brute force: every register the increments ``inc`` leave on entering a node, by walking
    every path of the numbering's DAG from ENTRY (edges out of ENTRY are the paths' starts)."""
    g, dag = num.graph, num.dag
    outs: dict[int, list[int]] = {}
    for i, e in enumerate(dag):
        outs.setdefault(e.src, []).append(i)
    seen: set[int] = set()

    def walk(v: int, r: int) -> None:
        for i in outs.get(v, ()):
            if dag[i].dst != g.exit:
                seen.add(r + inc[i])
                walk(dag[i].dst, r + inc[i])

    walk(g.entry, 0)
    return seen


@settings(max_examples=200, deadline=None)
@given(**graph_params, scale=st.sampled_from([1, 1 << 20, 1 << 27, 1 << 29, 1 << 31]))
def test_registers_fit_int32_brute_force(seed: int, n: int, extra: int, loops: int, calls: float, dyn: int,
                                         scale: int) -> None:
    """``pathregs.registers_fit`` (numberings whose registers an int32 exception record cannot hold
    record block ids) against every register of every DAG path, with increments scaled up to
    reach past int32 (no real function has that many paths; the rule is checked on the sums)."""
    from wholetrace.instrument.pathregs import registers_fit

    num, _dynamic = random_numbering(seed, n, extra, loops, calls, dyn, False)
    if num.fallback or num.num_paths > BRUTE_LIMIT:
        return
    inc = [k * scale for k in num.inc]
    regs = _all_registers(num, inc)
    assert registers_fit(num.graph, num.dag, inc) == all(-(1 << 31) <= r < (1 << 31) for r in regs), (seed, scale)
