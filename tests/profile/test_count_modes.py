"""`count` and `count-naive` give exactly the block and statement counts the `blocks` trace implies, on real programs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from corpus import PROGRAMS
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
def test_count_modes_agree_with_blocks(name: str, tmp_path: Path) -> None:
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
    # blocks == settrace on every comparable line is tested in tests/runtime/test_corpus_blocks.py,
    # so equal statement counts here carry that agreement over to `count` and `count-naive`.
