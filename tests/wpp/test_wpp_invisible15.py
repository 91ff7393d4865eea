"""What a program recorded with ``--wpp`` sees, wave 15 (review15b, "outside this branch"): no
``threading`` (nor a flusher in ``threading.enumerate()``), no stdlib module the recorder's side
of ``--wpp`` imported, no low descriptor of the builder's (docs/design.md, "wave 15, builder start-up").

Oracles: the plain ``python`` run of the same program, and the same recording without ``--wpp``
(the store's own descriptors and modules are every mode's, not ``--wpp``'s).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from wholetrace.wpp import spawn
from wtutil import ENV

PROGRAM = r'''
import os, sys
first = "threading" in sys.modules
def fds():
    out = {}
    for n in os.listdir("/proc/self/fd"):
        try:
            out[int(n)] = os.readlink(f"/proc/self/fd/{n}")
        except OSError:
            out[int(n)] = None     # the listing's own descriptor
    return out
before = set(sys.modules)
low = os.open(os.devnull, os.O_RDONLY)
import threading, struct, fcntl, mmap, _weakrefset
added = sorted(set(sys.modules) - before)
def f(n):
    return n if n < 2 else f(n - 1) + f(n - 2)
t = threading.Thread(target=f, args=(12,), name="mine"); t.start(); t.join()
print(repr({"first": first, "enumerate": [t.name for t in threading.enumerate()],
            "active": threading.active_count(), "fds": fds(), "open": low, "added": added}))
'''


def _run(tmp_path: Path, name: str, *record: str) -> dict:
    """The program's report, run plain (``name`` "plain") or recorded in path mode with ``record``'s options."""
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    cmd = [sys.executable, str(script)]
    if name != "plain":
        cmd[1:1] = ["-m", "wholetrace.cli", "record", "--mode", "path", *record, "-q",
                    "-o", str(tmp_path / f"{name}.wt")]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=300, stdin=subprocess.DEVNULL,
                          env={**ENV, "WHOLETRACE_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return ast.literal_eval(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    tmp = tmp_path_factory.mktemp("invisible")
    return {"plain": _run(tmp, "plain"), "record": _run(tmp, "record"), "wpp": _run(tmp, "wpp", "--wpp")}


def test_threading_is_as_in_plain_python(runs: dict[str, dict]) -> None:
    plain, wpp = runs["plain"], runs["wpp"]
    assert wpp["first"] == plain["first"] is False
    assert wpp["enumerate"] == plain["enumerate"] == ["MainThread"]     # no wholetrace-flusher
    assert wpp["active"] == plain["active"] == 1


def test_the_program_imports_what_it_imports_plainly(runs: dict[str, dict]) -> None:
    """``threading``, ``struct``, ``fcntl``, ``mmap``, ``_weakrefset``: added by the program's own
    import, as in plain python (``--wpp``'s recorder side imported them all before)."""
    plain, rec, wpp = runs["plain"], runs["record"], runs["wpp"]
    assert wpp["added"] == rec["added"]
    for name in ("threading", "struct", "fcntl", "mmap", "_weakrefset"):
        assert name in plain["added"] and name in wpp["added"], name


def test_the_builders_descriptors_are_out_of_the_programs_way(runs: dict[str, dict]) -> None:
    """The program's next file takes the number it takes without ``--wpp`` and in plain python; below
    ``HIGH_FD`` the program sees plain python's descriptors (the store's .wt and journal are at
    >= ``HIGH_FD`` too since wave 16, in every mode)."""
    plain, rec, wpp = runs["plain"], runs["record"], runs["wpp"]
    assert wpp["open"] == rec["open"] == plain["open"]

    def low(run: dict) -> set[int]:
        return {n for n in run["fds"] if n < spawn.HIGH_FD}

    assert low(wpp) == low(rec) == low(plain)   # the same numbers taken

    def links(run: dict) -> list[str]:   # what the low descriptors are
        return sorted(str(link).split("[")[0] for n, link in run["fds"].items() if n < spawn.HIGH_FD)

    assert links(wpp) == links(plain) == links(rec)
    high = {n: link for n, link in wpp["fds"].items() if n >= spawn.HIGH_FD and ".wt" not in str(link)}
    kinds = sorted(("memfd" if link.startswith("/memfd:" + spawn.PROGRESS_NAME) else "pipe" if link.startswith("pipe:")
                    else "file") for link in high.values())
    assert kinds == ["file", "memfd", "pipe", "pipe"], high     # stderr file, progress, the two pipes
    assert not any(n >= spawn.HIGH_FD for n in plain["fds"])
    assert sorted(str(link).rsplit(".", 1)[-1] for n, link in rec["fds"].items() if n >= spawn.HIGH_FD) == ["wt", "wt-journal"]
