"""Full mode's split server (``runtime.splitserver``): the program's process never imports numpy,
sees no extra child, and the stored log equals the in-process split's (the oracle: the same
program recorded with ``WHOLETRACE_SPLIT_SERVER=0``, whose flusher splits in its own thread)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from wtutil import ENV, run_plain

# Deterministic values of every tag, across several flushes (0.25 s apart), in two threads
# (switch records), with ints beyond 64 bits, strs and floats on the side list.
PROG = '''
import os, sys, threading, time
class Box:
    pass
def work(n, seed):
    out = []
    for i in range(n):
        b = Box()
        b.x = i * 0.5 + seed
        s = str(i) + "s"
        z = complex(i, 1)
        big = (i + seed) << 70
        raw = bytes([i % 256])
        flag = i % 3 == 0
        out.append((b, s, z, big, raw, flag, None))
    return len(out)
def other(n, seed):          # no objects: serials come from one counter, in the main thread only
    t = 0.0
    for i in range(n):
        t += i * 0.25
        name = "k" + str(i + seed)
    return t
WHAT
total = 0
for rounds in range(6):      # past three of the flusher's 0.25 s intervals
    th = threading.Thread(target=other, args=(200, rounds))
    th.start()
    total += work(300, rounds)
    th.join()
    time.sleep(0.15)
print("numpy" in sys.modules, total > 0)
'''


def _record(script: Path, out: Path, server: bool) -> subprocess.CompletedProcess:
    env = dict(ENV, WHOLETRACE_SPLIT_SERVER="1" if server else "0")
    return subprocess.run([sys.executable, "-m", "wholetrace.cli", "record", "--mode", "full", "-q", "-o", str(out),
                           str(script)], capture_output=True, text=True, cwd=script.parent, timeout=300, env=env,
                          stdin=subprocess.DEVNULL)


def _log(path: Path) -> tuple[dict, dict, list, dict]:
    """What readers get: the capture log (per stream, switches included), contents, object
    types, each stream's events; the meta's split tally."""
    from wholetrace.store import open_recording
    from wholetrace.wet.capture import load

    with open_recording(path) as rec:
        log = load(rec)
        streams = {s: [getattr(st, f).tolist() for f in ("pos", "slot", "tag", "val", "switch")]
                   for s, st in log.streams.items()}
        events = {st.sid: rec.events(st.sid).tolist() for st in rec.streams()}
        return ({"streams": streams, "events": events, "records": rec.meta.get("wet_records"),
                 "raw": rec.meta.get("wet_raw_bytes")},   # (a child ending with os._exit stores no totals)
                log.contents, sorted(log.object_types.values()), rec.meta.get("wet_splits"))


def _same_threads(a: dict, b: dict) -> None:
    """The threads' streams equal up to the interleaving of the two threads (the switch numbers
    and the thread streams' ids depend on scheduling): compare the multiset of per-stream logs."""
    def key(x: dict) -> list:
        return sorted(repr((s[:4], x["events"][sid])) for sid, s in x["streams"].items())
    assert key(a) == key(b)
    assert a["records"] == b["records"] and a["raw"] == b["raw"]


@pytest.mark.parametrize("what", ["", "os.closerange(3, 1 << 16)"], ids=["plain", "program-closes-descriptors"])
def test_server_stores_what_the_in_process_split_stores(tmp_path: Path, what: str) -> None:
    """The program never sees numpy (it did before the server: the flusher's split imported it),
    and the log equals the in-process split's; a program that closes every descriptor leaves the
    flusher without its pipes: it splits in-process from then on (numpy then appears, as before)."""
    script = tmp_path / "prog.py"
    script.write_text(PROG.replace("WHAT", what))
    plain = run_plain(script)
    assert plain.returncode == 0 and plain.stdout == "False True\n", plain.stderr
    on, off = _record(script, tmp_path / "on.wt", True), _record(script, tmp_path / "off.wt", False)
    assert on.returncode == 0 and off.returncode == 0, on.stderr + off.stderr
    assert off.stdout == "True True\n"                 # in the flusher's thread: numpy in the program
    got, want = _log(tmp_path / "on.wt"), _log(tmp_path / "off.wt")
    _same_threads(got[0], want[0])
    assert got[1] == want[1] and got[2] == want[2]
    assert want[3][0] == 0 and want[3][1] > 0
    if what:
        assert got[3][1] > 0                            # the closed pipes: in-process after that
    else:
        assert on.stdout == plain.stdout
        assert got[3][0] > 1 and got[3][1] == 0          # every chunk by the server


