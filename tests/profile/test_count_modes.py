"""`count` and `count-naive` give exactly the block and statement counts the `blocks` trace implies, on real programs."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus import PROGRAMS
from wtutil import assert_same_counts, profiles, run_plain, run_recorded


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
