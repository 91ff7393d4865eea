"""``--mode full`` never holds a tuple that holds a frame, traceback or built-in exception
(review20a HIGH-1): ``sys.exc_info()`` or a named tuple carrying ``sys._getframe()``, recorded
in a function, kept that function's locals until exit (a file it left open read back empty).
Also: deciding what is held runs no ``__hash__`` of a metaclass (review20a LOW-1).
Oracle: the plain run's stdout (finaliser order, the file's contents)."""

from __future__ import annotations

import textwrap

from wtutil import run_plain, run_recorded
from wholetrace.runtime.values import ValueLog, address

TUPLES = textwrap.dedent('''
    import sys
    from collections import namedtuple

    Where = namedtuple("Where", "frame line")

    class D:
        def __init__(self, n):
            self.n = n
        def __del__(self):
            print("del", self.n)

    class Err(Exception):
        pass

    def exc_info(n, path):
        d = D(n)
        out = open(path, "w")          # left open: flushed when the function returns
        out.write(f"written {n}")
        try:
            raise Err(n)
        except Err:
            kind = sys.exc_info()[0]
        return kind.__name__

    def where(n):
        d = D(10 + n)
        return Where(sys._getframe(), n).line + (sys._getframe(), n)[1]   # (no cycle)

    for i in range(3):
        exc_info(i, __file__ + ".txt")
        print("after exc_info", i)
        with open(__file__ + ".txt") as f:
            print(f.read())
        where(i)
        print("after where", i)
''')


def test_tuples_holding_frames_are_not_held(tmp_path):
    script = tmp_path / "tuples.py"
    script.write_text(TUPLES)
    plain = run_plain(script)
    assert plain.returncode == 0, plain.stderr
    assert "del 0\nafter exc_info 0\nwritten 0\ndel 10\nafter where 0\n" in plain.stdout
    rec = run_recorded(script, tmp_path / "full.wt", mode="full")
    assert (rec.stdout, rec.stderr, rec.returncode) == (plain.stdout, plain.stderr, 0)


def test_no_metaclass_hash_runs_in_serial():
    hashed = []

    class Meta(type):
        def __hash__(cls):
            hashed.append(cls)
            return 1

    class Slotted(metaclass=Meta):
        __slots__ = ()                  # no weak reference: serial decides whether to hold it

    log = ValueLog(None, lambda: None)
    x = Slotted()
    s = log.serial(x)
    assert log.serial(x) == s
    assert hashed == []
    frame_tuple = (Slotted(), log)      # a plain tuple: held (no frame among its items)
    log.serial(frame_tuple)
    assert address(frame_tuple) in log.pins and hashed == []
