"""Shared helpers for benchmarks: machine line, geometric mean, section-wise table writing, timed process trees."""

from __future__ import annotations

import datetime as _dt
import math
import os
import platform
import re
import resource
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
HEADER = "# Benchmarks\n\nMeasured tables, one section per benchmark script; each section is rewritten by its script.\n"


def machine() -> str:
    """One line naming the date, CPU count and Python used for a measurement."""
    return (f"{_dt.date.today().isoformat()}, {os.cpu_count()} CPUs, "
            f"Python {platform.python_version()} on {platform.machine()} ({platform.system()})")


def geomean(values: Iterable[float]) -> float:
    vals = [v for v in values if v > 0]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else float("nan")


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A GitHub markdown table."""
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for row in rows:
        out.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(out) + "\n"


def write_section(name: str, body: str, doc: Path = DOC) -> None:
    """Replace (or append) the section ``name`` of docs/benchmarks.md with ``body``."""
    text = doc.read_text() if doc.exists() else HEADER
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    block = f"{start}\n{body.rstrip()}\n{end}"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    text = pattern.sub(lambda _m: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text)


def corpus_options(description: str, default_runs: int, program_names: Sequence[str],
                   argv: list[str] | None, extra: Sequence[tuple[str, dict]] = ()) -> tuple[object, list[str], int, str, bool]:
    """The command line shared by the corpus benchmarks.

    Returns (args, program names, rounds, size, whether to write docs/benchmarks.md).
    """
    import argparse

    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--programs", help="comma-separated program names (default: all of the registry)")
    ap.add_argument("--runs", type=int, default=None,
                    help=f"interleaved rounds (default {default_runs}; 1 with --quick)")
    ap.add_argument("--quick", action="store_true", help="small sizes, 1 round, do not write docs")
    ap.add_argument("--no-write", action="store_true", help="print only, do not write docs/benchmarks.md")
    ap.add_argument("--python", metavar="PATH",
                    help="run this benchmark under another interpreter (its environment needs wholetrace's "
                         "dependencies and coverage: `make test-compat` makes .venv-X.Y); prints only")
    for flag, kwargs in extra:
        ap.add_argument(flag, **kwargs)
    args = ap.parse_args(argv)
    if args.python:
        reexec(args.python, argv)
    names = args.programs.split(",") if args.programs else list(program_names)
    unknown = [n for n in names if n not in program_names]
    if unknown:
        ap.error(f"unknown program(s) {', '.join(unknown)}; choose from {', '.join(program_names)}")
    runs = args.runs if args.runs is not None else (1 if args.quick else default_runs)
    return args, names, runs, "small" if args.quick else "bench", not (args.quick or args.no_write)


REPO = Path(__file__).resolve().parent.parent

#: How the timing benchmarks start ``wholetrace``: the console script beside the interpreter (what
#: the README's ``wholetrace record`` runs; ``python -m wholetrace.cli`` adds runpy, importlib.util
#: and contextlib: 7.1 M instructions more on an empty recording, 105.5 against 98.4 M, which users do
#: not pay), else the same two lines through ``-c``.
#: Use as ``[sys.executable, *ENTRY, "record", ...]``.
_SCRIPT = Path(sys.executable).parent / "wholetrace"
ENTRY = [str(_SCRIPT)] if _SCRIPT.is_file() else ["-c", "import sys\nfrom wholetrace.cli import main\nsys.exit(main())"]


def reexec(python: str, argv: list[str] | None) -> None:
    """Replace this process by the same benchmark run under ``python``, printing only
    (docs/benchmarks.md holds the tables of the reference interpreter; ``versions.py`` has
    the per-version one)."""
    import sys

    rest = list(sys.argv[1:] if argv is None else argv)
    i = rest.index("--python") if "--python" in rest else -1
    if i >= 0:
        del rest[i:i + 2]
    rest = [a for a in rest if not a.startswith("--python=")]
    script = os.path.abspath(sys.argv[0])
    os.execv(python, [python, script, *rest, "--no-write"])


#: prctl(2) option: orphaned descendants are re-parented to this process instead of init
PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux): ``record --wpp``'s builder
    is started through ``/bin/sh ... &`` and outlives its parent shell, so without this its CPU
    never reaches ``RUSAGE_CHILDREN`` here and nobody waits for its exit. False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


@dataclass
class Run:
    """One timed run of a command."""
    wall: float          #: seconds from the start until the command's own process exited
    cpu: float           #: user+sys seconds of the whole tree: the process, what it reaped, the orphans reaped here
    orphan_cpu: float    #: of ``cpu``: descendants that outlived their parent (``record --wpp``'s builder)
    orphans: int         #: how many such descendants were reaped
    tail: float          #: seconds from the process's exit until its last descendant was reaped here
    stdout: bytes
    stderr: bytes = b""


def _cpu(ru: resource.struct_rusage) -> float:
    return ru.ru_utime + ru.ru_stime


def _children() -> list[int]:
    """Pids whose parent is this process (``/proc``; empty where there is none)."""
    me, out = os.getpid(), []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()   # after "pid (comm)": state, ppid, ...
        except (OSError, IndexError):
            continue
        if int(fields[1]) == me:
            out.append(int(stat.parent.name))
    return out


def kill_children(rounds: int = 100) -> None:
    """SIGKILL every child of this process with its process group (``record --wpp``'s builder leads
    its own session), and reap them; as subreaper the orphans of a run are our children, and
    theirs come to us when they die, so repeat until none is left."""
    for _ in range(rounds):
        for pid in _children():
            for kill in (os.killpg, os.kill):
                try:
                    kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        try:
            while os.wait4(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:   # none left
            return
        time.sleep(0.01)


def run_tree(cmd: Sequence[str], cwd: Path, env: dict[str, str], *, timeout: float | None = 600.0,
             reap_timeout: float = 30.0) -> Run:
    """Run ``cmd`` to its end, then wait for every descendant it left behind (this process must be
    a subreaper, :func:`become_subreaper`, for them to be ours): the next timed run cannot start
    while one still uses a CPU, and their CPU is counted. Raises with the stderr tail on failure;
    when ``cmd`` runs longer than ``timeout`` or a descendant outlives it by ``reap_timeout``
    seconds (or on any other exception), kills and reaps every child left first (:func:`kill_children`)."""
    before = _cpu(resource.getrusage(resource.RUSAGE_CHILDREN))
    t0 = time.perf_counter()
    try:
        try:
            proc = subprocess.run(list(cmd), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:   # run() has killed and waited for cmd's own process
            raise RuntimeError(f"{shlex.join(cmd)}: still running after {timeout:g} s, killed") from None
        wall = time.perf_counter() - t0
        orphan_cpu, orphans, tail, deadline, nap = 0.0, 0, 0.0, t0 + wall + reap_timeout, 0.0002
        while True:
            try:
                pid, _status, ru = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:   # no child left
                break
            if pid == 0:   # a descendant still runs
                if time.perf_counter() > deadline:
                    raise RuntimeError(f"{shlex.join(cmd)}: a descendant still ran {reap_timeout:g} s after it exited, killed")
                time.sleep(nap)
                nap = min(2 * nap, 0.01)   # back off: a lingering descendant is not polled 5000 times a second
                continue
            orphan_cpu += _cpu(ru)
            orphans += 1
            tail = time.perf_counter() - t0 - wall
    except BaseException:
        kill_children()
        raise
    cpu = _cpu(resource.getrusage(resource.RUSAGE_CHILDREN)) - before
    if proc.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} exited {proc.returncode}:\n{proc.stderr.decode(errors='replace')[-2000:]}")
    return Run(wall, cpu, orphan_cpu, orphans, tail, proc.stdout, proc.stderr)


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> "tuple[float, subprocess.CompletedProcess[bytes]]":
    """Wall seconds of one whole process (:func:`run_tree`, no timeout: descendants it leaves are waited
    for where this process is their subreaper); raises with its stderr tail if it fails."""
    run = run_tree(cmd, cwd, env, timeout=None)
    return run.wall, subprocess.CompletedProcess(list(cmd), 0, run.stdout, run.stderr)


def snapshot_env(work: Path, **extra: str) -> dict[str, str]:
    """Copy src/wholetrace into ``work`` and return an environment whose children import that copy.

    PYTHONPATH precedes the editable install, so edits made to the checkout while a benchmark
    runs do not leak into it.  PYTHONHASHSEED is pinned: some programs' control flow depends
    on string hashing (tomllib iterates a set), and recordings of different modes must match.
    The copy is byte-compiled, as ``pip install`` leaves an installed package (children would
    otherwise recompile every module on each start when PYTHONDONTWRITEBYTECODE is set), and
    children share a fresh instrumented-code cache in ``work`` (benchmarks fill it with an
    untimed warm-up run, as any run after a program's first finds it filled).
    """
    import compileall
    import shutil

    snap = work / "src"
    shutil.copytree(REPO / "src" / "wholetrace", snap / "wholetrace", ignore=shutil.ignore_patterns("__pycache__"))
    compileall.compile_dir(str(snap), quiet=1)
    path = [str(snap)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONPATH=os.pathsep.join(path),
               WHOLETRACE_CACHE_DIR=str(work / "wt-cache"))
    env.update(extra)
    env.pop("COVERAGE_PROCESS_START", None)
    return env


def source_version() -> str:
    """The commit of the checkout, and whether src/ differed from it when the snapshot was taken."""
    import subprocess

    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "src"], cwd=REPO, capture_output=True,
                               text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "(not a git checkout)"
    return head + (" plus uncommitted changes in src/ (snapshot taken at start)" if dirty else "")


def record_program(program: object, mode: str, size: str, work: Path, env: dict[str, str]) -> Path:
    """Record a corpus program (``corpus.Program``) once in ``work`` as ``NAME.SIZE.MODE.wt``
    (an existing file is reused, so ``--keep DIR`` runs share recordings)."""
    import subprocess
    import sys

    out = work / f"{program.name}.{size}.{mode}.wt"  # type: ignore[attr-defined]
    if out.exists():
        return out
    driver = program.write(work / program.name, size)  # type: ignore[attr-defined]
    inc = [a for m in program.include for a in ("--include", m)]  # type: ignore[attr-defined]
    subprocess.run([sys.executable, "-m", "wholetrace.cli", "record", "--mode", mode, "-q", "-o", str(out),
                    *inc, str(driver)], cwd=driver.parent, env=env, check=True, stdout=subprocess.DEVNULL)
    return out


#: ``corpus_options`` extra for benchmarks that may keep their recordings between runs.
KEEP_OPTION = ("--keep", {"metavar": "DIR", "help": "keep (and reuse) recordings in DIR"})


def work_dir(args: object, tmp: str) -> Path:
    """``--keep DIR`` (created if needed) or the temporary directory ``tmp``."""
    keep = getattr(args, "keep", None)
    work = Path(keep) if keep else Path(tmp)
    work.mkdir(parents=True, exist_ok=True)
    return work
