"""An ``except*`` handler whose body raises (review22d HIGH, review22b P-1, with22's star4): the
exception is taken by the ``except*``, the next handler runs, and the star-end re-raises it.
Each recording is compared with independent oracles: plain's stdout/stderr/status, blocks'
line counts with the settrace line tracer, count's statement and edge counts with blocks',
every mode's counts JSON with blocks', and witness/branches/path regenerating blocks."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cleanup_check import assert_count_is_blocks, counts_json, record_modes
from oracles.settrace_lines import line_counts
from regenutil import compare
from wtutil import compare_lines

_SHOW = '''
    import sys, traceback
    class C:
        def __init__(self, name, exit_bad=False):
            self.name, self.exit_bad = name, exit_bad
        def __enter__(self):
            print("enter", self.name)
        def __exit__(self, t, v, tb):
            print("exit", self.name, t and t.__name__)
            if self.exit_bad:
                raise ValueError("exit " + self.name)
    def show(fn, *args):
        try:
            print(fn(*args))
        except BaseException:
            traceback.print_exc(file=sys.stdout)
'''

PROGRAMS = {
    # review22d star_c.py: one arm raises a new exception, the next arm handles its part
    "new_raise": '''
        def star(k):
            try:
                raise ExceptionGroup("g", [ValueError(1), TypeError(2)])
            except* ValueError:
                raise KeyError(k)
            except* TypeError:
                print("te")
            return k
        for k in range(2):
            show(star, k)
    ''',
    # review22d star_a.py / star_b.py: the arm's with exit raises (one item, two items)
    "exit_raises": '''
        def star(k):
            try:
                raise ExceptionGroup("g", [ValueError(1), TypeError(2)])
            except* ValueError:
                with C("s4", exit_bad=True):
                    pass
            except* TypeError:
                print("te")
            return k
        def star2(k):
            try:
                raise ExceptionGroup("g", [ValueError(1), TypeError(2)])
            except* ValueError:
                with C("s3"), C("s4", exit_bad=k == 0):
                    pass
            except* TypeError:
                print("te")
            return k
        show(star, 0); show(star2, 0); show(star2, 1)
    ''',
    # review22b star_e.py: a member raised anew with no traceback, taken by an enclosing except*
    "nested_new_tb": '''
        def e():
            try:
                try:
                    raise ExceptionGroup("x", [ValueError(1), TypeError(2)])
                except* ValueError as eg:
                    raise eg.exceptions[0].with_traceback(None)
            except* ValueError:
                print("after-new-tb")
            except* TypeError:
                print("te")
        e(); e()
    ''',
    # with22 star4.py: a helper's bare raise re-raises the arm's group from another frame
    "helper_reraise": '''
        def helper():
            raise
        def f():
            try:
                try:
                    raise ExceptionGroup("g", [KeyError(1), ValueError(2)])
                except* KeyError:
                    helper()
                except* ValueError:
                    d = 2
            except* KeyError:
                c = 3
            return 1
        print(f())
    ''',
    # every arm raises (the star-end has no way in but exceptions), a part no arm takes, a loop
    "all_arms_raise": '''
        def f(k):
            try:
                raise ExceptionGroup("g", [ValueError(1), TypeError(2), OSError(3)][:k + 1])
            except* ValueError:
                raise KeyError("v")
            except* TypeError:
                raise LookupError("t")
            return k
        def loop():
            n = 0
            for k in range(3):
                try:
                    f(k)
                except* (KeyError, LookupError) as eg:
                    n += len(eg.exceptions)
                except* OSError:
                    n += 100
            return n
        for k in range(3):
            show(f, k)
        print(loop())
    ''',
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_except_star_handler_raising_every_mode(name: str, tmp_path: Path) -> None:
    script = tmp_path / f"{name}.py"
    script.write_text(textwrap.dedent(_SHOW) + textwrap.dedent(PROGRAMS[name]))
    wts = record_modes(script, ("blocks", "count", "witness", "branches", "path"), tmp_path)
    oracle = line_counts(script, [], {str(script)})
    assert compare_lines(wts["blocks"], {str(script)}, oracle) >= 6
    for mode in ("witness", "branches", "path"):
        compare(wts["blocks"], wts[mode], exact=True)
        assert counts_json(wts[mode]) == counts_json(wts["blocks"]), mode
    assert_count_is_blocks(wts, name)
