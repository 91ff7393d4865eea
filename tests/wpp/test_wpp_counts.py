"""``wholetrace wpp --json`` counts events as ``info`` does: each stream's raw words (``--keep-raw`` is
the oracle), exception records with their operands, in blocks and path mode, over several streams."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from wholetrace.store import Recording
from wtutil import ENV, run_recorded

PROGRAM = """
import threading

def risky(i):
    if i % 3 == 0:
        raise ValueError(i)
    return i

def work(n):
    s = 0
    for i in range(n):
        try:
            s += risky(i)
        except ValueError:
            s -= 1
        finally:
            s += 2
    return s

t = threading.Thread(target=work, args=(300,))
t.start()
print(work(500))
t.join()
"""


@pytest.mark.parametrize("mode", ["path", "blocks"])
def test_wpp_events_are_the_raw_streams(tmp_path: Path, mode: str) -> None:
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    out = tmp_path / "p.wt"
    proc = run_recorded(script, out, mode=mode, options=("--wpp", "--keep-raw"))
    assert proc.returncode == 0, proc.stderr
    got = subprocess.run([sys.executable, "-m", "wholetrace.cli", "wpp", "--json", str(out)],
                         capture_output=True, text=True, env=ENV, timeout=300)
    assert got.returncode == 0, got.stderr
    doc = json.loads(got.stdout)
    with Recording(out) as rec:
        raw = {s.sid: len(rec.events(s.sid)) for s in rec.streams()}
        exc = sum(int((rec.events(s.sid) == -2).sum()) for s in rec.streams())
    assert len(doc["streams"]) == 2 and exc > 100      # two threads, exception records in both
    assert {r["stream"]: r["events"] for r in doc["streams"]} == {s: n for s, n in raw.items() if n}
    assert doc["total"]["events"] == sum(raw.values())
    assert doc["total"]["raw_bytes"] == 4 * sum(raw.values())
