"""Which functions are left to numba: only a function passed to a compiler in the scope that
defines it, or decorated by a compiler or an alias of one (review24a HIGH-3: any function of the
same name as a compiler's argument anywhere was left out, ``def maybe_jit(f): return njit(f)``
dropped every ``f``; MED-2: ``functools.partial(njit, ...)`` was not recognised)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest

from wtutil import ENV, profiles, run_plain, run_recorded

from wholetrace.instrument.cfg import iter_functions
from wholetrace.instrument.compiled import compiled, outermost


def _names(source: str) -> list[str]:
    tree = ast.parse(dedent(source))
    return [q for q, _why in outermost(iter_functions(tree), compiled(tree))]


def test_parameter_passed_to_compiler_keeps_namesakes() -> None:
    assert _names('''
        import numba
        def maybe_jit(f):
            return numba.njit(f)
        def f(n):
            return n
        class Shape:
            def f(self):
                return 42
        def user():
            h = 3
            return numba.njit(h)
        def h(): pass
        def other():
            def slow(): pass
        def slow(): pass
        fast = [numba.njit(slow) for slow in ()]
    ''') == []


def test_same_scope_bindings_found() -> None:
    assert _names('''
        import numba
        from numba import njit
        def slow(x): pass
        fast = njit(slow)
        def data(): pass
        fast(data)
        class C:
            def g(self): pass
            g = njit(g)
            def f(self): pass
        def outer():
            def inner(): pass
            return numba.njit(inner)
        def twice(): pass
        twice = numba.njit(cache=True)(twice)
    ''') == ["slow", "C.g", "outer.<locals>.inner", "twice"]


def test_compiler_aliases_found() -> None:
    assert _names('''
        import functools
        from functools import partial
        import numba
        from numba import njit
        fastjit = functools.partial(njit, cache=True)
        pj = partial(numba.jit, nopython=True)
        dj = numba.njit(cache=True)
        deco = numba.njit
        d2 = deco
        sj = njit("f8(f8)")
        @fastjit
        def a(): pass
        @pj
        def b(): pass
        @dj
        def c(): pass
        @d2
        def d(): pass
        @sj
        def e(x): pass
        @functools.partial(njit, cache=True)
        def f(): pass
        def kept(): pass
    ''') == ["a", "b", "c", "d", "e", "f"]


PROGRAM = dedent('''\
    import functools
    import numba
    from numba import njit

    def maybe_jit(f):
        return numba.njit(f)

    fastjit = functools.partial(njit, cache=False)

    @fastjit
    def a(n):
        t = 0
        for i in range(n):
            if i % 3:
                t += i
        return t

    def f(n):
        return n % 4 if n % 2 else 0

    class Shape:
        def f(self):
            return 42

    print(a(10), sum(f(i) for i in range(50)), Shape().f(), maybe_jit.__name__)
''')


@pytest.mark.parametrize("mode", ["blocks", "count"])
def test_numba_program_with_wrappers(tmp_path: Path, mode: str) -> None:
    """Output as plain (before: numba's UnsupportedBytecodeError on the probes of ``a``, rc 1);
    ``f`` and ``Shape.f`` are recorded (before: left out as "compiled by numba").  (A function
    given to numba only through a parameter, ``maybe_jit(g)``, stays instrumented: numba then
    fails on its probes as before this check existed; README's Known limits.)"""
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    plain = run_plain(script)
    assert plain.returncode == 0, plain.stderr
    out = tmp_path / "p.wt"
    got = run_recorded(script, out, mode=mode, quiet=False)
    assert (got.stdout, got.returncode) == (plain.stdout, 0), got.stderr[-800:]
    info = subprocess.run([sys.executable, "-m", "wholetrace.cli", "info", str(out)], capture_output=True,
                          text=True, env=ENV, timeout=300).stdout
    assert sorted(line for line in info.splitlines() if line.startswith("not instrumented:")) \
        == [f"not instrumented: {script}:a  (compiled by numba)"]
    have = {q: c for (_f, q, _l), c in profiles(out).items()}
    assert {"f", "Shape.f", "<module>"} <= set(have)


def test_reloaded_module_noted_once(tmp_path: Path) -> None:
    """review24a LOW-2: a module with a numba function reloaded twice was noted three times."""
    script = tmp_path / "prog.py"
    script.write_text("import importlib, nbmod\nimportlib.reload(nbmod)\nimportlib.reload(nbmod)\nprint(nbmod.s(5))\n")
    (tmp_path / "nbmod.py").write_text("import numba\n@numba.njit\ndef s(n):\n    t = 0\n"
                                       "    for i in range(n):\n        t += i\n    return t\n")
    got = run_recorded(script, tmp_path / "p.wt", quiet=False)
    assert got.stdout == "10\n" and got.returncode == 0, got.stderr[-800:]
    assert got.stderr.endswith(", 1 not instrumented (`wholetrace info` lists them)]\n"), got.stderr
