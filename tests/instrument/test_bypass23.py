"""An in-scope module loaded by another loader (a zip archive on ``sys.path``, a program's finder
in front of ours) is not recorded: the summary line and ``info`` say so (explore23 HIGH-1b, MED-6;
before, nothing said it)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path
from textwrap import dedent

from wtutil import ENV, run_plain, run_recorded

FINDER = dedent('''\
    import sys
    from importlib.machinery import PathFinder, SourceFileLoader

    class Mine:
        def find_spec(self, name, path=None, target=None):
            if name != "own_mod":
                return None
            spec = PathFinder.find_spec(name, path)
            spec.loader = SourceFileLoader(name, spec.origin)
            return spec

    sys.meta_path.insert(0, Mine())
    sys.path.insert(0, sys.path[0] + "/z.zip")
    import own_mod, zmod, kept_mod
    print(own_mod.f(2), zmod.h(3), kept_mod.g(4))
''')


def test_modules_of_other_loaders_named(tmp_path: Path) -> None:
    script = tmp_path / "prog.py"
    script.write_text(FINDER)
    (tmp_path / "own_mod.py").write_text("def f(x):\n    return x + 1\n")
    (tmp_path / "kept_mod.py").write_text("def g(x):\n    return x * 2\n")
    with zipfile.ZipFile(tmp_path / "z.zip", "w") as z:
        z.writestr("zmod.py", "def h(x):\n    return -x\n")
    plain = run_plain(script)
    assert plain.stdout == "3 -3 8\n", plain.stderr
    out = tmp_path / "p.wt"
    got = run_recorded(script, out, include=("zmod",), quiet=False)
    assert got.stdout == plain.stdout and got.returncode == 0
    assert got.stderr.endswith(", 2 not instrumented (`wholetrace info` lists them)]\n"), got.stderr
    info = subprocess.run([sys.executable, "-m", "wholetrace.cli", "info", str(out)], capture_output=True,
                          text=True, env=ENV, timeout=300).stdout
    noted = sorted(line for line in info.splitlines() if line.startswith("not instrumented:"))
    assert noted == [f"not instrumented: own_mod ({tmp_path}/own_mod.py)  (loaded by SourceFileLoader, nothing recorded)",
                     f"not instrumented: zmod ({tmp_path}/z.zip/zmod.py)  (loaded by zipimporter, nothing recorded)"]


def test_nothing_noted_when_all_instrumented(tmp_path: Path) -> None:
    script = tmp_path / "prog.py"
    script.write_text("import kept_mod, importlib\nimportlib.reload(kept_mod)\nprint(kept_mod.g(1))\n")
    (tmp_path / "kept_mod.py").write_text("def g(x):\n    return x * 2\n")
    got = run_recorded(script, tmp_path / "p.wt", quiet=False)
    assert got.stdout == "2\n" and "not instrumented" not in got.stderr, got.stderr


RECOMPILE = dedent('''\
    import inspect
    import textwrap
    import kept_mod

    def recompiled(f):
        """What typeguard's @typechecked does: the function compiled again from its source."""
        source = textwrap.dedent(inspect.getsource(f))
        namespace = {}
        exec(compile(source, f.__code__.co_filename, "exec"), f.__globals__, namespace)
        f.__code__ = namespace[f.__name__].__code__
        return f

    recompiled(kept_mod.g)
    recompiled(kept_mod.K.m)
    print(kept_mod.g(4), kept_mod.K().m(), kept_mod.h(1))
''')


def test_functions_recompiled_by_the_program_named(tmp_path: Path) -> None:
    """explore23 HIGH-1: code the program compiles from an in-scope module's source has no
    probes; the functions are named (the others of the module are not)."""
    script = tmp_path / "prog.py"
    script.write_text(RECOMPILE)
    (tmp_path / "kept_mod.py").write_text("def g(x):\n    return x * 2\n\n\ndef h(x):\n    return -x\n\n\n"
                                          "class K:\n    def m(self):\n        return 7\n")
    out = tmp_path / "p.wt"
    for mode in ("blocks", "count"):
        got = run_recorded(script, out, mode=mode, quiet=False)
        assert got.stdout == "8 7 -1\n" and got.returncode == 0, got.stderr
        assert got.stderr.endswith(", 2 not instrumented (`wholetrace info` lists them)]\n"), got.stderr
        info = subprocess.run([sys.executable, "-m", "wholetrace.cli", "info", str(out)], capture_output=True,
                              text=True, env=ENV, timeout=300).stdout
        noted = sorted(line for line in info.splitlines() if line.startswith("not instrumented:"))
        why = "(code compiled by the program, nothing recorded)"
        assert noted == [f"not instrumented: kept_mod.K.m  {why}", f"not instrumented: kept_mod.g  {why}"], mode
