"""``--mode full`` with a program's audit hook: it ends, and the hook sees no event of the recording's while the program runs (wave 23).

Oracle: the plain run's stdout/stderr/exit status, and blocks mode's counts.  The value probes
keyed objects by ``id()``, an audit event: the hook (instrumented code) ran inside the probe of
each value it read, before any guard of its own, so each of its probes recursed to the limit
and the hook's body started again after every ``RecursionError``: no end (audit22 open 2,
review22b P-3).  A guarded hook saw thousands of ``builtins.id`` events, and the flusher's
``array()`` and ``marshal.dumps`` calls ran the hook on the flusher's thread (named ``Dummy``
by ``threading``), and a new thread's first probe crashed the stream's look-up (KeyError).
"""

from __future__ import annotations

import pytest

from wtutil import cli_in_process, run_plain, run_recorded

pytestmark = pytest.mark.compat

#: No guard: every event the recording raised inside a probe of the hook ran the hook again.
UNGUARDED = '''
import sys
seen = {}
def hook(event, args):
    if event.startswith("builtins.id") or event.startswith("array") or event.startswith("marshal"):
        seen[event] = seen.get(event, 0) + 1
sys.addaudithook(hook)
def work(n):
    return [(i * i, str(i), [i]) for i in range(n)][-1]
print(work(5), sorted(seen.items()))
'''

#: A guarded hook counting every event by thread, over several flushes (0.25 s apart), values of
#: every kind, a generator and a thread.
GUARDED = '''
import sys, threading, time
seen = {}
busy = []
def hook(event, args):
    if busy:
        return
    busy.append(1)
    if event != "time.sleep":              # (3.12+; the same in both runs, but a sleep more or less)
        key = (event, threading.current_thread().name)
        seen[key] = seen.get(key, 0) + 1
    busy.pop()
sys.addaudithook(hook)

class P:
    def __init__(self, v):
        self.v = v

def work(n):
    out = []
    for i in range(n):
        out.append((P(i), str(i), i * 0.5, 2 ** 70 + i, b"x" * (i % 3), complex(i, 1), None, True))
    return len(out)

def gen(n):
    for i in range(n):
        yield work(i)

total = sum(gen(30))
for _ in range(4):
    time.sleep(0.15)
    total += work(1500)
t = threading.Thread(target=work, args=(2000,), name="worker")
t.start()
t.join()
print(total, sorted(seen.items()))
'''


def test_an_unguarded_hook_ends(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(UNGUARDED)
    plain = run_plain(script)
    assert plain.returncode == 0, plain.stderr
    rec = run_recorded(script, tmp_path / "out.wt", mode="full", timeout=120)   # before: no end
    assert (rec.returncode, rec.stdout, rec.stderr) == (0, plain.stdout, "")


def test_the_hook_sees_no_event_of_the_recording(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(GUARDED)
    plain = run_plain(script)
    assert plain.returncode == 0, plain.stderr
    rec = run_recorded(script, tmp_path / "full.wt", mode="full", timeout=240)
    assert (rec.returncode, rec.stdout, rec.stderr) == (0, plain.stdout, "")
    blocks = run_recorded(script, tmp_path / "blocks.wt", mode="blocks", timeout=240)
    assert (blocks.returncode, blocks.stdout) == (0, plain.stdout)
    got = [cli_in_process("counts", str(tmp_path / f"{m}.wt"), "--format", "json") for m in ("full", "blocks")]
    assert got[0][0] == 0 and got[0][1] == got[1][1]
    rc, out, err = cli_in_process("info", str(tmp_path / "full.wt"))
    assert rc == 0 and "worker" in out, err
