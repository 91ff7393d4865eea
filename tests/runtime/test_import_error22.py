"""A module that does not compile fails to import with plain's traceback: no wholetrace frame (review22c MED-2, wave 22)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from wtutil import ENV, run_plain, run_recorded

# each broken module is imported by the main program twice: uncaught (the interpreter prints the
# traceback) and caught (the program formats the traceback it was given, and its __context__)
MAIN = '''
    import sys, traceback
    for name in sys.argv[1:]:
        try:
            __import__(name)
        except BaseException as e:
            print(name, type(e).__name__, e.__context__ is None)
            print("".join(traceback.format_exception(e)))
    __import__(sys.argv[1])
'''

BROKEN = {
    "unclosed.py": b"x = (\n",                            # SyntaxError
    "nul.py": b"x = 1\n\0\n",                             # 3.11: ValueError; 3.12+: SyntaxError
    "cookie.py": b"# -*- coding: nosuchcodec -*-\nx = 1\n",   # SyntaxError from the decoder
    "indent.py": b"def f():\nreturn 1\n",                 # IndentationError
}


def _tree(tmp: Path) -> Path:
    for name, data in BROKEN.items():
        (tmp / name).write_bytes(data)
    (tmp / "pkg").mkdir()
    (tmp / "pkg" / "__init__.py").write_text("")
    (tmp / "pkg" / "bad.py").write_bytes(BROKEN["unclosed.py"])
    main = tmp / "main.py"
    main.write_text(textwrap.dedent(MAIN))
    return main


@pytest.mark.parametrize("mode", ("blocks", "witness"))
def test_a_broken_module_fails_to_import_as_in_plain(tmp_path: Path, mode: str) -> None:
    """Before: four importlib frames and two of wholetrace's loader.py (with their source
    lines) between the import and the error, in both tracebacks."""
    main = _tree(tmp_path)
    names = [n[:-3] for n in BROKEN] + ["pkg.bad"]
    plain = run_plain(main, *names)
    assert plain.returncode == 1 and "unclosed SyntaxError True" in plain.stdout, plain
    rec = run_recorded(main, tmp_path / "x.wt", *names, mode=mode)
    assert (rec.returncode, rec.stdout, rec.stderr) == (plain.returncode, plain.stdout, plain.stderr)


def test_record_m_of_a_broken_module_shows_importlib_frames(tmp_path: Path) -> None:
    """``record -m pkg.bad``: runpy's ``get_code`` call shows importlib's frames, as plain's
    (before: wholetrace's loader.py frames).  Plain's first frame, runpy's
    ``_run_module_as_main``, is not shown (the runner calls ``_get_module_details`` itself:
    the one difference left, docs/design.md)."""
    _tree(tmp_path)
    kw = dict(capture_output=True, text=True, cwd=tmp_path, env=ENV, stdin=subprocess.DEVNULL, timeout=300)
    plain = subprocess.run([sys.executable, "-m", "pkg.bad"], **kw)  # type: ignore[call-overload]
    rec = subprocess.run([sys.executable, "-m", "wholetrace.cli", "record", "-q", "-o", str(tmp_path / "m.wt"),
                          "-m", "pkg.bad"], **kw)  # type: ignore[call-overload]
    assert plain.returncode == rec.returncode == 1
    lines = plain.stderr.splitlines()
    assert "_run_module_as_main" in lines[1] and "get_code" in lines[3], lines
    assert rec.stderr.splitlines() == lines[:1] + lines[2:]
