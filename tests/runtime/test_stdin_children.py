"""Child interpreters that read their program from stdin are recorded; those that run code the
runner does not reproduce (``-i``, ``-x``, a zip application) are listed as not recorded.
Oracles: plain runs of the same program (stdout, stderr, exit status), and the same code run
as a script file in the same recording (its blocks and statement counts)."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from wholetrace.profile import profiles as profiles_of
from wholetrace.profile.model import by_key
from wholetrace.profile.processes import one_process
from wtutil import cli_in_process, run_plain, run_recorded

CODE = '''\
import sys
def tri(n):
    t = 0
    for i in range(n):
        if i % 2:
            t += i
    return t
print("stdin program", sys.argv, __file__ if "__file__" in dir() else None, tri(int(sys.argv[-1])))
if sys.argv[-1] == "7":
    raise KeyError("seven")
'''

MAIN = '''\
import os, subprocess, sys, zipfile
here = os.path.dirname(os.path.abspath(__file__))
code = open(os.path.join(here, "code.txt"), "rb").read()
def show(r):
    print(r.returncode, r.stdout.decode(), r.stderr.decode().replace(sys.executable, "PY"))
show(subprocess.run([sys.executable, "-", "a", "9"], input=code, capture_output=True))
show(subprocess.run([sys.executable, "-u"], input=code.replace(b"sys.argv[-1]", b"'7'"), capture_output=True))
show(subprocess.run([sys.executable, os.path.join(here, "as_script.py"), "a", "9"], capture_output=True))
show(subprocess.run([sys.executable, "-i", "-c", "x = 5"], input=b"print(x * 3)", capture_output=True))
show(subprocess.run([sys.executable, os.path.join(here, "app.zip")], capture_output=True))
show(subprocess.run([sys.executable, "--version"], capture_output=True))
'''


@pytest.mark.parametrize("mode", ["blocks", "count", "witness"])
def test_stdin_programs_are_recorded_and_the_rest_listed(tmp_path: Path, mode: str) -> None:
    (tmp_path / "code.txt").write_text(CODE)
    (tmp_path / "as_script.py").write_text(CODE)
    with zipfile.ZipFile(tmp_path / "app.zip", "w") as z:
        z.writestr("__main__.py", "print('from the zip')\n")
    script = tmp_path / "main.py"
    script.write_text(MAIN)
    plain = run_plain(script)
    assert "stdin program ['-', 'a', '9'] <stdin> 16" in plain.stdout
    assert 'File "<stdin>", line 10, in <module>' in plain.stdout and "15" in plain.stdout
    out = tmp_path / "main.wt"
    res = run_recorded(script, out, mode=mode, quiet=False)
    assert (res.returncode, res.stdout) == (plain.returncode, plain.stdout)
    assert res.stderr.startswith(plain.stderr) and "2 Python process(es) not recorded" in res.stderr
    rc, stdout, stderr = cli_in_process("info", "--json", str(out))
    assert rc == 0, stderr
    info = json.loads(stdout)
    assert [(p["start"], p["exit_code"]) for p in info["processes"]] == [("root", 0), ("subprocess", 0),
                                                                         ("subprocess", 1), ("subprocess", 0)]
    assert [(n["argv"][1:], n["why"]) for n in info["unrecorded"]] == [
        (["-i", "-c", "x = 5"], "-i (a prompt after the program)"),
        ([str(tmp_path / "app.zip")], "a zip application")]
    # process 1 (stdin, args a 9) ran exactly what process 3 (the same code as a script) ran
    with one_process(str(out), 1) as trace:
        as_stdin = {(q, l): p for (f, q, l), p in by_key(profiles_of(trace)).items() if f == "<stdin>"}
    with one_process(str(out), 3) as trace:
        as_file = {(q, l): p for (f, q, l), p in by_key(profiles_of(trace)).items() if f.endswith("as_script.py")}
    assert as_stdin.keys() == as_file.keys() and len(as_stdin) == 2            # <module>, tri
    for key, p in as_stdin.items():
        assert np.array_equal(np.asarray(p.blocks), np.asarray(as_file[key].blocks)), key
        assert np.array_equal(np.asarray(p.stmts), np.asarray(as_file[key].stmts)), key


def test_why_unrecorded() -> None:
    from wholetrace.runtime.subprocs import target_of, why_unrecorded

    exe = sys.executable
    assert target_of([exe, "-", "a"]) == ("stdin", "-", ["a"])
    assert target_of([exe, "-u"]) == ("stdin", "", [])
    assert why_unrecorded([exe], stdin_is_tty=True) == "the interactive prompt"
    assert why_unrecorded([exe], stdin_is_tty=False) is None                   # recorded: stdin is the program
    assert why_unrecorded([exe, "-W", "ignore", "-i", "s.py"], False) == "-i (a prompt after the program)"
    assert why_unrecorded([exe, "-bx", "s.py"], False) == "-x (the first line skipped)"
    assert why_unrecorded([exe, "--version"], False) is None
    assert why_unrecorded([exe, "-c", "from multiprocessing.spawn import spawn_main"], False) is None
