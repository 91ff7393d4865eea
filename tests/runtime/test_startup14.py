"""Record's fixed cost, wave 14 (docs/design.md): what the console script's start-up no longer
imports (``runpy``, ``contextlib``, the ``importlib`` package, ``warnings``, ``opcode``), the
garbage collector held during start-up, and the opcodes ``instrument.bytecode`` knows by version.

Oracles: the plain run (what the program sees), ``opcode.opmap`` of the running Python, and the
order of the program's and the runner's own output.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from wtutil import ENV, run_plain

#: What ``wholetrace`` (the console script pip writes: ``from wholetrace.cli import main``) runs.
CONSOLE = "import sys\nfrom wholetrace.cli import main\nsys.exit(main())"
#: Modules record's start-up imported before wave 14 (``python -m`` itself brings the first three).
#: (3.13's ``threading`` imports ``warnings``: since wave 15 record's start-up imports no ``threading``.)
GONE = ("runpy", "importlib.util", "contextlib", "importlib", "importlib.machinery", "opcode", "_opcode", "warnings")

SEES = f'''
import gc, sys
print(sorted(m for m in {GONE!r} if m in sys.modules), gc.isenabled())
import helper_mod
print(helper_mod.f(7))
'''
HELPER = '''
def f(n):
    return sum(i for i in range(n) if i % 2)
'''


def _record(tmp_path, script, mode, *options, console=True, cwd=None):
    entry = ["-c", CONSOLE] if console else ["-m", "wholetrace"]
    return subprocess.run([sys.executable, *entry, "record", "--mode", mode, "-q", *options,
                           "-o", str(tmp_path / f"{mode}.wt"), str(script)], capture_output=True, text=True,
                          cwd=cwd or tmp_path, env={**ENV, "WHOLETRACE_CACHE_DIR": str(tmp_path / "cache")},
                          timeout=300)


@pytest.mark.parametrize("mode", ["count", "blocks", "witness", "path"])
def test_the_console_script_start_up_imports_none_of_them(tmp_path, mode):
    """Warm cache (the second recording): the program's first line sees none of ``GONE``, as in
    the plain run, and the collector is on.  Fails on wave 13 (runpy, contextlib, importlib,
    warnings and opcode were imported by every recording)."""
    (tmp_path / "helper_mod.py").write_text(HELPER)
    script = tmp_path / "sees.py"
    script.write_text(SEES)
    plain = run_plain(script)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.splitlines()[0] == "[] True"
    for _cold_then_warm in range(2):
        run = _record(tmp_path, script, mode)
        assert run.returncode == 0, run.stderr
    assert run.stdout == plain.stdout


def test_python_m_wholetrace_still_records(tmp_path):
    """``python -m wholetrace`` (runpy is the interpreter's there) records as before."""
    (tmp_path / "helper_mod.py").write_text(HELPER)
    script = tmp_path / "sees.py"
    script.write_text(SEES)
    run = _record(tmp_path, script, "blocks", console=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[1] == run_plain(script).stdout.splitlines()[1]


MODULE_MAIN = '''
import sys
print(__name__, sys.argv[0].endswith("mainmod.py"), sys._getframe(1).f_code.co_name)
raise ValueError("from the module")
'''


def test_a_module_target_imports_runpy_and_trims_its_frame(tmp_path):
    """``record -m``: the traceback of an uncaught exception is plain ``python -m``'s (the
    runpy frame the runner stands in for is trimmed as before; runpy is imported only here)."""
    (tmp_path / "mainmod.py").write_text(MODULE_MAIN)
    plain = subprocess.run([sys.executable, "-m", "mainmod"], capture_output=True, text=True, cwd=tmp_path,
                           env=ENV, timeout=300)
    run = subprocess.run([sys.executable, "-c", CONSOLE, "record", "-q", "-o", str(tmp_path / "m.wt"), "-m", "mainmod"],
                         capture_output=True, text=True, cwd=tmp_path,
                         env={**ENV, "WHOLETRACE_CACHE_DIR": str(tmp_path / "cache")}, timeout=300)
    assert run.returncode == plain.returncode == 1
    assert run.stdout == plain.stdout
    assert run.stderr == plain.stderr


GC_OFF = '''
import gc
gc.disable()
class Late:
    def __del__(self):
        print("at exit, collector on:", gc.isenabled())
late = Late()
print("program ran")
'''


@pytest.mark.parametrize("mode", ["blocks", "path"])
def test_a_program_that_turns_the_collector_off_keeps_it_off(tmp_path, mode):
    """The collector is turned back on once, before the program; the program's own
    ``gc.disable()`` holds to the end (its finaliser sees it, as in the plain run)."""
    script = tmp_path / "gcoff.py"
    script.write_text(GC_OFF)
    plain = run_plain(script)
    run = _record(tmp_path, script, mode)
    assert run.returncode == 0, run.stderr
    assert run.stdout == plain.stdout
    assert "collector on: False" in plain.stdout


def test_before_program_runs_once_just_before_the_first_line(tmp_path):
    """``runner.record(before_program=...)``: called once, after the recording started and
    before the program's first line (the runtime's ``run_record`` turns the collector on there)."""
    script = tmp_path / "first.py"
    script.write_text("import builtins\nbuiltins.WT_SEEN.append('program')\n")
    code = f'''
import builtins, gc, sys
from wholetrace.runtime import runner
from wholetrace.store.writer import RecordingWriter
seen = builtins.WT_SEEN = []
def before():
    seen.append(("before", runner.LIVE is not None))
runner.record(runner.Target(script={str(script)!r}), RecordingWriter({str(tmp_path / "f.wt")!r}), cache=False,
              before_program=before)
print(seen)
'''
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=ENV,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[('before', True), 'program']"


def test_hold_collections_resumes_once_and_only_if_it_was_on():
    import gc

    from wholetrace.runtime.cli import _hold_collections

    was = gc.isenabled()
    try:
        gc.enable()
        resume = _hold_collections()
        assert not gc.isenabled()
        resume()
        assert gc.isenabled()
        gc.disable()          # the program turned it off: a second call leaves it off
        resume()
        assert not gc.isenabled()
        resume = _hold_collections()   # off already: resuming leaves it off
        resume()
        assert not gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


def test_the_opcodes_by_version_are_opcode_opmap():
    import opcode

    from wholetrace.instrument import bytecode

    known = bytecode.OPCODES.get(sys.version_info[:2])
    if known is None:   # pragma: no cover - another version: bytecode reads opcode itself
        pytest.skip("no table for this version")
    assert known == {n: opcode.opmap[n] for n in bytecode.OPCODE_NAMES if n in opcode.opmap}
    assert bytecode._OP == known


def test_importing_the_record_path_loads_none_of_them():
    """In a fresh interpreter, importing what record's start-up imports loads none of ``GONE``."""
    code = ("import sys\nimport wholetrace.cli, wholetrace.runtime.cli, wholetrace.runtime.runner, "
            "wholetrace.runtime.children, wholetrace.store.writer, wholetrace.wpp.cli\n"
            f"print(sorted(m for m in {GONE!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def _walked(folder):
    import os

    return sorted(os.path.join(d, f) for d, _dirs, files in os.walk(folder) for f in files if f.endswith(".py"))


def test_py_files_finds_what_os_walk_finds(tmp_path):
    """``instrument.cache._py_files`` (the digest's file list) against ``os.walk``: nested
    packages, a directory named like a module, symlinks to a file and to a directory, and a
    ``__pycache__`` (byte code only) it does not walk."""
    import os

    from wholetrace.instrument import cache

    (tmp_path / "pkg" / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "pkg" / "__pycache__").mkdir()
    (tmp_path / "odd.py").mkdir()
    for rel in ("a.py", "b.txt", "pkg/__init__.py", "pkg/sub/c.py", "pkg/sub/deeper/d.py", "odd.py/e.py",
                "pkg/__pycache__/c.cpython-311.pyc"):
        (tmp_path / rel).write_text("x = 1\n")
    os.symlink(tmp_path / "a.py", tmp_path / "link.py")
    os.symlink(tmp_path / "pkg", tmp_path / "dirlink.py")
    assert sorted(cache._py_files(str(tmp_path))) == _walked(str(tmp_path))
    assert cache.digested_files()[-1].endswith("registry.py")
    root = os.path.dirname(os.path.dirname(os.path.realpath(cache.__file__)))
    assert [f for f in cache.digested_files() if "/instrument/" in f] == _walked(os.path.join(root, "instrument"))


SHADOWED = '''
import threading, time
def spin():
    while True:
        time.sleep(0.01)
threading.Thread(target=spin, daemon=True).start()
print("done")
'''


@pytest.mark.parametrize("shadow", ["opcode", "dis"])
def test_a_program_module_named_opcode_or_dis_is_not_what_the_stop_reads(tmp_path, shadow):
    """A daemon thread open at the end makes ``runtime.unfinished`` read its frames'
    instructions with ``dis``, after the program, with ``sys.path[0]`` still the program's
    directory.  ``opcode`` is no longer imported at start-up: ``dis`` (and ``opcode``) come from
    the standard library (``misspath.stdlib_import``), not the program's ``opcode.py``; warm
    cache (a cold one loads the miss path, which loads ``opcode`` from the standard library).
    ``dis``: the same on main (6fd9614), where a program's ``dis.py`` broke the stop too.
    Run from another directory: ``-c`` puts the current one first on ``sys.path`` for
    record's own start-up imports (as ``python -m`` would; the console script puts its own)."""
    (tmp_path / "prog").mkdir()
    (tmp_path / "prog" / f"{shadow}.py").write_text(f"print('SHADOW {shadow}')\nopmap = {{}}\n")
    script = tmp_path / "prog" / "prog.py"
    script.write_text(SHADOWED)
    plain = run_plain(script)
    assert plain.stdout == "done\n"
    for _cold_then_warm in range(2):
        run = _record(tmp_path, script, "blocks")
        assert run.returncode == 0, run.stderr
        assert run.stdout == plain.stdout


# Modules no longer pre-imported are looked up while the program's directory (or, under -m,
# the current one) is first on sys.path (review14d, findings 1-3).  Oracle: the plain run.

def _console(tmp_path, *args, cwd):
    """``wholetrace record ...`` as users start it: the console script next to ``python``
    (its own directory first on ``sys.path``), else the same two lines through ``-c``."""
    from pathlib import Path

    script = Path(sys.executable).with_name("wholetrace")
    entry = [str(script)] if script.exists() else [sys.executable, "-c", CONSOLE]
    return subprocess.run([*entry, "record", "-q", "-o", str(tmp_path / "r.wt"), *args], capture_output=True,
                          text=True, cwd=cwd, env={**ENV, "WHOLETRACE_CACHE_DIR": str(tmp_path / "cache")},
                          timeout=300)


def _same(run, plain):
    assert (run.returncode, run.stdout, run.stderr) == (plain.returncode, plain.stdout, plain.stderr)


#: 3.13's ``threading`` imports ``warnings``: until wave 15 record's start-up imported ``threading``,
#: so these cases were skipped on 3.13; now no version preloads ``warnings``.
WARNINGS_PRELOADED = False


@pytest.mark.skipif(WARNINGS_PRELOADED, reason="3.13: threading loads the stdlib warnings at start-up")
def test_a_program_warnings_py_beside_the_script_warm_and_after_an_edit(tmp_path):
    """A ``warnings.py`` in the script's directory: the second recording (warm cache) and one
    after editing it (a miss while the program's ``warnings`` is being imported) give the plain
    result.  So does the cold first run since wave 15 (review14d P1: the miss path left the
    standard library's ``warnings`` in ``sys.modules``).  Failed on 785e1a8: the
    instrumenter imported ``warnings`` lazily and got the program's, partly initialised."""
    prog = tmp_path / "prog"
    prog.mkdir()
    (prog / "warnings.py").write_text("X = 1\n")
    script = prog / "main.py"
    script.write_text('import warnings\nprint("X =", warnings.X)\n')
    run = _console(tmp_path, str(script), cwd=tmp_path)
    _same(run, run_plain(script))   # the cold run (review14d P1, wave 15)
    _same(_console(tmp_path, str(script), cwd=tmp_path), run_plain(script))
    (prog / "warnings.py").write_text("X = 2\n")
    _same(_console(tmp_path, str(script), cwd=tmp_path), run_plain(script))


def _mpkg(tmp_path, shadow, body):
    (tmp_path / "mpkg").mkdir()
    (tmp_path / "mpkg" / "__init__.py").write_text("")
    (tmp_path / "mpkg" / "__main__.py").write_text(
        f"import os, sys\nnames = {('dis', 'opcode') + (() if WARNINGS_PRELOADED else ('warnings',))!r}\n"
        "print('ours', [m for m in names\n"
        "               if os.path.dirname(getattr(sys.modules.get(m), '__file__', '')) == os.getcwd()])\n"
        "print('loaded', [m for m in names if m in sys.modules])\n")
    (tmp_path / f"{shadow}.py").write_text(body)
    return subprocess.run([sys.executable, "-m", "mpkg"], capture_output=True, text=True, cwd=tmp_path, env=ENV,
                          timeout=300)


@pytest.mark.parametrize("shadow,body", [pytest.param("warnings", "print('SHADOW warnings')\n",
                                                      marks=pytest.mark.skipif(WARNINGS_PRELOADED, reason="3.13")),
                                         ("opcode", "print('SHADOW opcode')\n"),
                                         ("dis", "print('SHADOW dis')\n")])
def test_record_m_from_a_directory_holding_a_stdlib_name(tmp_path, shadow, body):
    """``record -m mpkg`` from a directory holding ``warnings.py``, ``opcode.py`` or
    ``dis.py``, cold then warm: the output plain ``python -m mpkg`` gives (runpy's imports see
    the current directory, as plain; the program's ``opcode``/``dis`` are not imported, and warm,
    neither is in ``sys.modules``).  Failed on
    785e1a8: ``warnings`` (cold) crashed the instrumenter, ``opcode`` broke the runner's
    ``import dis``; ``dis`` broke it on main too."""
    plain = _mpkg(tmp_path, shadow, body)
    assert plain.returncode == 0, plain.stderr
    cold = _console(tmp_path, "-m", "mpkg", cwd=tmp_path)
    # cold: all but the last line, the modules loaded: the miss path leaves the standard library's
    # ``opcode`` there unless the cwd shadows it (then taken out since wave 15: review14d P1)
    assert (cold.returncode, cold.stderr, cold.stdout.splitlines()[:-1]) == (0, "", plain.stdout.splitlines()[:-1])
    _same(_console(tmp_path, "-m", "mpkg", cwd=tmp_path), plain)   # warm: all of it


def test_a_program_runpy_py_does_not_replace_the_frozen_runpy(tmp_path):
    """``import runpy`` in a program whose directory holds a ``runpy.py`` gets the frozen
    standard library module, as plain (``FrozenImporter`` comes before ``sys.path``), cold and
    warm.  Failed on 785e1a8: the instrumenting finder, ahead of ``FrozenImporter``, took the
    program's ``runpy.py``."""
    prog = tmp_path / "prog"
    prog.mkdir()
    (prog / "runpy.py").write_text("VALUE = 1\n")
    script = prog / "m.py"
    script.write_text("import runpy\nprint(hasattr(runpy, 'VALUE'), hasattr(runpy, 'run_path'))\n")
    plain = run_plain(script)
    assert plain.stdout == "False True\n", plain.stderr
    for _cold_then_warm in range(2):
        _same(_console(tmp_path, str(script), cwd=tmp_path), plain)


def test_a_cache_miss_inside_catch_warnings_error_still_instruments(tmp_path):
    """A module first imported (a code-cache miss) inside ``catch_warnings()`` with
    ``simplefilter("error")``: the placeholders' SyntaxWarnings are still quieted (the filter
    goes into the list ``catch_warnings`` installed, as the compiler reads it), so the module is
    instrumented and nothing is written to stderr, as plain.  Passes on 785e1a8 and main; failed
    with review14d's patch (it used ``_warnings.filters`` only: "left uninstrumented")."""
    prog = tmp_path / "prog"
    prog.mkdir()
    (prog / "helper.py").write_text(HELPER)
    script = prog / "main.py"
    script.write_text('import warnings\nwith warnings.catch_warnings():\n    warnings.simplefilter("error")\n'
                      '    import helper\nprint(helper.f(5))\n')
    _same(_console(tmp_path, str(script), cwd=tmp_path), run_plain(script))


def test_a_module_target_runs_cwd_modules_runpy_imports_with_the_collector_as_plain(tmp_path):
    """``record -m mpkg`` from a directory holding ``contextlib.py`` (3.11's ``importlib.util``,
    which runpy imports, imports it from the current directory, as plain ``python -m`` does): that
    module runs with the collector on, as plain (review14d LOW 7: start-up's hold on collections
    was lifted only after runpy's imports; failed before the fix on 3.11; on 3.12+ runpy does not
    import contextlib and both print only the package's line)."""
    (tmp_path / "mpkg").mkdir()
    (tmp_path / "mpkg" / "__init__.py").write_text("")
    (tmp_path / "mpkg" / "__main__.py").write_text("print('main')\n")
    (tmp_path / "contextlib.py").write_text(
        "import gc\nprint('SHADOW contextlib, collector on:', gc.isenabled())\n"
        "def contextmanager(f):\n    return f\n")
    plain = subprocess.run([sys.executable, "-m", "mpkg"], capture_output=True, text=True, cwd=tmp_path, env=ENV,
                           timeout=300)
    assert plain.returncode == 0, plain.stderr
    for _cold_then_warm in range(2):
        _same(_console(tmp_path, "-m", "mpkg", cwd=tmp_path), plain)
