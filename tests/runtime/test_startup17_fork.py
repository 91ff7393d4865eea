"""Record's start-up, wave 17, after ``cmods.hide()`` (docs/design.md, "Record's start-up, wave
17", fixlean17): wholetrace's own code keeps using ``store.cmods``' ``array`` / ``_sqlite3`` once
the program runs (count-mode fork children, ``--weights``), and the store takes arrays of any
``array`` module instance.

Oracles: the plain ``python`` run of the same program (stdout, stderr, exit status, one fork),
``builtins.__import__`` (which a program may hook) never called by the stand-in ``lru_cache``.
"""

from __future__ import annotations

import builtins
import os
import signal
import subprocess
import sys

import pytest

from wtutil import ENV, run_plain

CONSOLE = "import sys\nfrom wholetrace.cli import main\nsys.exit(main())"

FORK_PROGRAM = '''
import os, sys, time
def work(n):
    return sum(i for i in range(n) if i % 3)
print(work(1000), flush=True)
pid = os.fork()
if pid == 0:
    work(2000)
    time.sleep(1.0)   # the part is made by the child's flusher (every 0.25 s): os._exit skips its end
    print("child", sorted(m for m in ("numpy", "array") if m in sys.modules), flush=True)
    os._exit(0)
os.waitpid(pid, 0)
print("done", sorted(m for m in ("numpy", "array") if m in sys.modules))
'''

#: A module of the program's that shadows the standard library's ``array`` (plain python never imports it here).
SHADOW = 'print("the script directory\'s array.py", flush=True)\n'


def _run(args, cwd, timeout=240):
    """``args`` in its own session (a hung fork child is killed with it on timeout)."""
    env = {**ENV, "WHOLETRACE_CACHE_DIR": str(cwd / "cache")}   # cold, then warm
    proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"{args[3:]} hung (> {timeout} s)")
    return proc.returncode, out, err


def _record(tmp_path, script, out, *options):
    return _run([sys.executable, "-c", CONSOLE, "record", "-q", *options, "-o", str(out), str(script)], tmp_path)


