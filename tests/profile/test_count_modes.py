"""`count` and `count-naive` give exactly the block counts the `blocks` trace implies, on real programs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from corpus import PROGRAMS
from oracles.settrace_lines import line_counts, single_simple_statement_lines
from wholetrace.cli import load_profiles
from wholetrace.store import Recording
from wtutil import run_plain, run_recorded


def profiles(path: Path) -> dict[tuple[str, str, int], object]:
    with Recording(path) as rec:
        return {(p.file, p.qualname, p.cfg.firstline): p for p in load_profiles(rec, str(path))}


def assert_same_counts(a: dict, b: dict, what: str, edges: bool) -> None:
    assert a.keys() == b.keys()
    for key in a:
        pa, pb = a[key], b[key]
        assert np.array_equal(np.asarray(pa.blocks)[2:], np.asarray(pb.blocks)[2:]), (what, key, "blocks")
        assert np.array_equal(np.asarray(pa.stmts), np.asarray(pb.stmts)), (what, key, "statements")
        if edges:
            assert np.array_equal(np.asarray(pa.edges), np.asarray(pb.edges)), (what, key, "edges")


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_count_modes_agree_with_blocks_and_settrace(name: str, tmp_path: Path) -> None:
    prog = PROGRAMS[name]
    driver = prog.write(tmp_path, "small")
    plain = run_plain(driver)
    got = {}
    for mode in ("blocks", "count", "count-naive"):
        out = tmp_path / f"{mode}.wt"
        proc = run_recorded(driver, out, mode=mode, include=tuple(prog.include))
        assert (proc.returncode, proc.stdout, proc.stderr) == (plain.returncode, plain.stdout, plain.stderr)
        got[mode] = profiles(out)
    assert_same_counts(got["blocks"], got["count"], "count", edges=True)
    assert_same_counts(got["blocks"], got["count-naive"], "count-naive", edges=False)
    # and the line counts of `count` agree with the independent settrace oracle
    files = {f for f, _q, _l in got["count"]}
    oracle = line_counts(driver, [], files)
    compared = 0
    for (file, _q, _l), p in got["count"].items():
        if p.cfg.kind == "module" and not file.startswith(str(tmp_path)):
            continue
        wanted = single_simple_statement_lines(Path(file).read_text())
        for st in p.cfg.stmts:
            if st.kind == "simple" and st.line == st.end_line and st.line in wanted:
                assert int(p.stmts[st.id]) == oracle.get((file, st.line), 0), (file, st.line)
                compared += 1
    assert compared > 20
