"""tests/conftest.py's per-test CPU log (WHOLETRACE_TEST_CPULOG): one line per test.  (Off unless set:
every other run of the suite would fail opening no path if it were not.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ONE = "compat/test_free_threaded.py::test_gil_detection_on_this_interpreter"


def test_cpu_log_has_one_line_per_test(tmp_path: Path) -> None:
    log = tmp_path / "cpu.log"
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_WORKER"}
    env["WHOLETRACE_TEST_CPULOG"] = str(log)
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                          "-m", "", str(TESTS / ONE)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    (line,) = log.read_text().splitlines()
    cpu, wall, worker, nodeid = line.split("\t")
    assert float(cpu) >= 0 and float(wall) >= 0 and worker == "-"
    assert nodeid.endswith(ONE)

