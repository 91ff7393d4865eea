"""The program's file descriptors under ``record`` are plain python's, in every mode and in its child processes (wave 16).

Oracle: the plain ``python`` run of the same program.  Before wave 16 the store's ``.wt`` and its
journal sat at 3 and 4 in every mode, so the program's first ``open()`` got 5 where plain gets 3
(and a journal opened per transaction could take a number the program was about to get); a
``multiprocessing`` child's SIGTERM wakeup pipe took two more (docs/design.md, "The program cannot
tell, wave 16").
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from wtutil import ENV

# What the program reports: the number its next open() gets, and what its descriptors below 256
# are (pipes and files by kind: the pipes' inode numbers differ from run to run).
REPORT = r'''
import os, sys
def first():
    fd = os.open(os.devnull, os.O_RDONLY)
    os.close(fd)
    return fd
def low():
    out = []
    for n in sorted(int(n) for n in os.listdir("/proc/self/fd")):
        try:
            link = os.readlink(f"/proc/self/fd/{n}")
        except OSError:
            link = "?"          # the listing's own descriptor
        if n < 256:
            out.append((n, "pipe" if link.startswith("pipe:") else os.path.basename(link)))
    return out
'''

MAIN = REPORT + r'''
print("start", first(), low())
kept = [open(__file__, "rb") for _ in range(3)]
def work(n):
    return sum(i * i for i in range(n))
for k in range(40):
    work(20000)
    fd = os.open(os.devnull, os.O_RDONLY)      # while the recorder flushes and commits
    print("loop", fd) if k % 10 == 0 else None
    os.close(fd)
print("end", first(), low())
'''

CHILDREN = REPORT + r'''
import multiprocessing as mp, subprocess
def child(q):
    q.put((first(), low()))
if __name__ == "__main__":
    print("main", first(), low(), flush=True)
    pid = os.fork()
    if pid == 0:
        print("fork", first(), low(), flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
    code = "import os; fd = os.open(os.devnull, os.O_RDONLY); print(fd)"
    print("subprocess", subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip())
    for method in ("fork", "spawn"):
        ctx = mp.get_context(method)
        q = ctx.Queue()
        p = ctx.Process(target=child, args=(q,))
        p.start()
        print(method, *q.get(), flush=True)
        p.join()
    print("main", first(), low())
'''

MODES = [("blocks",), ("count",), ("branches",), ("witness",), ("path",), ("path", "--wpp"), ("full",)]


def _run(tmp: Path, source: str, record: tuple[str, ...] | None) -> subprocess.CompletedProcess:
    script = tmp / "prog.py"
    script.write_text(source)
    cmd = [sys.executable, str(script)]
    if record is not None:
        cmd[1:1] = ["-m", "wholetrace.cli", "record", "--mode", *record, "-q", "-o", str(tmp / "out.wt")]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp, timeout=600, stdin=subprocess.DEVNULL,
                          env={**ENV, "WHOLETRACE_CACHE_DIR": str(tmp / "cache")})


def _same_as_plain(tmp: Path, source: str, record: tuple[str, ...]) -> None:
    plain = _run(tmp, source, None)
    rec = _run(tmp, source, record)
    assert plain.returncode == 0, plain.stderr
    assert (rec.returncode, rec.stderr) == (0, ""), rec.stderr[-3000:]
    assert rec.stdout == plain.stdout


@pytest.mark.parametrize("record", MODES, ids=lambda r: "-".join(r))
def test_the_programs_descriptors_are_plain_pythons(tmp_path: Path, record: tuple[str, ...]) -> None:
    _same_as_plain(tmp_path, MAIN, record)


@pytest.mark.parametrize("mode", ["blocks", "path"])
def test_child_processes_descriptors_are_plain_pythons(tmp_path: Path, mode: str) -> None:
    """``os.fork``, a Python ``subprocess`` (recorded into a part), ``multiprocessing`` fork and
    spawn children: each child's next ``open()`` and low descriptors are plain python's."""
    _same_as_plain(tmp_path, CHILDREN, (mode,))


def test_a_reader_sees_the_recording_while_it_runs(tmp_path: Path) -> None:
    """The journal kept open (wave 16) does not lock readers out: another process reads the
    recording's committed chunks while the program still runs."""
    prog = tmp_path / "slow.py"
    prog.write_text("import sys, time\nfor i in range(40):\n    time.sleep(0.05)\nprint(sys.stdin.readline().strip())\n")
    out = tmp_path / "live.wt"
    cmd = [sys.executable, "-m", "wholetrace.cli", "record", "--mode", "blocks", "-q", "-o", str(out), str(prog)]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=ENV, cwd=tmp_path)
    try:
        read = [sys.executable, "-c", "import sys; from wholetrace.store import open_recording\n"
                "with open_recording(sys.argv[1], check=False) as r: print(r.ended, 'python_version' in r.meta)", str(out)]
        seen = subprocess.run(read, capture_output=True, text=True, env=ENV, timeout=300)
        assert (seen.returncode, seen.stdout.strip()) == (0, "None True"), seen.stderr
        assert proc.poll() is None      # read while it ran
    finally:
        stdout, _ = proc.communicate("done\n", timeout=300)
    assert proc.returncode == 0 and stdout == "done\n"
    assert not Path(str(out) + "-journal").exists()
