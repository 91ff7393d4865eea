"""``record`` with a relative ``-o`` when the program changes directory: the end's work (``--cf-grammar``'s
compression, the summary's size) finds the recording where it was opened, not in the program's last cwd."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from wtutil import run_plain, run_recorded

PROGRAM = "import os\nos.makedirs('elsewhere', exist_ok=True)\nos.chdir('elsewhere')\nprint(sum(i * i for i in range(100)))\n"


def test_relative_output_survives_the_programs_chdir(tmp_path: Path) -> None:
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    plain = run_plain(script)
    (tmp_path / "elsewhere").rmdir()
    res = run_recorded(script, Path("r.wt"), quiet=False, options=("--cf-grammar",))
    assert res.returncode == 0, res.stderr
    assert res.stdout == plain.stdout
    out = tmp_path / "r.wt"
    assert not (tmp_path / "elsewhere" / "r.wt").exists()
    with sqlite3.connect(out) as db:    # the compressed control-flow trace was added (main: report.facts only)
        names = {name for (name,) in db.execute("SELECT name FROM arrays")}
    assert "match.grammar.rhs" in names, sorted(names)
    size = int(re.search(r"events \(blocks\), ([\d,]+) bytes", res.stderr).group(1).replace(",", ""))
    assert size == out.stat().st_size > 0
