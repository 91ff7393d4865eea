"""Record's fixed cost, wave 15 (docs/design.md, "Record's start-up, wave 15"): ``threading`` is
no longer imported at start-up (the flusher is a ``_thread`` thread), so the program's own
``import threading`` runs the real import, and what ``threading`` tells it must be what plain
``python`` tells it.

Oracles: the plain run of the same program (stdout, exit status), and ``threading.Event`` for
the recorder's ``Flag``.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time

import pytest

from wtutil import ENV, run_plain

CONSOLE = "import sys\nfrom wholetrace.cli import main\nsys.exit(main())"

HELPER = '''
import threading, time

def work(n, out):
    out.append(sum(i for i in range(n) if i % 3))
    t = threading.current_thread()
    return t.name, t is threading.main_thread(), threading.active_count()

def late(out):
    time.sleep(0.3)
    print("late", work(50, out), flush=True)

def leave():
    raise SystemExit(3)
'''

THREADS = '''
import sys
print("first", [m for m in ("threading", "_weakrefset") if m in sys.modules])
import atexit, _thread, threading, time
import helper_mod
out = []
print("main", threading.active_count(), [t.name for t in threading.enumerate()],
      threading.main_thread() is threading.current_thread(), threading.main_thread().name,
      threading.main_thread().ident == _thread.get_ident(), threading.current_thread().daemon)
print("main work", helper_mod.work(100, out))
res = []
t = threading.Thread(target=lambda: res.append(helper_mod.work(200, out)), name="worker")
t.start(); t.join()
print("worker", res)
x = threading.Thread(target=helper_mod.leave, name="leaver")     # sys.exit in a thread: silent
x.start(); x.join()
print("leaver", x.is_alive())
d = threading.Thread(target=lambda: [time.sleep(0.05) for _ in iter(int, 1)], name="spinner", daemon=True)
d.start()
late = threading.Thread(target=helper_mod.late, args=(out,), name="late")   # joined at the exit, before atexit
late.start()
atexit.register(lambda: print("atexit", threading.active_count(), sorted(t.name for t in threading.enumerate()),
                              flush=True))
print("main done", threading.active_count(), sorted(t.name for t in threading.enumerate()), flush=True)
'''


def _record(tmp_path, script, mode, *options):
    return subprocess.run([sys.executable, "-c", CONSOLE, "record", "--mode", mode, "-q", *options,
                           "-o", str(tmp_path / f"{mode}.wt"), str(script)], capture_output=True, text=True,
                          cwd=tmp_path, env={**ENV, "WHOLETRACE_CACHE_DIR": str(tmp_path / "cache")},
                          timeout=300, stdin=subprocess.DEVNULL)


def _masked(err):
    """stderr with process ids masked (a fork warning or a traceback names the pid)."""
    return re.sub(r"(pid[= ]|process )\d+", r"\1N", err)


def _same_as_plain(tmp_path, source, mode, files=(), runs=2):
    """Plain run, then ``runs`` recordings (cold, then warm): the same stdout, stderr (pids
    masked) and status."""
    for name, text in files:
        (tmp_path / name).write_text(text)
    script = tmp_path / "prog.py"
    script.write_text(source)
    plain = run_plain(script)
    for _ in range(runs):
        run = _record(tmp_path, script, mode)
        assert (run.returncode, run.stdout, _masked(run.stderr)) == \
            (plain.returncode, plain.stdout, _masked(plain.stderr)), run.stderr
    return plain


@pytest.mark.parametrize("mode", ["blocks", "count", "path"])
def test_threading_tells_the_program_what_plain_python_tells_it(tmp_path, mode):
    """Before the program imports it, ``threading`` is not loaded; then ``active_count``,
    ``enumerate``, ``main_thread``, ``current_thread`` in the main thread and in the program's
    threads, ``sys.exit`` in a thread, a daemon thread still running at the end, and a
    non-daemon thread joined before the ``atexit`` functions run: as in the plain run.  Fails
    on wave 14 (``threading`` loaded at the first line, the flusher counted and listed)."""
    plain = _same_as_plain(tmp_path, THREADS, mode, [("helper_mod.py", HELPER)])
    lines = plain.stdout.splitlines()
    assert lines[0] == "first []" and lines[1] == "main 1 ['MainThread'] True MainThread True False"
    assert lines[-2].startswith("late ") and lines[-1] == "atexit 2 ['MainThread', 'spinner']"


SHADOW = '''
import threading
print("program's threading:", threading.MINE)
import helper_mod
print(helper_mod.work(10, []) if hasattr(threading, "current_thread") else "no current_thread")
'''


def test_a_program_threading_py_is_the_one_it_imports(tmp_path):
    """A ``threading.py`` beside the script: plain ``python`` imports it (the interpreter did
    not load ``threading``), so the recorded program must too; wave 14 gave it the standard
    library's (``AttributeError: MINE``)."""
    plain = _same_as_plain(tmp_path, SHADOW, "blocks", [("threading.py", "MINE = 'yes'\n"),
                                                        ("helper_mod.py", "def work(n, out):\n    return n\n")])
    assert plain.stdout.splitlines() == ["program's threading: yes", "no current_thread"]


