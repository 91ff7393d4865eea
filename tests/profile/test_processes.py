"""Counts summed over processes: two `python -c` children whose code differs but whose CFGs are alike stay apart."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from wholetrace.profile import counted
from wholetrace.profile.model import FunctionProfile
from wholetrace.trace.session import Trace
from wtutil import cli_in_process, run_plain, run_recorded

MAIN = textwrap.dedent('''\
    import subprocess, sys
    for k in (3, 5):
        code = f"n = 0\\nfor i in range({k}):\\n    n += i\\nprint(n)"
        subprocess.run([sys.executable, "-c", code], check=True)
''')


@pytest.mark.parametrize("mode", ["blocks", "count"])
def test_dash_c_children_with_other_code_of_one_shape_are_not_merged(mode: str, tmp_path: Path) -> None:
    """By hand: the first child's loop body runs 3 times, the second's 5 times; the two
    `<string>` modules have the same name, lines and CFG shape, and must stay two functions."""
    script = tmp_path / "main.py"
    script.write_text(MAIN)
    plain = run_plain(script)
    assert plain.stdout == "3\n10\n", plain.stderr
    out = tmp_path / "main.wt"
    res = run_recorded(script, out, mode=mode)
    assert (res.returncode, res.stdout) == (0, plain.stdout), res.stderr
    with Trace.open(out) as trace:
        mods = [p for p in counted(trace) if p.file == "<string>"]
    assert len(mods) == 2 and all(isinstance(p, FunctionProfile) for p in mods)
    body = sorted(int(p.stmts[next(i for i, ln in enumerate(p.shape.stmt_line.tolist()) if ln == 3)])
                  for p in mods if isinstance(p, FunctionProfile))
    assert body == [3, 5]
    rc, text, stderr = cli_in_process("counts", str(out))
    assert rc == 0, stderr
    assert sorted(ln.split("  calls")[0] for ln in text.splitlines() if "(<string>:" in ln) == [
        "== <module>  (<string>:1-4)"] * 2
