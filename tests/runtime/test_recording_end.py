"""The end of a recording: suspended generators, unraisable reports, the program's stdout/stderr (wave 21)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from oracles.settrace_lines import line_counts
from wtutil import ENV, cli_in_process, compare_lines, run_plain, run_recorded

# every mode but full, whose recorder closes the generators left suspended itself (Recorder.close_suspended)
MODES = (("blocks", ()), ("count", ()), ("witness", ()), ("path", ("--no-wpp",)))
ALL = MODES + (("full", ()),)


def _write(tmp: Path, name: str, source: str) -> Path:
    path = tmp / name
    path.write_text(textwrap.dedent(source))
    return path


def _same(a: subprocess.CompletedProcess, b: subprocess.CompletedProcess) -> tuple:
    def norm(s: str) -> str:
        return re.sub(r"0x[0-9a-f]+", "0x?", s)
    return (a.returncode, norm(a.stdout), norm(a.stderr)), (b.returncode, norm(b.stdout), norm(b.stderr))


def _counts(path: Path) -> dict:
    code, out, err = cli_in_process("counts", "--format", "json", str(path))
    assert code == 0, err
    return json.loads(out)


def _ran_to_end(path: Path, prog: Path) -> bool:
    """The recording is complete: it counts the program's last line once."""
    lines = _counts(path)["lines"][str(prog.resolve())]
    return lines[str(len(prog.read_text().splitlines()))] == 1


# HIGH-1: the generator's cleanup raises (or exits) at the program's end; a program's own hook
FINALLY_RAISES = '''
    def g():
        try:
            yield 1
        finally:
            raise ValueError("finally raises")
    it = g()
    next(it)
    print("end")
'''

OWN_HOOK = '''
    import sys
    def hook(args):
        sys.__stdout__.write(f"hook {type(args).__name__} {args.exc_type.__name__} {args.err_msg} "
                             f"{type(args.object).__name__}\\n")
    sys.unraisablehook = hook
    def g():
        try:
            yield 1
        finally:
            sys.exit(4)
    it = g()
    next(it)
    print("end")
'''


@pytest.mark.parametrize("mode,options", MODES, ids=[m + "".join(o) for m, o in MODES])
def test_cleanup_that_raises_at_exit_is_plain(tmp_path: Path, mode: str, options: tuple[str, ...]) -> None:
    """Before: exit status 1, wholetrace's TypeError, an empty recording."""
    for name, source in (("raises.py", FINALLY_RAISES), ("hook.py", OWN_HOOK)):
        prog = _write(tmp_path, name, source)
        plain = run_plain(prog)
        rec = run_recorded(prog, tmp_path / "x.wt", mode=mode, options=options)
        assert _same(plain, rec)[0] == _same(plain, rec)[1]
        assert _ran_to_end(tmp_path / "x.wt", prog)


def test_cleanup_that_raises_full_mode(tmp_path: Path) -> None:
    """Full mode closes the generator itself, after the recording (earlier than plain's
    shutdown): a real ``UnraisableHookArgs`` for the program's hook, the default hook's report."""
    prog = _write(tmp_path, "hook.py", OWN_HOOK)
    rec = run_recorded(prog, tmp_path / "x.wt", mode="full")
    assert (rec.returncode, rec.stdout) == (0, "end\nhook UnraisableHookArgs SystemExit None generator\n"), rec.stderr
    assert _ran_to_end(tmp_path / "x.wt", prog)
    prog = _write(tmp_path, "raises.py", FINALLY_RAISES)
    rec = run_recorded(prog, tmp_path / "y.wt", mode="full")
    assert rec.returncode == 0 and "Exception ignored in: <generator object g" in rec.stderr, rec.stderr
    assert rec.stderr.endswith("ValueError: finally raises\n"), rec.stderr
    assert _ran_to_end(tmp_path / "y.wt", prog)


# HIGH-3: a daemon thread's suspended generator: plain never runs its finally
DAEMON = '''
    import threading, time
    def g():
        try:
            yield 1
            yield 2
        finally:
            print("finally g ran")
    started = threading.Event()
    def daemon():
        it = g()
        next(it)
        started.set()
        time.sleep(100)
    threading.Thread(target=daemon, daemon=True).start()
    started.wait()
    print("main done")
'''

# MED-4: left to the interpreter, the cleanup runs in plain's order (interleaved with __del__)
ORDER = '''
    def g(name):
        try:
            yield 1
        finally:
            print("finally", name)
    class D:
        def __del__(self):
            print("del D")
    a = g("a"); next(a)
    d = D()
    b = g("b"); next(b)
    print("end")
'''


@pytest.mark.parametrize("mode,options", ALL, ids=[m + "".join(o) for m, o in ALL])
def test_daemon_threads_generators_are_not_closed(tmp_path: Path, mode: str, options: tuple[str, ...]) -> None:
    """Before: "finally g ran" printed (the recorder closed the daemon thread's generator)."""
    prog = _write(tmp_path, "daemon.py", DAEMON)
    plain = run_plain(prog)
    rec = run_recorded(prog, tmp_path / "x.wt", mode=mode, options=options)
    assert _same(plain, rec)[0] == _same(plain, rec)[1]


def test_daemon_generator_counts_are_the_line_oracles(tmp_path: Path) -> None:
    """blocks' line counts of the daemon program equal the settrace tracer's (the finally: 0)."""
    prog = _write(tmp_path, "daemon.py", DAEMON)
    run_recorded(prog, tmp_path / "b.wt", mode="blocks")
    files = {str(prog.resolve())}
    assert compare_lines(tmp_path / "b.wt", files, line_counts(prog, [], files)) > 5