FORK = '''
import os, sys
import helper_mod
had = "threading" in sys.modules
os.register_at_fork(before=lambda: print("before", flush=True),
                    after_in_parent=lambda: print("parent", flush=True))
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    now = "threading" in sys.modules
    import threading
    lines = [f"child {had} {now}", str(helper_mod.work(30, [])),
             str(threading.main_thread() is threading.current_thread()), str(threading.active_count())]
    os.write(w, "\\n".join(lines).encode())
    os._exit(0)
os.close(w)
os.waitpid(pid, 0)
with os.fdopen(r) as f:
    print(f.read())
import threading
t = threading.Thread(target=lambda: None)
t.start(); t.join()
r, w = os.pipe()
pid = os.fork()          # now with threading (and a finished thread) in the parent
if pid == 0:
    os.close(r)
    os.write(w, f"child2 {threading.active_count()} {threading.main_thread() is threading.current_thread()}".encode())
    os._exit(0)
os.close(w)
os.waitpid(pid, 0)
with os.fdopen(r) as f:
    print(f.read())
print("end", threading.active_count())
'''


@pytest.mark.parametrize("mode", ["blocks", "witness"])
def test_fork_with_and_without_threading(tmp_path, mode):
    """``os.fork`` with the program's ``register_at_fork`` handlers, before and after the
    program imports ``threading``: the child's ``threading`` as in the plain run."""
    helper = ("def work(n, out):\n    import threading\n"
              "    return n, threading.current_thread() is threading.main_thread(), threading.active_count()\n")
    plain = _same_as_plain(tmp_path, FORK, mode, [("helper_mod.py", helper)])
    assert "child False False" in plain.stdout and "child2 1 True" in plain.stdout


INTERRUPT = '''
import _thread, os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)   # as if started from a terminal, not `cmd &`
import helper_mod
try:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(2)
except KeyboardInterrupt:
    print("caught in main", "threading" in sys.modules)
import threading
ready = threading.Event()
def poke():
    ready.wait()
    time.sleep(0.1)
    _thread.interrupt_main()
poker = threading.Thread(target=poke)
poker.start()
try:
    ready.set()
    helper_mod.spin()
except KeyboardInterrupt:
    poker.join()
    print("caught again", threading.current_thread().name, threading.active_count())
'''


def test_keyboard_interrupt_reaches_the_main_thread(tmp_path):
    """SIGINT and ``_thread.interrupt_main`` land in the program's main thread (not the
    flusher's), as in the plain run."""
    helper = "import time\ndef spin():\n    for _ in range(200):\n        time.sleep(0.05)\n"
    plain = _same_as_plain(tmp_path, INTERRUPT, "blocks", [("helper_mod.py", helper)])
    assert plain.stdout.splitlines() == ["caught in main False", "caught again MainThread 1"]


