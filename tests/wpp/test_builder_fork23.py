"""The WPP builder forked from the recorder (wave 23): when it is, what it holds, and that it builds what the exec'd builder builds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from wholetrace.store import Recording
from wholetrace.wpp.stored import StoredWpp
from wtutil import ENV

# run in a fresh interpreter: the test process may have threads (xdist), and a fork of it proves nothing
_PROBE = textwrap.dedent('''
    import json, os, select, signal, struct, sys, marshal, _thread
    from wholetrace.wpp import spawn

    def started(**kw):
        p = spawn.BuilderProcess("path", queue_events=1000, **kw)
        p.sid = p._sh     # the intermediate child (or shell) led the builder's session
        p.reap()
        return p

    def end(p):
        os.write(p.fd, struct.pack("<ii", -1, 0))   # the end frame
        os.close(p.fd)
        data = p.out.read()
        p.out.close()
        p.stderr.seek(0)
        err = p.stderr.read().decode(errors="replace")
        p.stderr.close()
        return marshal.loads(data), err

    def session(sid):
        """the processes of session ``sid``: (pid, ppid)"""
        found = []
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    with open(f"/proc/{name}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[3]) == sid:
                    found.append((int(name), int(fields[1])))
        return found

    def running(p):
        """wait for the builder's main (it maps the progress file first): its interpreter is set up"""
        import time
        for _ in range(6000):
            if p.progress is None or p.progress.built() != spawn.PROGRESS_UNMAPPED:
                return
            time.sleep(0.01)

    def sig_masks(pid):
        """ignored and caught signals 1-31 (32 and up: the C library's own and real-time ones)"""
        with open(f"/proc/{pid}/status") as f:
            return {k: int(v, 16) & 0x7FFFFFFF for k, v in (l.split(":", 1) for l in f) if k in ("SigIgn", "SigCgt")}

    what = sys.argv[1]
    out = {}
    if what == "forkable":
        out["plain"] = spawn.forkable()
        os.environ[spawn.START_ENV] = "exec"
        out["exec"] = spawn.forkable()
        os.environ[spawn.START_ENV] = "fork"
        out["fork"] = spawn.forkable()
        lock, running = _thread.allocate_lock(), _thread.allocate_lock()
        lock.acquire()
        running.acquire()

        def thread():
            running.release()
            lock.acquire()

        _thread.start_new_thread(thread, ())
        running.acquire()
        while _thread._count() == 0:   # counted from its first step on
            pass
        out["thread"] = spawn.forkable()
        lock.release()
    elif what == "held":
        os.environ[spawn.START_ENV] = "fork"
        # a pipe the recorder holds close-on-exec (its store's descriptors are) and an inheritable one:
        # the forked builder must hold neither write end (no exec closes the first for it)
        spare = [os.pipe() for _ in range(3)]   # ours above the numbers the builder's dup2s take
        pipes = [os.pipe(), os.pipe()]
        os.set_inheritable(pipes[1][1], True)
        assert min(fd for pair in pipes for fd in pair) > spawn.PROGRESS_FD
        signal.signal(signal.SIGTERM, lambda *a: None)   # caught here: the default in the builder
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)    # ignored here: ignored there (as across exec)
        p = started()
        out["start"] = p.start
        members = session(p.sid)
        out["members"] = len(members)
        out["not_ours"] = all(ppid != os.getpid() for _, ppid in members)
        if members:
            running(p)
            out["masks"] = sig_masks(members[0][0])
        eofs = []
        for r, w in pipes:
            os.close(w)
            ready, _, _ = select.select([r], [], [], 60)
            eofs.append(bool(ready) and os.read(r, 1) == b"")
        out["eof"] = eofs
        result, err = end(p)
        out["error"] = result.get("error", "")
        out["stderr"] = err
        # its own pipe's write end is not held there either: a recorder gone without the end
        # frame gives the builder EOF, and it ends (its result pipe closes)
        q = started()
        os.close(q.fd)
        ready, _, _ = select.select([q.out], [], [], 120)
        out["ends"] = bool(ready) and q.out.read() is not None
    elif what == "masks_exec":
        signal.signal(signal.SIGTERM, lambda *a: None)
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        os.environ[spawn.START_ENV] = "exec"
        p = started()
        out["start"] = p.start
        running(p)
        out["masks"] = sig_masks(session(p.sid)[0][0])
        end(p)
    print(json.dumps(out))
