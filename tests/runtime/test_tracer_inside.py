"""A tracer inside the recorded program sees the events of the plain run (issue 15 §3).

Oracle: the plain run.  A host script installs a ``sys.settrace`` recorder (and
``threading.settrace``) that writes every ``call``/``line``/``return``/``exception`` event
of frames in the program's own files (event, qualname, ``frame.f_lineno``, and the
exception's type), then runs the program through the import system
(``runpy.run_module``), so under ``wholetrace record`` the program is instrumented while the
host is the recorded script.  The event files of the plain run and of each mode must be
identical.  Programs: the corpus drivers (``tests/corpus.py``) and generated programs
(``tests/genprogs.py``: hypothesmith and the structured generator).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from corpus import PROGRAMS, names
from genprogs import acceptable, programs, structured_programs
from wtutil import ENV

MODES = ("blocks", "count", "count-naive", "witness", "branches", "path", "full")

HOST = r'''
import os, runpy, sys, threading

out_path, files_path, module = sys.argv[1], sys.argv[2], sys.argv[3]
sys.argv = [module] + sys.argv[4:]
with open(files_path) as f:
    wanted = {os.path.realpath(x) for x in f.read().split("\n") if x}
known = {}
log = open(out_path, "w")


def tracer(frame, event, arg):
    fn = frame.f_code.co_filename
    keep = known.get(fn)
    if keep is None:
        keep = known[fn] = os.path.realpath(fn) in wanted
    if not keep:
        return None
    extra = " " + arg[0].__name__ if event == "exception" else ""
    log.write(f"{event} {frame.f_code.co_qualname} {frame.f_lineno}{extra}\n")
    return tracer


sys.settrace(tracer)
threading.settrace(tracer)
try:
    runpy.run_module(module, run_name="__main__", alter_sys=True)
except SystemExit:
    pass
except BaseException as exc:
    print("EXC", type(exc).__name__)
finally:
    sys.settrace(None)
    threading.settrace(None)
    log.close()
'''


def _events(out: Path, files: set[str], module: str, cwd: Path, record: list[str] | None) -> tuple[list[str], str]:
    host = cwd / "_trace_host.py"
    host.write_text(HOST)
    lst = cwd / "_trace_files.txt"
    lst.write_text("\n".join(sorted(files)))
    cmd = [sys.executable] + (record or []) + [str(host), str(out), str(lst), module]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=ENV, timeout=600,
                       stdin=subprocess.DEVNULL)
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    return out.read_text().splitlines(), r.stdout


def _record(mode: str, out: Path, include: list[str]) -> list[str]:
    cmd = ["-m", "wholetrace.cli", "record", "--mode", mode, "-q", "-o", str(out)]
    return cmd + [a for m in include for a in ("--include", m)]


def _first_difference(a: list[str], b: list[str]) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            lo = max(0, i - 4)
            return f"event {i}: plain {a[lo:i + 3]} != recorded {b[lo:i + 3]}"
    return f"lengths {len(a)} != {len(b)}: plain tail {a[len(b):len(b) + 3]}, recorded tail {b[len(a):len(a) + 3]}"


def assert_same_events(files: set[str], module: str, cwd: Path, modes: tuple[str, ...] = MODES,
                       include: list[str] | None = None) -> None:
    plain, out = _events(cwd / "plain.ev", files, module, cwd, None)
    assert plain, "the tracer saw nothing"
    for mode in modes:
        got, got_out = _events(cwd / f"{mode}.ev", files, module, cwd, _record(mode, cwd / f"{mode}.wt", include or []))
        assert got_out == out, mode
        assert got == plain, f"{mode}: {_first_difference(plain, got)}"


def test_repro_target_function(tmp_path):
    """The issue's example: no ``line``/``return`` on the ``def`` line after the last line."""
    (tmp_path / "prog.py").write_text("def target(n):\n    s = 0\n    for i in range(n):\n        s += i\n"
                                      "    return s\n\nprint(target(3))\n")
    plain, _ = _events(tmp_path / "plain.ev", {str(tmp_path / "prog.py")}, "prog", tmp_path, None)
    assert plain[-3:] == ["line target 5", "return target 5", "return <module> 7"]
    assert_same_events({str(tmp_path / "prog.py")}, "prog", tmp_path)


PROGRAM = '''
import contextlib

class Box:
    def __init__(self, v):
        self.v = v
    @property
    def twice(self):
        if self.v < 0:
            raise ValueError(self.v)
        return 2 * self.v
    def __eq__(self, other):
        return isinstance(other, Box) and self.v == other.v
    __hash__ = None

@contextlib.contextmanager
def cm(n):
    try:
        yield n
    finally:
        n += 1

def gen(k):
    for i in range(k):
        try:
            yield i
        finally:
            pass

def work(xs):
    out = []
    for x in xs:
        try:
            with cm(x):
                if x == 3:
                    continue
                out.append(Box(x).twice)
        except ValueError as e:
            out.append(str(e))
            try:
                raise KeyError(x)
            except KeyError:
                pass
        finally:
            out.append(0)
    while xs:
        xs = xs[1:]
        if len(xs) == 2:
            break
    else:
        out.append(-1)
    return out

def reraise(n):
    try:
        try:
            1 / n
        finally:
            n += 1
    except ZeroDivisionError:
        raise

print(work([1, -2, 3, 4]), list(gen(3)), Box(1) == Box(1))
try:
    reraise(0)
except ZeroDivisionError as e:
    print("caught", type(e).__name__)
match [1, 2]:
    case [a]:
        print(a)
    case [a, b] if a < b:
        print(a, b)
    case _:
        pass
'''


def test_program_with_handlers_generators_with_and_match(tmp_path):
    (tmp_path / "prog.py").write_text(PROGRAM)
    assert_same_events({str(tmp_path / "prog.py")}, "prog", tmp_path)


#: A tracer slows a program 10-50 times: the default suite takes three programs (a
#: pyperformance benchmark, a stdlib package with exceptions, generators), ``-m slow`` all.
QUICK = ("richards", "json", "go")


def _corpus(name: str, tmp_path: Path, modes: tuple[str, ...]) -> None:
    prog = PROGRAMS[name]
    driver = prog.write(tmp_path, "small")
    assert_same_events(prog.files(tmp_path), driver.stem, tmp_path, modes, prog.include)


@pytest.mark.parametrize("name", QUICK)
def test_corpus(name, tmp_path):
    _corpus(name, tmp_path, ("blocks", "count"))


@pytest.mark.slow
@pytest.mark.parametrize("name", names())
def test_corpus_every_program_every_mode(name, tmp_path):
    _corpus(name, tmp_path, MODES)


#: make test's compatibility runs on other interpreters (tools/compat.py) draw half as many
GEN = settings(max_examples=3 if os.environ.get("WHOLETRACE_COMPAT") else 6, derandomize=True, deadline=None, database=None,
               suppress_health_check=list(HealthCheck))


def _generated(src: str, tmp: Path) -> None:
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    (tmp / "prog.py").write_text(src)
    assert_same_events({str(tmp / "prog.py")}, "prog", tmp)


@GEN
@given(structured_programs())
def test_structured_programs(tmp_path_factory, src):
    _generated(src, tmp_path_factory.mktemp("gen"))


@GEN
@given(programs())
def test_hypothesmith_programs(tmp_path_factory, src):
    if acceptable(src):
        _generated(src, tmp_path_factory.mktemp("hm"))
