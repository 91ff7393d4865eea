"""hypothesmith / structured random programs: same behaviour instrumented, and well-formed traces."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings

from genprogs import programs, run_plain, structured_programs, write_program
from naive_decode import check_stream
from wholetrace.instrument.cfg import CFG
from wholetrace.store import Recording
from wholetrace.trace.session import Trace
from wtutil import ENV, assert_same_counts, profiles

SETTINGS = dict(deadline=None, database=None, suppress_health_check=list(HealthCheck))


def record_and_compare(source: str) -> None:
    with tempfile.TemporaryDirectory(prefix="wt-gen-") as td:
        rc, out, err = run_plain(source, td)
        if rc == -1:
            return  # the program itself did not finish in time
        driver = write_program(source, td)
        wt = Path(td) / "prog.wt"
        proc = subprocess.run([sys.executable, "-m", "wholetrace.cli", "record", "-q", "-o", str(wt), str(driver)],
                              capture_output=True, cwd=td, env=ENV, timeout=120, stdin=subprocess.DEVNULL)
        rerr = [l for l in proc.stderr.decode("utf-8", "replace").splitlines() if l.strip()]
        assert "left uninstrumented" not in proc.stderr.decode("utf-8", "replace"), proc.stderr
        assert (proc.returncode, proc.stdout.decode("utf-8", "replace"), rerr[-1] if rerr else "") == (rc, out, err), source
        with Recording(wt) as rec:
            cfgs = {f.fid: CFG.from_json(f.cfg) for f in rec.functions()}
            assert any(c.qualname == "<module>" and f.file.endswith("prog.py")
                       for f, c in ((f, cfgs[f.fid]) for f in rec.functions()))
            for st in rec.streams():
                problems = check_stream(rec.iter_chunks(st.sid), cfgs)
                assert not problems, (problems, source)
                decoder = Trace(rec).decoder(st.sid)      # the kernel's own checks
                for _rows in decoder.decode(rec.iter_chunks(st.sid)):
                    pass
                assert decoder.depth == 0, source


@pytest.mark.parametrize("chunk", [1, 2])
@seed(20261126)
@settings(max_examples=60, **SETTINGS)
@given(source=structured_programs())
def test_structured_programs(chunk: int, source: str) -> None:
    record_and_compare(source)


@pytest.mark.parametrize("chunk", [1, 2])
@seed(11262026)
@settings(max_examples=100, **SETTINGS)
@given(source=programs("node"))
def test_hypothesmith_programs(chunk: int, source: str) -> None:
    record_and_compare(source)


@pytest.mark.slow
@settings(max_examples=1000, **SETTINGS)
@given(source=structured_programs())
def test_structured_programs_many(source: str) -> None:
    record_and_compare(source)


def count_modes_agree(source: str) -> None:
    with tempfile.TemporaryDirectory(prefix="wt-gen-") as td:
        rc, out, err = run_plain(source, td)
        if rc == -1:
            return
        driver = write_program(source, td)
        got = {}
        for mode in ("blocks", "count", "count-naive"):
            wt = Path(td) / f"{mode}.wt"
            proc = subprocess.run([sys.executable, "-m", "wholetrace.cli", "record", "-q", "--mode", mode, "-o", str(wt),
                                   str(driver)], capture_output=True, cwd=td, env=ENV, timeout=120, stdin=subprocess.DEVNULL)
            assert proc.stdout.decode("utf-8", "replace") == out, (mode, source)
            got[mode] = profiles(wt)
        for mode in ("count", "count-naive"):
            assert_same_counts(got["blocks"], got[mode], (mode, source))


@seed(26112026)
@settings(max_examples=30, **SETTINGS)
@given(source=structured_programs())
def test_count_modes_on_structured_programs(source: str) -> None:
    count_modes_agree(source)


@seed(20261127)
@settings(max_examples=25, **SETTINGS)
@given(source=programs("node"))
def test_count_modes_on_hypothesmith_programs(source: str) -> None:
    count_modes_agree(source)
