"""No mode's flusher imports a module the program would see while it runs (full mode's
``ValueLog.split`` imported numpy, datetime, math, ... into ``sys.modules`` until wave 18's
split server).

The program runs past several flushes (0.25 s apart) with enough probes for each flush to have
work, and prints the modules that appeared meanwhile: the plain run's output is the oracle."""

from __future__ import annotations

import pytest

from wtutil import run_plain, run_recorded

LATE = '''
import sys, time
before = set(sys.modules)
class Box:
    pass
def work(n):
    out = []
    for i in range(n):
        b = Box()
        b.x = i * 0.5
        out.append((b, str(i), i << 70))
    return len(out)
total = 0
t = time.monotonic()
while time.monotonic() - t < 0.9:     # at least three of the flusher's 0.25 s intervals
    total += work(500)
    time.sleep(0.05)
print(sorted(m for m in set(sys.modules) - before if not m.startswith("wholetrace")), total > 0)
'''


@pytest.mark.parametrize("mode, options", [("blocks", ()), ("witness", ()), ("path", ()),
                                           ("path", ("--wpp",)), ("count", ()),
                                           ("full", ())],
                         ids=["blocks", "witness", "path", "path-wpp", "count", "full"])
def test_no_flusher_imports_into_the_program(tmp_path, mode, options):
    script = tmp_path / "prog_late.py"
    script.write_text(LATE)
    plain = run_plain(script)
    assert plain.returncode == 0 and plain.stdout == "[] True\n", plain.stderr
    rec = run_recorded(script, tmp_path / "t.wt", mode=mode, options=options)
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout == plain.stdout
