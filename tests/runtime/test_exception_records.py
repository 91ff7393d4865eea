"""An exception record (``EXC s [r] [H]``, ``RERAISE s [x] [r] [H]``) is appended by one call, so a thread
stopped at exit (a daemon) never stands inside a half-written record that the recorder would then close
wrongly; checked by an opcode tracer that watches the stream buffer, independent of the recorder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from wtutil import run_recorded

#: Prints, per instruction that appended an exception code, how many values it appended.
RECORDS = '''
import sys

def fails(n):
    if n > 1:
        raise ValueError(n)
    return n

def caught(n):
    try:
        return fails(n)
    except ValueError:
        return -1

def reraised(n):
    try:
        return fails(n)
    finally:
        n += 1

class Ctx:
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return False

def within(n):
    with Ctx():
        return fails(n)

def gen(k):
    try:
        yield k
    except KeyError:
        yield -k

# the tracer is compiled here, not imported: it is not instrumented, so it appends no events
exec(compile("""
appends, last = [], {}

def local(frame, event, arg):
    a = frame.f_locals.get("wt.a")
    buf = getattr(a, "__self__", None)
    key = id(frame)
    before = last.get(key)
    if before is not None and buf is before[0] and len(buf) > before[1]:
        delta = buf[before[1]:]
        if delta[0] in (-2, -4):
            appends.append((frame.f_code.co_name, delta[0], len(delta)))
    last[key] = None if buf is None else (buf, len(buf))
    return local

def tracer(frame, event, arg):
    if frame.f_code.co_name in ("fails", "caught", "reraised", "within", "gen"):
        frame.f_trace_opcodes = True
        return local
    return None
""", "<tracer>", "exec"), globals())

sys.settrace(tracer)
for n in range(4):
    caught(n)
    for f in (reraised, within):
        try:
            f(n)
        except ValueError:
            pass
    g = gen(n)
    next(g)
    g.throw(KeyError())
    g.close()
sys.settrace(None)
for row in sorted(set(appends)):
    print(*row)
'''


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="from 3.12 on, opcode events skip instructions "
                    "without a location, as the probes are")
@pytest.mark.parametrize("mode", ["blocks", "witness", "path"])
def test_an_exception_record_is_appended_by_one_instruction(mode: str, tmp_path: Path) -> None:
    script = tmp_path / "prog_records.py"
    script.write_text(RECORDS)
    run = run_recorded(script, tmp_path / "t.wt", mode=mode)
    assert run.returncode == 0, run.stderr
    rows = [line.split() for line in run.stdout.splitlines()]
    assert {name for name, _, _ in rows} >= {"fails", "caught", "reraised", "within", "gen"}
    if mode != "blocks":
        assert any(code == "-4" for _, code, _ in rows)        # RERAISE records were seen
    for name, code, n in rows:
        # the code, the statement, (RERAISE in witness and path modes: the site), (path: the register)
        least = 2 + (code == "-4") + (mode == "path")
        assert int(n) >= least, f"{name}: an exception record of {n} value(s) appended by one instruction"
