"""What a program's own ``sys.settrace`` tracer sees of the re-raise state of module and class
bodies (review19d MED-1, docs/design.md "Re-raise in module and class bodies, wave 19"): the
body's sites, saves, holds and drops are C calls and stores on its runtime slot, no frame of ours.

Oracle: the plain run's tracer events.  Before the fix each ``with`` and handler end in a body
called the Python helper ``note_reraise`` (a ``call``, a dozen ``line`` events, a ``return``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from wtutil import run_plain, run_recorded

MODES = (("blocks", ()), ("count", ()), ("witness", ()), ("branches", ()), ("path", ()), ("path", ("--no-wpp",)))

TRACER = '''\
import sys
EV = []
def _tr(frame, event, arg):
    code = frame.f_code
    if code.co_filename == __file__:
        EV.append((event, code.co_name, frame.f_lineno))
        return _tr
    back = frame.f_back
    if event == "call" and back is not None and back.f_code.co_filename == __file__:
        EV.append(("foreign", code.co_name))   # called by the program's own frame
    return None
sys.settrace(_tr)
sys._getframe().f_trace = _tr
class CM:
    def __enter__(self):
        return self
    def __exit__(self, *a):
        return False
'''

TAIL = '''\
sys.settrace(None)
for e in EV:
    print(e)
'''

# No exception is raised: every mode's tracer events equal plain's (main: witness, count and
# branches added the body's epilogue call; the branch before the fix one call per ``with``).
QUIET = TRACER + '''\
with CM():
    x = 1
for i in range(3):
    with CM():
        x += i
    try:
        x += 1
    finally:
        x -= 1
class K:
    with CM():
        y = 2
    try:
        y += 1
    except KeyError:
        pass
''' + TAIL

# Handlers, a nested handler in a finally, a swallowing ``with``, a bare ``raise``: the program's
# own events equal blocks' (which has no re-raise state; on 3.12 blocks itself shows one more
# ``line`` at the class body's end than plain, pre-existing), and of ours it calls only the
# exception-edge recorders (pre-existing: a handler in a body asks the runtime where the
# exception came from).
RAISING = TRACER + '''\
class Boom(Exception):
    pass
class Swallow(CM):
    def __exit__(self, *a):
        return True
def t(k):
    raise Boom(k)
for i in range(3):
    try:
        try:
            t(i)
        finally:
            try:
                t(10 + i)
            except Boom:
                pass
    except Boom:
        pass
    with Swallow():
        t(20 + i)
    with CM():
        x = i
class K:
    try:
        try:
            t(1)
        except Boom:
            with CM():
                pass
            raise
    except Boom:
        pass
''' + TAIL

EDGE_RECORDERS = {"exception_edge", "exception_edge_count"}


def _events(out: str) -> tuple[list[str], set[str]]:
    own = [line for line in out.splitlines() if not line.startswith("('foreign'")]
    foreign = {line.split("'")[3] for line in out.splitlines() if line.startswith("('foreign'")}
    return own, foreign


@pytest.mark.compat
def test_quiet_body_tracer_events_equal_plain(tmp_path: Path) -> None:
    script = tmp_path / "quiet.py"
    script.write_text(QUIET)
    plain = run_plain(script)
    assert plain.returncode == 0 and "('call', '__exit__'" in plain.stdout, plain.stderr
    for mode, opts in MODES:
        got = run_recorded(script, tmp_path / "x.wt", mode=mode, options=opts)
        assert (got.returncode, got.stdout, got.stderr) == (plain.returncode, plain.stdout, plain.stderr), mode


@pytest.mark.compat
def test_raising_body_tracer_sees_no_region_helper(tmp_path: Path) -> None:
    script = tmp_path / "raising.py"
    script.write_text(RAISING)
    plain = run_plain(script)
    assert plain.returncode == 0, plain.stderr
    own, foreign = _events(plain.stdout)
    assert not foreign and own
    own = None
    for mode, opts in MODES:
        got = run_recorded(script, tmp_path / "x.wt", mode=mode, options=opts)
        assert (got.returncode, got.stderr) == (0, ""), (mode, got.stderr)
        got_own, got_foreign = _events(got.stdout)
        own = own or got_own   # blocks' first
        assert got_own == own, mode
        assert got_foreign <= EDGE_RECORDERS, (mode, got_foreign)
