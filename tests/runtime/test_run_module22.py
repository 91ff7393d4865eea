"""``record -m MOD``: the main module is instrumented once (runpy's loader), its counts are the line oracle's (wave 22)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from oracles.settrace_lines import line_counts, single_simple_statement_lines
from wtutil import ENV, cli_in_process

MODULE = '''
    def f(x):
        y = x + 1
        return y
    total = 0
    for i in range(7):
        total += f(i)
    print(total)
'''


@pytest.mark.parametrize("mode", ("blocks", "count"))
def test_main_module_lines_are_the_oracles(tmp_path: Path, mode: str) -> None:
    """Before: runpy's ``get_code`` and the runner each instrumented the module, so the recording
    registered its functions twice; ``counts``' line view took the unused copy's zeros."""
    prog = tmp_path / "mainmod.py"
    prog.write_text(textwrap.dedent(MODULE))
    out = tmp_path / "x.wt"
    r = subprocess.run([sys.executable, "-m", "wholetrace.cli", "record", "-q", "--mode", mode, "-o", str(out),
                        "-m", "mainmod"], capture_output=True, text=True, cwd=tmp_path, env=ENV,
                       stdin=subprocess.DEVNULL, timeout=300)
    assert r.returncode == 0, r.stderr
    code, text, err = cli_in_process("counts", "--format", "json", str(out))
    assert code == 0, err
    counts = json.loads(text)
    file = str(prog.resolve())
    names = [(fn["name"], fn["firstline"]) for fn in counts["functions"] if fn["file"] == file]
    assert sorted(names) == sorted(set(names)) and names, names          # each function once
    oracle = line_counts(prog, [], {file})
    lines = counts["lines"][file]
    selected = sorted(single_simple_statement_lines(prog.read_text()))
    assert len(selected) >= 5
    for line in selected:
        assert lines.get(str(line)) == oracle.get((file, line), 0), line
