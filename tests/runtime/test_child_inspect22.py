"""A Python subprocess with ``PYTHONINSPECT`` set ends in the interpreter's prompt after its
program: the audit-hook start (docs/design.md, "A recorded subprocess finalises as plain, wave
22") would make the prompt print the hook's ``SystemExit``; such a child runs unrecorded, with a
note, as ``-i`` does (review22f HIGH-1)."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from wtutil import run_plain, run_recorded

PARENT = dedent('''\
    import os, subprocess, sys
    for code in ("print('x')", "import sys; sys.exit(3)", "1/0"):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONINSPECT": "1"})
        print(r.returncode, repr(r.stdout), repr(r.stderr))
''')


@pytest.mark.parametrize("mode", ["blocks", "witness"])
def test_pythoninspect_child_ends_as_plain(tmp_path: Path, mode: str) -> None:
    parent = tmp_path / "parent.py"
    parent.write_text(PARENT)
    plain = run_plain(parent)
    got = run_recorded(parent, tmp_path / "p.wt", mode=mode)
    assert (got.returncode, got.stdout, got.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    notes = list((tmp_path / "p.wt.parts").glob("unrecorded-*.json"))
    assert len(notes) == 3 and all("PYTHONINSPECT" in n.read_text() for n in notes)
