"""A program that closes descriptors it did not open, then opens files: the recorder never writes into them, and the recording stays complete (docs/design.md, "Descriptors the program closes, wave 13")."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from wholetrace.store import fdguard
from wtutil import cli_in_process, run_plain, run_recorded

# The same statements run whatever is closed: the closing call is a builtin picked from a table,
# so a run that closes nothing ("none") is the independent oracle of the counts.  "closedb": a
# guessed number, the store's database (at fdguard.HIGH_FD since wave 16: 3 before).
CLOSER = textwrap.dedent("""\
    import os, sys, threading
    d, how, where = sys.argv[1], sys.argv[2], sys.argv[3]
    act, args = {"range": (os.closerange, (3, 1024)), "closedb": (os.close, (256,)),
                 "none": (max, (3, 4))}[how]
    def work(n):
        s = 0
        for i in range(n):
            s += i % 7
        return s
    def closing(rounds):
        t = 0
        for k in range(rounds):
            t += work(3000)
            if k == rounds // 2:
                act(*args)
        return t
    if where == "main":
        act(*args)
    if where == "thread":     # the program's own files opened once the closing thread is done
        th = threading.Thread(target=closing, args=(400,))
        th.start()
        print(sum(work(1000) for _ in range(300)))
        th.join()
    fs = [open(os.path.join(d, f"f{i}.txt"), "w+b") for i in range(20)]
    for f in fs:
        f.write(b"mine\\n"); f.flush()
    if where != "thread":
        print(sum(work(1000) for _ in range(300)))
    for f in fs:
        f.flush()
""")

MODES = ["count", "blocks", "witness", "branches", "path"]


def _run(tmp: Path, mode: str, how: str, where: str, options: tuple[str, ...] = (),
         script: Path | None = None) -> tuple[subprocess.CompletedProcess, Path, Path]:
    """Record ``script`` (default: CLOSER written to ``tmp/closer.py``), its files and .wt in ``tmp``."""
    if script is None:
        script = tmp / "closer.py"
        script.write_text(CLOSER)
    d = tmp / f"out-{mode}-{how}-{where}"
    d.mkdir()
    out = tmp / f"{mode}-{how}-{where}.wt"
    return run_recorded(script, out, str(d), how, where, mode=mode, options=options), out, d


def _files_are_the_programs(d: Path, where: str) -> None:
    want = {f"f{i}.txt": b"mine\n" for i in range(20)}
    assert {p.name: p.read_bytes() for p in d.iterdir()} == want


def _counts(out: Path) -> object:
    rc, stdout, stderr = cli_in_process("counts", "--format", "json", str(out))
    assert rc == 0, stderr
    return json.loads(stdout)


CASES = [(m, h, w) for m in MODES for h, w in [("range", "main"), ("closedb", "main"), ("range", "thread")]]


@pytest.fixture(scope="module")
def references(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """CLOSER written once (recordings name its path, so every case runs the same file) and the
    oracles of the closer cases, made once per module and worker and shared by the cases that
    compare with the same one (``range`` and ``closedb`` in the main thread): per ``where`` the
    plain run's stdout, per (mode, ``where``) the recording of the run closing nothing with its
    counts, trace and renew meta."""
    base = tmp_path_factory.mktemp("closer")
    script = base / "closer.py"
    script.write_text(CLOSER)
    plain: dict[str, str] = {}
    refs: dict[tuple[str, str], tuple[subprocess.CompletedProcess, object, object, object]] = {}

    def plain_stdout(where: str) -> str:
        if where not in plain:
            d = tmp_path_factory.mktemp(f"plain-{where}")
            plain[where] = run_plain(script, str(d), "none", where).stdout
        return plain[where]

    def reference(mode: str, where: str) -> tuple[subprocess.CompletedProcess, object, object, object]:
        if (mode, where) not in refs:
            ref, ref_out, _ = _run(tmp_path_factory.mktemp(f"ref-{mode}-{where}"), mode, "none", where, script=script)
            refs[mode, where] = (ref, _counts(ref_out) if ref.returncode == 0 else None, _renewed(ref_out),
                                 _trace(ref_out))
        return refs[mode, where]

    return script, plain_stdout, reference


@pytest.mark.parametrize("mode,how,where", CASES + [("full", "range", "main")])
def test_closer_files_untouched_and_recording_complete(tmp_path: Path, mode: str, how: str, where: str,
                                                       references) -> None:  # type: ignore[no-untyped-def]
    script, plain_stdout, reference = references
    res, out, d = _run(tmp_path, mode, how, where, script=script)
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    # the plain run of the same program closing nothing (a plain os.close(256) fails: EBADF)
    assert res.stdout == plain_stdout(where)
    _files_are_the_programs(d, where)
    ref, ref_counts, ref_renewed, ref_trace = reference(mode, where)
    assert ref.returncode == 0, ref.stderr
    assert _counts(out) == ref_counts
    assert _renewed(out) >= 1 and ref_renewed is None     # the renew path ran
    assert _trace(out) == ref_trace


def test_closer_wpp_fails_in_one_line(tmp_path: Path) -> None:
    res, out, d = _run(tmp_path, "path", "range", "main", options=("--wpp",))
    assert res.stdout == "899100\n"
    _files_are_the_programs(d, "main")
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert "the WPP builder failed: the program closed the recorder's descriptor" in lines[0]
    assert res.returncode == 3


def test_closer_wpp_untouched_program_still_builds(tmp_path: Path) -> None:
    res, out, d = _run(tmp_path, "path", "none", "main", options=("--wpp",))
    assert res.returncode == 0, res.stderr
    _files_are_the_programs(d, "main")


def test_guard_sees_a_replaced_descriptor(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"a")
    b.write_bytes(b"b")
    fd = os.open(a, os.O_RDONLY)
    g = fdguard.FdGuard(fd)
    assert g.intact()
    assert fdguard.descriptors_of(str(a)) == [fd]
    os.close(fd)
    assert not g.intact()
    fd2 = os.open(b, os.O_RDONLY)
    try:
        assert fd2 == fd and not g.intact()
    finally:
        os.close(fd2)


def test_guarded_file_neither_reads_nor_closes_the_programs_descriptor(tmp_path: Path) -> None:
    r, w = os.pipe()
    os.write(w, b"ours")
    os.close(w)
    g = fdguard.GuardedFile(os.fdopen(r, "rb"), "a test pipe")
    os.close(r)                                        # the program closes it ...
    theirs = tmp_path / "theirs"
    theirs.write_bytes(b"theirs")
    fd = os.open(theirs, os.O_RDONLY)                  # ... and opens a file on its number
    try:
        assert fd == r
        with pytest.raises(fdguard.Lost, match=f"descriptor {r} \\(a test pipe\\)"):
            g.read()
        g.close()                                      # leaked, not closed: the program's file stays open
        assert os.fstat(fd).st_ino == theirs.stat().st_ino
        assert os.read(fd, 10) == b"theirs"            # and nothing read its bytes
    finally:
        os.close(fd)


EXITER = textwrap.dedent("""\
    import os, sys
    d, how = sys.argv[1], sys.argv[2]
    act, args = {"range": (os.closerange, (3, 1024)), "none": (max, (3, 4))}[how]
    def work(n):
        s = 0
        for i in range(n):
            s += i % 7
        return s
    os.chdir(d)       # a relative -o must not follow the program
    act(*args)
    fs = [open(os.path.join(d, f"f{i}.txt"), "wb") for i in range(5)]
    for f in fs:
        f.write(b"mine\\n"); f.flush()
    print(sum(work(1000) for _ in range(30)))
    sys.exit(4)
