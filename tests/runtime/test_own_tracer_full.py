"""Full mode of a program whose own tracer runs instrumented code at every ``line`` event.

A tracer that keeps tracing every frame (a stepping debugger: ``bdb`` stepping, a tracer that
returns itself for any frame) is called at the lines of full mode's value probes too.  Defined
in the program's files, it is instrumented: its own records went into the event list between a
value record's marker and its payload, and the recording could not be read ("B4 -> B2 is not
an edge").  Oracles: the program's own list of the values it assigned (against ``values``),
blocks mode's counts of the traced functions, and the plain run's stdout.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from wtutil import ENV, cli_in_process, run_plain, run_recorded

pytestmark = pytest.mark.compat

PROG = r'''
import sys, bdb
seen = []
def tr(frame, event, arg):
    if frame.f_code.co_name == "f" and event == "line":
        seen.append(("line", frame.f_lineno))
    return tr
class P:
    def __init__(self, i):
        self.i = i
def f(n):
    s, x, name, o, flag = 0, 0.5, "", None, None
    for i in range(n):
        s += i
        x *= 1.5
        name = name + "ab"[i % 2]
        o = P(i)
        flag = i % 3 == 0
        seen.append((s, x, name, o.i, flag))
    return s
class Stepper(bdb.Bdb):
    def user_line(self, frame):
        if frame.f_code.co_name == "f":
            seen.append(("bdb", frame.f_lineno))
        self.set_step()
    def user_call(self, frame, args):
        self.set_step()
    def user_return(self, frame, value):
        self.set_step()
how = sys.argv[1]
if how == "settrace":
    sys.settrace(tr)
    f(5)
    sys.settrace(None)
else:
    Stepper().runcall(f, 5)
for x in seen:
    print(x)
'''

LINES = {"s": 14, "x": 15, "name": 16, "flag": 18}   # the lines of PROG's assignments in the loop


def _values(wt: Path, script: Path, line: int) -> list[str]:
    r = subprocess.run([sys.executable, "-m", "wholetrace.cli", "values", "--json", str(wt), f"{script.name}:{line}"],
                       capture_output=True, text=True, env=ENV, cwd=script.parent)
    assert r.returncode == 0, r.stderr
    return [v for inst in json.loads(r.stdout)["instances"] for v in inst["defs"].values()]


def _f_counts(wt: Path, script: Path) -> dict[str, object]:
    rc, stdout, stderr = cli_in_process("counts", "--format", "json", str(wt))
    assert rc == 0, stderr
    c = json.loads(stdout)
    f = next(x for x in c["functions"] if x["name"] == "f")
    lines = c["lines"][str(script)]
    return {"f": f, "lines": {k: v for k, v in lines.items() if f["firstline"] <= int(k) <= f["lastline"]},
            "branches": {k: v for k, v in c["branches"].get(str(script), {}).items()
                         if f["firstline"] <= int(k) <= f["lastline"]}}


@pytest.mark.parametrize("how", ["settrace", "bdb"])
def test_full_mode_readable_and_exact_under_a_stepping_tracer(tmp_path: Path, how: str) -> None:
    script = tmp_path / "prog.py"
    script.write_text(PROG)
    plain = run_plain(script, how)
    assert plain.returncode == 0, plain.stderr
    full, blocks = tmp_path / "full.wt", tmp_path / "blocks.wt"
    r = run_recorded(script, full, how, mode="full")
    assert (r.stdout, r.stderr, r.returncode) == (plain.stdout, plain.stderr, 0)
    assert run_recorded(script, blocks, how, mode="blocks").stdout == plain.stdout
    assert _f_counts(full, script) == _f_counts(blocks, script)
    rows = [eval(x) for x in plain.stdout.splitlines()]
    assigned = [row for row in rows if row[0] not in ("line", "bdb")]
    assert len(assigned) == 5
    for k, (var, line) in enumerate(LINES.items()):
        col = (0, 1, 2, 4)[k]
        assert _values(full, script, line) == [repr(row[col]) for row in assigned], var
