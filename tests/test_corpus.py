"""Every corpus driver runs plain: exit 0, and the same stdout on two runs (with different
hash seeds). Time is not asserted; the timeout is only a guard against a hang."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from corpus import PROGRAMS, SIZES, names

REPO = Path(__file__).resolve().parent.parent
TIMEOUT = 120


def _run(driver: Path, hashseed: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONHASHSEED=hashseed)
    return subprocess.run([sys.executable, str(driver)], capture_output=True, text=True,
                          timeout=TIMEOUT, env=env, cwd=driver.parent, stdin=subprocess.DEVNULL)


def _check(name: str, size: str, tmp_path: Path) -> None:
    prog = PROGRAMS[name]
    driver = prog.write(tmp_path, size)
    assert driver == tmp_path / f"drive_{name}.py"
    first = _run(driver, "0")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip(), "a driver prints a digest"
    second = _run(driver, "12345")
    assert second.returncode == 0, second.stderr
    assert first.stdout == second.stdout


@pytest.mark.parametrize("name", names())
def test_driver_runs_plain_and_deterministic(name, tmp_path):
    _check(name, "small", tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", names())
def test_bench_driver_runs_plain_and_deterministic(name, tmp_path):
    _check(name, "bench", tmp_path)


def test_registry_shape(tmp_path):
    assert set(SIZES) == {"small", "bench"}
    assert {p.kind for p in PROGRAMS.values()} == {"pyperformance", "stdlib"}
    for name, prog in PROGRAMS.items():
        assert prog.name == name
        if prog.kind == "pyperformance":
            assert prog.include == []
        else:
            assert prog.include, name
        for size in SIZES:
            compile(prog.source(size), f"drive_{name}.py", "exec")
    with pytest.raises(ValueError):
        PROGRAMS["nqueens"].source("huge")


def test_files_exist_and_stage_outside_repo(tmp_path):
    for name, prog in PROGRAMS.items():
        d = tmp_path / name
        prog.write(d)
        files = prog.files(d)
        assert all(os.path.isabs(f) and os.path.exists(f) for f in files), name
        if prog.kind == "pyperformance":
            assert (d / f"bm_{name}.py").exists()
            assert str((d / f"bm_{name}.py").resolve()) in files
    assert (tmp_path / "pyflate" / "data" / "interpreter.tar.bz2").exists()
    assert not list(REPO.glob("tests/bm_*.py")) and not list(REPO.glob("tests/drive_*.py"))


def test_driver_restages_benchmark_and_runs_from_other_cwd(tmp_path):
    d = tmp_path / "drv"
    driver = PROGRAMS["nqueens"].write(d)
    (d / "bm_nqueens.py").unlink()
    other = tmp_path / "elsewhere"
    other.mkdir()
    r = subprocess.run([sys.executable, str(driver)], capture_output=True, text=True,
                       timeout=TIMEOUT, cwd=other)
    assert r.returncode == 0, r.stderr
    assert (d / "bm_nqueens.py").exists()
    assert r.stdout.startswith("nqueens 7 40 ")
