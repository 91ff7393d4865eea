"""The builder's path, wave 14: it imports nothing from the directory ``record`` runs in (``wpp.spawn.builder_entries``, ``-P``)."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from test_online import _check_keep_raw
from wtutil import ENV

SRC = str(Path(__file__).resolve().parents[2] / "src")
# a program's own modules named as the standard library's the builder imports (wave 14 review F1):
# each leaves a marker where it ran and fails
_SHADOWS = ("typing", "inspect")
PROG = "def f(n):\n    return n if n < 2 else f(n - 1) + f(n - 2)\nprint(f(12))\n"


def _shadowed(tmp: Path) -> Path:
    for name in _SHADOWS:
        (tmp / f"{name}.py").write_text(
            f"import os\nopen(os.path.join({str(tmp)!r}, 'RAN-{name}'), 'w').close()\n"
            f"raise ImportError('the program directory\\'s {name}.py')\n")
    (tmp / "prog.py").write_text(PROG)
    return tmp / "prog.py"


def _recorded(tmp: Path, cmd: list[str], env: dict[str, str]) -> None:
    out = tmp / "out.wt"
    proc = subprocess.run([*cmd, "record", "--mode", "path", "--wpp", "--keep-raw", "-q", "-o", str(out), "prog.py"],
                          cwd=tmp, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert sorted(p.name for p in tmp.glob("RAN-*")) == []     # neither module ran (in the builder or anywhere)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == "144\n"
    # the WPP was built: every stream's grammar expands to the raw stream stored beside it
    assert _check_keep_raw(out) > 100


def test_python_m_record_builds_the_wpp_without_the_current_directory_s_modules(tmp_path: Path) -> None:
    """``python -m wholetrace record`` puts the current directory first on the recorder's path; the
    builder started without ``site`` gets that path without it (main: the builder ran the program's
    ``typing.py`` and the WPP failed)."""
    _shadowed(tmp_path)
    _recorded(tmp_path, [sys.executable, "-m", "wholetrace"], ENV)


def test_the_builder_started_with_site_does_not_put_the_current_directory_first(tmp_path: Path) -> None:
    """A recorder whose imports go through more than the path (an import hook: the builder then starts
    with ``site`` and ``-c``, which would put ``''`` first), started with ``-c`` itself ('' first on its
    path) and a PYTHONPATH with an empty item (the current directory too)."""
    _shadowed(tmp_path)
    code = ("import sys, runpy\n"
            "class Hook:\n    def find_spec(self, *a, **k):\n        return None\n"
            "sys.meta_path.insert(0, Hook())\n"
            "from wholetrace.wpp.spawn import site_free_path\n"
            "assert sys.path[0] == '' and site_free_path('/x') is None, sys.path\n"   # the with-site start
            "sys.argv[0] = 'wholetrace'\n"
            "runpy.run_module('wholetrace', run_name='__main__', alter_sys=True)\n")
    env = {**ENV, "PYTHONPATH": os.pathsep.join(["", ENV.get("PYTHONPATH") or SRC])}
    _recorded(tmp_path, [sys.executable, "-c", code], env)


def _entries(monkeypatch: pytest.MonkeyPatch, where: Path, entries: list[str], root: str, *, script: bool = False,
             main: str | None = None, safe: bool = False) -> list[str]:
    from wholetrace.wpp.spawn import builder_entries

    monkeypatch.chdir(where)
    monkeypatch.setitem(sys.modules, "__main__", types.SimpleNamespace(__file__=main))
    monkeypatch.setattr(sys, "flags", types.SimpleNamespace(safe_path=safe))
    return builder_entries(entries, root, script=script)


def test_builder_entries_drop_the_current_and_the_script_directory_but_never_wholetrace_s_root(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here, lib, bin_, root = (tmp_path / n for n in ("here", "lib", "bin", "root"))
    for d in (here, lib, bin_, root):
        d.mkdir()
    (tmp_path / "link").symlink_to(here)
    gone = str(tmp_path / "gone")
    main = str(bin_ / "wholetrace")
    # '' and any name of the current directory (absolute, relative, through a link) go; the rest stays
    assert _entries(monkeypatch, here, ["", str(here), ".", str(tmp_path / "link"), "../lib", str(lib), gone],
                    str(root)) == ["../lib", str(lib), gone]
    # the script's directory first (a console script's bin/, the recorded program's directory) goes;
    # anywhere else, or under -P (then the interpreter put nothing there), it stays
    assert _entries(monkeypatch, here, [str(bin_), str(lib)], str(root), script=True, main=main) == [str(lib)]
    assert _entries(monkeypatch, here, [str(lib), str(bin_)], str(root), script=True, main=main) == [str(lib), str(bin_)]
    assert _entries(monkeypatch, here, [str(bin_), str(lib)], str(root), script=True, main=main, safe=True) \
        == [str(bin_), str(lib)]
    assert _entries(monkeypatch, here, [str(bin_), str(lib)], str(root), main=main) == [str(bin_), str(lib)]
    # run from wholetrace's root (a checkout's src with PYTHONPATH=src): it stays, however named
    assert _entries(monkeypatch, root, ["", str(root), ".", str(lib)], str(root), script=True,
                    main=str(root / "wholetrace" / "__main__.py")) == ["", str(root), ".", str(lib)]
    assert _entries(monkeypatch, bin_, [str(bin_), "", str(lib)], str(bin_), script=True, main=main) \
        == [str(bin_), "", str(lib)]


def test_site_free_path_puts_the_root_first_and_leaves_out_the_current_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from test_builder_startup11 import _plain_meta_path
    from wholetrace.wpp.spawn import site_free_path

    monkeypatch.setattr(sys, "meta_path", _plain_meta_path())
    monkeypatch.chdir(tmp_path)
    lib = tmp_path / "lib"
    lib.mkdir()
    monkeypatch.setattr(sys, "path", ["", str(lib), str(tmp_path), SRC, *sys.path])
    path = site_free_path(SRC)
    assert path is not None and path[0] == SRC and SRC not in path[1:]
    assert path[1:] == [p for p in sys.path if p not in ("", str(tmp_path), SRC)]
