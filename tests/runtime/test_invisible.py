"""The recorded program cannot tell it is recorded (issue 9 §2, issue 16 §4 "global state").

Oracle: the plain run.  A program prints what code can see of its environment: the names of
``builtins``, its module's ``dir()``, ``globals()`` and ``vars()`` of a class (also after a
``match`` and while one runs), ``inspect.getsource``, ``co_firstlineno``, the trace and
profile hooks, tracebacks of an exception raised by a property, hashes of code objects, the
asyncio ``Task`` class and tasks.  The output must be identical in every mode.  Then two
recordings made one after the other in one process must be independent and correct.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from wtutil import ENV, fbe_lines, run_plain, run_recorded

from wholetrace.instrument import misspath

MODES = ("blocks", "count", "count-naive", "witness", "branches", "path", "full")

PROGRAM = '''
import asyncio
import builtins
import inspect
import sys
import traceback


class K:
    x = 1

    def m(self):
        return self.x

    @property
    def p(self):
        raise ValueError("from a property")

    def __eq__(self, other):
        raise TypeError("no comparing")

    __hash__ = object.__hash__

    match x:
        case 1:
            seen_in_match = sorted(vars())
        case _:
            pass


def f(a, b=2):
    """doc"""
    try:
        return a + b
    finally:
        pass


def gen(n):
    yield from range(n)


print(sorted(dir(builtins)))
print(sorted(dir()))
print(sorted(globals()))
print(sorted(vars(K)))
print(K.seen_in_match)
print(inspect.getsource(f))
print(inspect.getsource(K.m))
print(f.__code__.co_firstlineno, K.m.__code__.co_firstlineno, gen.__code__.co_firstlineno)
print(f.__code__.co_name, f.__code__.co_argcount, f.__defaults__, f.__doc__)
print(sys.gettrace(), sys.getprofile())
print(hash(f.__code__) == hash(f.__code__), f.__code__ == f.__code__, len({f.__code__, K.m.__code__}))
for thunk in (lambda: K().p, lambda: K() == K(), lambda: f("a")):
    try:
        thunk()
    except Exception:
        print(traceback.format_exc())
match [1, 2]:
    case [1]:
        pass
    case [a, b] if sorted(globals()) != []:
        print("match", a, b)
print(sorted(globals()))


async def main():
    task = asyncio.current_task()
    t = asyncio.ensure_future(asyncio.sleep(0, result=7))
    return type(task).__name__, type(task).__module__, sorted(vars(task)) if hasattr(task, "__dict__") else None, await t

print(asyncio.run(main()))
print(asyncio.Task.__name__, asyncio.Task.__module__, asyncio.Task.__qualname__)
print(list(gen(3)))
print(list(globals()), type(__builtins__).__name__)
'''


@pytest.mark.parametrize("mode", MODES)
def test_program_sees_what_it_sees_without_wholetrace(tmp_path, mode):
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    plain = run_plain(script)
    assert plain.returncode == 0, plain.stderr
    assert "_wt" not in plain.stdout
    rec = run_recorded(script, tmp_path / "out.wt", mode=mode)
    assert rec.stderr == ""
    assert rec.stdout == plain.stdout


UNCAUGHT = '''
import asyncio, atexit, sys

async def work():
    return 1

def seen():
    v = getattr(sys, "last_value", None)
    print("atexit sees", type(v).__name__, v, getattr(sys, "last_type", None), sys.last_traceback.tb_frame.f_code.co_name,
          getattr(sys, "last_exc", v) is v)

atexit.register(seen)
pending = [work() for _ in range(2)]        # never awaited: warned about when collected

def main():
    held = pending
    raise LookupError("uncaught")

main()
'''


@pytest.mark.parametrize("mode", ["blocks", "count", "path"])
def test_uncaught_exception_is_kept_as_the_interpreter_keeps_it(tmp_path, mode):
    """After an uncaught exception, `atexit` handlers see it in `sys.last_*` (`sys.last_exc`
    on 3.12+), and what its frames hold lives until shutdown: the never-awaited coroutines are
    reported then, as in the plain run (earlier, the warnings module adds a tracemalloc hint)."""
    script = tmp_path / "uncaught.py"
    script.write_text(UNCAUGHT)
    plain = run_plain(script)
    assert "atexit sees LookupError uncaught" in plain.stdout and "never awaited" in plain.stderr
    rec = run_recorded(script, tmp_path / "out.wt", mode=mode)
    assert (rec.returncode, rec.stdout, rec.stderr) == (plain.returncode, plain.stdout, plain.stderr)


TWICE = r'''
import json, sys
from pathlib import Path
from wholetrace.runtime.runner import Target, record
from wholetrace.store import RecordingWriter

out = Path(sys.argv[1])
for i, mode in enumerate(sys.argv[2:]):
    o = record(Target(script=str(out / "prog.py")), RecordingWriter(out / f"{i}.wt"), mode=mode)
    print("outcome", o.ended, o.exit_code, file=sys.stderr)
import builtins
print("leftover", sorted(n for n in dir(builtins) if "wt" in n), file=sys.stderr)
'''

SMALL = '''
import threading

def work(n):
    total = 0
    for i in range(n):
        try:
            if i % 3 == 0:
                raise KeyError(i)
            total += i
        except KeyError:
            total -= 1
    return total

t = threading.Thread(target=work, args=(5,))
t.start()
t.join()
print(work(10))
'''


@pytest.mark.parametrize("modes", [("blocks", "blocks"), ("count", "count"), ("count", "blocks"), ("witness", "count")])
def test_two_recordings_in_one_process_are_independent(tmp_path, modes):
    """The second recording starts from nothing: its streams are numbered from 0, and its
    trace and counts equal those of a recording made alone in a fresh process."""
    (tmp_path / "prog.py").write_text(SMALL)
    runner = tmp_path / "twice.py"
    runner.write_text(TWICE)
    r = subprocess.run([sys.executable, str(runner), str(tmp_path), *modes], capture_output=True, text=True,
                       cwd=tmp_path, env=ENV, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "23\n" * len(modes)
    assert "outcome exit 0" in r.stderr and "leftover []" in r.stderr
    for i, mode in enumerate(modes):
        alone = tmp_path / f"alone{i}.wt"
        proc = run_recorded(tmp_path / "prog.py", alone, mode=mode)
        assert proc.returncode == 0
        assert _contents(tmp_path / f"{i}.wt", mode) == _contents(alone, mode), (i, mode)


def _contents(path, mode):
    from wholetrace.store import Recording
    from wtutil import profiles
    with Recording(path) as rec:
        # (names are the program's: threading numbers threads per process, "Thread-2" the second time)
        streams = [(st.sid, st.kind) for st in rec.streams()]
    counts = sorted((k[1], k[2], [int(c) for c in p.blocks], [int(c) for c in p.edges])
                    for k, p in profiles(path).items())
    if mode in ("count", "count-naive"):
        return counts
    return streams, fbe_lines(path), counts


HEAVY_IMPORTS = '''
import sys
print(sorted(m for m in ("numba", "llvmlite", "scipy", "pandas") if m in sys.modules))
'''


@pytest.mark.parametrize("mode", ["blocks", "count", "path"])
def test_recording_does_not_import_numba(tmp_path, mode):
    """Start-up: `record` brings no numba (a second per run); the analyses import it when
    they run (--cf-grammar, --wpp)."""
    script = tmp_path / "prog_imports.py"
    script.write_text(HEAVY_IMPORTS)
    run = run_recorded(script, tmp_path / "t.wt", mode=mode)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


STARTUP_IMPORTS = '''
import sys
print(sorted(m for m in ("hashlib", "importlib.abc", "importlib.resources", "tempfile", "shutil", "sysconfig",
                         "bz2", "lzma",
                         # wave 10: dataclasses (and what it imports), typing, argparse, json, tokenize,
                         # pathlib (and re, urllib.parse), platform, sqlite3.dbapi2 (and datetime), zstandard, dis
                         "dataclasses", "inspect", "copy", "linecache", "tokenize", "typing", "argparse",
                         "gettext", "locale", "json", "json.decoder", "random", "pathlib", "fnmatch",
                         "urllib.parse", "ipaddress", "platform", "sqlite3", "datetime", "zstandard", "dis",
                         # wave 11: full mode's value log (runtime/values.py) imported typing, hashlib, weakref
                         "weakref",
                         # re: 3.12's ast imports it, and the instrumenter needs ast
                         *(("re",) if sys.version_info < (3, 12) else ()))
             if m in sys.modules))
'''


@pytest.mark.parametrize("mode", ["blocks", "count", "witness", "path", "full"])
def test_recording_does_not_import_what_start_up_need_not(tmp_path, mode):
    """Start-up (design.md "Start-up of record", waves 9 and 10): modules plain Python does not
    import and the recorder does not need stay out of the program's process, so the program
    imports them itself (instrumented, under --include) as it would without wholetrace."""
    script = tmp_path / "prog_startup.py"
    script.write_text(STARTUP_IMPORTS)
    plain = run_plain(script)
    run = run_recorded(script, tmp_path / "t.wt", mode=mode)
    assert run.returncode == 0, run.stderr
    assert run.stdout == plain.stdout == "[]\n"


MISS_MAIN = '''
import sys
print(sorted(m for m in sys.modules if not m.startswith("wholetrace")))
before = set(sys.modules)
import helper_mod
print(sorted(m for m in set(sys.modules) - before if m != "helper_mod" and not m.startswith("wholetrace")))
print(helper_mod.run(6), *sorted(m for m in ("typing", "bisect") if m in sys.modules))
'''
MISS_HELPER = '''
def gen(n):
    for i in range(n):
        try:
            if i % 2:
                yield i
            else:
                continue
        finally:
            pass


def run(n):
    total = 0
    with open(__file__) as fh:
        total += len(fh.readline()) > 0
    while n:
        n -= 1
        total += sum(gen(n)) if n % 3 else -1
    return total
'''


@pytest.mark.parametrize("mode,include", [(m, ()) for m in MODES] + [("path", ("bisect",)), ("witness", ("typing",))])
def test_a_cache_miss_imports_nothing_the_program_would_see(tmp_path, mode, include):
    """Everything a code-cache miss needs (the instrumenter, and in modes other than blocks the
    planners ``instrument.modes`` imports when it first plans) is imported on the first miss
    (``instrument.misspath``): a cold recording's program sees those standard-library modules
    from its first line (the script is the first miss), a warm one's does not, and a module
    instrumented afresh after that brings no other.  With ``--include bisect`` the
    planners are imported at start-up too (they must not bind the program's instrumented copy)."""
    (tmp_path / "helper_mod.py").write_text(MISS_HELPER)
    script = tmp_path / "prog_miss.py"
    script.write_text(MISS_MAIN)
    plain = run_plain(script)
    assert plain.returncode == 0, plain.stderr
    env = {**ENV, "WHOLETRACE_CACHE_DIR": str(tmp_path / "cache")}
    inc = [a for m in include for a in ("--include", m)]
    runs = []
    for _cold_then_warm in range(2):
        r = subprocess.run([sys.executable, "-m", "wholetrace.cli", "record", "--mode", mode, "-q", *inc,
                            "-o", str(tmp_path / "t.wt"), str(script)], capture_output=True, text=True,
                           cwd=tmp_path, env=env, timeout=300)
        assert r.returncode == 0, r.stderr
        runs.append(r.stdout.splitlines())
    cold, warm = runs
    # what the program sees at its first line: from a warm cache, only start-up's modules; from a
    # cold one (the script itself is a miss), also the standard-library modules the miss path
    # loaded (instrument.misspath, wave 13: they stay, one copy), unless loaded at start-up
    seen_cold, seen_warm = set(eval(cold[0])), set(eval(warm[0]))
    assert seen_warm <= seen_cold
    assert {m.split(".")[0] for m in seen_cold - seen_warm} <= misspath.CLOSURE, sorted(seen_cold - seen_warm)
    if any(m in misspath.CLOSURE for m in include):   # loaded before the finder (eager): the same
        assert seen_cold == seen_warm
    assert cold[1] == "[]"                          # a module instrumented afresh brings nothing
    assert cold[2].split()[0] == warm[2].split()[0] == plain.stdout.splitlines()[2].split()[0]
    if include:    # purged: the program imports its own
        assert include[0] not in cold[2].split()[1:]


COOKIE_MAIN = '''
import sys
before = set(sys.modules)
import helper_cookie
print(sorted(m for m in set(sys.modules) - before if m != "helper_cookie" and not m.startswith("wholetrace")))
print(helper_cookie.f())
'''


@pytest.mark.parametrize("mode", ["blocks", "path"])
def test_a_module_with_a_coding_cookie_brings_no_import(tmp_path, mode):
    """Decoding a module that declares its encoding (PEP 263: ``# -*- coding: ... -*-``, common
    in packages) imports nothing: not ``tokenize`` (nor ``re``, ``token``) through the finder,
    where the program would see them appear and, under ``--include re``, its trace would hold
    ``re``'s functions run by wholetrace itself."""
    (tmp_path / "helper_cookie.py").write_bytes(b"# -*- coding: latin-1 -*-\ndef f():\n    return '\xe9'\n")
    script = tmp_path / "prog_cookie.py"
    script.write_text(COOKIE_MAIN)
    plain = run_plain(script)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == "[]\n\u00e9\n"
    for include in ((), ("re",)):
        rec = run_recorded(script, tmp_path / "t.wt", mode=mode, include=include)
        assert rec.returncode == 0, rec.stderr
        assert rec.stdout == plain.stdout, include
        from wholetrace.store import Recording
        with Recording(tmp_path / "t.wt") as r:
            files = sorted({f.file for f in r.functions()})
        assert files == sorted([str(script.resolve()), str((tmp_path / "helper_cookie.py").resolve())]), files


DIS_PROGRAM = '''
import dis
import threading
import time


def spin():
    while True:
        time.sleep(0.01)


threading.Thread(target=spin, daemon=True).start()   # still running at the end: its frame is closed at stop
print(dis.opname[1] != "")
'''


def test_the_recorders_own_dis_at_stop_is_not_the_programs(tmp_path):
    """At stop, ``runtime.unfinished`` reads the instructions of the frames still open with
    ``dis``.  Under ``--include dis`` the module named dis in ``sys.modules`` is the program's,
    instrumented: the recorder must use its own, or its calls are recorded in the program's
    trace (``get_instructions`` and its helpers, thousands of events the program never ran)."""
    script = tmp_path / "prog_dis.py"
    script.write_text(DIS_PROGRAM)
    rec = run_recorded(script, tmp_path / "t.wt", include=("dis",))
    assert rec.returncode == 0 and rec.stdout == "True\n", rec.stderr
    entered = {line[2:] for line in fbe_lines(tmp_path / "t.wt") if line.startswith("F ")}
    assert "spin" in entered
    assert not entered & {"get_instructions", "_get_instructions_bytes", "_unpack_opargs"}, sorted(entered)


STAR_GUARDS = '''
class Loud(Exception):
    """An exception whose ``exceptions`` the program counts: reading it is visible."""
    reads = 0

    @property
    def exceptions(self):
        Loud.reads += 1
        raise RuntimeError("exceptions read")


class Delegating(Exception):
    def __getattr__(self, name):
        print("getattr", name)
        return []


def f(e):
    try:
        with open(__file__) as fh:
            try:
                raise e
            except* KeyError:
                print("never")
    finally:
        print("finally", type(e).__name__)


for e in (Loud("x"), Delegating("y"), ValueError("z")):
    try:
        f(e)
    except Exception as got:
        inner = got.exceptions if isinstance(got, BaseExceptionGroup) else ()
        print("caught", type(got).__name__, [type(x).__name__ for x in inner])
print("reads", Loud.reads)
'''


@pytest.mark.parametrize("mode", MODES)
def test_guards_around_except_star_read_no_attribute_of_the_program(tmp_path, mode):
    """The guards of a function holding ``except*`` find a group's first exception (the group
    ``except*`` makes has no traceback) without reading ``exceptions`` or calling ``__getattr__``
    of any other exception: a property or ``__getattr__`` of the program would run (review of
    wave 12: ``getattr(exc, "exceptions", ...)``)."""
    script = tmp_path / "prog.py"
    script.write_text(STAR_GUARDS)
    plain = run_plain(script)
    assert plain.returncode == 0, plain.stderr
    assert "reads 0" in plain.stdout and "getattr" not in plain.stdout
    rec = run_recorded(script, tmp_path / "out.wt", mode=mode)
    assert rec.stderr == ""
    assert rec.stdout == plain.stdout


LATE_MAIN = '''
import sys, time
before = set(sys.modules)
total = sum(i * i for i in range(2000))
time.sleep(0.8)   # three of the flusher's 0.25 s intervals: it has split a chunk by now
print(sorted(m for m in set(sys.modules) - before if not m.startswith("wholetrace")), total)
'''


def test_full_mode_imports_nothing_while_the_program_runs(tmp_path):
    """A full-mode program that runs past the flusher's first flush sees no module appear
    (the plain run's output): the flusher's ``ValueLog.split`` imported numpy (and ``datetime``,
    ``math``, ...) into the program's ``sys.modules`` until the split server (wave 18).  Deterministic form of the
    under-load failure of ``test_a_cache_miss_imports_nothing_the_program_would_see[full-...]``."""
    script = tmp_path / "prog_late.py"
    script.write_text(LATE_MAIN)
    plain = run_plain(script)
    assert plain.returncode == 0 and plain.stdout.startswith("[] "), plain.stderr
    rec = run_recorded(script, tmp_path / "t.wt", mode="full")
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout == plain.stdout