''')


def _probe(what: str) -> dict:
    env = {k: v for k, v in ENV.items() if k != "WHOLETRACE_WPP_START"}
    proc = subprocess.run([sys.executable, "-c", _PROBE, what], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(sys.platform != "linux", reason="the builder is forked on Linux only")
def test_the_builder_is_forked_when_asked_unless_a_thread_runs() -> None:
    assert _probe("forkable") == {"plain": False, "exec": False, "fork": True, "thread": False}


@pytest.mark.skipif(sys.platform != "linux", reason="the builder is forked on Linux only")
def test_the_forked_builder_holds_no_descriptor_of_ours_and_has_a_new_interpreters_signals() -> None:
    """Oracle for the signals: the exec'd builder started from a process with the same dispositions."""
    got = _probe("held")
    assert got["start"] == "fork"
    assert got["members"] == 1 and got["not_ours"]      # the builder alone in its session, nobody's child here
    assert got["eof"] == [True, True], got               # neither write end kept (close-on-exec nor inheritable)
    assert got["error"] == "" and got["stderr"] == ""
    assert got["ends"]
    want = _probe("masks_exec")
    assert want["start"] == "exec"
    assert got["masks"] == want["masks"]


PROGRAM = textwrap.dedent('''
    import threading

    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    def work(k):
        s = 0
        for i in range(k):
            try:
                s += fib(i % 9) if i % 5 else {}[i]
            except KeyError:
                s -= 1
        return s

    ts = [threading.Thread(target=work, args=(120,)) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print(work(300))
''')


def _record(script: Path, out: Path, start: str) -> str:
    env = dict(ENV, WHOLETRACE_WPP_START=start)
    cmd = [sys.executable, "-m", "wholetrace.cli", "record", "--mode", "path", "--wpp", "--keep-raw", "-q",
           "-o", str(out), str(script)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=script.parent, env=env, timeout=600,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_forked_and_execd_builders_build_the_same_exact_grammars(tmp_path: Path) -> None:
    """Both expand to the raw streams stored beside them (``--keep-raw``), and their grammars and
    symbol tables are the same arrays."""
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=ENV, timeout=300)
    got = {}
    for start in ("fork", "exec"):
        out = tmp_path / f"{start}.wt"
        assert _record(script, out, start) == plain.stdout
        with Recording(out) as rec:
            meta = rec.meta["wpp"]
            assert meta["startup"]["start"] == (start if sys.platform == "linux" else "exec")
            wpp = StoredWpp(rec)
            streams = {}
            for st in rec.streams():
                raw = rec.events(st.sid)
                assert np.array_equal(wpp.events(st.sid), raw), f"{start}: stream {st.sid}"
                g = next(s for s in wpp.streams if s.sid == st.sid).grammar
                streams[st.sid] = (g.rhs.tolist(), g.off.tolist())
            assert len(streams) == 3 and meta["events"] == sum(len(rec.events(s)) for s in streams)
            got[start] = streams
    # terminal ids follow the order in which the streams' chunks reached the builder (the same
    # program records them in another order another time): the grammars are the same up to a
    # renaming of terminals (one bijection for all streams); rules (negative) as they are
    assert sorted(got["fork"]) == sorted(got["exec"])
    rename: dict[int, int] = {}
    for sid, (rhs, off) in got["fork"].items():
        rhs_e, off_e = got["exec"][sid]
        assert off == off_e and len(rhs) == len(rhs_e), f"stream {sid}"
        for a, b in zip(rhs, rhs_e):
            assert (a < 0) == (b < 0) and (a == b if a < 0 else rename.setdefault(a, b) == b), f"stream {sid}"
    assert len(set(rename.values())) == len(rename)


def test_the_builders_progress_constants_are_the_spawns() -> None:
    from wholetrace.wpp import builder, spawn

    assert (builder.PROGRESS_BYTES, builder.PROGRESS_SEALS, builder.PROGRESS_UNMAPPED) == \
        (spawn.PROGRESS_BYTES, spawn.PROGRESS_SEALS, spawn.PROGRESS_UNMAPPED)


def test_the_execd_builder_maps_its_progress_file_without_importing_the_spawn() -> None:
    """The builder started as ``wpp.spawn`` starts it, its progress memfd at ``PROGRESS_FD``: it maps
    the file (``progress_mapped``) and ends a build with neither ``wpp.spawn`` nor ``store.fdguard``
    loaded (importing them for three constants was 3.1 M instructions of its start-up)."""
    import marshal

    from test_builder_startup11 import SRC, _events, _frames, _path
    from wholetrace.wpp.spawn import _CODE, PROGRESS_ENV, PROGRESS_FD

    code = ("import os, sys\nreal = os._exit\n"
            "def _exit(c):\n    sys.stderr.write('LOADED %s\\n' % ','.join(m for m in "
            "('wholetrace.wpp.spawn', 'wholetrace.store.fdguard') if m in sys.modules))\n"
            "    sys.stderr.flush(); real(c)\n"
            "os._exit = _exit\n" + _CODE.replace("; ", "\n"))
    driver = ("import os, sys\nfrom wholetrace.wpp import spawn\nfd = spawn._progress_file()[0]\n"
              f"os.dup2(fd, {PROGRESS_FD})\nos.environ[{PROGRESS_ENV!r}] = {str(PROGRESS_FD)!r}\n"
              "os.execv(sys.executable, [sys.executable, '-S', '-c', sys.argv[1], *sys.argv[2:]])\n")
    p = subprocess.run([sys.executable, "-c", driver, code, "blocks", "1", "100000", "0", *_path()],
                       input=_frames(_events(4)), capture_output=True, check=True, timeout=600,
                       env={**ENV, "PYTHONPATH": SRC, "OPENBLAS_NUM_THREADS": "1"})
    result = marshal.loads(p.stdout)
    assert "error" not in result and result["stats"]["feed"]["progress_mapped"]
    assert p.stderr.decode().split("LOADED ", 1)[1].split("\n")[0] == ""
