"""The WPP builder process: the recorded process loads no numba, forks of the program leave the build alone,
child processes are recorded with and without --keep-raw (a fork child's part reads its parent's events from
the grammar), and the spill queue keeps arrival order (against the chunks themselves)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from wholetrace.store import Recording
from wholetrace.wpp.builder import ChunkQueue
from wholetrace.wpp.intern import INTERNERS
from wholetrace.wpp.online import INTERNED_MODES
from wholetrace.wpp.stored import StoredWpp
from wtutil import ENV


def _record(tmp: Path, script: Path, out: Path, *opts: str, mode: str = "path") -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "wholetrace.cli", "record", "--mode", mode, "-o", str(out), *opts, str(script)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp, env=ENV, timeout=600,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def test_interned_modes_are_the_interners() -> None:
    assert set(INTERNED_MODES) == set(INTERNERS)


def test_the_recorded_process_loads_no_numba(tmp_path: Path) -> None:
    """Nor numpy while the program runs: chunks reach the builder as the recorder made them
    (array('i')); importing numpy on the flusher thread beside the program cost it 0.2-0.4 s."""
    script = tmp_path / "p.py"
    script.write_text("import sys, time\ndef f(n):\n    return n if n < 2 else f(n - 1) + f(n - 2)\n"
                      "f(18)\ntime.sleep(0.3)\nprint(f(15), 'numba' in sys.modules, 'numpy' in sys.modules)\n")
    out = tmp_path / "p.wt"
    proc = _record(tmp_path, script, out, "--wpp", "-q")
    assert proc.stdout == "610 False False\n"
    with Recording(out) as rec:
        wpp = StoredWpp(rec)
        assert rec.meta["wpp"]["builder"] == "process"
        assert sum(len(wpp.events(s.sid)) for s in wpp.streams) == rec.meta["wpp"]["events"] > 1000
        # the lag is reported as moments since the spawn, in the order they must happen
        tl = rec.meta["wpp"]["timeline"]
        assert 0 < tl["first"] <= tl["end"] <= tl["built"] <= tl["encoded"] <= tl["result"]
        assert tl["close"] <= tl["end"]     # the recorded process closes, then sends the end frame


FORKS = textwrap.dedent('''
    import os
    def f(n):
        return n if n < 2 else f(n - 1) + f(n - 2)
    print(f(12), flush=True)
    pid = os.fork()
    if pid == 0:
        print("child", f(10), flush=True)
    else:
        os.waitpid(pid, 0)
        print("parent", f(11), flush=True)
''')


def test_a_fork_of_the_program_leaves_the_build_alone(tmp_path: Path) -> None:
    # the forked child records into its own part, and must neither write into the builder's
    # pipe nor end the build: the root's grammar holds the parent's activations only
    script = tmp_path / "forks.py"
    script.write_text(FORKS)
    out = tmp_path / "f.wt"
    proc = _record(tmp_path, script, out, "--wpp")
    assert sorted(proc.stdout.split("\n")) == sorted(["144", "child 55", "parent 89", ""])
    assert "child processes" not in proc.stderr
    with Recording(out) as rec:
        wpp = StoredWpp(rec)
        # the parent's stream: f(12) and f(11) only (f(n) makes fib(n+1)*2-1 activations)
        n_enter = sum(int((wpp.events(s.sid) <= -8).sum()) for s in wpp.streams)
        assert n_enter == (2 * 233 - 1) + (2 * 144 - 1) + 1   # + the module's activation


def _joined_streams(path: Path) -> list[np.ndarray]:
    """Every stream of every process, a fork child's joined to its parent's up to the fork."""
    from wholetrace.profile.processes import open_part
    from wholetrace.store.parts import processes
    from wholetrace.trace.session import Trace

    with Recording(path) as rec:
        procs = processes(path, dict(rec.meta), 0)
    out = []
    for p in procs:
        with (Trace.open(p.path) if p.number == 0 else open_part(p.path)) as t:
            out += [t.recording.events(s.sid) for s in t.streams()]
    return out


def test_children_are_recorded_with_and_without_keep_raw(tmp_path: Path) -> None:
    # oracle: the same deterministic program recorded with --keep-raw, whose fork child's lineage
    # reads the root's raw chunks; without --keep-raw the root's events come from its grammar
    script = tmp_path / "forks.py"   # the fork after a flush (0.25 s): the child's part starts from the root's stored events
    script.write_text(FORKS.replace("pid = os.fork()", "__import__('time').sleep(0.7)\npid = os.fork()"))
    got = {}
    for name, opts in (("k", ("--wpp", "--keep-raw")), ("w", ("--wpp",))):
        out = tmp_path / f"{name}.wt"
        proc = _record(tmp_path, script, out, *opts)
        assert "child processes" not in proc.stderr
        assert len(list((tmp_path / f"{name}.wt.parts").glob("*.wt"))) == 1
        got[name] = _joined_streams(out)
    with Recording(tmp_path / "k.wt") as rec:
        wpp = StoredWpp(rec)
        for s in wpp.streams:
            assert np.array_equal(wpp.events(s.sid), rec.events(s.sid))
    assert len(got["w"]) == len(got["k"]) == 2
    for a, b in zip(got["w"], got["k"]):
        assert np.array_equal(a, b)
    # the child's joined stream starts with the parent's events up to the fork
    assert len(got["w"][1]) > 0 and np.array_equal(got["w"][1][:100], got["w"][0][:100])


def test_chunk_queue_spills_beyond_the_bound_and_keeps_arrival_order(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    chunks = [(int(rng.integers(0, 3)), rng.integers(-20, 1000, int(rng.integers(0, 90))).astype(np.int32))
              for _ in range(200)]
    q = ChunkQueue(150)
    got = []
    for i, (sid, c) in enumerate(chunks):
        q.put(sid, bytearray(c.tobytes()))
        if i % 3 == 0:     # the builder takes one chunk for every three that arrive
            item = q.get()
            assert item is not None
            got.append((item[0], item[1].copy()))
            q.done(item[1], item[2])
        assert q.in_memory <= 150
    q.end()
    while (item := q.get()) is not None:
        got.append((item[0], item[1].copy()))
        q.done(item[1], item[2])
    want = [(s, c) for s, c in chunks if len(c)]
    assert [s for s, _ in got] == [s for s, _ in want]
    assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(got, want))
    assert q.spilled_events > 0 and q.backlog == 0 and q.max_backlog <= 150


def test_negative_registers_after_exception_records_keep_the_function_stack(tmp_path: Path) -> None:
    # A register after EXC s (path mode) may be negative: -1 when the recorder closes a frame whose
    # register was never set, NO_PATH after an exception left for EXIT.  The builder reads it by
    # position (it learns from the file frames which functions record path ids), so -1 is not
    # taken for LEAVE.  Oracle: the pure-Python twin, told the path functions by the stored plans.
    import sqlite3

    from naive_groups import canonical, group_codes
    from test_online import naive_intern

    from wholetrace.events import EXC, LEAVE, RERAISE, enter_code
    from wholetrace.instrument.emit import NO_PATH
    from wholetrace.store import RecordingWriter
    from wholetrace.wpp.intern import PATH_GROUP, PATH_LEAVE_AT
    from wholetrace.wpp.online import OnlineWpp
    from wholetrace.wpp.symbols import PATH

    script = tmp_path / "two.py"
    script.write_text("def f(x):\n    return g(x) + 1\ndef g(x):\n    return x * 2\nprint(f(3))\n")
    raw = tmp_path / "raw.wt"
    _record(tmp_path, script, raw, "-q")
    with Recording(raw) as rec:
        plans = {fn.qualname: (fn.fid, fn.cfg["plan"]["strategy"]) for fn in rec.functions()}
    (f, fs), (g, gs) = plans["f"], plans["g"]
    assert fs == gs == "paths"
    conn = sqlite3.connect(raw)
    files = conn.execute("SELECT fid_base, path, n_functions, counter_base, blob FROM files").fetchall()
    conn.close()
    path_fns = frozenset(fid for fid, s in plans.values() if s == "paths")
    # f calls g; g raises with no path open (-1) and leaves; f catches (handler path 0), raises
    # again, re-raised with unknown statements, and ends by it (NO_PATH, then LEAVE)
    events = [enter_code(f), 0, enter_code(g), EXC, 0, -1, LEAVE, EXC, 1, 0, 0, 3,
              RERAISE, -1, -1, NO_PATH, LEAVE] * 3
    w = RecordingWriter(tmp_path / "o.wt")
    ow = OnlineWpp(w, "path", keep_raw=False)
    for fid_base, path, n, counter_base, blob in files:
        ow.add_file(fid_base, path=path, n_functions=n, counter_base=counter_base, registry=blob)
    ow.add_stream(0, kind="thread", name="main")
    ow.append_events(0, np.array(events[:9], np.int32))    # chunk boundaries inside the records
    ow.append_events(0, np.array(events[9:], np.int32))
    ow.close(ended="exit", exit_code=0)
    want, table = naive_intern({0: events}, PATH, PATH_LEAVE_AT, path_fns, fuse=True)
    grouped, twin = group_codes(want[0], table, PATH_GROUP, PATH_LEAVE_AT)   # SEQ groups (wave 12)
    with Recording(tmp_path / "o.wt") as rec:
        wpp = StoredWpp(rec)
        assert wpp.events(0).tolist() == events
        t = wpp.terminals
        cons: dict[tuple[int, int, int], int] = {}
        mine = canonical(list(zip(t.kind.tolist(), t.fid.tolist(), t.value.tolist())), cons)
        theirs = canonical(twin, cons)
        assert sorted(mine) == sorted(theirs)
        assert [mine[c] for c in wpp.stream(0).grammar.expand()] == [theirs[c] for c in grouped]
        assert (PATH, g, -1) in table and (PATH, f, NO_PATH) in table


def test_a_program_reaping_every_child_does_not_wait_for_the_builder(tmp_path: Path) -> None:
    # the builder is not a child of the program's process: os.wait() until ChildProcessError
    # reaps the program's own child only, and returns (it would wait for the builder for good)
    script = tmp_path / "waitall.py"
    script.write_text(textwrap.dedent('''
        import os
        pid = os.fork()
        if pid == 0:
            os._exit(3)
        reaped = []
        while True:
            try:
                reaped.append(os.wait()[1] >> 8)
            except ChildProcessError:
                break
        print(reaped)
    '''))
    cmd = [sys.executable, "-m", "wholetrace.cli", "record", "--mode", "path", "--wpp", "-q",
           "-o", str(tmp_path / "w.wt"), str(script)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=ENV, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == "[3]\n"
