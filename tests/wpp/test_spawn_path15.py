"""The builder's path, wave 15: a program directory holding ``importlib.py`` (review14d P2) records with ``--wpp`` as it runs plainly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from test_online import _check_keep_raw
from wtutil import ENV

PROG = ("import importlib\n"
        "def f(n):\n    return n if n < 2 else f(n - 1) + f(n - 2)\n"
        "print(importlib.WHOSE, f(12))\n")


def test_a_program_s_importlib_py_is_the_program_s_and_the_wpp_is_built(tmp_path: Path) -> None:
    """The recorder started as a console script (its ``bin/`` first on its path, not the program's
    directory) records a program whose directory shadows ``importlib``: the program imports its
    own module, as under plain ``python``, and the builder (which imports ``importlib``'s frozen
    parts and, through the kernels' stand-ins, ``importlib`` itself) builds the WPP."""
    prog_dir, bin_dir = tmp_path / "prog", tmp_path / "bin"
    prog_dir.mkdir()
    bin_dir.mkdir()
    (prog_dir / "importlib.py").write_text("WHOSE = 'the program directory'\n")
    (prog_dir / "prog.py").write_text(PROG)
    (bin_dir / "wt.py").write_text("import sys\nfrom wholetrace.cli import main\nsys.exit(main())\n")
    plain = subprocess.run([sys.executable, "prog.py"], cwd=prog_dir, env=ENV, capture_output=True, text=True,
                           timeout=300, stdin=subprocess.DEVNULL)
    assert plain.returncode == 0 and plain.stdout == "the program directory 144\n", plain.stderr
    out = tmp_path / "out.wt"
    rec = subprocess.run([sys.executable, str(bin_dir / "wt.py"), "record", "--mode", "path", "--wpp", "--keep-raw",
                          "-q", "-o", str(out), "prog.py"], cwd=prog_dir, env=ENV, capture_output=True, text=True,
                         timeout=600, stdin=subprocess.DEVNULL)
    assert (rec.returncode, rec.stdout, rec.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    assert _check_keep_raw(out) > 100   # every stream's grammar expands to its raw stream
