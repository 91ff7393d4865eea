"""``--mode full`` never holds a frame or a traceback it records (review19c P2).

Neither takes a weak reference, so the value log used to hold each one it recorded until a
sweep found it the only owner; a frame held past its function's return keeps the function's
locals alive, so a finaliser ran late (``sys._getframe().f_lineno``, ``e.__traceback__``) or
never (a generator that ignored ``GeneratorExit``, kept by the frame of a value probe that the
program's tracer had read).  Oracle: the plain run's stdout (the order of the finalisers)."""

from __future__ import annotations

import textwrap

from wtutil import run_plain, run_recorded
from wholetrace.wet.capture import load
from wholetrace.runtime.values import OBJ
from wholetrace.store import Recording

PROGRAM = textwrap.dedent('''
    import sys

    class D:
        def __init__(self, n):
            self.n = n
        def __del__(self):
            print("del", self.n)

    class Err(Exception):
        pass

    def own_frame(n):
        d = D(n)
        print("line", sys._getframe().f_lineno)
        return n

    def own_traceback(n):
        d = D(n)
        try:
            raise Err(n)
        except Err as e:
            print("tb", e.__traceback__.tb_lineno)
        return n

    def tracer(f, event, arg):
        if f.f_code.co_filename != __file__:
            return None
        return tracer

    def g(x):
        try:
            yield 0
        finally:
            try:
                yield 1
            finally:
                print("inner finally", x)

    for i in range(3):
        own_frame(i)
        print("after own_frame", i)
        own_traceback(10 + i)
        print("after own_traceback", i)

    sys.settrace(tracer)
    for x in (0, 1):
        it = g(x)
        next(it)
        try:
            it.close()
        except RuntimeError as e:
            print("rt", e)
        print("drop", x)
        it = None
        print("dropped", x)
    sys.settrace(None)
    print("end")
''')


def test_frames_and_tracebacks_are_not_held(tmp_path):
    script = tmp_path / "unheld.py"
    script.write_text(PROGRAM)
    plain = run_plain(script)
    assert plain.returncode == 0, plain.stderr
    assert "inner finally 0\ndropped 0" in plain.stdout      # the program shows what it tests
    out = tmp_path / "full.wt"
    rec = run_recorded(script, out, mode="full")
    assert (rec.stdout, rec.stderr, rec.returncode) == (plain.stdout, plain.stderr, 0)
    with Recording(out) as r:
        log = load(r)
    serials = {int(v) for st in log.streams.values() for t, v in zip(st.tag, st.val) if t == OBJ}
    assert serials <= set(log.object_types)                  # every object record has its type
    names = sorted(log.object_types[s] for s in serials)
    assert names.count("builtins.frame") >= 3 and "builtins.traceback" in names, names


EXCEPTIONS = textwrap.dedent('''
    class D:
        def __init__(self, n):
            self.n = n
        def __del__(self):
            print("del", self.n)

    def caught(n, path):
        d = D(n)
        out = open(path, "w")          # left open: closed (and flushed) when the function returns
        out.write(f"written {n}")
        try:
            int("not a number")
        except ValueError as e:
            print("caught", type(e).__name__, e.args[0][:7])
        return n

    for i in range(3):
        caught(i, __file__ + ".txt")
        print("after", i)
        with open(__file__ + ".txt") as f:
            print(f.read())
''')


def test_built_in_exceptions_are_not_held(tmp_path):
    """A built-in exception takes no weak reference: held, it kept its traceback's frames, so
    the locals of a function that caught it were finalised at exit (files unflushed)."""
    script = tmp_path / "exc.py"
    script.write_text(EXCEPTIONS)
    plain = run_plain(script)
    assert plain.returncode == 0, plain.stderr
    assert "del 0\nafter 0\nwritten 0\n" in plain.stdout
    rec = run_recorded(script, tmp_path / "full.wt", mode="full")
    assert (rec.stdout, rec.stderr, rec.returncode) == (plain.stdout, plain.stderr, 0)


CLASS_PROPERTY = textwrap.dedent('''
    class Liar:
        __slots__ = ("a",)
        @property
        def __class__(self):
            print("__class__ read")
            return int

    x = Liar()
    x.a = 1
    print(x.a)
''')


def test_a_class_property_of_the_program_is_not_read(tmp_path):
    """A recorded object's ``__class__`` is the program's to read (``isinstance`` read it)."""
    script = tmp_path / "liar.py"
    script.write_text(CLASS_PROPERTY)
    plain = run_plain(script)
    assert plain.stdout == "1\n"
    rec = run_recorded(script, tmp_path / "full.wt", mode="full")
    assert (rec.stdout, rec.stderr, rec.returncode) == (plain.stdout, plain.stderr, 0)
