"""Shared test helpers: run programs plain and under `wholetrace record`, read traces back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from wholetrace.store import Recording
from naive_decode import raw_events
from oracles.settrace_lines import single_simple_statement_lines

ENV = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}


def run_plain(script: Path, *args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          cwd=cwd or script.parent, timeout=timeout, env=ENV, stdin=subprocess.DEVNULL)


def run_recorded(script: Path, out: Path, *args: str, mode: str = "blocks", include: tuple[str, ...] = (),
                 cwd: Path | None = None, timeout: float = 300, quiet: bool = True,
                 options: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """``record`` ``script`` (``args``: the program's; ``options``: more of ``record``'s own)."""
    cmd = [sys.executable, "-m", "wholetrace.cli", "record", "--mode", mode, *options, "-o", str(out)]
    cmd += [a for inc in include for a in ("--include", inc)]
    cmd += (["-q"] if quiet else []) + [str(script), *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd or script.parent, timeout=timeout,
                          env=ENV, stdin=subprocess.DEVNULL)


#: cli_in_process's deadline.  The compat subsets (``WHOLETRACE_COMPAT``) compile the read-side
#: kernels inside their first read command (no AOT module there; ~100 CPU-s on 3.12 for
#: ``paths --json``): at load 25-30 that passed 1,200 s of wall and ended the whole subset
#: (docs/design.md, "Test suite time, wave 24"), so they get an hour.
IN_PROCESS_DEADLINE = 3600.0 if os.environ.get("WHOLETRACE_COMPAT") else 1200.0


def cli_in_process(*argv: str, timeout: float = IN_PROCESS_DEADLINE) -> tuple[int, str, str]:
    """A read-side command (``trace``, ``counts``, ``slice``, ...) run by ``wholetrace.cli.main``
    in this process: exit status, stdout, stderr.  The same code as ``python -m wholetrace.cli``
    without a new interpreter importing numpy/numba and loading the kernels (~1 CPU-s a call);
    ``record`` stays a subprocess (the program must run in an interpreter of its own)."""
    import contextlib
    import io

    from wholetrace.cli import main

    import faulthandler

    assert argv[:1] != ("record",), "record in a subprocess: run_recorded"
    out, err = io.StringIO(), io.StringIO()
    # the subprocess form had a timeout: a read command that never ends stops the worker with
    # every thread's traceback instead of hanging ``make test``.  Longer than the subprocesses'
    # 300 s: the call runs in the test process, so its first numba compiles of the read-side
    # kernels (a cold cache: the compat subsets, a fresh tree) are inside it, and the exit stops
    # the whole pytest process, silently under fd capture (the compat subsets run one process:
    # at load 11-16 a 3.12 run died in test_path_raising's first `paths --json`, status 1, no
    # summary; docs/design.md, "Test suite time, wave 21")
    faulthandler.dump_traceback_later(timeout, exit=True)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(list(argv))
            except SystemExit as exc:  # as the interpreter maps it at exit
                if exc.code is None or isinstance(exc.code, int):
                    rc = exc.code or 0
                else:
                    print(exc.code, file=sys.stderr)
                    rc = 1
    finally:
        faulthandler.cancel_dump_traceback_later()
    return rc, out.getvalue(), err.getvalue()


def fbe_lines(path: Path, short: bool = True) -> list[str]:
    """The F/B/X/E trace of every stream as lines; ``short`` names functions by qualname only."""
    out: list[str] = []
    with Recording(path) as rec:
        labels = {f.fid: f"{f.qualname}@{f.file}:{f.firstline}" for f in rec.functions()}
        names = {f.fid: f.qualname for f in rec.functions()}
        for st in rec.streams():
            out.append(f"T {st.kind}")
            for kind, v in raw_events(rec.iter_chunks(st.sid)):
                if kind == "F":
                    out.append(f"F {names[v] if short else labels[v]}")
                elif kind == "E":
                    out.append("E")
                else:
                    out.append(f"{kind} {v}")
    return out


def line_trace(path: Path) -> dict[str, list[str]]:
    """Per stream name: events with blocks and exception origins shown as source lines.

    ``F qualname`` / ``B <line of the block's first statement>`` / ``X <line of the origin
    statement>`` / ``E`` — readable, and independent of how blocks are numbered.
    """
    from wholetrace.instrument.cfg import CFG

    out: dict[str, list[str]] = {}
    with Recording(path) as rec:
        cfgs = {f.fid: CFG.from_json(f.cfg) for f in rec.functions()}
        for st in rec.streams():
            lines: list[str] = []
            stack: list[int] = []
            for kind, v in raw_events(rec.iter_chunks(st.sid)):
                if kind == "F":
                    stack.append(v)
                    lines.append(f"F {cfgs[v].qualname}")
                elif kind == "E":
                    stack.pop()
                    lines.append("E")
                elif kind == "B":
                    cfg = cfgs[stack[-1]]
                    lines.append(f"B {cfg.stmts[cfg.blocks[v].stmts[0]].line}")
                else:
                    lines.append(f"X {cfgs[stack[-1]].stmts[v].line}" if v >= 0 else "X ?")
            out[st.name] = lines
    return out


def profiles(path: Path) -> dict[tuple[str, str, int], Any]:
    """Every function's counts in a recording of any mode, keyed by (file, qualname, first line)."""
    from wholetrace.profile import profiles as profiles_of
    from wholetrace.profile.model import by_key
    from wholetrace.trace.session import Trace

    with Trace.open(path) as trace:
        got = profiles_of(trace)
    out = by_key(got)
    assert len(out) == len(got), f"{path}: two functions share (file, qualname, first line)"
    return out