def test_record_start_up_does_not_import_threading():
    """A fresh interpreter importing what ``record`` runs loads neither ``threading`` nor
    ``_weakrefset`` (the chain wave 15 dropped)."""
    code = ("import sys\nimport wholetrace.runtime.cli, wholetrace.runtime.runner, wholetrace.runtime.children\n"
            "import wholetrace.store.writer\nprint(sorted(m for m in ('threading', '_weakrefset') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=120)
    assert out.stdout.strip() == "[]", out.stderr


def test_flag_behaves_as_threading_event():
    """``recorder.Flag`` against ``threading.Event``: clear at first, a timed wait returns
    False, ``set`` wakes a waiter in another thread, then waits return True at once."""
    from wholetrace.runtime.recorder import Flag

    for make in (Flag, threading.Event):
        f = make()
        assert not f.is_set() and f.wait(0.01) is False
        woke = []
        t = threading.Thread(target=lambda f=f: woke.append(f.wait(30)))
        t.start()
        time.sleep(0.05)
        f.set()
        t.join(10)
        assert woke == [True] and f.is_set() and f.wait(0) is True and f.wait(5) is True
        f.set()     # twice: no error
        assert f.is_set()


SHADOWS = '''
import sys
print(sorted(m for m in ("warnings", "opcode", "enum") if m in sys.modules))
import warnings, opcode, enum
print(warnings.MINE, opcode.MINE, enum.MINE)
import helper_mod
print(helper_mod.work(5, []))
'''


@pytest.mark.parametrize("mode", ["blocks", "path"])
def test_a_cold_miss_leaves_no_stdlib_module_a_program_file_shadows(tmp_path, mode):
    """``warnings.py``, ``opcode.py`` and ``enum.py`` beside the script: from a cold code cache
    too (the miss path loads the standard library's three before the first line), the program
    imports its own, as plain.  Failed before wave 15 (review14d P1: the standard library's
    were left in ``sys.modules``; ``AttributeError: MINE``)."""
    files = [(f"{n}.py", f"MINE = {n!r}\n") for n in ("warnings", "opcode", "enum")]
    plain = _same_as_plain(tmp_path, SHADOWS, mode, files + [("helper_mod.py", "def work(n, out):\n    return n\n")])
    assert plain.stdout.splitlines()[:2] == ["[]", "warnings opcode enum"]


POOL = '''
import concurrent.futures as cf, threading
import helper_mod
ex = cf.ThreadPoolExecutor(2)       # module level, never shut down: _python_exit wakes the workers
print(ex.submit(helper_mod.work, 300, []).result()[1:], threading.active_count() > 1)
'''


@pytest.mark.parametrize("mode", ["blocks", "path"])
def test_a_module_level_thread_pool_never_shut_down(tmp_path, mode):
    """``concurrent.futures``' idle workers are woken by a ``threading._register_atexit``
    callback that ``threading._shutdown`` runs: plain exits 0.  Before wave 15's fix the
    recording joined the workers without it and hung (review15c HIGH; the timeout fails it)."""
    plain = _same_as_plain(tmp_path, POOL, mode, [("helper_mod.py", HELPER)])
    assert plain.returncode == 0 and plain.stdout == "(False, 2) True\n"


CHAIN = '''
import atexit, threading, time
import helper_mod
def a():
    time.sleep(0.1)
    threading.Thread(target=helper_mod.late, args=([],), name="B").start()
    print("A done", flush=True)
atexit.register(lambda: print("atexit", sorted(t.name for t in threading.enumerate()),
                              threading.main_thread().is_alive(), flush=True))
threading.Thread(target=a, name="A").start()
late = threading.Thread(target=lambda: (time.sleep(0.2), atexit.register(lambda: print("late atexit"))))
late.start()
print("main done", flush=True)
'''


@pytest.mark.parametrize("mode", ["blocks", "path"])
def test_a_thread_started_while_the_threads_are_joined(tmp_path, mode):
    """Thread A starts B after the main thread has ended: B is joined before the ``atexit``
    functions run, which then see only the main thread, stopped (plain).  Before the fix the
    recording joined one snapshot of ``enumerate()``: ``atexit ['B', 'MainThread'] True``
    came before B's line.  B's events are recorded (``counts`` has ``late``'s lines)."""
    plain = _same_as_plain(tmp_path, CHAIN, mode, [("helper_mod.py", HELPER)], runs=1)
    assert plain.stdout.splitlines()[-3:] == ["late ('B', False, 2)", "late atexit",
                                               "atexit ['MainThread'] False"]
    import json
    rep = subprocess.run([sys.executable, "-c", CONSOLE, "counts", "--format", "json", str(tmp_path / f"{mode}.wt")],
                         capture_output=True, text=True, env=ENV, timeout=600)   # a cold JIT under load
    assert rep.returncode == 0, rep.stderr
    helper = json.loads(rep.stdout)["lines"][str(tmp_path / "helper_mod.py")]
    assert [helper[n] for n in ("5", "7", "10", "11")] == [1, 1, 1, 1]   # B's work and late, all of them


HOOKS = '''
import sys
def hook(path):
    if "zz-extra" in path:
        print("hook called", path)
    raise ImportError
sys.path_hooks.insert(0, hook)
sys.path.insert(1, sys.path[0] + "/zz-extra")
import helper_mod
print(helper_mod.work(4, []), any("zz-extra" in p for p in sys.path_importer_cache))
'''


def test_a_mid_run_miss_calls_no_path_hook(tmp_path):
    """A warm script whose ``helper_mod`` misses the code cache: the miss path loads the
    standard library's ``ast`` (and what it imports) mid-run, then decides which of them a
    program file shadows.  That must not call the program's ``sys.path_hooks`` on an entry its
    own imports never reached, nor fill ``sys.path_importer_cache`` (review15c MED: it went
    through ``PathFinder``; ``hook called`` and ``True``)."""
    plain = _same_as_plain(tmp_path, HOOKS, "blocks", [("helper_mod.py", "def work(n, out):\n    return n\n")], runs=1)
    assert plain.stdout == "4 False\n"
    (tmp_path / "helper_mod.py").write_text("def work(n, out):\n    return n + 1\n")   # only it misses now
    plain = _same_as_plain(tmp_path, HOOKS, "blocks", runs=1)
    assert plain.stdout == "5 False\n"


def test_full_mode_with_an_enum_py_beside_the_script(tmp_path):
    """``--mode full`` with ``enum.py`` and ``warnings.py`` beside a script that imports
    neither: the value probes' module imports ``ast`` and the flusher ``numpy``, both of which
    import ``enum``; they must take the standard library's, and the program's files must not
    run (plain prints only ``6``).  Crashed at start-up before (review15c MED:
    ``ImportError: cannot import name 'IntEnum'``), then at the first flush (numpy)."""
    files = [(f"{n}.py", f"print('MINE {n}'); MINE = 1\n") for n in ("enum", "warnings")]
    plain = _same_as_plain(tmp_path, "import helper_mod\nprint(helper_mod.work(6, []))\n", "full",
                           files + [("helper_mod.py", "def work(n, out):\n    return n\n")])
    assert plain.stdout == "6\n"


GC_ON_FLUSHER = '''
import gc, threading, time
import helper_mod
class C:
    def __init__(self):
        self.me = self
    def __del__(self):
        threading.current_thread()       # on the flusher too, when its allocations collect
gc.set_threshold(5)
t0 = time.time()
while time.time() - t0 < 1.5:
    C()
    helper_mod.work(1, [])
gc.collect()          # no cycle of C left for a collection on the flusher
time.sleep(0.6)       # the flusher flushes again: what it left is gone after each flush
print(threading.active_count(), [t.name for t in threading.enumerate()])
'''


@pytest.mark.parametrize("mode", ["blocks", "path"])
def test_program_code_run_on_the_flusher_leaves_no_dummy_thread(tmp_path, mode):
    """A ``__del__`` calling ``threading.current_thread()`` run on the flusher by a collection
    (a low ``gc`` threshold makes it happen within the run): the program's
    ``enumerate()``/``active_count()`` are as plain once the flush ends (review15c MED: a
    permanent ``Dummy-1``).  During a flush that ran such code the dummy is listed: the
    window this test leaves out (docs/design.md, "Record's start-up, wave 15")."""
    plain = _same_as_plain(tmp_path, GC_ON_FLUSHER, mode, [("helper_mod.py", HELPER)], runs=1)
    assert plain.stdout == "1 ['MainThread']\n"


ALL_THREADS = '''
import threading, time
import helper_mod
seen = set()
def tr(frame, event, arg):
    seen.add((threading.current_thread().name, frame.f_code.co_name))
threading.settrace_all_threads(tr)
time.sleep(0.6)                  # the flusher wakes up meanwhile
helper_mod.work(3, [])
threading.settrace_all_threads(None)
print(sorted(seen), threading.active_count())
'''


@pytest.mark.skipif(sys.version_info < (3, 12), reason="settrace_all_threads is 3.12+")
def test_settrace_all_threads_sees_no_wholetrace_frame(tmp_path):
    """``threading.settrace_all_threads`` also sets the hook on the flusher: cleared there
    before the flush's first Python call, so the program's hook sees only its own frames
    (review15c MED: ``flush``, ``append_events``, ... under ``Dummy-1``)."""
    plain = _same_as_plain(tmp_path, ALL_THREADS, "blocks", [("helper_mod.py", HELPER)], runs=1)
    assert "('MainThread', 'work')" in plain.stdout and "Dummy" not in plain.stdout


THREADED_FORK = '''
import _thread, os, time
import helper_mod
done = _thread.allocate_lock(); done.acquire()
_thread.start_new_thread(lambda: (done.acquire(), time.sleep(0)), ())   # the program's second thread
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
done.release()
print("forked twice", helper_mod.work(2, [])[0])
'''


@pytest.mark.parametrize("mode", ["blocks", "path"])
def test_a_multi_threaded_program_s_fork_warns_as_plain(tmp_path, mode):
    """On 3.12+ plain python warns (``DeprecationWarning: ... multi-threaded``) when the
    program has a second thread at ``os.fork``: the recording must warn too,
    while ``test_fork_with_and_without_threading`` (one thread in the program, the flusher
    the second) must not (``runtime.forkwarn``)."""
    plain = _same_as_plain(tmp_path, THREADED_FORK, mode, [("helper_mod.py", HELPER)], runs=1)
    assert plain.stdout == "forked twice MainThread\n"
    assert plain.stderr.count("multi-threaded") == (sys.version_info >= (3, 12))   # "default": once a line
