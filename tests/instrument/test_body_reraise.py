"""Re-raise after a nested handler in module and class bodies (review18c HIGH-2, docs/design.md
"Re-raise in module and class bodies, wave 19"): bodies keep no locals, so the traceback entries
their regions hold live in the runtime's slot of the body's activation.

Oracles: the plain run (status, stdout, stderr); the ``blocks`` recording, which witness, path,
path --no-wpp and branches must regenerate exactly (``regenutil.compare``, kernel and twin), and
whose counts (``wholetrace counts``) count, witness and branches recordings must equal; for the
lifetimes, the plain run's order of ``__del__`` against the program's own marks.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from regenutil import compare
from test_held_lifetimes import HEAD as HELD_HEAD
from wtutil import cli_in_process, run_plain, run_recorded

REGENERATED = (("witness", ()), ("path", ()), ("path", ("--no-wpp",)), ("branches", ()))

HEAD = '''\
class Boom(Exception):
    pass
def t(k):
    raise Boom(k)
'''

# Before wave 19 each failed in witness and branches ("activation forms differ": the re-raise
# of the first exception was recorded as a new raise from its statement), with counts unlike
# blocks' in count, witness and branches (module_bare_raise: count unreadable, "counts violate
# flow conservation"); path recorded them right.
BODIES = {
    "module_finally_then_handled": '''
        try:
            try:
                t(3)
            finally:
                try:
                    t(4)
                except Boom:
                    pass
        except Boom as e:
            print("caught", e.args)
        ''',
    "class_finally_then_handled": '''
        class C:
            try:
                try:
                    t(1)
                finally:
                    try:
                        t(2)
                    except Boom:
                        pass
            except Boom as e:
                print("class caught", e.args)
        ''',
    "module_bare_raise": '''
        try:
            try:
                t(1)
            except Boom:
                try:
                    t(2)
                except Boom:
                    pass
                raise
        except Boom as e:
            print("module caught", e.args)
        ''',
    # the same shapes in a module-level loop: a break out of the region, and with/except*
    # nested in a finally (their own entries replace the held one)
    "module_loop_and_star": '''
        class Swallow:
            def __enter__(self):
                return self
            def __exit__(self, *a):
                return True
        for i in range(3):
            try:
                try:
                    t(i)
                finally:
                    with Swallow():
                        t(10 + i)
                    try:
                        t(20 + i)
                    except* Boom:
                        pass
                    if i == 2:
                        break
            except Boom as e:
                print("loop", e.args)
        try:
            try:
                t(30)
            except* Boom:
                try:
                    t(31)
                except Boom:
                    pass
                raise
        except* Boom as g:
            print("star", [e.args for e in g.exceptions])
        ''',
    # a class body re-entered on the same thread (a recursive function defining a class): the
    # inner activation had the same slot (thread, code) and dropped the outer one's entry
    "class_body_reentered": '''
        def make(n):
            class C:
                try:
                    try:
                        t(n)
                    finally:
                        if n:
                            make(n - 1)
                except Boom as e:
                    print("caught", n, e.args)
            return C
        make(1)
        def make2(n):
            class C:
                try:
                    t(n)
                except Boom:
                    try:
                        if n:
                            make2(n - 1)
                    finally:
                        v = n
                    raise
            return C
        for n in range(2):
            try:
                make2(n)
            except Boom as e:
                print("make2", n, e.args)
        ''',
}


def _counts(wt: Path) -> str:
    rc, stdout, stderr = cli_in_process("counts", str(wt))
    assert rc == 0, stderr
    return stdout


# (the compat subset: the shape whose count recording was unreadable, and the re-entered body)
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.compat) if n in ("module_bare_raise", "class_body_reentered")
                                  else n for n in sorted(BODIES)])
def test_body_reraise_regenerates_and_counts(name: str, tmp_path: Path) -> None:
    script = tmp_path / f"{name}.py"
    script.write_text(HEAD + textwrap.dedent(BODIES[name]))
    plain = run_plain(script)
    assert plain.returncode == 0, plain.stderr
    wts = {}
    for mode, opts in (("blocks", ()), ("count", ())) + REGENERATED:
        wt = wts[mode + "".join(opts)] = tmp_path / f"{mode}{''.join(opts)}.wt"
        got = run_recorded(script, wt, mode=mode, options=opts)
        assert (got.returncode, got.stdout, got.stderr) == (plain.returncode, plain.stdout, plain.stderr), mode
    for other in ("witness", "path", "path--no-wpp", "branches"):
        assert compare(wts["blocks"], wts[other], exact=True, twin=True)["identical streams"] >= 1, other
    expected = _counts(wts["blocks"])
    for other in ("count", "witness", "branches"):
        assert _counts(wts[other]) == expected, other


LIFETIMES = HELD_HEAD + '''\
K[:] = range(40)   # t(k) raises
try:
    t(1)
except Boom:
    mark("handler 1")
mark("after handler 1")
try:
    try:
        t(2)
    finally:
        try:
            t(3)
        except Boom:
            mark("inner 3")
        mark("finally end")
except Boom:
    mark("outer 2")
mark("after outer 2")
with Swallow():
    t(4)
mark("after with 4")
for i in range(5, 8):
    try:
        try:
            t(i)
        finally:
            try:
                t(10 + i)
            except Boom:
                pass
            if i == 5:
                continue
            if i == 6:
                break
    except Boom:
        pass
    mark(("iteration", i))
mark("after loop")
class C:
    try:
        t(8)
    except Boom:
        mark("class handler 8")
    mark("class after 8")
    try:
        try:
            t(9)
        except Boom:
            try:
                t(19)
            except Boom:
                pass
            raise
    except Boom:
        mark("class outer 9")
    mark("class after 9")
print(LOG)
'''


@pytest.mark.compat
def test_body_held_entries_lifetimes(tmp_path: Path) -> None:
    """A body's held entries (the slot's, its regions') are dropped where plain Python drops the
    exception: a handler's end, a swallowing ``with``, a ``break``/``continue`` out of a region.
    Before wave 19 the slot kept the last handler's traceback, and with it the raising frame's
    locals, until the body's next handler (``('del', 1)`` after ``'after handler 1'``)."""
    script = tmp_path / "lifetimes.py"
    script.write_text(LIFETIMES)
    plain = run_plain(script)
    assert plain.returncode == 0 and "'after handler 1', ('del', 1)" not in plain.stdout, plain.stdout
    for mode, opts in (("blocks", ()), ("count", ())) + REGENERATED:
        got = run_recorded(script, tmp_path / "x.wt", mode=mode, options=opts)
        assert (got.returncode, got.stdout, got.stderr) == (plain.returncode, plain.stdout, plain.stderr), mode
