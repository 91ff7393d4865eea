"""Functions numba compiles from their bytecode are left as written, and the recording says so
(explore23 HIGH-3: recorded, numba read the probes and failed: "The re-raising of an exception is
not yet supported", "key already in dictionary")."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest

from wtutil import ENV, assert_same_counts, profiles, run_plain, run_recorded

from wholetrace.instrument.cfg import iter_functions
from wholetrace.instrument.compiled import compiled, outermost

PROGRAM = dedent('''\
    import numba
    from numba import njit as nj

    @numba.njit
    def total(n):
        t = 0
        for i in range(n):
            if i % 3:
                t += i
        return t

    def slow(x):
        while x > 10:
            x -= 3
        return x
    fast = nj(slow)

    def plain(x):
        return total(x) + 1 if x else 0

    print(total(10), fast(30), plain(5), plain(0))
''')


def _names(source: str) -> list[str]:
    tree = ast.parse(dedent(source))
    return [q for q, _why in outermost(iter_functions(tree), compiled(tree))]


def test_decorator_forms_found() -> None:
    """Every spelling of numba's compilers, with and without arguments, and the call form;
    the bodies nested in them are left out with them (listed once)."""
    got = _names('''
        import numba, numba as nb
        import numba.cuda
        from numba import jit, njit as fastjit, vectorize, guvectorize, cfunc, stencil, cuda
        from numba.experimental import jitclass
        @numba.njit
        def a(): pass
        @nb.jit(nopython=True)
        def b(): pass
        @fastjit(cache=True)
        def c():
            def inner(): pass
            return inner
        @jit
        def d(): pass
        @vectorize(["float64(float64)"])
        def e(x): pass
        @guvectorize(["void(f8[:], f8[:])"], "(n)->(n)")
        def f(x, y): pass
        @cfunc("int64(int64)")
        def g(x): pass
        @stencil
        def h(a): pass
        @cuda.jit
        def i(): pass
        @numba.cuda.jit()
        def j(): pass
        @jitclass([])
        class K:
            def m(self): pass
        def slow(): pass
        fast = numba.njit(slow)
        def kept(): pass
    ''')
    assert got == ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "K", "slow"]


def test_other_decorators_kept() -> None:
    """Names that are not numba's (another package's ``jit``, a local ``njit``) and numba's
    other decorators keep their functions instrumented."""
    assert _names('''
        from functools import cache as njit
        from jax import jit
        import numba
        @njit
        def a(): pass
        @jit
        def b(): pass
        @numba.other
        def c(): pass
        def d():
            def njit(f): return f
            @njit
            def e(): pass
    ''') == []
    assert _names('''
        def jit(f): return f
        @jit
        def a(): pass
    ''') == []


@pytest.fixture(scope="module")
def numba_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    tmp = tmp_path_factory.mktemp("nb")
    script = tmp / "nbprog.py"
    script.write_text(PROGRAM)
    return script, run_plain(script)


@pytest.mark.parametrize("mode", ["blocks", "count", "witness", "full", pytest.param("path", marks=pytest.mark.slow)])
def test_numba_program_recorded(numba_run: tuple[Path, subprocess.CompletedProcess], mode: str) -> None:
    """Output as plain (before: numba's UnsupportedBytecodeError or AssertionError, rc 1);
    ``total`` and ``slow`` are named in the summary and ``info``; the other code is recorded
    with block counts equal to blocks mode's (count mode: its own arrays)."""
    script, plain = numba_run
    out = script.parent / f"nb.{mode}.wt"
    got = run_recorded(script, out, mode=mode, quiet=False)
    assert (got.returncode, got.stdout) == (plain.returncode, plain.stdout), got.stderr[-800:]
    assert got.stderr.startswith("wholetrace: recorded") and ", 2 not instrumented (`wholetrace info` lists them)]" in got.stderr
    info = subprocess.run([sys.executable, "-m", "wholetrace.cli", "info", str(out)], capture_output=True,
                          text=True, env=ENV, timeout=300)
    assert f"not instrumented: {script}:total  (compiled by numba)" in info.stdout
    assert f"not instrumented: {script}:slow  (compiled by numba)" in info.stdout
    have = profiles(out)
    assert {q for _f, q, _l in have} == {"<module>", "plain"}
    if mode != "blocks":
        blocks = script.parent / "nb.blocks.wt"
        if not blocks.exists():
            run_recorded(script, blocks)
        assert_same_counts(profiles(blocks), have, mode)
