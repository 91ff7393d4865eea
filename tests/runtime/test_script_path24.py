"""The main script's ``sys.argv[0]``, ``__file__`` and code file name are plain's for a relative, unnormalised and symlinked path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from wtutil import ENV, assert_same_counts, profiles

pytestmark = pytest.mark.compat

MODES = [("blocks", ()), ("count", ()), ("witness", ()), ("branches", ()), ("path", ()), ("path", ("--no-wpp",)),
         ("full", ())]

# What the program can see of its own path, with a branch on the name it was called by (multi-call
# scripts dispatch on ``basename(sys.argv[0])``), a traceback and argparse's default ``prog``.
PROGRAM = '''\
import argparse, os, sys, traceback
print(sys.argv[0], __file__, sys.path[0] == os.path.dirname(os.path.realpath(__file__)))
print(sys._getframe().f_code.co_filename, argparse.ArgumentParser().prog)
if os.path.basename(sys.argv[0]).startswith("alias"):
    print("called as the alias")
else:
    print("called by its own name")
def fail():
    return 1 / 0
try:
    fail()
except ZeroDivisionError:
    traceback.print_exc(file=sys.stdout)
'''


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    """``real/prog.py`` and ``links/alias.py``, a relative symlink to it; the runs' directory."""
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "prog.py").write_text(PROGRAM)
    (tmp_path / "links").mkdir()
    os.symlink(os.path.join("..", "real", "prog.py"), tmp_path / "links" / "alias.py")
    return tmp_path


def _run(cwd: Path, *cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *cmd], capture_output=True, text=True, cwd=cwd, env=ENV,
                          stdin=subprocess.DEVNULL, timeout=300)


@pytest.mark.parametrize("typed", ["links/alias.py", "./real/../links/alias.py", "real/prog.py"])
def test_script_path_as_plain_has_it(layout: Path, typed: str) -> None:
    """Every mode through the link (the runner's work is the same in each); two for the others."""
    plain = _run(layout, typed, "x")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.split()[0] == typed            # (the oracle: the interpreter keeps it as typed)
    for mode, options in MODES if typed == "links/alias.py" else [("blocks", ()), ("full", ())]:
        out = layout / f"{mode}{''.join(options)}.wt"
        rec = _run(layout, "-m", "wholetrace.cli", "record", "-q", "--mode", mode, *options, "-o", str(out), typed, "x")
        assert (rec.stdout, rec.stderr, rec.returncode) == (plain.stdout, plain.stderr, 0), (mode, options)


def test_symlinked_recording_reads_back(layout: Path) -> None:
    """A recording made through the link (its code file: the link's absolute path) reads back:
    every mode's counts equal blocks', witness's and path's regenerated traces blocks' exactly."""
    from regenutil import compare

    wts = {}
    for mode, options in MODES:
        out = layout / f"{mode}{''.join(options)}.wt"
        rec = _run(layout, "-m", "wholetrace.cli", "record", "-q", "--mode", mode, *options, "-o", str(out),
                   "links/alias.py")
        assert rec.returncode == 0, rec.stderr
        wts[mode + "".join(options)] = out
    blocks = wts.pop("blocks")
    for tag in ("witness", "path", "path--no-wpp", "branches"):
        compare(blocks, wts[tag], exact=True)
    want = profiles(blocks)
    assert any(key[0] == str(layout / "links" / "alias.py") for key in want), sorted(want)
    for tag, wt in wts.items():
        assert_same_counts(want, profiles(wt), tag)