WAITS = '''
import os, time
x = [i * 0.5 for i in range(100)]
time.sleep(0.3)
try:
    print(os.waitpid(-1, os.WNOHANG))
except ChildProcessError as e:
    print("no child", e.errno)
print(sorted(int(f) for f in os.listdir("/proc/self/fd") if int(f) < 256))
'''


def test_the_server_is_no_child_of_the_program(tmp_path: Path) -> None:
    """A program that waits for any child sees none (the server is forked twice: no child of the
    recording process), and its descriptors below 256 are plain python's."""
    script = tmp_path / "waits.py"
    script.write_text(WAITS)
    plain = run_plain(script)
    rec = _record(script, tmp_path / "t.wt", True)
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout == plain.stdout
    assert _log(tmp_path / "t.wt")[3][0] > 0


FORKS = '''
import os, sys, time
def work(n):
    return sum(float(i) * 0.5 for i in range(n))
work(1000)
if os.fork() == 0:           # (the pid itself is no recorded value: it differs between runs)
    work(2000)
    time.sleep(0.6)          # (the child's first flush, at 0.25 s, stores what came before)
    work(3000)
    print("child", "numpy" in sys.modules, flush=True)
    os._exit(0)
os.wait()
work(500)
print("numpy" in sys.modules)
'''


def test_a_fork_child_of_the_program_splits_in_its_own_process(tmp_path: Path) -> None:
    """The child's copies of the pipes are its parent's: the child asks for a server of its own and
    splits in Python until it has one (wave 22: numpy is never imported into the child, with or
    without the server; it was, inside its first flush, which it did not outlive), its log equal to
    the in-process split's and holding records and events (two empty logs are equal), the parent
    keeps its server."""
    script = tmp_path / "forks.py"
    script.write_text(FORKS)
    logs = {}
    for server in (True, False):
        out = tmp_path / f"{int(server)}.wt"
        rec = _record(script, out, server)
        assert rec.returncode == 0, rec.stderr
        assert rec.stdout == ("child False\nFalse\n" if server else "child False\nTrue\n")
        parts = sorted(Path(str(out) + ".parts").glob("*.wt"))
        assert len(parts) == 1
        logs[server] = (_log(out), _log(parts[0]))
    (root_on, child_on), (root_off, child_off) = logs[True], logs[False]
    assert root_on[:3] == root_off[:3] and child_on[:3] == child_off[:3]
    assert child_on[0]["streams"][0][0] and child_on[0]["events"][0]   # the child's flush at 0.25 s stored records and events
    assert root_on[3][0] > 0 and root_on[3][1] == 0


def test_a_broken_server_leaves_the_split_to_the_flusher() -> None:
    """A server that died (its pipes' other ends closed) is reported as None, once and for good:
    the caller splits in-process."""
    from wholetrace.runtime.splitserver import SplitServer

    r1, w1 = os.pipe()
    r2, w2 = os.pipe()
    os.close(r1)
    os.close(w2)
    srv = SplitServer(os.getpid(), w1, r2)
    assert srv.usable()
    assert srv.call(("objects", b"")) is None
    assert srv.broken and not srv.usable()
    os.close(w1)
    os.close(r2)


def test_constants_mirror_values_and_layout() -> None:
    """``valueflush`` cannot import ``values`` (it is imported by it) nor ``wetlayout`` (numpy)."""
    from wholetrace.runtime import valueflush, values, wetlayout

    assert (valueflush._STR, valueflush._BYTES, valueflush._BIGINT, valueflush._COMPLEX) == (
        values.STR, values.BYTES, values.BIGINT, values.COMPLEX)
    assert valueflush.LAYOUT == wetlayout.LAYOUT


