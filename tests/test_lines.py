"""``lines.source_lines`` splits where the compiler numbers lines: against ``io`` with
``newline=''`` (which ends lines at \\n, \\r\\n and \\r only) and against the compiler's own
line numbers on a program with a form feed and other characters ``str.splitlines`` splits at."""

from __future__ import annotations

import ast
import io

from hypothesis import given
from hypothesis import strategies as st

from wholetrace.lines import source_lines, without_end

TEXT = st.lists(st.sampled_from(["a", " ", "\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x85", "\u2028"]),
                max_size=40).map("".join)


@given(TEXT)
def test_lines_equal_io_newline_none(text: str) -> None:
    kept = source_lines(text, keepends=True)
    assert kept == io.StringIO(text, newline="").readlines()
    assert "".join(kept) == text
    assert [without_end(line) for line in kept] == source_lines(text)


def test_line_numbers_are_the_compilers() -> None:
    src = "x = 1\n\x0c\ny = 2\r\nz = '\x85\u2028'\rw = 3  \x0c\n"
    names = {n.id: n.lineno for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Name)}
    lines = source_lines(src)
    assert names == {"x": 1, "y": 3, "z": 4, "w": 5}
    for name, lineno in names.items():
        assert lines[lineno - 1].startswith(f"{name} = ")
