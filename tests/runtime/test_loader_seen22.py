"""The loader an instrumented module sees is plain's ``SourceFileLoader`` (explore21 LOW-8, wave 22)."""

from __future__ import annotations

from pathlib import Path

import pytest

from wtutil import run_plain, run_recorded

PACKAGE = 'import sys\nprint("body", type(__loader__).__name__, type(__spec__.loader).__name__)\ndef f():\n    return 1\n'
MAIN = '''import importlib, importlib.util, inspect, sys
import pq
print(type(pq.__loader__).__name__, type(importlib.util.find_spec("pq").loader).__name__)
print(inspect.getsource(pq.f).splitlines()[0], pq.__loader__.get_source("pq") == open(pq.__file__).read())
importlib.reload(pq)
print(type(pq.__loader__).__name__, pq.__cached__ is not None, pq.f())
'''


@pytest.mark.parametrize("mode", ("blocks", "path"))
def test_instrumented_module_sees_plain_loader(tmp_path: Path, mode: str) -> None:
    """Before: ``InstrumentingLoader`` in the module's body, its ``__loader__`` and ``find_spec``."""
    (tmp_path / "pq").mkdir()
    (tmp_path / "pq" / "__init__.py").write_text(PACKAGE)
    prog = tmp_path / "main.py"
    prog.write_text(MAIN)
    plain = run_plain(prog)
    assert plain.returncode == 0 and "body SourceFileLoader SourceFileLoader" in plain.stdout, plain.stderr
    rec = run_recorded(prog, tmp_path / "x.wt", mode=mode)
    assert (rec.returncode, rec.stdout, rec.stderr) == (plain.returncode, plain.stdout, plain.stderr)


def test_main_module_run_with_m_sees_plain_loader(tmp_path: Path) -> None:
    """Before: ``python -m``'s main module had ``InstrumentingLoader`` as ``__loader__`` (runpy's spec)."""
    import subprocess
    import sys

    from wtutil import ENV

    (tmp_path / "ml.py").write_text('print(type(__loader__).__name__, type(__spec__.loader).__name__)\n')
    run = dict(capture_output=True, text=True, cwd=tmp_path, env=ENV, stdin=subprocess.DEVNULL, timeout=300)
    plain = subprocess.run([sys.executable, "-m", "ml"], **run)
    rec = subprocess.run([sys.executable, "-m", "wholetrace.cli", "record", "-q", "-o", str(tmp_path / "x.wt"),
                          "-m", "ml"], **run)
    assert plain.stdout == "SourceFileLoader SourceFileLoader\n", plain.stderr
    assert (rec.returncode, rec.stdout, rec.stderr) == (plain.returncode, plain.stdout, plain.stderr)
