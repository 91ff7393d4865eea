"""The end of a recording calls no program code plain python does not call, and reports what it reports (wave 16).

Oracle: the plain ``python`` run of the same program (stdout, stderr, exit status).  Before wave 16
an exception out of a ``threading._register_atexit`` callback escaped ``record`` (exit 1, a second
report at finalisation) where plain python reports it as unraisable and exits 0; and ``record``
called the program's patched ``threading.enumerate`` (and a ``Thread`` subclass's ``is_alive``)
for the meta's daemon-thread note (docs/design.md, "The program cannot tell, wave 16").
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from wtutil import ENV

ATEXIT_RAISES = r'''
import atexit, sys, threading
HOOK = sys.argv[1] == "hook"
if HOOK:
    def hook(args):
        print("hook", args.exc_type.__name__, args.exc_value, args.err_msg, getattr(args.object, "__name__", None))
    sys.unraisablehook = hook
def late():
    print("late callback")
def boom():
    raise ValueError("boom")
threading._register_atexit(late)
threading._register_atexit(boom)        # runs first (reversed): late never runs
def work():
    print("worker done")
t = threading.Thread(target=work)
t.start(); t.join()
atexit.register(lambda: print("atexit", threading.main_thread().is_alive()))
print("end")
'''

PATCHED = r'''
import sys, threading, time
real = threading.enumerate
def enumerate():
    print("enumerate called", file=sys.stderr)
    return real()
threading.enumerate = enumerate
class Mine(threading.Thread):
    def is_alive(self):
        print("is_alive called", file=sys.stderr)
        return super().is_alive()
    @property
    def name(self):
        print("name called", file=sys.stderr)
        return "mine"
    @name.setter
    def name(self, value):
        pass
go = threading.Event()
t = Mine(target=go.wait, args=(5,), daemon=True)   # alive at the count, ending around the end
t.start()
u = threading.Thread(target=time.sleep, args=(30,), daemon=True)
u.start()
print("end", threading.active_count())
go.set()
'''


def _run(tmp: Path, source: str, args: tuple[str, ...], record: tuple[str, ...] | None) -> subprocess.CompletedProcess:
    script = tmp / "prog.py"
    script.write_text(source)
    cmd = [sys.executable, str(script), *args]
    if record is not None:
        cmd[1:1] = ["-m", "wholetrace.cli", "record", "--mode", *record, "-q", "-o", str(tmp / "out.wt")]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp, timeout=600, stdin=subprocess.DEVNULL,
                          env={**ENV, "WHOLETRACE_CACHE_DIR": str(tmp / "cache")})


def _same(tmp: Path, source: str, args: tuple[str, ...], record: tuple[str, ...]) -> subprocess.CompletedProcess:
    plain = _run(tmp, source, args, None)
    rec = _run(tmp, source, args, record)
    assert (rec.stdout, rec.stderr, rec.returncode) == (plain.stdout, plain.stderr, plain.returncode), rec.stderr[-3000:]
    return plain


@pytest.mark.parametrize("record", [("blocks",), ("path",), ("witness",)], ids=lambda r: "-".join(r))
@pytest.mark.parametrize("hook", ["default", "hook"])
def test_a_register_atexit_callback_that_raises(tmp_path: Path, record: tuple[str, ...], hook: str) -> None:
    plain = _same(tmp_path, ATEXIT_RAISES, (hook,), record)
    assert plain.returncode == 0 and "late callback" not in plain.stdout      # the oracle is what we think
    if hook == "default":
        assert plain.stderr.startswith(("Exception ignored in: <module 'threading'",
                                        "Exception ignored on threading shutdown:")) and "ValueError: boom" in plain.stderr
    else:
        assert "hook ValueError boom" in plain.stdout


@pytest.mark.parametrize("record", [("blocks",), ("path",)], ids=lambda r: "-".join(r))
def test_the_end_calls_no_patched_enumerate_nor_a_subclass_s_methods(tmp_path: Path, record: tuple[str, ...]) -> None:
    plain = _same(tmp_path, PATCHED, (), record)
    assert plain.stderr == "" and plain.stdout == "end 3\n"
    out = tmp_path / "out.wt"
    meta = subprocess.run([sys.executable, "-c", "import sys, json; from wholetrace.store import open_recording\n"
                           "with open_recording(sys.argv[1], check=False) as r: print(r.meta['ended'])", str(out)],
                          capture_output=True, text=True, env=ENV, timeout=300)
    assert meta.stdout.strip() == "exit", meta.stderr


BASE_EXIT = r'''
import atexit, sys, threading
def bad():
    print("callback ran", flush=True)
    raise SystemExit(4) if sys.argv[1] == "exit" else KeyboardInterrupt
threading._register_atexit(bad)
atexit.register(lambda: print("atexit ran", flush=True))
print("main done", flush=True)
'''


def _ended(tmp: Path) -> str:
    out = tmp / "out.wt"
    assert not (tmp / "out.wt-journal").exists()
    meta = subprocess.run([sys.executable, "-c", "import sys, json; from wholetrace.store import open_recording\n"
                           "with open_recording(sys.argv[1], check=False) as r: print(r.meta['ended'])", str(out)],
                          capture_output=True, text=True, env=ENV, timeout=300)
    return meta.stdout.strip() + meta.stderr


@pytest.mark.parametrize("how", ["exit", "interrupt"])
def test_a_register_atexit_callback_raising_systemexit_or_keyboardinterrupt(tmp_path: Path, how: str) -> None:
    # review16c M1: SystemExit escaped record (exit 4, no end meta), KeyboardInterrupt was swallowed;
    # both ran the callback a second time at finalisation
    plain = _same(tmp_path, BASE_EXIT, (how,), ("blocks",))
    assert plain.returncode == 0 and plain.stdout == "main done\ncallback ran\natexit ran\n"
    assert ("SystemExit: 4" if how == "exit" else "KeyboardInterrupt") in plain.stderr
    assert _ended(tmp_path) == "exit"


REBOUND = r'''
import sys, threading, time
class T(threading.Thread):
    pass
T.daemon = True         # a plain class attribute shadows Thread's property on the subclass
if sys.argv[1] == "name":
    T.name = "fixed"
threading.Thread = T
threading.Thread.__mro__[1](target=time.sleep, args=(0.5,), daemon=True).start()
print("main done")
'''


@pytest.mark.parametrize("how", ["daemon", "name"])
def test_the_end_with_threading_thread_rebound(tmp_path: Path, how: str) -> None:
    # review16c M3: the thread listing used the module's (rebound) Thread: AttributeError out of
    # record, or the real threads dropped
    plain = _same(tmp_path, REBOUND, (how,), ("blocks",))
    assert plain.returncode == 0 and plain.stdout == "main done\n"
    assert _ended(tmp_path) == "exit"
    script = tmp_path / "prog.py"
    rec = subprocess.run([sys.executable, "-m", "wholetrace.cli", "record", "--mode", "blocks", "-o",
                          str(tmp_path / "out.wt"), str(script), how], capture_output=True, text=True, cwd=tmp_path,
                         timeout=600, stdin=subprocess.DEVNULL, env={**ENV, "WHOLETRACE_CACHE_DIR": str(tmp_path / "cache")})
    assert "1 daemon thread(s) still running" in rec.stderr, rec.stderr


FAILING_HOOK = r'''
import sys, threading
def bad():
    raise ValueError("v")
threading._register_atexit(bad)
def hook(args):
    raise RuntimeError("hook broke")
sys.unraisablehook = hook
print("main done")
'''


def test_a_failing_unraisablehook_is_reported_as_plain_python_does(tmp_path: Path) -> None:
    # review16c L4: record printed the callback's ValueError through __unraisablehook__, plain
    # prints the hook's own error ("Exception ignored in sys.unraisablehook: <hook>")
    import re

    plain = _run(tmp_path, FAILING_HOOK, (), None)
    rec = _run(tmp_path, FAILING_HOOK, (), ("blocks",))
    norm = [(re.sub(r"0x[0-9a-f]+", "0x?", p.stderr), p.stdout, p.returncode) for p in (plain, rec)]
    assert norm[0] == norm[1], rec.stderr
    assert "Exception ignored in sys.unraisablehook" in plain.stderr and "hook broke" in plain.stderr
