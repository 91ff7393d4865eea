"""WET queries on a fork child's part read alone (review21f MED-2, wave 23).

A fork child's part goes on from its parent's last flush: when the parent had stored events
before the fork, the part's streams begin inside activations that began in the parent, and the
decoding pass skipped their events, so ``values`` answered "no statement on this line ran" for
lines that ran in the child, and ``slice --output`` found no print.  Now such a part is refused
with its reason; a part whose parent stored nothing before the fork still reads (oracle: the
child's own printed values).
"""

from __future__ import annotations

import numpy as np

from wholetrace.kernels import wetdecode as K
from wholetrace.wet.decode import _outside
from wtutil import cli_in_process, run_recorded

PROGRAM = '''
import os, time
def work(x):
    s = 0
    for i in range(x):
        s += i * i
    return s
name = "hello-" + str(work(3))
for k in range(N):
    work(3)
time.sleep(SLEEP)
pid = os.fork()
if pid == 0:
    t = name + "!"
    print("child", t)
    raise SystemExit(0)
os.waitpid(pid, 0)
print("parent", work(4))
'''


def _part(tmp_path, n, sleep):
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM.replace("N", str(n)).replace("SLEEP", str(sleep)))
    rec = run_recorded(script, tmp_path / "out.wt", mode="full", timeout=240)
    assert rec.returncode == 0, rec.stderr
    parts = sorted((tmp_path / "out.wt.parts").glob("*.wt"))
    assert len(parts) == 1
    return script, str(parts[0])


def test_a_part_beginning_inside_its_parents_activations_is_refused(tmp_path):
    script, part = _part(tmp_path, 20000, 0.4)      # the parent flushes before the fork
    for argv in (("values", part, f"{script}:14"), ("slice", part, "--output")):
        rc, out, err = cli_in_process(*argv)
        assert rc == 2 and "cannot read it alone" in err, (argv, out, err)
    rc, out, err = cli_in_process("values", str(tmp_path / "out.wt"), f"{script}:18")
    assert rc == 0 and "1 instances" in out, err


def test_a_part_forked_before_any_flush_reads(tmp_path):
    script, part = _part(tmp_path, 1, 0)            # nothing stored before the fork
    rc, out, err = cli_in_process("values", part, f"{script}:14")
    assert rc == 0 and "t = 'hello-5!'" in out, (out, err)


def test_outside_any_activation():
    e, lv, x = -K.ENTER_BASE - 3, K.LEAVE, K.EXC
    assert not _outside(np.array([e, 0, x, -1, 1, e, 0, lv, lv], np.int64))   # -1: EXC's operand
    assert not _outside(np.array([], np.int64))
    assert _outside(np.array([0, lv], np.int64))                             # a block at depth 0
    assert _outside(np.array([e, 0, lv, 2], np.int64))
    assert _outside(np.array([e, lv, lv, e, lv], np.int64))                   # a LEAVE at depth 0
    assert _outside(np.array([x, 3, e, lv], np.int64))
