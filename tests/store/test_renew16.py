"""Reconnects after the program took the writer's descriptors (review16c H1, H2), in a child process
(the leaked connections and the program's files stay there)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[2] / "src")

PRELUDE = """
import os, numpy as np
from wholetrace.store import RecordingWriter, renew
p, prog_path = {p!r}, {prog!r}
w = RecordingWriter(p, high=True)
w.put_array("a", np.arange(10)); w.commit()
db, j = w._fds.fd, w._journal.fd
assert (db, j) == (256, 257), (db, j)
os.close(db); os.close(j)
prog = os.open(prog_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
os.write(prog, b"the program's own data\\n")
for n in (db, j):
    os.dup2(prog, n, inheritable=False)     # the program's file now at our old numbers
"""


def _run(tmp_path: Path, body: str) -> str:
    script = textwrap.dedent(PRELUDE).format(p=str(tmp_path / "r.wt"), prog=str(tmp_path / "prog.txt"))
    script += textwrap.dedent(body)
    env = dict(os.environ, PYTHONPATH=SRC)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_reconnect_keeps_the_programs_descriptors_open(tmp_path: Path) -> None:
    out = _run(tmp_path, """
        w.put_array("b", np.arange(10)); w.commit()     # a new connection
        for n in (db, j):
            os.fstat(n)                                 # raises if the old HOLD cursor closed it
            print(n, "open")
        w.close(ended="exit", exit_code=0)
        for n in (db, j):
            os.fstat(n)
        print("renewed", w._renewed)
    """)
    assert out.split("\n")[:3] == ["256 open", "257 open", "renewed 1"]
    assert (tmp_path / "prog.txt").read_bytes() == b"the program's own data\n"
    from wholetrace.store import Recording
    with Recording(tmp_path / "r.wt") as rec:
        assert rec.meta["ended"] == "exit"


def test_every_reconnect_failing_breaks_the_writer(tmp_path: Path) -> None:
    out = _run(tmp_path, """
        from wholetrace.errors import StoreError
        def fail(*a, **k): raise renew.sqlite3.OperationalError("unable to open database file")
        real, renew.sqlite3.connect = renew.sqlite3.connect, fail
        try:
            w.put_array("b", np.arange(10000)); print("put ok")
        except StoreError as e: print("put failed")
        renew.sqlite3.connect = real
        for what in ("put", "commit", "close"):
            try:
                if what == "put": w.put_array("c", np.arange(10))
                elif what == "commit": w.commit()
                else: w.close(ended="exit", exit_code=0)
                print(what, "ok")
            except StoreError: print(what, "failed")
        os.fstat(256); os.fstat(257)
        print("journal", os.path.exists(p + "-journal"))
    """)
    assert out.split("\n")[:5] == ["put failed", "put failed", "commit failed", "close failed", "journal True"]
    assert (tmp_path / "prog.txt").read_bytes() == b"the program's own data\n"


RECORDER = """
import sys, numpy as np
from wholetrace.store import RecordingWriter
w = RecordingWriter(sys.argv[1])
w.put_array("a", np.arange(10)); w.commit()
print("ready", flush=True)
sys.stdin.readline()
w.put_array("y", np.arange(10)); w.commit()
w.close(ended="exit", exit_code=0)
print("recorder ok", flush=True)
"""


def test_updating_a_recording_still_being_written_is_refused(tmp_path: Path) -> None:
    # review16c M2: the recorder's held shared lock and an updater's RESERVED deadlocked: the
    # recorder's next write failed at once with "database is locked"
    import numpy as np
    import pytest

    from wholetrace.errors import StoreError
    from wholetrace.store import Recording
    from wholetrace.store.writer import updating

    p = tmp_path / "r.wt"
    rec = subprocess.Popen([sys.executable, "-c", RECORDER, str(p)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           text=True, env=dict(os.environ, PYTHONPATH=SRC))
    try:
        assert rec.stdout.readline() == "ready\n"
        with pytest.raises(StoreError, match=f"still being recorded \\(process {rec.pid}\\)"):
            with updating(p, timeout=1) as u:
                u.put_array("x", np.arange(10))
        out, _ = rec.communicate("go\n", timeout=60)
    finally:
        rec.kill()
    assert out == "recorder ok\n" and rec.returncode == 0
    with updating(p, timeout=1) as u:      # ended: updated as before
        u.put_array("x", np.arange(10))
    with Recording(p) as r:
        assert r.meta["ended"] == "exit"


def test_an_error_with_the_journal_not_guarded_is_not_a_lost_descriptor(tmp_path: Path) -> None:
    # review16c L3: _lost() took any sqlite3.Error as a lost descriptor when the journal was not
    # guarded, and leaked a healthy connection
    import sqlite3

    import pytest

    from wholetrace.store import RecordingWriter

    w = RecordingWriter(tmp_path / "r.wt")
    w._journal = None
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        w._x("INSERT INTO nosuch VALUES (1)", ())
    assert w._renewed == 0
    w.close(ended="exit", exit_code=0)
