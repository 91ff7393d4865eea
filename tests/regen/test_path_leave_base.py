"""Closing records below 2^30 (wave 14): ``events.LEAVE_PATH`` is 2^29, and recordings made by main
before it (2^30) are refused with one line.

``data/path_main_{raw,wpp}.wt.gz`` are ``record --mode path`` recordings of ``data/path_main_prog.py``
made by main 6fd9614 (``--no-wpp`` and ``--wpp``).  Oracles: that recording itself (a new recording
of the same deterministic program is the same stream with every closing record moved down by 2^29:
nothing else of the format changed) and the int sizes (every event one CPython digit).
"""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from wholetrace.errors import StoreError
from wholetrace.events import LEAVE, LEAVE_PATH, NO_PATH
from wholetrace.instrument.modes import OLD_LEAVE_PATH, check_leave_base
from wholetrace.store import Recording
from wholetrace.trace.session import Trace
from wtutil import ENV, run_recorded

DATA = Path(__file__).parent / "data"
PROG = DATA / "path_main_prog.py"


def _unpack(tmp: Path, name: str) -> Path:
    out = tmp / name
    out.write_bytes(gzip.decompress((DATA / f"{name}.gz").read_bytes()))
    return out


def _streams(path: Path) -> list[list[int]]:
    with Recording(path) as rec:
        return [rec.events(s.sid).tolist() for s in rec.streams()]


def test_base_is_below_one_digit() -> None:
    """Path ids and closing records stay below 2^30 (one CPython digit); "no path open" above -2^30."""
    from wholetrace.instrument.pathnum import MAX_PATHS

    assert LEAVE_PATH == 1 << 29 and LEAVE_PATH + MAX_PATHS - 1 < 1 << 30
    assert NO_PATH == LEAVE - LEAVE_PATH and NO_PATH > -(1 << 30) and OLD_LEAVE_PATH == 1 << 30


@pytest.mark.parametrize("name", ["path_main_raw.wt", "path_main_wpp.wt"])
def test_main_recording_is_refused_with_one_line(tmp_path: Path, name: str) -> None:
    """``trace``, ``paths`` and ``counts`` on a recording made by main: exit 2, one line naming the
    cause, and nothing on stdout (no partial trace or JSON document before the error)."""
    wt = _unpack(tmp_path, name)
    for cmd in (["trace"], ["trace", "--format", "json"], ["trace", "--salvage"], ["paths"], ["counts"]):
        r = subprocess.run([sys.executable, "-m", "wholetrace.cli", *cmd, str(wt)], capture_output=True,
                           text=True, env=ENV, timeout=120)
        err = r.stderr.strip().splitlines()
        if "--salvage" in cmd:
            assert err[:1] == ["wholetrace: salvage: nothing lost"], r.stderr
            err = err[1:]
        assert r.returncode == 2, (cmd, r.returncode, r.stderr)
        assert r.stdout == "", (cmd, r.stdout)
        assert len(err) == 1 and "made by an older wholetrace" in err[0] and "record it again" in err[0], (cmd, r.stderr)
    with Trace.open(wt) as trace, pytest.raises(StoreError, match="made by an older wholetrace \\(closing records at 2\\^30 \\+ id, not 2\\^29"):
        for s in trace.recording.streams():
            trace.events(s.sid)


def test_new_stream_is_main_stream_with_lower_base(tmp_path: Path) -> None:
    """Recorded now, the program's stream is main's with each closing record ``2^30 + p`` now
    ``2^29 + p``; every other event (ENTER, cut ids, EXC records and their registers) is the same."""
    old = _streams(_unpack(tmp_path, "path_main_raw.wt"))
    out = tmp_path / "new.wt"
    r = run_recorded(PROG, out, mode="path", options=("--no-wpp",))
    assert r.returncode == 0, r.stderr
    new = _streams(out)
    assert len(old) == len(new) == 1 and len(old[0]) == len(new[0]) == 60
    closing = [i for i, v in enumerate(old[0]) if v >= OLD_LEAVE_PATH]
    assert len(closing) >= 10     # pick's three returns, boom's two, gen's end
    want = [v - OLD_LEAVE_PATH + LEAVE_PATH if v >= OLD_LEAVE_PATH else v for v in old[0]]
    assert new[0] == want
    assert all(-(1 << 30) < v < 1 << 30 for v in new[0])
    # and it reads: the closing records' paths end at EXIT
    with Trace.open(out) as trace:
        assert len(trace.events(0)) > 0


def test_check_leave_base() -> None:
    """A path numbering without ``leave`` (main) or with another base is refused; blocks-id
    functions of a path recording (strategy ``trace``) and this base pass."""
    plan = {"strategy": "paths", "paths": {"num_paths": 3, "dag": [], "inc": []}}
    with pytest.raises(StoreError, match="made by an older wholetrace"):
        check_leave_base(plan, "f")
    with pytest.raises(StoreError, match="made by another wholetrace \\(closing records at 2\\^2 \\+ id, not 2\\^29"):
        check_leave_base({**plan, "paths": {**plan["paths"], "leave": 4}}, "f")   # type: ignore[dict-item]
    check_leave_base({**plan, "paths": {**plan["paths"], "leave": LEAVE_PATH}}, "f")   # type: ignore[dict-item]
    check_leave_base({"strategy": "trace"}, "f")
    check_leave_base(None, "f")


def test_numbering_stores_its_base() -> None:
    from wholetrace.instrument.cfg import build_module
    from wholetrace.instrument.modes import numbering_json, path_numbering

    cfg = next(c for c in build_module(PROG.read_text(), str(PROG)) if c.qualname == "pick")
    num = path_numbering(cfg)
    assert num is not None and numbering_json(num)["leave"] == LEAVE_PATH


def test_raw_records_one_digit(tmp_path: Path) -> None:
    """Every event of a path recording with exceptions, generators and several ways out is a
    one-digit CPython int (|v| < 2^30), closing records included."""
    out = tmp_path / "r.wt"
    r = run_recorded(PROG, out, mode="path", options=("--no-wpp",))
    assert r.returncode == 0, r.stderr
    ev = np.concatenate([np.asarray(s, np.int64) for s in _streams(out)])
    assert (np.abs(ev) < 1 << 30).all() and (ev >= LEAVE_PATH).sum() >= 10
