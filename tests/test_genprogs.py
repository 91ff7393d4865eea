"""Generated programs compile and run plain, deterministically, within the time limit."""

from __future__ import annotations

import tempfile

from hypothesis import HealthCheck, given, settings

from genprogs import acceptable, programs, run_plain, structured_programs

FEW = settings(max_examples=20, derandomize=True, deadline=None, database=None,
               suppress_health_check=list(HealthCheck))


def _check_result(rc: int, out: str, err: str) -> None:
    assert rc in (0, 1), (rc, out, err)
    raised = [ln for ln in out.splitlines() if ln.startswith("EXC ")]
    assert bool(raised) == (rc == 1), out


@FEW
@given(programs())
def test_hypothesmith_programs_run_plain(src):
    with tempfile.TemporaryDirectory(prefix="wt-gen-") as d:
        _check_result(*run_plain(src, d))


@FEW
@given(structured_programs())
def test_structured_programs_run_plain_deterministically(src):
    compile(src, "prog.py", "exec")
    assert acceptable(src)
    with tempfile.TemporaryDirectory(prefix="wt-gen-") as d:
        first = run_plain(src, d)
        _check_result(*first)
        assert first[1].rstrip().splitlines()[-1].startswith("G ")  # the globals digest
        assert run_plain(src, d) == first


def test_driver_reports_exception_globals_and_timeout(tmp_path):
    rc, out, err = run_plain("x = 1\ny = [x, 'a', None]\ndef f(): pass\nraise ValueError(x)\nz = 2\n", tmp_path)
    assert rc == 1
    assert out.splitlines() == ["EXC ValueError 1", "TB 4 <module>", "G f = <function f>", "G x = 1",
                                "G y = list[1, 'a', None]"]
    assert err == ""
    rc, out, err = run_plain("import sys\nprint('hi')\nsys.exit(3)\n", tmp_path)
    assert rc == 1 and out.splitlines()[:3] == ["hi", "EXC SystemExit 3", "TB 3 <module>"]
    assert run_plain("while True:\n    pass\n", tmp_path, timeout=1) == (-1, "", "TimeoutExpired")
    assert run_plain("class A: pass\n", tmp_path) == (0, "G A = <class A>\n", "")


def test_acceptable_filters():
    assert acceptable("a = 1\nimport math\n")
    assert not acceptable("a = (\n")
    assert not acceptable("open('x', 'w')\n")
    assert not acceptable("import os\n")
    assert not acceptable("from . import x\n")
    assert not acceptable("x.__class__\n")
    assert not acceptable("# -*- coding: latin-1 -*-\nx = 1\n")
    assert not acceptable("x = '\ud800'\n")