def test_server_core_equals_itself_through_the_pipe(tmp_path: Path) -> None:
    """The protocol carries a request and its reply unchanged (a real server, forked in a fresh
    interpreter: this test process may run threads)."""
    code = '''
import sys
from wholetrace.runtime import splitcore, splitserver
from wholetrace.runtime.values import marker, INT, FLOAT
from array import array
srv = splitserver.start()
assert srv is not None
img = array("q", [5, marker(INT, 3), 7, 6, marker(FLOAT, 4), 0, 9, marker(INT, 1)]).tobytes()
side = array("q", [4611686018427387904]).tobytes()
req = ("split", img, 10, 2, side, b"")
assert srv.call(req) == splitcore.handle(req), (srv.call(req), splitcore.handle(req))
assert srv.call(("objects", array("q", [1, 0, 5, 1]).tobytes())) == splitcore.handle(("objects", array("q", [1, 0, 5, 1]).tobytes()))
print("ok", "numpy" in sys.modules)
'''
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=ENV)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "ok True\n"             # (the in-process comparison imported numpy here)


def test_a_dead_server_does_not_kill_a_program_that_restored_sigpipe() -> None:
    """A program that set SIGPIPE to SIG_DFL (a command-line tool's habit) survives a flush to a
    dead server: the write fails with EPIPE, the flusher splits in-process."""
    code = '''
import os, signal
from wholetrace.runtime.splitserver import SplitServer
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
r1, w1 = os.pipe()
r2, w2 = os.pipe()
os.close(r1)                      # the server's end: gone
srv = SplitServer(os.getpid(), w1, r2)
print(srv.call(("objects", b"x" * 8)), srv.broken, flush=True)
'''
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=ENV)
    assert (r.returncode, r.stdout) == (0, "None True\n"), r.stderr


# -- fixfull18: the server never the program's child, never outliving the recording, never out of step

WAITS_BLOCKING = '''
import os
x = [i * 0.5 for i in range(100)]
try:
    print(os.waitpid(-1, os.WNOHANG))
except ChildProcessError as e:
    print("no child", e.errno)
try:
    print(os.wait())              # blocks for ever if the server is this process's child
except ChildProcessError as e:
    print("no child", e.errno)
'''


def _unshare_works() -> bool:
    try:
        return subprocess.run(["unshare", "-Urpf", "--mount-proc", "true"], capture_output=True,
                              timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.skipif(not _unshare_works(), reason="needs unshare --pid --fork --map-root-user")
def test_a_recorder_that_is_pid_1_reaps_the_server_before_the_program(tmp_path: Path) -> None:
    """As PID 1 of a pid namespace (a container, ``unshare -pf``) the orphaned server is re-parented
    to the recording process: it is killed and reaped before the program's first line, and every
    chunk is split in-process.  Before the fix the program saw ``(0, 0)`` and hung in ``os.wait()``."""
    script = tmp_path / "waits.py"
    script.write_text(WAITS_BLOCKING)
    out = tmp_path / "p.wt"
    rec = subprocess.run(["unshare", "-Urpf", "--mount-proc", "--kill-child", sys.executable, "-m", "wholetrace.cli", "record",
                          "--mode", "full", "-q", "-o", str(out), str(script)], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120, env=ENV, stdin=subprocess.DEVNULL)
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout == "no child 10\nno child 10\n"
    splits = _log(out)[3]
    assert splits[0] == 0 and splits[1] > 0


def test_a_recorder_that_is_a_subreaper_reaps_the_server_before_the_program(tmp_path: Path) -> None:
    """The same for a recording process that is a child subreaper (``PR_SET_CHILD_SUBREAPER``, set
    by a wrapper before ``record`` runs in its process)."""
    script = tmp_path / "waits.py"
    script.write_text(WAITS_BLOCKING)
    out = tmp_path / "s.wt"
    wrapper = f'''
import ctypes, sys
assert ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0   # PR_SET_CHILD_SUBREAPER
from wholetrace.cli import main
sys.exit(main(["record", "--mode", "full", "-q", "-o", {str(out)!r}, {str(script)!r}]))
'''
    rec = subprocess.run([sys.executable, "-c", wrapper], capture_output=True, text=True, cwd=tmp_path,
                         timeout=120, env=ENV, stdin=subprocess.DEVNULL)
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout == "no child 10\nno child 10\n"
    splits = _log(out)[3]
    assert splits[0] == 0 and splits[1] > 0


def test_a_recorder_made_in_a_host_process_forks_no_server() -> None:
    """Library use and the pytest plugin: no server (only ``record`` starts one), so the host's
    at-fork hooks do not run (before the fix they ran twice: the intermediate child, the server)."""
    code = '''
import os
os.register_at_fork(after_in_child=lambda: os.write(1, b"hook ran\\n"))
from wholetrace.runtime.recorder import Recorder
class W:
    def __getattr__(self, n):
        return lambda *a, **k: None
r = Recorder(W(), mode="full")
print("server", r.values.server, flush=True)
'''
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=ENV)
    assert (r.returncode, r.stdout) == (0, "server None\n"), r.stderr