""")


def _renewed(out: Path) -> object:
    import sqlite3
    conn = sqlite3.connect(f"file:{out}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'store.descriptor_renewed'").fetchone()
        return row and json.loads(row[0])
    finally:
        conn.close()


def _trace(out: Path) -> tuple[int, str, str]:
    rc, stdout, stderr = cli_in_process("trace", str(out))
    return rc, stdout, stderr.replace(str(out.stem), "R")


def _array_names(out: Path) -> set[str]:
    import sqlite3
    conn = sqlite3.connect(f"file:{out}?mode=ro", uri=True)
    try:
        return {name for (name,) in conn.execute("SELECT DISTINCT name FROM arrays")}
    finally:
        conn.close()


def test_cf_grammar_after_renew_keeps_the_exit_status(tmp_path: Path, cf_grammar_kernels: Path) -> None:
    # (cf_grammar_kernels: the two recordings' subprocess timeout no longer covers numba's first
    # compile of the compression kernels, which took it past 300 s under load)
    script = tmp_path / "exiter.py"
    script.write_text(EXITER)
    runs = {}
    for how in ("range", "none"):
        d = tmp_path / how
        d.mkdir()
        out = tmp_path / f"{how}.wt"
        runs[how] = run_recorded(script, out, str(d), how, mode="path", options=("--cf-grammar",)), out, d
    (res, out, d), (ref, ref_out, _) = runs["range"], runs["none"]
    assert (res.returncode, res.stderr) == (4, ""), res.stderr
    assert ref.returncode == 4, ref.stderr
    assert {p.name: p.read_bytes() for p in d.iterdir()} == {f"f{i}.txt": b"mine\n" for i in range(5)}
    assert _renewed(out) == 1 and _renewed(ref_out) is None    # the renew path ran, with a lock held
    assert len(_array_names(ref_out)) > 1
    assert _array_names(out) == _array_names(ref_out)    # the compressed trace is there
    assert _counts(out) == _counts(ref_out)


def test_relative_output_and_a_program_that_chdirs(tmp_path: Path) -> None:
    script = tmp_path / "exiter.py"
    script.write_text(EXITER)
    d = tmp_path / "there"
    d.mkdir()
    res = run_recorded(script, Path("rel.wt"), str(d), "range", mode="path", cwd=tmp_path)
    assert (res.returncode, res.stderr) == (4, ""), res.stderr
    assert sorted(p.name for p in d.iterdir()) == [f"f{i}.txt" for i in range(5)]   # no .wt there
    assert _renewed(tmp_path / "rel.wt") == 1
    ref = run_recorded(script, tmp_path / "ref.wt", str(d), "none", mode="path")
    assert ref.returncode == 4, ref.stderr
    assert _counts(tmp_path / "rel.wt") == _counts(tmp_path / "ref.wt")


def test_a_statement_failing_on_the_new_connection_too_is_retried_once(tmp_path: Path) -> None:
    import sqlite3
    from wholetrace.store import RecordingWriter
    w = RecordingWriter(tmp_path / "r.wt")
    w._lost = lambda: True      # as if a thread of the program kept closing the descriptor
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        w._x("INSERT INTO nosuch VALUES (1)", ())
    assert w._renewed == 1
