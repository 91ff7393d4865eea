"""Record's start-up, wave 17 (docs/design.md, "Record's start-up, wave 17"): ``array`` and
``_sqlite3`` are loaded without the ``collections`` / ``functools`` their initialisation imports
(``store/cmods.py``), and taken out of ``sys.modules`` before the program's first line.

Oracles: the plain ``python`` run of the same program (stdout, stderr, exit status) and
``functools.lru_cache`` for the stand-in's ``lru_cache``.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

import pytest

from wtutil import ENV, run_plain

CONSOLE = "import sys\nfrom wholetrace.cli import main\nsys.exit(main())"

PROGRAM = '''
import sys
NAMES = ("collections", "collections.abc", "functools", "keyword", "operator", "reprlib", "array", "_sqlite3")
print(sorted(m for m in NAMES if m in sys.modules))
import sqlite3
print(sorted(m for m in NAMES if m in sys.modules))
import array, collections.abc
print(sorted(m for m in NAMES if m in sys.modules))
print(isinstance(array.array("i"), collections.abc.MutableSequence), issubclass(array.array, collections.abc.MutableSequence),
      array.array.__module__, array.array("q", [1, 2]).tolist())
c = sqlite3.connect(":memory:", cached_statements=4)
print([c.execute(f"select {i % 7}").fetchone()[0] for i in range(40)])
c.execute("create table t (a)")
c.executemany("insert into t values (?)", [(i,) for i in range(10)])
print(c.execute("select sum(a) from t").fetchone(), type(c) is sqlite3.Connection, sqlite3.Connection.__module__)
try:
    c.execute("select nope from t")
except sqlite3.OperationalError as exc:
    print(type(exc).__module__, exc)
'''


def _record(tmp_path, script, mode, *options):
    return subprocess.run([sys.executable, "-c", CONSOLE, "record", "--mode", mode, "-q", *options,
                           "-o", str(tmp_path / f"{mode}.wt"), str(script)], capture_output=True, text=True,
                          cwd=tmp_path, env={**ENV, "WHOLETRACE_CACHE_DIR": str(tmp_path / "cache")},
                          timeout=300, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("mode,options", [("blocks", ()), ("witness", ()), ("path", ()), ("count", ()),
                                          ("path", ("--wpp",))])
def test_array_and_sqlite3_tell_the_program_what_plain_python_tells_it(tmp_path, mode, options):
    """Warm: the program's first line sees none of ``collections``, ``functools``, ``array``,
    ``_sqlite3``; its ``import sqlite3`` brings ``functools`` and ``collections.abc``, its
    ``import array`` an array type registered as a ``MutableSequence``; the statement cache
    (more statements than its size) and the errors behave: all as in the plain run.  Cold (the
    miss path imports ``ast``, ``enum``: their modules are there from the first line, as since
    wave 13): the same from the fourth line on.  On main the first two lines differed (the
    program saw ``_sqlite3``, ``array``, ``collections``, ``functools`` from its first line, and
    its ``import sqlite3`` imported nothing)."""
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    plain = run_plain(script)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.splitlines()[0] == "[]"
    cold = _record(tmp_path, script, mode, *options)
    assert (cold.returncode, cold.stderr) == (0, ""), cold.stderr
    assert cold.stdout.splitlines()[3:] == plain.stdout.splitlines()[3:]
    warm = _record(tmp_path, script, mode, *options)
    assert (warm.returncode, warm.stdout, warm.stderr) == (plain.returncode, plain.stdout, plain.stderr)


def test_the_modules_load_without_collections_or_functools():
    """In a fresh interpreter (``-S``: nothing loaded beforehand), ``store.cmods`` loads
    ``array`` and ``_sqlite3`` and leaves no ``collections``, ``functools`` (stand-ins
    included) in ``sys.modules``; a later real ``collections.abc`` knows the array type as a
    ``MutableSequence`` (the registration plain python makes); ``hide`` takes both modules out."""
    import wholetrace

    src = str(Path(wholetrace.__file__).resolve().parents[1])   # (-S: no .pth of the editable install)
    code = (f"import sys\nsys.path.insert(0, {src!r})\n"
            "from wholetrace.store import cmods\n"
            "names = ('collections', 'collections.abc', 'functools', 'keyword', 'operator', 'reprlib')\n"
            "print(sorted(m for m in names if m in sys.modules), 'array' in sys.modules, '_sqlite3' in sys.modules)\n"
            "conn = cmods.sqlite3.connect(':memory:')\n"
            "print(conn.execute('select 6 * 7').fetchone())\n"
            "cmods.hide()\n"
            "print('array' in sys.modules, '_sqlite3' in sys.modules)\n"
            "import collections.abc, array\n"
            "print(issubclass(cmods.array.array, collections.abc.MutableSequence), array is not cmods.array,\n"
            "      issubclass(array.array, collections.abc.MutableSequence))\n")
    run = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, env=ENV, timeout=120,
                         stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["[] True True", "(42,)", "False False", "True True True"]


@pytest.mark.parametrize("maxsize", [0, 1, 3, 128, None, -5])
def test_the_stand_in_lru_cache_caches_as_functools_does(maxsize):
    """``cmods.lru_cache(maxsize)(f)``, as ``_sqlite3`` calls it: the same results, hits,
    misses and current size as ``functools.lru_cache(maxsize)(f)`` on one call sequence."""
    from wholetrace.store.cmods import lru_cache

    calls: list[list[object]] = [[], []]

    def make(log):
        def f(x):
            log.append(x)
            return x * 2
        return f

    ours = lru_cache(maxsize)(make(calls[0]))
    theirs = functools.lru_cache(maxsize)(make(calls[1]))
    keys = [1, 2, 1, 3, 4, 1, 2, 5, 5, 1, "a", "a", 2.0, 2]
    assert [ours(k) for k in keys] == [theirs(k) for k in keys]
    assert calls[0] == calls[1]
    assert tuple(ours.cache_info()) == tuple(theirs.cache_info())
    ours.cache_clear()
    theirs.cache_clear()
    assert tuple(ours.cache_info()) == tuple(theirs.cache_info())
