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
GONE = ("runpy", "importlib.util", "contextlib", "importlib", "importlib.machinery", "warnings", "opcode", "_opcode")

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
