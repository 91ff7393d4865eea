"""The settrace line oracle's selection rule on two shapes that fired a line it counted as one
statement (explore21 LOW-6): a multi-line ``def`` whose return annotation shares its line with the
body's ``...`` (the annotation runs with the ``def``), and a conditional expression whose true
branch holds an ``and``/``or`` (3.11 fires that line twice).

Oracle: explicit counters before each selected statement (``test_settrace_oracle._validate``)."""

from __future__ import annotations

from pathlib import Path

from oracles.settrace_lines import single_simple_statement_lines
from oracles.test_settrace_oracle import _validate, _write

SOURCE = """
from typing import overload
def f2(x):
    return x
@overload
def g(x: int
      ) -> int: ...
@overload
def g(x: str
      ) -> str: ...
def g(x):
    return x
def h(a, b, c, d):
    x = (a or b) if c else None
    y = (a and b) if c else d
    z = a if c else (b or d) if d else a
    w = f2((a or b) if c else d)
    v = ((a or b) if c else d, 1)
    u = (a or f2(b)) if c else d
    t = a if (b or c) else d
    return x, y, z, w, v, u, t
for args in [(None, 1, 1, None), (2, 1, 1, 3), (None, 1, None, 1), (None, None, 1, 1)]:
    g(1)
    h(*args)
print("done")
"""


def test_annotation_line_and_ifexp_boolop_are_left_out() -> None:
    lines = single_simple_statement_lines(SOURCE.lstrip("\n"))
    assert not lines & {6, 9}                          # ``) -> T: ...``
    assert not lines & {13, 14, 15, 16, 17, 18}        # an IfExp whose true branch holds a BoolOp
    assert {3, 11, 19, 20, 23} <= lines                # the test's BoolOp, returns, a call: kept


def test_rule_matches_explicit_counters(tmp_path: Path) -> None:
    p = _write(tmp_path, "shapes.py", SOURCE)
    assert _validate(p, {str(p)}) >= 5
