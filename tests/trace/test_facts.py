"""Stored report facts (``report.facts``, written at record time by ``instrument.facts``) against
the slow path that works them out from each stored CFG (``trace.shape.parse_shapes``), and
reports made from them byte-identical to reports made by parsing every CFG."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from wholetrace.errors import StoreError
from wholetrace.instrument.cfg import EDGE_KINDS
from wholetrace.profile import counted
from wholetrace.profile.model import Idle
from wholetrace.render.counts import report_lcov, report_text, write_json
from wholetrace.trace import facts as F
from wholetrace.trace.session import Trace
from wtutil import run_recorded

PROG = textwrap.dedent('''\
    import json, textwrap, difflib

    def never(x):
        if x:
            return 1
        return 2

    print(json.dumps({"a": [1, 2]}), textwrap.fill("some words " * 8, 20))
    print(list(difflib.unified_diff(["a", "b", "c"], ["a", "c", "d"])))
''')


@pytest.fixture(scope="module", params=["count", "blocks"])
def recording(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("facts")
    script = root / "prog.py"
    script.write_text(PROG)
    out = root / f"prog.{request.param}.wt"
    r = run_recorded(script, out, mode=request.param, include=("json", "textwrap", "difflib"))
    assert r.returncode == 0, r.stderr
    return out


def test_edge_kinds_are_the_instrumenters() -> None:
    assert F.EDGE_KINDS == EDGE_KINDS


def test_stored_facts_equal_the_parsed_cfgs(recording: Path) -> None:
    """For every function: its lines (line, first statement, column) and its branches (block,
    index, line, edge, name) as stored equal what the CFG parse works out."""
    with Trace.open(recording) as trace:
        facts = trace.facts
        assert facts is not None and facts.covered.all() and len(trace.functions) > 100
        shapes = trace.shapes()
        lines = {fid: facts.lines[1:, facts.lines[0] == fid] for fid in trace.functions}
        branches = {fid: facts.branches[1:, facts.branches[0] == fid] for fid in trace.functions}
        nbranches = 0
        for sh in shapes:
            assert np.array_equal(lines[sh.fid], sh.line_first), sh.qualname
            br = branches[sh.fid]
            assert np.array_equal(br[:4], sh.branch_rows), sh.qualname
            assert [F.branch_name(c) for c in br[4].tolist()] == sh.branch_names, sh.qualname
            nbranches += br.shape[1]
        assert nbranches > 100


def test_reports_from_stored_facts_equal_the_slow_path(recording: Path) -> None:
    """Text, JSON and lcov with never-run functions from the stored facts, and with the facts
    dropped (every never-run CFG parsed): byte for byte the same."""
    with Trace.open(recording) as trace:
        entries = counted(trace)
        idle = [e for e in entries if isinstance(e, Idle)]
        assert len(idle) > 50 and all(e.facts is trace.facts for e in idle)
        fast = [report_text(entries), write_json(entries), report_lcov(entries)]
        for e in idle:
            e.facts = None
        slow = [report_text(entries), write_json(entries), report_lcov(entries)]
    assert fast == slow


def test_a_recording_without_facts_reads_as_before(recording: Path, tmp_path: Path) -> None:
    import shutil
    import sqlite3

    copy = tmp_path / "nofacts.wt"
    shutil.copy(recording, copy)
    with sqlite3.connect(copy) as db:
        assert db.execute("DELETE FROM arrays WHERE name = 'report.facts'").rowcount == 1
    with Trace.open(copy) as bare, Trace.open(recording) as full:
        assert bare.facts is None
        a, b = counted(bare), counted(full)
        assert write_json(a) == write_json(b) and report_lcov(a) == report_lcov(b)


@pytest.mark.parametrize("data, why", [
    ([0, 2, 1, 0, 0], "bad header"),                       # version 2
    ([0, 1, 1, 1], "truncated"),
    ([0, 1, 1, 5, 0], "bad header"),                       # 5 line rows, none there
    ([0, 1, 1, 1, 0, 3, 10, 0, 0], "out of range"),        # function index 3 of 1
    ([0, 1, 1, 0, 1, 0, 2, 0, 5, 0, -99], "unknown branch name"),
    ([0, 1, 1, 0, 0, 0, 1, 1, 0, 0], "twice"),
    ([5, 1, 1, 0, 0], "bad header"),                       # past the registry
])
def test_corrupt_facts_are_a_one_line_error(data: list[int], why: str) -> None:
    with pytest.raises(StoreError, match=why):
        F.StoredFacts(np.array(data, np.int64), 4)
