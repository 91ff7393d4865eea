"""`count` recordings read exactly what `blocks` (and a `sys.settrace` line tracer) see, on the
shapes review18c found wrong: ``finally`` dispatches and ``with`` exits with several site-less
out-edges (LOW-5), and a bare ``raise`` re-raising an exception a caller caught (MED-3b)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cleanup_check import LONG_HELPER, assert_count_is_blocks, record_modes
from cleanup_programs import program
from oracles.settrace_lines import line_counts
from regenutil import compare
from wtutil import compare_lines


# 1, 12, 27: a finally dispatch or with exit whose out-edges were all unknown (two or more), the
# reader solved only a block's out-side; 6, 25: two finally ends falling into one join and
# dispatching to one target, a cycle of site-less edges no placement measured; 32: the same with
# the fall-through a loop's back edge (all wrong before wave 19; seeds 2 and 11 are
# test_cleanup_routes' own)
@pytest.mark.parametrize("seed", [1, 6, 12, 25, 27, 32])
def test_cleanup_programs_count_equals_blocks(seed: int, tmp_path: Path) -> None:
    script = tmp_path / f"cleanup{seed}.py"
    script.write_text(program(seed))
    wts = record_modes(script, ("blocks", "count"), tmp_path)
    assert_count_is_blocks(wts, str(seed))


# MED-3b (review18c): a helper's bare ``raise`` re-raises the exception its caller's handler
# caught; the traceback has no entry for the helper's frame.  Count recordings were unreadable
# ("exception edge from statement -1 to block 1"), witness/branches did not regenerate blocks.
REHELPER = '''\
def inner():
    raise
def f():
    try:
        raise KeyError(1)
    except KeyError:
        try:
            inner()
        except KeyError as e:
            print("re-raised", e.args)
f()
'''


def test_helper_bare_raise_all_modes(tmp_path: Path) -> None:
    script = tmp_path / "rehelper.py"
    script.write_text(REHELPER)
    wts = record_modes(script, ("blocks", "count", "witness", "branches", "path"), tmp_path)
    for mode in ("witness", "branches", "path"):
        compare(wts["blocks"], wts[mode], exact=True)
    assert_count_is_blocks(wts, "count")


# The same with the helper longer than the code before the caller's raise: the caller's
# instruction offset, looked up in the helper's site table, named a statement of the helper
# (count took it as the exception's origin; lines after it counted 0).  Count against the
# line tracer (blocks mode took that statement too until wave 21: test_bare_raise_helper.py).


def test_long_helper_bare_raise_count_against_tracer(tmp_path: Path) -> None:
    script = tmp_path / "longhelper.py"
    script.write_text(LONG_HELPER)
    wts = record_modes(script, ("count",), tmp_path)
    oracle = line_counts(script, [], {str(script)})
    assert compare_lines(wts["count"], {str(script)}, oracle) >= 8
