"""The builder's progress file (wave 12 review fixes): inherited, checked, marked once mapped, never any other file."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import types
import uuid
from pathlib import Path

import pytest

from wholetrace.errors import InternalError
from wholetrace.wpp import builder, online, spawn
from test_online_feed import _fake_process as fake_process, _Writer
from wtutil import ENV

CONTENT = bytes(range(48, 112))     # 64 bytes a scratch file starts with; nothing may change them

# The JIT's warm-up (a second or more) put the code before the fix's late /proc lookup well after
# the program's closerange or exec (with the compiled kernels, ready in ~0.2 s, it corrupted the
# file about half the time); a chunk flushed every 1 ms reaches the builder before either.
LATE = {"WHOLETRACE_AOT": "0", "WHOLETRACE_WPP_FLUSH": "0.001"}

# Wait (no wall-time bound asserted; a generous one only against a hang) until no process but this
# one carries the test's mark in its environment: the builder (which inherits the recorder's
# environment) has exited, so whatever it would write into a file of ours is written by then.
WAIT = """
import os, time
def wait_builder():
    mark = ("WT_FEEDFIX_MARK=" + os.environ["WT_FEEDFIX_MARK"]).encode()
    for _ in range(30000):
        others = []
        for p in os.listdir("/proc"):
            if p.isdigit() and int(p) != os.getpid():
                try:
                    with open(f"/proc/{p}/environ", "rb") as f:
                        if mark in f.read().split(b"\\0"):
                            others.append(p)
                except OSError:
                    pass
        if not others:
            return
        time.sleep(0.01)
    print("the builder never ended")
"""

WORK = """
def work(k):
    t = 0
    for i in range(k):
        t += i & 3
    return t
for _ in range(10):
    work(20000)          # some events, flushed to the builder before the descriptors go
"""

CLOSER = WAIT + WORK + """
import sys
os.closerange(3, 1024)   # as a daemon does; the recorder's descriptors go too
f = open(sys.argv[1], "r+b")
print("fd", f.fileno())
wait_builder()
f.seek(0)
print(f.read().hex())
"""

EXECER = WAIT + WORK + """
import sys
os.execv(sys.executable, [sys.executable, "-S", sys.argv[2], sys.argv[1]])   # as a launcher does
"""

AFTER_EXEC = WAIT + """
import sys
f = open(sys.argv[1], "r+b")
print("fd", f.fileno())
wait_builder()
f.seek(0)
print(f.read().hex())
"""


def _record(tmp_path: Path, script: Path, *args: str, **more: str) -> subprocess.CompletedProcess:
    env = dict(ENV, WT_FEEDFIX_MARK=uuid.uuid4().hex, **more)
    return subprocess.run([sys.executable, "-m", "wholetrace.cli", "record", "--mode", "path", "--wpp", "-q",
                           "-o", str(tmp_path / "r.wt"), str(script), *args], capture_output=True, text=True,
                          env=env, timeout=600, cwd=tmp_path, stdin=subprocess.DEVNULL)


def test_a_program_closing_every_descriptor_keeps_its_file(tmp_path: Path) -> None:
    """The program closes the recorder's descriptors and opens a file (on fd 3, the memfd's number
    before the fix): the builder, mapping its progress file late through /proc/PID/fd/3, wrote its
    count into that file.  Now it maps only the descriptor it inherited."""
    data = tmp_path / "data.bin"
    data.write_bytes(CONTENT)
    script = tmp_path / "closer.py"
    script.write_text(CLOSER)
    proc = _record(tmp_path, script, str(data), **LATE)
    lines = proc.stdout.split()
    assert lines[:2] == ["fd", "3"], proc.stdout + proc.stderr
    assert lines[2] == CONTENT.hex(), proc.stderr
    assert data.read_bytes() == CONTENT


def test_a_program_exec_ing_another_keeps_its_file(tmp_path: Path) -> None:
    """The program execs another (a launcher): the new image's first file lands on fd 3."""
    data = tmp_path / "data.bin"
    data.write_bytes(CONTENT)
    (tmp_path / "after.py").write_text(AFTER_EXEC)
    script = tmp_path / "execer.py"
    script.write_text(EXECER)
    proc = _record(tmp_path, script, str(data), str(tmp_path / "after.py"), **LATE)
    lines = proc.stdout.split()
    assert lines[:2] == ["fd", "3"], proc.stdout + proc.stderr
    assert lines[2] == CONTENT.hex(), proc.stderr
    assert data.read_bytes() == CONTENT


def _memfd(seals: int | None, value: int = spawn.PROGRESS_UNMAPPED, size: int = spawn.PROGRESS_BYTES) -> int:
    import fcntl

    fd = os.memfd_create("imposter", os.MFD_CLOEXEC | (os.MFD_ALLOW_SEALING if seals is not None else 0))
    os.ftruncate(fd, size)
    os.pwrite(fd, builder.PROGRESS.pack(value), 0)
    if seals:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    return fd


