"""Decoders sharing a session's scratch: witness-free path searches of one stream never see another's marks (review23b HIGH-1, wave 23)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from wtutil import cli_in_process, run_plain, run_recorded

# review23b's reproducer (wrapped async for, generators, tasks and hand-driven coroutines over
# several streams): before the fix, each stream's decoder restarted its search mark at 0 while
# the marks lived in the session's shared scratch, so from the second stream on a stale mark
# equalled the current one: `counts` of witness/branches segfaulted (IndexError without the JIT)
PROGRAM = Path(__file__).parent / "data" / "shared_scratch23.py"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("scratch")
    prog = tmp / "prog.py"
    shutil.copy(PROGRAM, prog)
    plain = run_plain(prog)
    out = {}
    for mode in ("blocks", "witness", "branches"):
        wt = tmp / f"{mode}.wt"
        rec = run_recorded(prog, wt, mode=mode)
        assert (rec.returncode, rec.stdout) == (plain.returncode, plain.stdout), rec.stderr
        out[mode] = wt
    return out


def _counts(wt: Path) -> dict:
    code, out, err = cli_in_process("counts", "--format", "json", str(wt))
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("mode", ("witness", "branches"))
def test_counts_equal_blocks_over_many_streams(recorded: dict[str, Path], mode: str) -> None:
    """Every line and edge count of a witness/branches recording equals blocks' (the oracle:
    blocks records every block, no path search)."""
    got, want = _counts(recorded[mode]), _counts(recorded["blocks"])
    assert got.get("lines") == want.get("lines")
    assert got.get("edges", got.get("arcs")) == want.get("edges", want.get("arcs"))
