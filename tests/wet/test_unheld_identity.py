"""Objects full mode never holds (frames, tracebacks, built-in exceptions: ``runtime.values``
``_UNHELD``) keep their identity while they live: a slice through an attribute the program
wrote on a built-in exception still reaches the write (hand-written slices, as ``golden.py``'s;
the decoy statement stays out).  A serial per record lost that dependence."""

from __future__ import annotations

import textwrap
from pathlib import Path

from test_golden import record, slice_lines

EXCEPTION_ATTRIBUTE = textwrap.dedent('''\
    def f(i):
        try:
            raise ValueError(i)
        except ValueError as e:
            e.note = i * 2
            decoy = 5
            return e
    errs = [f(i) for i in range(3)]
    print(errs[1].note)
''')


def test_a_built_in_exception_keeps_its_identity(tmp_path: Path) -> None:
    lines, _out = slice_lines(record(tmp_path, EXCEPTION_ATTRIBUTE), "--output")
    assert 5 in lines and 6 not in lines, sorted(lines)


TUPLE_ITEMS = textwrap.dedent('''\
    import sys
    def f(i):
        try:
            raise KeyError(i)
        except KeyError:
            sys.exc_info()[1].note = i * 2
            decoy = 5
            return sys.exc_info()[1]
    def pair(i):
        decoy = 7
        return (sys._getframe(), i * 3)
    errs = [f(i) for i in range(3)]
    pairs = [pair(i) for i in range(3)]
    print(errs[1].note, pairs[1][1])
''')


def test_tuples_holding_frames_keep_their_identity(tmp_path: Path) -> None:
    """``sys.exc_info()`` and a tuple holding a frame are not held either (review20a HIGH-1):
    the write through the exception taken from the tuple, and the tuple's item, stay in the slice."""
    lines, _out = slice_lines(record(tmp_path, TUPLE_ITEMS), "--output")
    assert {6, 11}.issubset(lines) and not {7, 10} & lines, sorted(lines)