def assert_same_counts(want: dict, got: dict, what: object, edges: bool = False) -> None:
    """The same functions with equal block (ENTRY and EXIT included), statement and call counts,
    and equal edge counts where ``got`` knows them (all of them if ``edges``)."""
    import numpy as np

    assert got.keys() == want.keys(), what
    for key, pa in want.items():
        pb = got[key]
        assert np.array_equal(np.asarray(pa.blocks), np.asarray(pb.blocks)), (what, key, "blocks")
        assert np.array_equal(np.asarray(pa.stmts), np.asarray(pb.stmts)), (what, key, "statements")
        ea, eb = np.asarray(pa.edges), np.asarray(pb.edges)
        known = eb >= 0
        assert known.all() or not edges, (what, key, "unknown edges")
        assert np.array_equal(ea[known], eb[known]), (what, key, "edges")
        if known.all():
            assert pa.calls == pb.calls, (what, key, "calls")


def record_program(tmp: Path, name: str, source: str | None = None, size: str = "small") -> Path:
    """Record ``source`` (written to ``tmp/NAME.py``) or, without it, the corpus program ``name``
    in `blocks` mode to ``tmp/NAME.wt``; asserts the run succeeded."""
    from corpus import PROGRAMS

    out = tmp / f"{name}.wt"
    if source is not None:
        script = tmp / f"{name}.py"
        script.write_text(source)
        include: tuple[str, ...] = ()
    else:
        script = PROGRAMS[name].write(tmp / name, size)
        include = tuple(PROGRAMS[name].include)
    proc = run_recorded(script, out, include=include)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out


def compare_lines(path: Path, files: set[str], oracle: dict[tuple[str, int], int]) -> int:
    """Assert that every selected line of ``files`` has one wholetrace statement whose count in
    recording ``path`` equals the oracle's; return the number of lines compared."""
    ours: dict[tuple[str, int], int] = {}
    for (file, _qualname, _first), prof in profiles(path).items():
        for st, n in zip(prof.cfg.stmts, prof.stmts):
            if st.line == st.end_line and st.kind == "simple":
                ours[(file, st.line)] = ours.get((file, st.line), 0) + int(n)
    compared = 0
    for file in sorted(files):
        source = Path(file).read_text()
        for line in sorted(single_simple_statement_lines(source)):
            assert (file, line) in ours, f"{file}:{line}: no statement recorded for a selected line"
            want = oracle.get((file, line), 0)
            assert ours[(file, line)] == want, f"{file}:{line}: {source.splitlines()[line - 1].strip()}"
            compared += 1
    return compared
