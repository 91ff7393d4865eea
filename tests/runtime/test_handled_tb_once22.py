"""A handler probe reads the handled traceback once (wave 22, fixaudit22).

Wave 22 made handler probes read the handled exception's traceback with ``sys.exc_info()[2]``
(not ``exc.__traceback__``, which ran the program's ``__getattribute__``); a probe in a body with
re-raise sites read it two (count modes) or four (witness) times, +17-20% instructions on a loop
that raises and handles.  Oracle: the calls of ``sys.exc_info`` themselves, counted by a
``sitecustomize`` that wraps it before the recorder binds it, per iteration of a loop whose body
has two handler probes (the guard around the program's ``finally`` and the ``except``), with an
exception class of the program's (count modes on 3.11 read a built-in class's traceback as an
attribute, so they call only for such a class); and the plain run's output.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from wtutil import ENV, run_plain

pytestmark = pytest.mark.compat

SITE = textwrap.dedent('''
    import atexit, os, sys
    _real = sys.exc_info
    _calls = [0]
    def exc_info():
        _calls[0] += 1
        return _real()
    sys.exc_info = exc_info
    atexit.register(lambda: os.write(2, b"EXC_INFO_CALLS %d\\n" % _calls[0]))
''')

PROGRAM = textwrap.dedent('''
    import sys
    class E(Exception):
        pass
    def g(i):
        try:
            try:
                raise E(i)
            finally:
                pass
        except E:
            return 2
    print(sum(g(i) for i in range(int(sys.argv[1]))))
''')


def _calls(tmp: Path, mode: str, n: int) -> int:
    env = {**ENV, "PYTHONPATH": os.pathsep.join(p for p in (str(tmp / "site"), ENV.get("PYTHONPATH")) if p)}
    cmd = [sys.executable, "-m", "wholetrace.cli", "record", "--mode", mode, "-q", "-o", str(tmp / f"{mode}{n}.wt"),
           str(tmp / "p.py"), str(n)]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp, env=env, timeout=300, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert r.stdout == run_plain(tmp / "p.py", str(n)).stdout
    found = re.findall(r"EXC_INFO_CALLS (\d+)", r.stderr)
    assert len(found) == 1, r.stderr
    return int(found[0])


@pytest.mark.parametrize("mode", ["count", "witness"])
def test_a_handler_probe_reads_the_traceback_once(tmp_path: Path, mode: str) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(SITE)
    (tmp_path / "p.py").write_text(PROGRAM)
    per_iteration = (_calls(tmp_path, mode, 11) - _calls(tmp_path, mode, 1)) / 10
    assert per_iteration == 2   # two handler probes an iteration, one read each
