"""Exact traces for threads, generators, yield from, asyncio tasks, exceptions and early exits."""

from __future__ import annotations

import textwrap
from pathlib import Path


from wholetrace.store import Recording
from wtutil import line_trace, run_plain, run_recorded


def record(tmp_path: Path, source: str, *args: str) -> tuple[dict[str, list[str]], object, object, dict]:
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(source))
    plain = run_plain(script, *args)
    out = tmp_path / "prog.wt"
    rec = run_recorded(script, out, *args)
    assert (rec.returncode, rec.stdout, rec.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    with Recording(out) as r:
        meta = dict(r.meta)
    return line_trace(out), plain, rec, meta


def split(s: str) -> list[str]:
    return [e.strip() for e in s.replace("\n", " ").split(" / ")]


def test_threads_get_their_own_stream(tmp_path: Path) -> None:
    traces, _plain, _rec, meta = record(tmp_path, """\
        import threading

        def work(n):
            total = 0
            for i in range(n):
                total += i
            return total

        t = threading.Thread(target=work, args=(2,), name="worker")
        t.start()
        t.join()
        print(work(1))
        """)
    assert meta["ended"] == "exit"
    assert traces["MainThread"] == split(
        "F <module> / B 1 / B 9 / B 10 / B 11 / B 12 / F work / B 4 / B 5 / B 5 / B 6 / B 5 / B 7 / E / E")
    assert traces["worker"] == split(
        "F work / B 4 / B 5 / B 5 / B 6 / B 5 / B 6 / B 5 / B 7 / E")


def test_generators_leave_at_yield_and_enter_on_resume(tmp_path: Path) -> None:
    traces, plain, _rec, _meta = record(tmp_path, """\
        def inner():
            yield 1
            yield 2

        def outer():
            x = yield 0
            yield from inner()
            return x

        g = outer()
        print(next(g))
        print(g.send(5))
        print(list(g))
        """)
    assert plain.stdout == "0\n1\n[2]\n"
    # outer suspends for the whole `yield from`: inner's activations nest under the resumer
    assert traces["MainThread"] == split(
        "F <module> / B 1 / B 10 / B 11 / F outer / B 6 / E / B 12 / F outer / B 7 / E / F inner / B 2 / E"
        " / B 13 / F inner / B 3 / E / F inner / E / F outer / B 8 / E / E")


def test_generator_closed_and_thrown_into(tmp_path: Path) -> None:
    traces, plain, _rec, _meta = record(tmp_path, """\
        def g():
            try:
                yield 1
            except ValueError:
                yield 2
            finally:
                print("closing")

        it = g()
        next(it)
        print(it.throw(ValueError))
        it.close()
        """)
    assert plain.stdout == "2\nclosing\n"
    # throw() enters at the yield (ENTER, then the exception edge to the handler);
    # close() raises GeneratorExit at the second yield, through finally, out to EXIT.
    assert traces["MainThread"] == split(
        "F <module> / B 1 / B 9 / B 10 / F g / B 3 / E / B 11 / F g / X 3 / B 5 / E / B 12"
        " / F g / X 5 / B 7 / X 5 / E / E")


def test_asyncio_tasks_are_streams(tmp_path: Path) -> None:
    traces, plain, _rec, _meta = record(tmp_path, """\
        import asyncio

        async def child(n):
            await asyncio.sleep(0)
            return n * 2

        async def main():
            a = asyncio.create_task(child(1), name="c1")
            b = await child(2)
            return (await a) + b

        print(asyncio.run(main()))
        """)
    assert plain.stdout == "6\n"
    assert traces["MainThread"] == split("F <module> / B 1 / B 12 / E")
    # wave 21 (MED-3a): an await ends its block (B 5); driven by a task, LEAVE/ENTER are recorded
    # only where a suspending block may be followed by EXIT (B 10: `return (await a) + b`)
    assert traces["Task-1"] == split("F main / B 8 / B 9 / F child / B 4 / B 5 / E / B 10 / E / F main / E")
    assert traces["c1"] == split("F child / B 4 / B 5 / E")


def test_exceptions_caught_at_several_depths(tmp_path: Path) -> None:
    traces, plain, _rec, _meta = record(tmp_path, """\
        def deep(n):
            if n == 0:
                raise ValueError("bottom")
            return deep(n - 1)

        def middle():
            try:
                deep(2)
            finally:
                print("cleanup")

        def top():
            try:
                middle()
            except ValueError as e:
                print("caught", e)
            return 1

        top()
        """)
    assert plain.stdout == "cleanup\ncaught bottom\n"
    assert traces["MainThread"] == split(
        "F <module> / B 1 / B 19 / F top / B 14 / F middle / B 8 / F deep / B 2 / B 4 / F deep / B 2 / B 4"
        " / F deep / B 2 / B 3 / X 3 / E / X 4 / E / X 4 / E / X 8 / B 10 / X 8 / E / X 14 / B 16 / B 17 / E / E")


def test_sys_exit_in_nested_calls(tmp_path: Path) -> None:
    traces, plain, _rec, meta = record(tmp_path, """\
        import sys

        def leaf():
            print("leaving")
            sys.exit(3)

        def mid():
            leaf()
            print("not reached")

        mid()
        """)
    assert plain.returncode == 3
    assert meta["ended"] == "sys.exit" and meta["exit_code"] == 3
    assert traces["MainThread"] == split(
        "F <module> / B 1 / B 11 / F mid / B 8 / F leaf / B 4 / B 5 / X 5 / E / X 8 / E / X 11 / E")


def test_keyboard_interrupt(tmp_path: Path) -> None:
    traces, plain, _rec, meta = record(tmp_path, """\
        def f():
            raise KeyboardInterrupt

        print("start")
        f()
        """)
    assert plain.returncode == -2 and "KeyboardInterrupt" in plain.stderr
    assert meta["ended"] == "keyboard-interrupt"
    assert traces["MainThread"] == split("F <module> / B 1 / B 4 / B 5 / F f / B 2 / X 2 / E / X 5 / E")


def test_uncaught_exception_traceback_is_unchanged(tmp_path: Path) -> None:
    traces, plain, _rec, meta = record(tmp_path, """\
        def f(x):
            return 1 / x
        try:
            f(0)
        except ZeroDivisionError as e:
            raise KeyError("k") from e
        """)
    assert plain.returncode == 1 and "ZeroDivisionError" in plain.stderr and "KeyError" in plain.stderr
    assert meta["ended"] == "exception"
    assert traces["MainThread"] == split("F <module> / B 1 / B 4 / F f / B 2 / X 2 / E / X 4 / B 6 / X 6 / E")


def test_daemon_thread_still_running(tmp_path: Path) -> None:
    traces, plain, rec, meta = record(tmp_path, """\
        import threading, time

        def spin(ev):
            ev.set()
            while True:
                time.sleep(0.01)

        ev = threading.Event()
        threading.Thread(target=spin, args=(ev,), daemon=True, name="spinner").start()
        ev.wait()
        print("main done")
        """)
    assert plain.stdout == "main done\n" and meta["ended"] == "exit"
    spin = traces["spinner"]
    # still inside spin at the end: the recorder closes the activation as an early exit from
    # the statement in flight (EXC s LEAVE, docs/design.md "Activations still open at the end")
    assert spin[:3] == ["F spin", "B 4", "B 5"] and spin.count("E") == 1
    assert spin[-2:] in (["X 5", "E"], ["X 6", "E"]), spin[-4:]


def test_script_environment_is_unchanged(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helper.py").write_text("VALUE = 42\ndef who():\n    return __name__\n")
    (pkg / "main.py").write_text(textwrap.dedent("""\
        import sys, os
        from . import helper
        from .helper import who
        print(__name__, __package__, os.path.basename(__file__), sys.argv[1:], helper.VALUE, who())
        print(os.path.basename(sys.argv[0]), sys.path[0] == os.getcwd())
        """))
    import subprocess, sys
    from wtutil import ENV
    plain = subprocess.run([sys.executable, "-m", "pkg.main", "a", "-x"], cwd=tmp_path, capture_output=True, text=True, env=ENV)
    rec = subprocess.run([sys.executable, "-m", "wholetrace.cli", "record", "-q", "-o", "m.wt", "-m", "pkg.main", "a", "-x"],
                         cwd=tmp_path, capture_output=True, text=True, env=ENV)
    assert plain.returncode == 0, plain.stderr
    assert (rec.returncode, rec.stdout, rec.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    traces = line_trace(tmp_path / "m.wt")
    assert "F who" in traces["MainThread"]        # modules under the package are instrumented
    script = tmp_path / "s.py"
    script.write_text("import sys\nprint(__name__, __file__, sys.argv, sys.path[0])\n")
    a, b = run_plain(script, "1", "--two"), run_recorded(script, tmp_path / "s.wt", "1", "--two")
    assert (a.returncode, a.stdout, a.stderr) == (b.returncode, b.stdout, b.stderr)


def _nested_loops(depth: int) -> str:
    lines = ["def f(x):"] + [" " * 4 * (i + 1) + f"for a{i} in range(1):" for i in range(depth)]
    return "\n".join(lines + [" " * 4 * (depth + 1) + "x += 1", "    return x", "print(f(1))"]) + "\n"


def _deepest_compilable_nesting() -> int:
    """The most nested loops this interpreter compiles (the limit moved in 3.13)."""
    depth = 1
    while depth < 90:
        try:
            compile(_nested_loops(depth + 1), "deep.py", "exec", dont_inherit=True)
        except SyntaxError:
            return depth
        depth += 1
    raise AssertionError("no static nesting limit below 90 on this interpreter")


def test_code_that_cannot_be_instrumented_runs_plain_with_a_warning(tmp_path: Path) -> None:
    # loops nested to this interpreter's limit are legal; the rewriter's extra try/finally passes it
    script = tmp_path / "deep.py"
    script.write_text(_nested_loops(_deepest_compilable_nesting()))
    plain = run_plain(script)
    rec = run_recorded(script, tmp_path / "deep.wt")
    assert plain.stdout == rec.stdout == "2\n" and rec.returncode == 0
    warning = rec.stderr.strip()
    assert warning.startswith("wholetrace: warning: ") and "deep.py: left uninstrumented" in warning
    assert "\n" not in warning