def test_the_builder_maps_nothing_but_the_progress_memfd(tmp_path: Path) -> None:
    """Files that are not the recorder's progress memfd are refused and left as they were."""
    if not hasattr(os, "memfd_create"):
        pytest.skip("no memfd_create here")
    head = builder.PROGRESS.pack(spawn.PROGRESS_UNMAPPED) + bytes(spawn.PROGRESS_BYTES - 8)
    plain = tmp_path / "plain.bin"
    plain.write_bytes(head)                                   # the right size and value, linked
    unlinked = tmp_path / "gone.bin"
    unlinked.write_bytes(head)
    fds = [os.open(plain, os.O_RDWR), os.open(unlinked, os.O_RDWR)]
    unlinked.unlink()                                         # nlink 0, but no seals
    fds += [_memfd(None), _memfd(1), _memfd(spawn.PROGRESS_SEALS, value=0),
            _memfd(spawn.PROGRESS_SEALS, size=2 * spawn.PROGRESS_BYTES)]
    try:
        for fd in fds:
            before = os.pread(fd, 1024, 0)
            assert builder.progress_map(str(fd)) is None
            assert os.pread(fd, 1024, 0) == before
            os.fstat(fd)                                      # still open: not ours to close
    finally:
        for fd in fds:
            os.close(fd)
    for where in (None, "", "notanfd", "4:3", "99999"):
        assert builder.progress_map(where) is None


def test_the_builder_marks_the_file_and_closes_its_descriptor() -> None:
    mine, theirs = _ours()
    assert mine.built() == spawn.PROGRESS_UNMAPPED
    m = builder.progress_map(str(theirs))
    assert m is not None
    with pytest.raises(OSError):
        os.fstat(theirs)                                      # closed: the mapping keeps its own
    assert mine.built() == 0      # mapped: the mark the recorder waits for
    builder.PROGRESS.pack_into(m, 0, 12345)
    assert mine.built() == 12345
    m.close()
    mine.close()


def _fake_process(progress: object) -> types.SimpleNamespace:
    return fake_process(os.open(os.devnull, os.O_WRONLY), progress)


def _ours() -> tuple[spawn.Progress, int]:
    """A progress file as the spawn makes it: the recorder's side (at >= HIGH_FD) and the builder's descriptor."""
    made = spawn._progress_file()
    if made is None:
        pytest.skip("no memfd_create here")
    fd, mine = made
    assert mine.fd == fd >= spawn.HIGH_FD and not os.get_inheritable(fd)
    return mine, os.dup(fd)


def test_unmapped_progress_means_the_fixed_interval_then_the_builders_pace() -> None:
    """Until the builder marks the file, the recorder flushes every ``flush_seconds`` however
    much it has sent; then by the events the builder has built."""
    mine, theirs = _ours()
    wpp = online.OnlineWpp(_Writer(), "blocks", process=_fake_process(mine))   # type: ignore[arg-type]
    wpp.submitted = online.BUSY_EVENTS + 10
    assert wpp.flush_interval() == wpp.flush_seconds          # not mapped: the builder's pace unknown
    m = builder.progress_map(str(theirs))                      # the builder maps it: 0 built
    assert m is not None
    assert wpp.flush_interval() == online.BUSY_SECONDS
    builder.PROGRESS.pack_into(m, 0, 10)                       # exactly BUSY_EVENTS left
    assert wpp.flush_interval() == online.BUSY_SECONDS
    builder.PROGRESS.pack_into(m, 0, 11)
    assert wpp.flush_interval() == wpp.flush_seconds
    assert wpp._busy == 2
    m.close()
    with pytest.raises(InternalError):                         # the pipe is the null device: no result
        wpp.close()
    assert mine.closed and wpp._progress is None               # close() unmapped the recorder's side
    assert wpp._writer.closed
    assert wpp.flush_interval() == wpp.flush_seconds


def test_close_closes_everything_when_one_step_fails() -> None:
    made = spawn._progress_file()
    if made is None:
        pytest.skip("no memfd_create here")
    progress = made[1]
    proc = _fake_process(progress)
    wpp = online.OnlineWpp(_Writer(), "blocks", process=proc)   # type: ignore[arg-type]
    proc.stderr.close()
    os.close(proc.fd)
    # as after a program's os.closerange: the stderr's close fails (EBADF) and so does the pipe's
    wpp._stderr = types.SimpleNamespace(close=lambda: os.close(10 ** 6))
    with pytest.raises(OSError):
        wpp.close()
    assert progress.closed and wpp._writer.closed


def test_the_recorded_program_sees_one_progress_descriptor(tmp_path: Path) -> None:
    script = tmp_path / "fds.py"
    script.write_text("import os\nprint(sum(os.readlink(f'/proc/self/fd/{n}').startswith('/memfd:wholetrace')"
                      " for n in os.listdir('/proc/self/fd') if os.path.exists(f'/proc/self/fd/{n}')))\n")
    proc = _record(tmp_path, script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1"]                        # the recorder's (spawn.Progress), >= HIGH_FD


def test_no_progress_file_means_the_fixed_interval() -> None:
    wpp = online.OnlineWpp(_Writer(), "blocks", process=_fake_process(None))   # type: ignore[arg-type]
    wpp.submitted = 10 ** 9
    assert wpp.flush_interval() == wpp.flush_seconds
