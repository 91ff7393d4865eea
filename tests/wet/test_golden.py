"""Golden WET programs (spec §6.8 (c)): the backward slice of the last output equals a
hand-written set of lines, and the decoy statement of each program stays out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from golden import GOLDEN, THREADS
from wtutil import cli_in_process, run_plain, run_recorded


def slice_lines(wt: Path, *args: str) -> tuple[set[int], dict]:
    rc, stdout, stderr = cli_in_process("slice", str(wt), *args, "--json")
    assert rc == 0, stderr
    out = json.loads(stdout)
    return {ln for lines in out["lines"].values() for ln in lines}, out


def record(tmp_path: Path, source: str) -> Path:
    script = tmp_path / "prog.py"
    script.write_text(source)
    wt = tmp_path / "prog.wt"
    got = run_recorded(script, wt, mode="full")
    plain = run_plain(script)
    assert (got.returncode, got.stdout) == (plain.returncode, plain.stdout)
    return wt


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_slice(name: str, tmp_path: Path) -> None:
    source, expected = GOLDEN[name]
    wt = record(tmp_path, source)
    lines, _out = slice_lines(wt, "--output")
    assert lines == expected


@pytest.mark.parametrize("name", sorted(THREADS))
def test_thread_slice(name: str, tmp_path: Path) -> None:
    source, expected = THREADS[name]
    wt = record(tmp_path, source)
    lines, out = slice_lines(wt, "--output")
    assert lines == expected
    assert any("thread" in n for n in out["notes"])


def test_first_query_stores_the_wet(tmp_path: Path) -> None:
    """The WET built by the first query is stored in the recording (checksummed rows) and read back."""
    from wholetrace.store import Recording
    from wholetrace.wet.graph import stored

    wt = record(tmp_path, GOLDEN["dict_keys"][0])
    slice_lines(wt, "--output")
    with Recording(wt) as rec:
        w = stored(rec)
    assert w is not None and w.n_inst > 0