@pytest.mark.parametrize("mode,options", MODES, ids=[m + "".join(o) for m, o in MODES])
def test_left_over_generators_close_in_plain_order(tmp_path: Path, mode: str, options: tuple[str, ...]) -> None:
    """Before: "finally a / finally b / del D" (closed by the recorder before shutdown)."""
    prog = _write(tmp_path, "order.py", ORDER)
    plain = run_plain(prog)
    assert plain.stdout == "end\nfinally a\ndel D\nfinally b\n"
    rec = run_recorded(prog, tmp_path / "x.wt", mode=mode, options=options)
    assert _same(plain, rec)[0] == _same(plain, rec)[1]
    counts = _counts(tmp_path / "x.wt")
    run_recorded(prog, tmp_path / "b.wt", mode="blocks")
    assert counts == _counts(tmp_path / "b.wt")


# HIGH-2, MED-5: the program leaves its stdout/stderr closed, None, or failing
STREAMS = {
    "closeout": 'import sys\nprint("hi")\nsys.stdout.close()\n',
    "noneout": 'import sys\nprint("hi")\nsys.stdout = None\n',
    "noneboth": 'import sys\nprint("hi")\nsys.stdout = None\nsys.stderr = None\n',
    "closeerr": 'import sys\nprint("hi")\nsys.stderr.close()\n',
    "flushraises": 'import sys, io\nclass W(io.StringIO):\n    def flush(self): raise OSError("flush fails")\n'
                   'sys.stdout = W()\nprint("hi")\n',
    # plain calls the program's flush once, at exit
    "flushcount": 'import os, sys\nclass W:\n    def write(self, s): os.write(1, s.encode())\n'
                  '    def flush(self): os.write(1, b"<flush>")\nsys.stdout = W()\nprint("hi")\n',
}


@pytest.mark.parametrize("name", sorted(STREAMS))
@pytest.mark.parametrize("quiet", (True, False), ids=("q", "summary"))
def test_program_streams_at_exit(tmp_path: Path, name: str, quiet: bool) -> None:
    """Before: exit status 1 and 0 events (closeout, noneout, noneboth), a traceback of
    wholetrace's (flushraises), two ``<flush>`` (flushcount), exit 1 without -q (closeerr)."""
    prog = _write(tmp_path, f"{name}.py", STREAMS[name])
    plain = run_plain(prog)
    for mode, options in ALL:
        rec = run_recorded(prog, tmp_path / "x.wt", mode=mode, options=options, quiet=quiet)
        want, got = _same(plain, rec)
        assert got[:2] == want[:2], (mode, rec.stderr)
        if quiet:
            assert got[2] == want[2], mode
        assert _ran_to_end(tmp_path / "x.wt", prog), mode


def test_recorded_child_with_closed_stdout(tmp_path: Path) -> None:
    """A recorded child process: its exit status and output are plain's (before: 1)."""
    _write(tmp_path, "closeout.py", STREAMS["closeout"])
    _write(tmp_path, "raises.py", FINALLY_RAISES)
    prog = _write(tmp_path, "parent.py", '''
        import os, subprocess, sys
        here = os.path.dirname(os.path.abspath(__file__))
        for name in ("closeout.py", "raises.py"):
            r = subprocess.run([sys.executable, os.path.join(here, name)], capture_output=True, text=True)
            print(name, r.returncode, repr(r.stdout), r.stderr.splitlines()[-1:])
    ''')
    plain = run_plain(prog)
    rec = run_recorded(prog, tmp_path / "x.wt", mode="blocks")
    assert _same(plain, rec)[0] == _same(plain, rec)[1]


def test_broken_pipe_at_exit_is_reported(tmp_path: Path) -> None:
    """LOW-7: a block-buffered stdout whose reader left: plain's report and exit status 120
    (before: nothing on stderr)."""
    prog = _write(tmp_path, "pipe.py", 'import sys, time\nsys.stdout.write("x" * 100 + "\\n")\ntime.sleep(0.5)\n')
    env = {k: v for k, v in ENV.items() if k != "PYTHONUNBUFFERED"}

    def run(cmd: list[str]) -> tuple[int, str]:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
        p.stdout.close()
        err = p.stderr.read().decode()
        return p.wait(), re.sub(r"0x[0-9a-f]+", "0x?", err)

    plain = run([sys.executable, str(prog)])
    assert plain[0] == 120 and "BrokenPipeError" in plain[1]
    for mode in ("blocks", "count", "path"):
        rec = run([sys.executable, "-m", "wholetrace.cli", "record", "-q", "--mode", mode,
                   "-o", str(tmp_path / "x.wt"), str(prog)])
        assert rec == plain, mode


KEYBOARD_INTERRUPT = '''
    def g():
        try:
            yield 1
        finally:
            print("fin g")
    x = g()
    next(x)
    print("end", flush=True)
    raise KeyboardInterrupt
'''


@pytest.mark.parametrize("mode,options", MODES, ids=[m + "".join(o) for m, o in MODES])
def test_keyboard_interrupt_exit_closes_left_over_generators(tmp_path: Path, mode: str, options: tuple[str, ...]) -> None:
    """An uncaught KeyboardInterrupt: plain closes the suspended generator at shutdown (its
    ``finally`` prints) before it kills itself with SIGINT; record's SIGINT exit comes before any
    shutdown, so the runner closes them after the recording (review21e HIGH-A: "fin g" missing)."""
    prog = _write(tmp_path, "kbi.py", KEYBOARD_INTERRUPT)
    plain = run_plain(prog)
    rec = run_recorded(prog, tmp_path / "x.wt", mode=mode, options=options)
    assert "fin g" in plain.stdout
    assert _same(plain, rec)[0] == _same(plain, rec)[1]
