"""A program-class exception made beforehand, raised and caught in the deepest frame of a count
recording (review22b MED-1, wave 22): the handler probe reads the traceback with a checked call
there on 3.11 (``sys.exc_info``: a heap class is not known free of program code), which fails at
the recursion limit: the program sees one frame less and the recording is unreadable.  Strict
xfail on 3.11 (docs/design.md "Handler probes read the handled traceback once, wave 22")."""

from __future__ import annotations

import sys
from pathlib import Path
from textwrap import dedent

import pytest

from wtutil import cli_in_process, run_plain, run_recorded

DEEP = dedent('''\
    class Mine(Exception):
        pass
    M = Mine()
    caught = []
    def deep(n=0):
        try:
            return deep(n + 1)
        except RecursionError:
            pass
        try:
            raise M
        except Mine:
            caught.append(n)
            return n
    d = deep()
    print(len(caught), d == caught[0])
''')


@pytest.mark.compat
@pytest.mark.xfail(sys.version_info[:2] == (3, 11), strict=True,
                   reason="3.11 count modes: no checked call is possible in the deepest frame (review22b MED-1)")
@pytest.mark.parametrize("mode", ["count", "count-naive"])
def test_premade_program_exception_caught_in_the_deepest_frame(tmp_path: Path, mode: str) -> None:
    script = tmp_path / "deep.py"
    script.write_text(DEEP)
    plain = run_plain(script)
    got = run_recorded(script, tmp_path / "d.wt", mode=mode)
    assert (got.returncode, got.stdout, got.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    rc, _, err = cli_in_process("counts", str(tmp_path / "d.wt"))
    assert rc == 0, err