@pytest.mark.parametrize("shadow", [False, True])
def test_a_count_mode_fork_child_runs_as_plain_and_is_recorded(tmp_path, shadow):
    """Count mode, a fork child that lives ~1 s and ends with ``os._exit``: the output of the
    plain run (the child sees no ``numpy`` nor ``array``), and the recording lists the child (one
    fork part).  With an ``array.py`` next to the script, the child does not import it (it hung
    for ever with ``from array import array`` in ``children._count_base`` after ``hide()``).
    Before the fix: hung with the shadow; without it, ``numpy`` in the child (and the child
    missing from the recording when it lived 0.3 s: its part's set-up still importing numpy at
    ``os._exit``); cold, the miss path left ``array`` in ``sys.modules`` (``misspath.ORDER``)."""
    (tmp_path / "prog").mkdir()   # not the recorder's cwd (``-c``: its sys.path[0]), the script's directory
    script = tmp_path / "prog" / "prog.py"
    script.write_text(FORK_PROGRAM)
    if shadow:
        (tmp_path / "prog" / "array.py").write_text(SHADOW)
    plain = run_plain(script, cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert "child []" in plain.stdout
    for _ in range(2):   # cold, then warm cache
        out = tmp_path / "c.wt"
        code, stdout, stderr = _record(tmp_path, script, out, "--mode", "count")
        assert (code, stdout, stderr) == (plain.returncode, plain.stdout, plain.stderr)
        code, info, err = _run([sys.executable, "-c", CONSOLE, "info", str(out)], tmp_path)
        assert code == 0, err
        assert sum(" fork " in line for line in info.splitlines()) == 1, info


WEIGHTS_PROGRAM = '''
import sys
print([n for n in ("sqlite3", "_sqlite3", "array") if n in sys.modules])
import sqlite3
print("_sqlite3" in sys.modules)
import _sqlite3
print(sqlite3.Connection is _sqlite3.Connection, sqlite3.Error is _sqlite3.Error)
c = sqlite3.connect(":memory:")
try:
    c.execute("select nope")
except sqlite3.OperationalError as exc:
    print("caught", exc)
'''


def test_weights_leave_the_program_a_plain_sqlite3(tmp_path):
    """``--weights base.wt`` reads a recording (and imports numba, which imports ``sqlite3``
    through coverage where it is installed) before the program's first line: the program still
    sees no ``sqlite3`` / ``_sqlite3`` / ``array`` there, and its ``import sqlite3`` brings a
    package bound to its own ``_sqlite3``, as in the plain run.  Before the fix: ``sqlite3`` at the
    first line, tied to the hidden ``_sqlite3`` (``False``, ``False False``)."""
    script = tmp_path / "prog.py"
    script.write_text(WEIGHTS_PROGRAM)
    plain = run_plain(script, cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    code, _, stderr = _record(tmp_path, script, tmp_path / "base.wt", "--mode", "count")
    assert code == 0, stderr
    for _ in range(2):
        got = _record(tmp_path, script, tmp_path / "w.wt", "--mode", "count", "--weights", str(tmp_path / "base.wt"))
        assert got == (plain.returncode, plain.stdout, plain.stderr)


def test_the_stand_in_lru_cache_imports_nothing_when_called(monkeypatch):
    """``cmods.lru_cache`` (which ``_sqlite3`` calls on every ``connect()``) does not go through
    ``builtins.__import__`` (a program's hook saw ``_functools`` at each fork child's connect)."""
    from wholetrace.store import cmods

    seen: list[str] = []
    real = builtins.__import__

    def hook(name, *args, **kwargs):
        seen.append(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", hook)
    wrapped = cmods.lru_cache(3)(lambda x: x * 2)
    assert [wrapped(i % 5) for i in range(12)] == [2 * (i % 5) for i in range(12)]
    cmods.sqlite3.connect(":memory:").close()
    monkeypatch.undo()
    assert seen == []


OTHER_ARRAY = '''
import sys
sys.modules["numpy"] = None   # put_array of an array.array needs no numpy
from wholetrace.store import cmods, schema
from wholetrace.store.writer import RecordingWriter
held = sys.modules.pop("array", None)
import array as other   # another instance of the module: other types (what the program gets after hide())
print(other.array is not cmods.array.array)
w = RecordingWriter(sys.argv[1])
print(w.put_array("a", other.array("q", [5, -1, 2 ** 40, 7, 0, 3]), shape=(2, 3)) > 0)
ev = other.array("i", [1, 2, 3])
print(schema.events_to_le_int32(ev) is ev)
try:
    w.put_array("b", other.array("i", [1]))
except Exception as exc:
    print(type(exc).__name__)
w.close(ended="normal", exit_code=0)
'''


def test_put_array_takes_any_array_module_instance(tmp_path):
    """An ``array('q')`` of another instance of the ``array`` module (not ``cmods``') is stored
    without numpy, with its values and shape (read back with the reader, numpy as the oracle's
    view); ``array('i')`` events pass as they are; another typecode is refused.  Before the fix:
    ``put_array`` fell through to ``import numpy``."""
    script = tmp_path / "other.py"
    script.write_text(OTHER_ARRAY)
    out = tmp_path / "o.wt"
    got = subprocess.run([sys.executable, str(script), str(out)], capture_output=True, text=True, env=ENV,
                         timeout=120, cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    assert got.stdout.split() == ["True", "True", "True", "StoreError"]
    from wholetrace.store import open_recording

    rec = open_recording(out)
    try:
        arr = rec.get_array("a")
        assert arr.dtype.str == "<i8" and arr.shape == (2, 3)
        assert arr.tolist() == [[5, -1, 2 ** 40], [7, 0, 3]]
    finally:
        rec.close()