OUTLIVES = '''
import os, time
def work(n):
    return sum(float(i) * 0.5 for i in range(n))
work(1000)
pid = os.fork()
if pid == 0:                  # outlives the recording (a daemonising worker)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    time.sleep(300)
    os._exit(0)
work(2000)
print(pid)
'''


def _alive_with(marker: str, but: int) -> list[int]:
    """Live processes (not zombies) whose command line holds ``marker``, other than ``but``."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == but:
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{d}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmd and state != "Z":
            found.append(int(d))
    return found


@pytest.mark.parametrize("children", [True, False], ids=["children", "no-children"])
def test_the_server_ends_with_the_recording_while_a_fork_child_lives(tmp_path: Path, children: bool) -> None:
    """A fork child closes its copies of the server's pipes before its program code runs, so the
    server sees EOF when the recording ends, not when the last fork child exits (review18a MED 3).
    The server is a fork of the recorder: its command line holds the recording's path."""
    import time
    script = tmp_path / "outlives.py"
    script.write_text(OUTLIVES)
    out = tmp_path / f"outlives-{int(children)}.wt"
    args = [sys.executable, "-m", "wholetrace.cli", "record", "--mode", "full", "-q", "-o", str(out)]
    rec = subprocess.run(args + ([] if children else ["--no-children"]) + [str(script)], capture_output=True,
                         text=True, cwd=tmp_path, timeout=120, env=ENV, stdin=subprocess.DEVNULL)
    child = int(rec.stdout)
    try:
        assert rec.returncode == 0, rec.stderr
        assert _log(out)[3][0] > 0                       # the server split the root's chunks
        left = _alive_with(str(out), child)
        for _ in range(600):                             # (a liveness bound, no timing: 60 s)
            if not left:
                break
            time.sleep(0.1)
            left = _alive_with(str(out), child)
        assert left == []
        assert _alive_with(str(out), -1) == [child]      # while the fork child still lives
    finally:
        os.kill(child, 9)


def test_an_exception_mid_call_breaks_the_server_for_good() -> None:
    """A KeyboardInterrupt (or a signal handler's exception) while ``call`` waits for the reply:
    re-raised, the server marked broken and its pipes closed, so the next chunk is split in-process
    instead of reading the interrupted call's reply (before the fix it returned that stale reply)."""
    code = '''
import os, signal
from wholetrace.runtime import splitserver
from wholetrace.runtime.splitserver import SplitServer
r1, w1 = os.pipe()
r2, w2 = os.pipe()
srv = SplitServer(os.getpid(), w1, r2)
def stop(signum, frame):
    raise KeyboardInterrupt
signal.signal(signal.SIGALRM, stop)
signal.setitimer(signal.ITIMER_REAL, 0.2)
try:
    srv.call(("objects", b"x" * 8))         # no reply comes: interrupted
except KeyboardInterrupt:
    print("interrupted", srv.broken)
try:
    splitserver._send(w2, ("ok", "stale"))  # the interrupted call's reply, arriving late
except BrokenPipeError:
    pass
print(srv.call(("objects", b"y" * 8)))
'''
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=ENV)
    assert (r.returncode, r.stdout) == (0, "interrupted True\nNone\n"), r.stderr
