"""A recorded Python subprocess runs its program inside wholetrace's audit hook (docs/design.md "A
recorded subprocess finalises as plain, wave 22"): the hook is called again at every audited call
of the program (``id()``, ``open``), and a program's tracer in the child must not see it
(coordinator, wave 22: the hook stayed traceable, so the tracer saw ``_at_run`` calls)."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from wtutil import run_plain, run_recorded

CHILD = dedent('''\
    import sys
    seen = []
    def tr(frame, event, arg):
        if event == "call":
            seen.append(frame.f_code.co_name)
        return None
    def work():
        return [id(i) for i in range(3)]
    sys.settrace(tr)
    work()
    open(__file__).close()
    sys.settrace(None)
    print(seen)
''')

PARENT = dedent('''\
    import os, subprocess, sys
    kid = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kid.py")
    r = subprocess.run([sys.executable, kid], capture_output=True, text=True)
    print(r.returncode, r.stdout.strip(), r.stderr.strip())
''')


@pytest.mark.parametrize("mode", ["blocks", "witness"])
def test_a_childs_tracer_sees_no_hook_call(tmp_path: Path, mode: str) -> None:
    (tmp_path / "kid.py").write_text(CHILD)
    parent = tmp_path / "parent.py"
    parent.write_text(PARENT)
    plain = run_plain(parent)
    assert "work" in plain.stdout
    got = run_recorded(parent, tmp_path / "p.wt", mode=mode)
    assert (got.returncode, got.stdout, got.stderr) == (plain.returncode, plain.stdout, plain.stderr)
