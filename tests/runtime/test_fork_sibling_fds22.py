"""Fork children's sibling split servers, wave 22 (review22a HIGH-1, MED-2, MED-3): a child that
closes its descriptors (a daemon's ``os.closerange``) keeps its recording (the reply FIFO's end is
checked by inode before it is used or closed, then the child splits in-process); siblings end with
the recording, those serving a child that outlives it and those left waiting for a child that ended.

Oracles: plain's output, the same program recorded with ``WHOLETRACE_SPLIT_SERVER=0`` (the
in-process split: the child's log equal), and /proc (the recording's processes still alive)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_full_fork22 import _log, _record
from test_split_server18 import _alive_with
from wtutil import ENV, run_plain

# The child closes every descriptor but stdio 0.1 s after the fork (its flusher has asked for a
# sibling by then: the reply FIFO's end is among them), then works past ``SIBLING_SECONDS`` (5 s),
# when it gives up waiting for the sibling (before the fix: it closed the closed end, EBADF).  With
# REUSE the program then puts a pipe of its own, holding 4096 bytes, at the high numbers
# (fdguard.HIGH_FD, 256, and up) where the reply end was: before the fix the flusher either closed
# it (giving up) or read the program's bytes from it as its sibling's replies (joining).
CLOSES = '''
import os, sys, time
def work(n, seed):
    return len([(str(i + seed), i * 0.5, None) for i in range(n)])
work(100, 0)
if os.fork() == 0:
    time.sleep(0.1)
    os.closerange(3, 1 << 20)
    mine, left = [], 0
    if REUSE:
        r, w = os.pipe()
        os.write(w, bytes(4096))
        os.close(w)
        mine = [os.dup2(r, fd) for fd in range(256, 320)]
    for i in range(24):
        work(200, i)
        time.sleep(0.25)
    def same(fd):
        try:
            return os.path.sameopenfile(fd, r)
        except OSError:
            return False
    if REUSE:
        left = len(os.read(r, 8192))
    print("child done", sum(map(same, mine)), left, flush=True)
    sys.exit(0)
print("parent", os.waitstatus_to_exitcode(os.wait()[1]))
'''


@pytest.mark.parametrize("reuse", [False, True], ids=["closes", "closes-and-reuses"])
def test_a_child_that_closes_its_descriptors_keeps_its_recording(tmp_path: Path, reuse: bool) -> None:
    script = tmp_path / "closes.py"
    script.write_text(CLOSES.replace("REUSE", str(reuse)))
    plain = run_plain(script)
    want = "child done 64 4096\n" if reuse else "child done 0 0\n"
    assert (plain.returncode, plain.stdout, plain.stderr) == (0, want + "parent 0\n", "")
    logs = {}
    for server in (True, False):
        out = tmp_path / f"{int(server)}.wt"
        rec = _record(script, out, server=server)
        assert (rec.returncode, rec.stdout, rec.stderr) == (0, plain.stdout, ""), server
        parts = list(Path(str(out) + ".parts").glob("*.wt"))
        assert len(parts) == 1
        logs[server] = _log(parts[0])[0]
    assert logs[True] == logs[False]
    assert logs[True][0][0][0] and logs[True][1][0]       # records and events stored


# The child works through several flushes (it joins its sibling), then outlives the recording.
OUTLIVES = '''
import os, time
def work(n):
    return sum(float(i) * 0.5 for i in range(n))
work(1000)
pid = os.fork()
if pid == 0:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    for _ in range(8):
        work(2000)
        time.sleep(0.25)
    time.sleep(300)
    os._exit(0)
work(2000)
time.sleep(1.5)
print(pid)
'''


def _none_left(out: Path, but: int) -> list[int]:
    """The recording's processes other than ``but`` still alive after a liveness bound (60 s)."""
    left = _alive_with(str(out), but)
    for _ in range(600):
        if not left:
            break
        time.sleep(0.1)
        left = _alive_with(str(out), but)
    return left


def test_a_sibling_ends_with_the_recording_while_its_child_lives(tmp_path: Path) -> None:
    script = tmp_path / "outlives.py"
    script.write_text(OUTLIVES)
    out = tmp_path / "o.wt"
    rec = _record(script, out)
    child = int(rec.stdout)
    try:
        assert rec.returncode == 0, rec.stderr
        assert _none_left(out, child) == []
        assert _alive_with(str(out), -1) == [child]      # while the fork child still lives
    finally:
        os.kill(child, 9)


# A fork child asks for a sibling and ends without joining it, after the sibling opened the reply
# FIFO: the sibling waits in its open of the request FIFO (before the fix: until its alarm, 10 s
# later).  The process running this is the recording's root: it ends its server as ``finish`` does.
WAITS = """
import os, sys, time
from wholetrace.runtime import splitserver
srv = splitserver.start()
where = sys.argv[1]
pid = os.fork()
if pid == 0:
    asked = splitserver.ask(srv, where)
    time.sleep(3)                 # the server forks the sibling, which opens the reply FIFO
    os._exit(0 if asked is not None else 3)
print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
sys.stdin.readline()              # the test counts the processes waiting
srv.close()
splitserver.sweep(where)
print("closed", flush=True)
sys.stdin.readline()
"""


def test_no_sibling_waits_after_the_recording(tmp_path: Path) -> None:
    marker = str(tmp_path / "waits")
    proc = subprocess.Popen([sys.executable, "-c", WAITS, marker], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env=ENV)
    os.makedirs(marker)
    try:
        assert proc.stdout.readline() == "0\n"            # the child asked
        assert len(_alive_with(marker, proc.pid)) == 2     # the server and the waiting sibling
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == "closed\n"
        left = _alive_with(marker, proc.pid)
        for _ in range(30):   # the server's EOF and its SIGKILL of its group: far below the 10 s alarm
            if not left:
                break
            time.sleep(0.1)
            left = _alive_with(marker, proc.pid)
        assert left == []
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
