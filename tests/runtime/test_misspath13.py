"""Loading the instrumenter's miss path on the first cache miss (``instrument.misspath``, wave 13
review): from the interpreter's standard library whatever the program's directory holds, one
copy of every module, no hang when the loading thread re-enters the import system, and no
wholetrace frame in the tracebacks of a program's finder.

Oracles: the plain run of the same program; the standard library's own files.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

from wtutil import ENV, run_plain

TIMEOUT = 120   # a hang (the defect these tests target) fails the test instead of blocking the run


def _record(tmp_path, script, cache, mode="blocks"):
    return subprocess.run([sys.executable, "-m", "wholetrace.cli", "record", "--mode", mode, "-q",
                           "-o", str(tmp_path / "out.wt"), str(script)], capture_output=True, text=True,
                          cwd=tmp_path, env={**ENV, "WHOLETRACE_CACHE_DIR": str(cache)}, timeout=TIMEOUT,
                          stdin=subprocess.DEVNULL)


def _warm_script_cold_modules(tmp_path, script, modules):
    """Record ``script`` once without ``modules`` (name -> text) so that only the script is in
    the code cache, then write them: the next recording misses on them, not on the script."""
    run = _record(tmp_path, script, tmp_path / "cache")
    assert run.returncode == 1, run.stderr   # without them, the program fails (the script is cached)
    for name, text in modules.items():
        (tmp_path / name).write_text(text)


def _meta(tmp_path, key):
    with sqlite3.connect(tmp_path / "out.wt") as db:
        rows = db.execute("select value from meta where key = ?", (key,)).fetchall()
    return json.loads(rows[0][0]) if rows else None


SHADOW = 'print("user {name}")\n'
HELPER = "def f(n):\n    return sum(i for i in range(n) if i % 2)\n"
NOT_IMPORTED = "import helper_mod\nprint('hello', helper_mod.f(5))\n"
IMPORTED = "import helper_mod\nprint('hello', helper_mod.f(5))\nimport {name}\nprint({name}.__file__.rsplit('/', 2)[-2:])\n"


@pytest.mark.parametrize("name", ["enum", "ast", "bisect"])
def test_a_script_directory_shadowing_a_miss_path_module_records(tmp_path, name):
    """The program's directory holds ``enum.py`` (``ast.py``, ``bisect.py``) and the cache is
    cold: the recording finishes (it hung when the miss path imported the program's file) and
    prints what plain Python prints.  When the program imports its own ``NAME`` after the
    cold miss, it gets its own, as plain and as from a warm cache (wave 15, review14d P1: it
    got the standard library's, which the miss path had left in ``sys.modules``)."""
    (tmp_path / f"{name}.py").write_text(SHADOW.format(name=name))
    (tmp_path / "helper_mod.py").write_text(HELPER)
    quiet = tmp_path / "quiet.py"
    quiet.write_text(NOT_IMPORTED)
    plain = run_plain(quiet, timeout=TIMEOUT)
    run = _record(tmp_path, quiet, tmp_path / "cache")
    assert (run.returncode, run.stdout) == (plain.returncode, plain.stdout), run.stderr
    assert run.stdout == "hello 4\n"

    loud = tmp_path / "loud.py"
    loud.write_text(IMPORTED.format(name=name))
    plain = run_plain(loud, timeout=TIMEOUT)
    assert plain.stdout.splitlines()[1:] == [f"user {name}", f"['{tmp_path.name}', '{name}.py']"]
    cold = _record(tmp_path, loud, tmp_path / "cold")
    assert cold.returncode == 0, cold.stderr
    assert cold.stdout == plain.stdout
    warm = _record(tmp_path, loud, tmp_path / "cold")
    assert (warm.returncode, warm.stdout) == (0, plain.stdout), warm.stderr


@pytest.mark.parametrize("name", ["enum", "ast", "bisect"])
def test_a_shadowing_module_missed_on_while_the_program_imports_it(tmp_path, name):
    """The script is warm and the program's own ``enum.py`` (...) is the first miss: the miss path
    loads while that module is half-imported under its name, and still takes the standard
    library's; the program gets its own module, as plain."""
    script = tmp_path / "prog.py"
    script.write_text(f"import {name}\nprint({name}.__file__.rsplit('/', 1)[-1], {name}.MINE)\n")
    _warm_script_cold_modules(tmp_path, script, {f"{name}.py": SHADOW.format(name=name) + "MINE = 7\n"})
    plain = run_plain(script, timeout=TIMEOUT)
    run = _record(tmp_path, script, tmp_path / "cache")
    assert (run.returncode, run.stdout) == (0, plain.stdout), run.stderr
    assert plain.stdout == f"user {name}\n{name}.py 7\n"


ONE_ENUM = '''
import sys, threading
sys.setswitchinterval(1e-5)
box = {}
done = []

def worker():   # imports enum while the main thread's cold miss loads the miss path (plain: after it)
    while "wholetrace.instrument.cfg" not in sys.modules and not done:
        pass
    import enum
    box["enum"] = enum

t = threading.Thread(target=worker)
t.start()
import mod
done.append(1)
t.join()
import enum, re
print("same enum:", box["enum"] is enum, sys.modules["enum"] is box["enum"])
print("re's enum:", type(re.RegexFlag) is enum.EnumType, isinstance(re.I, enum.IntFlag))
class Color(box["enum"].Enum):
    RED = 1
print(isinstance(Color.RED, enum.Enum))
'''


def test_a_thread_importing_enum_during_a_cold_miss_gets_the_one_enum(tmp_path):
    """A thread imports ``enum`` while the main thread loads the miss path (the script warm,
    ``mod`` cold), then exits: the program holds one ``enum``, the one ``re`` uses (it was
    given a copy that was then taken out of ``sys.modules``)."""
    script = tmp_path / "prog.py"
    script.write_text(ONE_ENUM)
    _warm_script_cold_modules(tmp_path, script, {"mod.py": "X = 1\n"})
    plain = run_plain(script, timeout=TIMEOUT)
    assert plain.stdout.splitlines()[:3] == ["same enum: True True", "re's enum: True True", "True"]
    for _ in range(3):   # the thread's timing varies: each cold run must hold
        run = _record(tmp_path, script, tmp_path / "cache")
        assert (run.returncode, run.stdout) == (0, plain.stdout), run.stderr
        (tmp_path / "mod.py").write_text((tmp_path / "mod.py").read_text() + "X += 1\n")   # cold again


GC_NESTED = '''
import gc
done = []

def cb(phase, info):
    if not done and phase == "stop":
        done.append(1)
        import other

gc.callbacks.append(cb)
import mod
gc.collect()   # the callback has run by now in any case (3.13's plain ``import mod`` collects nothing)
gc.callbacks.remove(cb)
import other
print("ok", done, other.Y)
'''


def test_a_gc_callback_importing_during_the_miss_path_load_does_not_hang(tmp_path):
    """A ``gc`` callback imports a cold module while the same thread loads the miss path
    (``mod`` cold, the script warm): the recording finishes with the plain output; the
    callback's module is imported uninstrumented and named in the meta.  Whether a collection
    runs during ``import mod`` is the allocator's business (plain 3.11 collects there, plain
    3.13 does not: review14d P3), so the program collects once after it: the output does not
    depend on it, the load's own collections still call the callback first."""
    script = tmp_path / "prog.py"
    script.write_text(GC_NESTED)
    _warm_script_cold_modules(tmp_path, script, {"mod.py": "X = 10\n", "other.py": "Y = 1\n"})
    plain = run_plain(script, timeout=TIMEOUT)
    assert plain.stdout == "ok [1] 1\n"
    run = _record(tmp_path, script, tmp_path / "cache")
    assert (run.returncode, run.stdout) == (0, plain.stdout), run.stderr
    assert _meta(tmp_path, "unrecorded_modules") in (["other"], None)   # None: gc ran outside the load


FINDER_BETWEEN = '''
import importlib.abc, importlib.machinery, sys, traceback

class Boom(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "json":
            raise ImportError("boom from finder")
        if name == "csv":
            raise RuntimeError("rt from finder")
        return None

sys.meta_path.insert(sys.meta_path.index(importlib.machinery.PathFinder), Boom())
import helper_mod
for n in ("json", "csv", "helper_mod2"):
    try:
        __import__(n)
    except Exception:
        traceback.print_exc(file=sys.stdout)
print(helper_mod.f(5))
'''


@pytest.mark.parametrize("mode", ["blocks", "count"])
def test_a_program_finder_between_ours_and_pathfinder_raising_keeps_plain_tracebacks(tmp_path, mode):
    """The program puts a finder raising ``ImportError`` (``RuntimeError``) just before
    ``PathFinder``: the tracebacks it prints are plain Python's (no frame of wholetrace's
    finder), from a cold and a warm cache."""
    (tmp_path / "helper_mod.py").write_text(HELPER)
    script = tmp_path / "prog.py"
    script.write_text(FINDER_BETWEEN)
    plain = run_plain(script, timeout=TIMEOUT)
    assert "boom from finder" in plain.stdout and "rt from finder" in plain.stdout
    for _cold_then_warm in range(2):
        run = _record(tmp_path, script, tmp_path / "cache", mode)
        assert (run.returncode, run.stdout) == (0, plain.stdout), run.stderr


ORDER_PROBE = '''
import sys
sys.path[:0] = sys.argv[1:]   # wholetrace and its dependencies, without site's imports
import importlib._bootstrap as bootstrap
import wholetrace.runtime.runner   # what a recording's start-up loads
from wholetrace.instrument import misspath
through_import = []
real = bootstrap._find_and_load
def spy(name, import_):
    if "." not in name:
        through_import.append(name)
    return real(name, import_)
bootstrap._find_and_load = spy
misspath.load()
bootstrap._find_and_load = real
import ast
print(" ".join(sorted(set(through_import))))
print(ast.__file__.startswith(misspath.stdlib_dirs()[0]))
'''


def test_order_loads_every_top_level_module_the_miss_path_imports():
    """``misspath.ORDER`` on the running Python, with ``site`` off (the fewest modules loaded
    beforehand): no top-level module the miss path imports is left to the import system,
    which would search ``sys.path`` (the program's directory first)."""
    import os

    import wholetrace

    src = os.path.dirname(os.path.dirname(wholetrace.__file__))
    sites = [p for p in sys.path if p.endswith("-packages")]
    r = subprocess.run([sys.executable, "-S", "-c", ORDER_PROBE, src, *sites], capture_output=True, text=True,
                       env=ENV, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "\nTrue\n"


SHADOWED_LOAD = '''
import sys
sys.path.insert(0, sys.argv[1])
import wholetrace.runtime.runner
from wholetrace.instrument import misspath
import enum as program_enum   # the program's own, already imported: put back after the load
ast = misspath.load()
print(ast.__file__.startswith(misspath.stdlib_dirs()[0]), sys.modules["enum"] is program_enum,
      type(ast._Precedence).__module__, "ast" in sys.modules, "bisect" in sys.modules, flush=True)
import bisect   # the program's (it exits), as plain python's import would take it
'''


def test_load_takes_the_standard_library_with_shadows_first_on_sys_path(tmp_path):
    """``load`` with the program's ``enum.py`` (imported), ``ast.py`` and ``bisect.py`` first on
    ``sys.path`` (each exits if imported): the standard library's modules, the program's
    ``enum`` put back; ``ast`` and ``bisect`` taken out of ``sys.modules`` (the program's would
    be imported in their place: wave 15, review14d P1), so ``import bisect`` runs the program's."""
    for name in ("ast", "bisect"):
        (tmp_path / f"{name}.py").write_text(f"raise SystemExit('user {name}')\n")
    (tmp_path / "enum.py").write_text("MINE = 1\n")
    r = subprocess.run([sys.executable, "-c", SHADOWED_LOAD, str(tmp_path)], capture_output=True, text=True,
                       env=ENV, timeout=TIMEOUT)
    assert (r.returncode, r.stderr.strip()) == (1, "user bisect")
    assert r.stdout.split() == ["True", "True", "enum", "False", "False"]
