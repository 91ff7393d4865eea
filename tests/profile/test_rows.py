"""`profile.rows` (every function's lines and branches as columns) against the per-profile
reference of `profile.model` (`line_counts`, `branch_counts` over a profile per function, the
never-run ones parsed from their CFGs), on stdlib code recorded in every counting mode."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from wholetrace.profile import counted, every_profile
from wholetrace.profile.model import branch_counts, line_counts
from wholetrace.render.counts import report_json, write_json
from wholetrace.trace.session import Trace
from wtutil import run_recorded

PROG = textwrap.dedent('''\
    import json, textwrap, difflib, csv, io

    print(json.dumps({"a": [1, 2.5, None]}), textwrap.fill("some words " * 8, 20))
    print(list(difflib.unified_diff(["a", "b", "c"], ["a", "c", "d"])))
    print(list(csv.reader(io.StringIO("a,b\\n1,2\\n"))))
''')


@pytest.mark.parametrize("mode", ["count", "blocks", "witness", "count-naive"])
def test_rows_equal_the_per_profile_reference(mode: str, tmp_path: Path) -> None:
    script = tmp_path / "prog.py"
    script.write_text(PROG)
    out = tmp_path / "prog.wt"
    r = run_recorded(script, out, mode=mode, include=("json", "textwrap", "difflib", "csv"))
    assert r.returncode == 0, r.stderr
    with Trace.open(out) as trace:
        entries = counted(trace)
        doc = report_json(entries)
        assert write_json(entries) == json.dumps(doc, indent=1) + "\n"    # the text, by the standard library
        every = every_profile(entries)
    lines = {f: {str(ln): c for ln, c in per.items()} for f, per in sorted(line_counts(every).items())}
    branches = {f: {str(ln): d for ln, d in per.items()} for f, per in sorted(branch_counts(every).items())}
    assert doc["lines"] == lines and list(doc["lines"]) == list(lines)
    assert doc["branches"] == branches and list(doc["branches"]) == list(branches)
    assert sum(len(v) for v in lines.values()) > 500 and any(c > 0 for v in lines.values() for c in v.values())
