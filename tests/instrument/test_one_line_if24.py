"""An ``if`` with a short-circuit test and its body on one line gives a program's tracer plain's events (review23e).

``if e is None or e > 3: return``: the arm's probes, artificial, were a location-less join of the
test's two jumps, and the ``return`` after them started line 8 again, so a ``sys.settrace``
tracer saw ``line 8`` twice, in every mode.  The probes now take the position of the arm's first
statement when it starts on the line the test ends on.  Oracles: the plain run (stdout with the
tracer's events, stderr with a traceback from such a line, exit status) in every mode; every
mode's counts equal blocks'; blocks' line counts equal the settrace line tracer's.
"""

from __future__ import annotations

import pytest

from oracles.settrace_lines import line_counts
from wtutil import assert_same_counts, compare_lines, profiles, run_plain, run_recorded

MODES = {"blocks": (), "count": (), "count-naive": (), "witness": (), "branches": (), "path": (), "full": ()}

PROGRAM = '''\
import sys

events = []


def tracer(frame, event, arg):
    if frame.f_code.co_filename != __file__ or frame.f_code.co_name == "tracer":
        return None
    events.append((frame.f_code.co_name, event, frame.f_lineno))
    return tracer


def ret(e):
    if e is None or e > 3: return
    x = 1
    return x


def value(e, f):
    if e is None or f(e): return (e, f(-1) + 1)
    return 0


def assign(a, b):
    y = 0
    if a and b or not a: y = a; y += 1
    else:
        y = 5
    return y


def loop(xs):
    total = 0
    for x in xs:
        if x % 2 or x > 6: continue
        if x == 4 and total: break
        total += x
    return total


def gen(xs):
    for x in xs:
        if x is None or x < 0: yield 0
        yield x


def raising(e):
    if e is None or e > 3: raise ValueError(e)
    return e


def main():
    print([ret(e) for e in (5, None, 1)], [value(e, abs) for e in (None, -2, 0)])
    print([assign(a, b) for a in (0, 1) for b in (0, 2)], loop(range(10)), list(gen([None, 1, -2])))
    try:
        raising(7)
    except ValueError as exc:
        print("caught", exc)
    print("end")   # (a function ending in an ``except ... as`` handler: another, 3.12 bug)


if "trace" in sys.argv:
    sys.settrace(tracer)
main()
if "trace" in sys.argv:
    sys.settrace(None)
print(len(events), events)
raising(None)
'''


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory):
    where = tmp_path_factory.mktemp("oneline24")
    script = where / "oneline.py"
    script.write_text(PROGRAM)
    plain = run_plain(script, "trace")
    assert plain.returncode == 1 and "ValueError: None" in plain.stderr, plain.stderr
    out = {}
    for mode, options in MODES.items():
        wt = where / f"{mode}.wt"
        out[mode] = (wt, run_recorded(script, wt, "trace", mode=mode, options=options))
    wt = where / "untraced.wt"    # for the line oracle, which is a tracer itself
    out["untraced"] = (wt, run_recorded(script, wt, "off"))
    return script, plain, out


@pytest.mark.parametrize("mode", list(MODES))
def test_program_sees_plain_behaviour(runs, mode: str) -> None:
    _script, plain, out = runs
    res = out[mode][1]
    assert (res.returncode, res.stdout, res.stderr) == (plain.returncode, plain.stdout, plain.stderr), mode


def test_counts_equal_blocks_and_the_line_oracle(runs) -> None:
    script, _plain, out = runs
    want = profiles(out["blocks"][0])
    for mode in MODES:
        got = profiles(out[mode][0])
        assert_same_counts({k: v for k, v in want.items() if k[1] != "tracer"},
                           {k: v for k, v in got.items() if k[1] != "tracer"}, mode)
    oracle = line_counts(script, ["off"], {str(script)})
    assert compare_lines(out["untraced"][0], {str(script)}, oracle) >= 20
