"""A bare ``raise`` in a function that did not catch what it re-raises (a helper called from a
caller's handler, a recursive call): the exception's traceback has no entry for the helper's
frame, so the head entry is the caller's and its offset means nothing in the helper's site
table.  Every mode names the ``raise`` as the statement that raised (blocks and full through
``wt.b``, witness modes through the bare-raise marker): the helper's lines before it all ran
(counts19's ``inner2.py``: blocks, witness, branches and path counted them 0)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cleanup_check import LONG_HELPER, assert_count_is_blocks, counts_json, record_modes
from oracles.settrace_lines import line_counts
from regenutil import compare
from wtutil import compare_lines

pytestmark = pytest.mark.compat

PROGRAMS = {
    "long_helper": LONG_HELPER,   # counts19's inner2.py (cleanup_check)
    # the raise in a later block; the re-raise caught in the helper, then a new exception
    # there (the mark is spent: the new one names its own statement); no exception to re-raise
    "branches_spent": '''
        def helper(n):
            a = n
            if n % 2:
                b = a + 1
                c = b * 2
                d = c + 3
                raise
            try:
                x = a * 2
                y = x + 1
                raise
            except KeyError:
                z = 1
            p = 2
            q = [n][5]
            r = 3
            return r
        def lone():
            a = 1
            b = 2
            raise
        def f(n):
            try:
                raise KeyError(n)
            except KeyError:
                try:
                    helper(n)
                except (KeyError, IndexError) as e:
                    print(n, type(e).__name__)
        for n in range(4):
            f(n)
        try:
            lone()
        except RuntimeError as e:
            print("lone", e)
        ''',
    # same-code recursion, a generator helper, and a with whose exit swallows the re-raise
    "recursive_gen_with": '''
        class Swallow:
            def __enter__(self): return self
            def __exit__(self, *a): return True
        def rec(k):
            try:
                if k:
                    raise ValueError(k)
                u = 1
                v = 2
                raise
            except ValueError:
                if k:
                    rec(k - 1)
                raise
        def gen(n):
            yield n
            a = n + 1
            b = a + 1
            c = [a, b]
            d = {a: b}
            e = (c, d, a + b)
            g = len(e) * a
            h = g - b + a
            i = [h] * 2
            raise
        def swallowed(n):
            a = 1
            with Swallow():
                b = 2
                c = [b, a]
                d = {b: c}
                e = (c, d, a + b)
                g = len(e) * a
                h = g - b + a
                raise
            d = 4
            raise
        def f():
            try:
                rec(2)
            except ValueError as e:
                print("rec", e.args)
            try:
                raise TypeError("t")
            except TypeError:
                try:
                    print(list(gen(1)))
                except TypeError as e:
                    print("gen", e.args)
                try:
                    swallowed(1)
                except TypeError as e:
                    print("swallowed", e.args)
        f()
        ''',
    # review21b MED, pre-existing (main fails the same way): an except* handler's bare raise and
    # a helper's bare raise of a group's part; count "violates flow conservation", witness modes
    # "activation forms differ" (design.md wave 21, with21 section)
    "star_reraise": '''
        def helper():
            a = 1
            raise
        def f():
            try:
                try:
                    raise ExceptionGroup("g", [KeyError(1), ValueError(2)])
                except* KeyError:
                    b = 2
                    raise
                except* ValueError:
                    helper()
            except* KeyError:
                c = 3
            except* ValueError:
                d = 4
            return 1
        print(f())
        ''',
}
OPEN: set[str] = set()   # star_reraise (except* + bare raise) passes every mode since wave 23/24 (integ24's clean clone: XPASS on 3.11-3.13)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason="except* + bare raise"))
                                  if n in OPEN else n for n in sorted(PROGRAMS)])
def test_bare_raise_in_helper_every_mode(name: str, tmp_path: Path) -> None:
    script = tmp_path / f"{name}.py"
    script.write_text(textwrap.dedent(PROGRAMS[name]))
    modes = ("blocks", "count", "witness", "branches", "path", "full")
    wts = record_modes(script, modes, tmp_path)
    oracle = line_counts(script, [], {str(script)})
    for mode in ("blocks", "full"):
        assert compare_lines(wts[mode], {str(script)}, oracle) >= 5, mode
    for mode in ("witness", "branches", "path"):
        compare(wts["blocks"], wts[mode], exact=True)
    for mode in ("witness", "branches", "path", "full"):
        assert counts_json(wts[mode]) == counts_json(wts["blocks"]), mode
    assert_count_is_blocks(wts, name)
