"""Child processes are recorded (issue 15 §2): fork and spawn pools, nested forks, children that
crash.  Oracles: the program's own arithmetic (how often `work` runs and loops, whoever runs
it), and the per-process `blocks` ground truth: every part of a `blocks` recording counted by
the naive walk (`tests/naive_decode.py`) over its own events (the part less its prefix up to
the fork, closed there), summed over processes; every mode's summed counts must equal it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from naive_decode import count_events
from wholetrace.instrument.cfg import CFG
from wholetrace.store import Recording
from wholetrace.store.parts import Lineage
from wholetrace.profile import profiles as profiles_of
from wholetrace.profile.model import by_key
from wholetrace.profile.processes import one_process
from wtutil import ENV, cli_in_process, profiles, run_plain, run_recorded

MODES = ("blocks", "count", "witness", "branches")

POOL = '''\
import multiprocessing as mp
import sys

def work(x):
    s = 0
    for i in range(x):
        if i % 3 == 0:
            s += i
    return s

def main(method, end):
    ctx = mp.get_context(method)
    with ctx.Pool(2) as pool:
        print(method, sum(pool.map(work, range(40), chunksize=4)))
        if end == "join":           # else the pool's __exit__ terminates the workers (SIGTERM)
            pool.close()
            pool.join()

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
'''
POOL_WORK = (40, sum(range(40)), sum(1 for x in range(40) for i in range(x) if i % 3 == 0))   # calls, loops, ifs

NESTED = '''\
import os, time

def work(n):
    t = 0
    for i in range(n):
        t += i
    return t

def spawn(depth):
    print("depth", depth, work(10 * (depth + 1)), flush=True)
    if depth == 2:
        return 0
    pid = os.fork()
    if pid == 0:
        code = spawn(depth + 1)
        if depth == 1:              # the middle process ends with os._exit, after a flush
            time.sleep(0.8)
            os._exit(code)
        return code
    _, status = os.waitpid(pid, 0)
    print("child of", depth, "exited", os.waitstatus_to_exitcode(status), flush=True)
    return work(5)

spawn(0)
print("done", os.getpid() > 0)
'''

CRASH = '''\
import glob, os, signal, sqlite3, sys, time

def work(n):
    t = 0
    for i in range(n):
        t += i
    return t

def child(how):
    print(how, work(100), flush=True)
    flushed(sys.argv[1])            # the flusher stores what ran so far
    if how == "exit":
        os._exit(3)
    os.kill(os.getpid(), signal.SIGKILL)

def stored(parts):
    n = 0
    for path in glob.glob(os.path.join(parts, "%d-*.wt" % os.getpid())):
        try:
            con = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=30)
            try:
                n += con.execute("SELECT count(*) FROM chunks").fetchone()[0]
            finally:
                con.close()
        except sqlite3.Error:       # the part is being made
            pass
    return n

def flushed(parts):
    if parts == "-":                # the plain run: nothing to wait for
        return
    seen = stored(parts)
    for _ in range(2):              # two commits: the second flush began after this call did
        deadline = time.monotonic() + 120
        while stored(parts) == seen and time.monotonic() < deadline:
            time.sleep(0.02)
        seen = stored(parts)

for how in ("exit", "kill"):
    pid = os.fork()
    if pid == 0:
        child(how)
    _, status = os.waitpid(pid, 0)
    print(how, "status", os.waitstatus_to_exitcode(status), flush=True)
print("parent", work(10))
'''


def _script(tmp: Path, name: str, source: str) -> Path:
    path = tmp / f"{name}.py"
    path.write_text(source)
    return path


def _info(out: Path) -> dict:
    rc, stdout, stderr = cli_in_process("info", "--json", str(out))
    assert rc == 0, stderr
    return json.loads(stdout)


def _own_events(rec: Lineage, sid: int) -> tuple[np.ndarray, np.ndarray | None]:
    """(the stream's events from the program's start, the prefix closed at the fork if the
    part is a fork child; None, None if it stored nothing past the fork)."""
    events = rec.events(sid)
    process = rec.meta.get("process") or {}
    base = (process.get("base") or {}).get(str(sid)) if process.get("start") == "fork" else None
    if base is None:
        return events, None
    if len(events) < base["events"]:
        return None, None
    return events, np.concatenate([events[:base["events"]], np.asarray(base["tail"], np.int32)])


def blocks_truth(out: Path) -> dict[int, dict[tuple[str, str, int], tuple[np.ndarray, np.ndarray]]]:
    """Per process number: (file, qualname, first line) -> (block counts, statement counts) of a
    `blocks` recording, each process counted by the naive walk over its own events."""
    per: dict[int, dict[tuple[str, str, int], tuple[np.ndarray, np.ndarray]]] = {}
    for p in _info(out)["processes"]:
        total = per.setdefault(p["process"], {})
        with Lineage(Recording(p["file"])) as rec:
            funcs = {f.fid: f for f in rec.functions()}
            cfgs = {fid: CFG.from_json(f.cfg) for fid, f in funcs.items()}
            for st in rec.streams():
                full, base = _own_events(rec, st.sid)
                if full is None:
                    continue
                got = count_events([full], cfgs)
                less = count_events([base], cfgs) if base is not None else {}
                for fid, (blocks, stmts, *_rest) in got.items():
                    if fid in less:
                        blocks, stmts = blocks - less[fid][0], stmts - less[fid][1]
                    f = funcs[fid]
                    key = (f.file, f.qualname, f.firstline)
                    b0, s0 = total.get(key, (0, 0))
                    total[key] = (b0 + blocks, s0 + stmts)
    return per


def summed_truth(per: dict[int, dict], numbers: list[int] | None = None) -> dict:
    """The per-process truth summed over ``numbers`` (all processes if None)."""
    total: dict[tuple[str, str, int], tuple[np.ndarray, np.ndarray]] = {}
    for number, counts in per.items():
        if numbers is not None and number not in numbers:
            continue
        for key, (blocks, stmts) in counts.items():
            b0, s0 = total.get(key, (0, 0))
            total[key] = (b0 + blocks, s0 + stmts)
    return total


def _stmt_count(prof: dict, qualname: str, line: int) -> int:
    """The count of the statement starting on ``line`` of the function ``qualname``."""
    (p,) = [p for (f, q, l), p in prof.items() if q == qualname]
    lines, sids, _cols = p.shape.line_first
    return int(np.asarray(p.stmts)[sids][list(lines.tolist()).index(line)])


def _check_against_truth(truth: dict, got: dict, what: str) -> None:
    for key, (blocks, stmts) in truth.items():
        p = got.get(key)
        if p is None:
            assert not blocks.any(), (what, key, "missing")
            continue
        assert np.array_equal(np.asarray(p.blocks), blocks), (what, key, "blocks")
        assert np.array_equal(np.asarray(p.stmts), stmts), (what, key, "statements")


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("children")


@pytest.mark.parametrize("method, end", [("fork", "terminate"), ("fork", "join"), ("spawn", "join")])
def test_pool_counts_sum_over_workers(tmp: Path, method: str, end: str) -> None:
    """Spawned workers run the main module as ``__mp_main__``: they are joined, so that each of
    them runs it whole (a worker terminated while it starts runs it in part, plain or recorded)."""
    script = _script(tmp, f"pool_{method}", POOL)
    plain = run_plain(script, method, end)
    truth = None
    for mode in MODES:
        out = tmp / f"pool_{method}_{end}_{mode}.wt"
        res = run_recorded(script, out, method, end, mode=mode)
        assert (res.stdout, res.returncode) == (plain.stdout, plain.returncode), (mode, res.stderr)
        info = _info(out)
        assert info["processes"][0]["start"] == "root"
        assert len(info["processes"]) >= 2, info["processes"]       # the workers that ran work()
        assert all(p["start"] == method for p in info["processes"][1:])
        got = profiles(out)
        calls, loops, ifs = POOL_WORK
        assert _stmt_count(got, "work", 5) == calls, mode                  # s = 0
        assert _stmt_count(got, "work", 7) == loops, mode                  # if i % 3 == 0
        assert _stmt_count(got, "work", 8) == ifs, mode                    # s += i
        if mode == "blocks":
            truth = summed_truth(blocks_truth(out))
        assert truth is not None
        _check_against_truth(truth, got, (method, end, mode))


SIGTERM_ELSEWHERE = '''\
import multiprocessing as mp
import signal, threading, time

def work(n):
    t = 0
    for i in range(n):
        t += i
    return t

def poke():
    time.sleep(0.5)
    signal.pthread_kill(threading.get_ident(), signal.SIGTERM)

def child(lock):
    print("child", work(50), flush=True)
    threading.Thread(target=poke).start()
    lock.acquire()                  # the parent holds it: the main thread waits here until killed

if __name__ == "__main__":
    ctx = mp.get_context("fork")
    lock = ctx.Lock()
    lock.acquire()
    p = ctx.Process(target=child, args=(lock,))
    p.start()
    p.join(30)
    print("exitcode", p.exitcode, flush=True)
    if p.exitcode is None:
        p.kill()
'''


@pytest.mark.parametrize("mode", ["count", "blocks"])
def test_sigterm_handled_on_another_thread(tmp: Path, mode: str) -> None:
    """A SIGTERM that Python's C handler takes on a thread other than the main one (or while the
    main thread waits for the GIL just before blocking) does not interrupt the main thread's
    ``SemLock.acquire``: the recording's handler must still run (the flaky ``Pool.terminate``
    hang).  Oracle: the plain run (the child dies of SIGTERM at once) and the child's counts."""
    script = _script(tmp, "sigterm_elsewhere", SIGTERM_ELSEWHERE)
    plain = run_plain(script)
    assert plain.stdout == "child 1225\nexitcode -15\n", plain.stderr
    out = tmp / f"sigterm_elsewhere_{mode}.wt"
    res = run_recorded(script, out, mode=mode)
    assert (res.stdout, res.returncode) == (plain.stdout, plain.returncode), res.stderr
    info = _info(out)
    assert [p["start"] for p in info["processes"]] == ["root", "fork"]
    got = profiles(out)
    assert _stmt_count(got, "work", 7) == 50            # t += i, in the child only


def test_nested_fork(tmp: Path) -> None:
    script = _script(tmp, "nested", NESTED)
    plain = run_plain(script)
    truth = None
    for mode in MODES:
        out = tmp / f"nested_{mode}.wt"
        res = run_recorded(script, out, mode=mode)
        assert (res.stdout, res.returncode) == (plain.stdout, plain.returncode), (mode, res.stderr)
        procs = _info(out)["processes"]
        assert [p["parent"] for p in procs] == [None, 0, 1]               # root -> child -> grandchild
        got = profiles(out)
        # down: work(10), work(20), work(30); up: work(5) in the root and the middle process.  The
        # leaf ends with os._exit: trace modes keep what it flushed, count modes store counters
        # when a process ends, so there it is left out (with a message)
        leaf_kept = mode != "count"
        assert ("left out" in res.stderr) is False                       # `record` itself says nothing
        assert _stmt_count(got, "work", 4) == (5 if leaf_kept else 4), mode
        assert _stmt_count(got, "work", 6) == 10 + 20 + 5 + 5 + (30 if leaf_kept else 0), mode
        assert _stmt_count(got, "spawn", 10) == (3 if leaf_kept else 2), mode
        if mode == "blocks":
            truth = blocks_truth(out)
        assert truth is not None
        _check_against_truth(summed_truth(truth, None if leaf_kept else [0, 1]), got, mode)
        # one process alone (`counts --process 1`): the middle one ran work(20) and work(5)
        with one_process(str(out), 1) as trace:
            middle = by_key(profiles_of(trace))
        assert _stmt_count(middle, "work", 6) == 25, mode
        assert _stmt_count(middle, "spawn", 10) == 1, mode
        rc, _stdout, stderr = cli_in_process("trace", "--process", "1", str(out))
        assert rc == 0, stderr


@pytest.mark.parametrize("mode", ["blocks", "witness"])
def test_crashed_children_keep_what_they_flushed(tmp: Path, mode: str) -> None:
    script = _script(tmp, "crash", CRASH)
    plain = run_plain(script, "-")
    out = tmp / f"crash_{mode}.wt"
    # each child waits until its part holds a flush begun after its work (a fixed sleep lost
    # both parts when the machine was loaded: "info listed no processes")
    res = run_recorded(script, out, f"{out}.parts", mode=mode)
    assert (res.stdout, res.returncode) == (plain.stdout, plain.returncode), res.stderr
    procs = _info(out)["processes"]
    assert len(procs) == 3
    assert all(p["ended"] is None for p in procs[1:])                     # neither child finished
    got = profiles(out)
    assert _stmt_count(got, "work", 6) == 100 + 100 + 10                   # both children's work(100) kept
    assert _stmt_count(got, "child", 10) == 2


def test_no_children(tmp: Path) -> None:
    script = _script(tmp, "pool_nochildren", POOL)
    out = tmp / "nochildren.wt"
    res = subprocess.run([sys.executable, "-m", "wholetrace.cli", "record", "-q", "--no-children", "-o", str(out),
                          str(script), "fork", "join"], capture_output=True, text=True, env=ENV, timeout=300)
    assert res.returncode == 0, res.stderr
    assert not Path(str(out) + ".parts").exists()
    assert _info(out).get("processes") is None
    got = profiles(out)
    assert _stmt_count(got, "work", 5) == 0                                # work() ran in the workers only


SUBPROCESS = '''\
import os, subprocess, sys

def work(n):
    t = 0
    for i in range(n):
        t += i
    return t

here = os.path.dirname(os.path.abspath(__file__))
r = subprocess.run([sys.executable, os.path.join(here, "child_script.py"), "30"], capture_output=True, text=True)
print("script", r.returncode, r.stdout.strip(), r.stderr.strip()[-30:])
r = subprocess.run([sys.executable, "-m", "child_module", "7"], capture_output=True, text=True, cwd=here)
print("module", r.returncode, r.stdout.strip())
r = subprocess.run(["sh", "-c", "echo from sh; exit 3"], capture_output=True, text=True)
print("sh", r.returncode, r.stdout.strip())
r = subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True)
print("dash c", r.returncode, r.stdout.strip(), work(4))
'''
CHILD_SCRIPT = '''\
import sys
from child_module import work
print("child", work(int(sys.argv[1])))
raise SystemExit(4)
'''
CHILD_MODULE = '''\
import sys

def work(n):
    t = 0
    for i in range(n):
        t += i
    return t

if __name__ == "__main__":
    print("module", work(int(sys.argv[1])))
    raise ValueError("boom")
'''


@pytest.mark.parametrize("mode", ["blocks", "count"])
def test_subprocess_of_sys_executable(tmp: Path, mode: str) -> None:
    where = tmp / f"subprocess_{mode}"
    where.mkdir()
    _script(where, "child_script", CHILD_SCRIPT)
    _script(where, "child_module", CHILD_MODULE)
    script = _script(where, "main", SUBPROCESS)
    plain = run_plain(script)
    out = where / "main.wt"
    res = run_recorded(script, out, mode=mode)
    assert (res.stdout, res.returncode) == (plain.stdout, plain.returncode), res.stderr
    assert "WHOLETRACE_CHILD" not in res.stderr
    procs = _info(out)["processes"]
    assert sorted((p["start"], p["exit_code"]) for p in procs) == [("root", 0), ("subprocess", 0),   # -c
                                                                   ("subprocess", 1), ("subprocess", 4)]
    got = profiles(out)
    per_file = {(f.rsplit("/", 1)[-1], q): p for (f, q, _l), p in got.items()}
    work_module = per_file[("child_module.py", "work")]
    assert work_module.calls == 2                          # work(30) imported, work(7) run with -m
    truth_lines = {("main.py", 6): 4, ("child_module.py", 6): 37}
    for (name, line), want in truth_lines.items():
        (p,) = [p for (f, q, _l), p in got.items() if f.endswith(name) and q == "work"]
        lines, sids, _cols = p.shape.line_first
        assert int(np.asarray(p.stmts)[sids][list(lines.tolist()).index(line)]) == want, (name, mode)


# -- the process-pool program of the behaviour-equality suites, against a settrace oracle run in
# every process (plain Python: the tracer and its counts are inherited by fork, reset in the
# child, and written per process when it ends, multiprocessing workers included)
ORACLE = r'''
import atexit, os, runpy, sys, threading
out_dir, script = sys.argv[1], os.path.abspath(sys.argv[2])
counts = {}
def local(frame, event, arg):
    if event == "line" and frame.f_code.co_filename == script:
        key = frame.f_lineno
        counts[key] = counts.get(key, 0) + 1
    return local
def global_(frame, event, arg):
    return local(frame, event, arg) if frame.f_code.co_filename == script else None
def dump():
    sys.settrace(None)
    with open(os.path.join(out_dir, f"{os.getpid()}.txt"), "w") as f:
        for line, n in sorted(counts.items()):
            f.write(f"{line} {n}\n")
class Token:
    pass
token = Token()
def mp_child(_token):
    import multiprocessing.util as util
    util.Finalize(None, dump, exitpriority=-(2 ** 30))
def child():
    counts.clear()
    util = sys.modules.get("multiprocessing.util")
    if util is not None:
        util.register_after_fork(token, mp_child)
def before():
    util = sys.modules.get("multiprocessing.util")
    if util is not None and not getattr(token, "done", False):
        util.register_after_fork(token, mp_child)
        token.done = True
os.register_at_fork(before=before, after_in_child=child)
atexit.register(dump)
sys.argv = [script] + sys.argv[3:]
sys.path[0] = os.path.dirname(script)
threading.settrace(global_)
sys.settrace(global_)
runpy.run_path(script, run_name="__main__")
'''


def settrace_all_processes(script: Path, *args: str) -> dict[tuple[str, int], int]:
    """(file, line) -> 'line' events summed over every process of a plain run of ``script``."""
    where = script.parent / f"oracle-{script.stem}"
    where.mkdir()
    runner = where / "runner.py"
    runner.write_text(ORACLE)
    res = subprocess.run([sys.executable, str(runner), str(where), str(script), *args], capture_output=True,
                         text=True, env=ENV, timeout=300, cwd=script.parent)
    assert res.returncode == 0, res.stderr
    total: dict[tuple[str, int], int] = {}
    for f in where.glob("*.txt"):
        for row in f.read_text().splitlines():
            line, n = map(int, row.split())
            total[(str(script), line)] = total.get((str(script), line), 0) + n
    return total


@pytest.mark.parametrize("method", ["fork"])   # a settrace tracer is inherited by fork only
def test_process_pool_program_against_settrace_in_every_process(tmp: Path, method: str) -> None:
    """Same behaviour in every mode, and line counts equal to the oracle's over all processes."""
    from runtime.test_corpus_blocks import compare_lines

    where = tmp / f"oracle_pool_{method}"
    where.mkdir()
    script = _script(where, "pool", POOL)
    plain = run_plain(script, method, "join")
    oracle = settrace_all_processes(script, method, "join")
    for mode in ("blocks", "count", "count-naive", "witness", "branches"):
        out = where / f"{mode}.wt"
        res = run_recorded(script, out, method, "join", mode=mode)
        assert (res.returncode, res.stdout, res.stderr) == (plain.returncode, plain.stdout, plain.stderr), mode
        assert compare_lines(out, {str(script)}, oracle) >= 9, mode


# -- `python -c CODE` children: the command string is the child's main module, `<string>`
DASH_C = '''\
import sys
from child_module import work

def tri(n):
    t = 0
    for i in range(n):
        if i % 3:
            t += i
    return t

class Boom:
    @property
    def value(self):
        raise KeyError("implicit")

try:
    Boom().value
except KeyError as exc:
    print("caught", exc)
print("dash c", sys.argv, repr(sys.path[0]), work(5), tri(int(sys.argv[1])), __name__, sorted(globals()))
if sys.argv[2] == "raise":
    tri(None)
sys.exit(int(sys.argv[2]))
'''
DASH_C_MAIN = '''\
import os, subprocess, sys
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "code.txt")) as f:
    code = f.read()

def run(label, *argv):
    r = subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=here)
    print(label, r.returncode, r.stdout, r.stderr)

run("c", "-c", code, "9", "3")
run("u X c", "-u", "-X", "utf8", "-c", code, "7", "raise")
run("Bc", "-Bc", code, "4", "0")
run("script", "-u", "-X", "utf8", os.path.join(here, "as_script.py"), "9", "3")
run("um", "-um", "child_module", "6")
run("X m", "-Xutf8", "-W", "ignore", "-m", "child_module", "5")
'''
#: The settrace oracle of one `python -c` run: 'line' events of `<string>` (argv: out code args...).
DASH_C_ORACLE = r'''
import sys
out, code = sys.argv[1], sys.argv[2]
sys.argv = ["-c", *sys.argv[3:]]
sys.path[0] = ""
counts = {}
def local(frame, event, arg):
    if event == "line":
        counts[frame.f_lineno] = counts.get(frame.f_lineno, 0) + 1
    return local
def global_(frame, event, arg):
    return local if frame.f_code.co_filename == "<string>" else None
sys.settrace(global_)
try:
    exec(compile(code, "<string>", "exec"), {"__name__": "__main__"})
except BaseException:
    pass
finally:
    sys.settrace(None)
    with open(out, "w") as f:
        for line, n in sorted(counts.items()):
            f.write(f"{line} {n}\n")
'''


def dash_c_oracle(where: Path, runs: list[list[str]]) -> dict[int, int]:
    """line -> 'line' events in `<string>`, summed over plain runs of DASH_C with ``runs``' args."""
    runner = where / "oracle_c.py"
    runner.write_text(DASH_C_ORACLE)
    total: dict[int, int] = {}
    for k, args in enumerate(runs):
        out = where / f"oracle_c_{k}.txt"
        res = subprocess.run([sys.executable, str(runner), str(out), DASH_C, *args], capture_output=True,
                             text=True, env=ENV, timeout=120, cwd=where)
        assert res.returncode == 0, res.stderr
        for row in out.read_text().splitlines():
            line, n = map(int, row.split())
            total[line] = total.get(line, 0) + n
    return total


def _line_counts(prof: dict, file: str) -> dict[int, int]:
    """line -> count of the one-line simple statements of ``file``'s functions."""
    ours: dict[int, int] = {}
    for (f, _q, _l), p in prof.items():
        if f == file:
            for st, n in zip(p.cfg.stmts, p.stmts):
                if st.line == st.end_line and st.kind == "simple":
                    ours[st.line] = ours.get(st.line, 0) + int(n)
    return ours


@pytest.mark.parametrize("mode, options", [("blocks", ()), ("count", ()), ("witness", ()),
                                           ("witness", ("--wpp", "--keep-raw"))])
def test_dash_c_children_are_recorded(tmp: Path, mode: str, options: tuple[str, ...]) -> None:
    """`python -c CODE` children (with options before -c, and `-m` ones) are recorded, CODE as
    the main module `<string>`: line counts equal a settrace oracle of the same runs, and the
    blocks and statements of the -c child equal those of the same code run as a script file."""
    from oracles.settrace_lines import single_simple_statement_lines

    where = tmp / f"dash_c_{mode}{'_wpp' if options else ''}"
    where.mkdir()
    (where / "code.txt").write_text(DASH_C)
    _script(where, "as_script", DASH_C)
    _script(where, "child_module", CHILD_MODULE)
    script = _script(where, "main", DASH_C_MAIN)
    plain = run_plain(script)
    assert "dash c ['-c', '9', '3'] ''" in plain.stdout and "line 22, in <module>" in plain.stdout
    out = where / "main.wt"
    res = run_recorded(script, out, mode=mode, options=options)
    assert (res.returncode, res.stdout, res.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    procs = _info(out)["processes"]
    assert [(p["start"], p["exit_code"]) for p in procs] == [("root", 0)] + [("subprocess", c)
                                                                             for c in (3, 1, 0, 3, 1, 1)]
    # the settrace oracle over the three -c runs, on the lines where a statement count is a line count
    oracle = dash_c_oracle(where, [["9", "3"], ["7", "raise"], ["4", "0"]])
    ours = _line_counts(profiles(out), "<string>")
    lines = sorted(single_simple_statement_lines(DASH_C))
    assert len(lines) >= 10
    assert {n: ours.get(n) for n in lines} == {n: oracle.get(n, 0) for n in lines}
    # process 1 (-c, args 9 3) ran exactly what process 4 (the same code as a script, args 9 3) ran
    with one_process(str(out), 1) as trace:
        as_c = {(q, l): p for (f, q, l), p in by_key(profiles_of(trace)).items() if f == "<string>"}
    with one_process(str(out), 4) as trace:
        as_file = {(q, l): p for (f, q, l), p in by_key(profiles_of(trace)).items() if f.endswith("as_script.py")}
    assert as_c.keys() == as_file.keys() and len(as_c) == 4              # <module>, tri, Boom, Boom.value
    for key, p in as_c.items():
        assert np.array_equal(np.asarray(p.blocks), np.asarray(as_file[key].blocks)), key
        assert np.array_equal(np.asarray(p.stmts), np.asarray(as_file[key].stmts)), key
    # child_module.work: work(5) in each of the four code runs, work(6) and work(5) with -m
    (work,) = [p for (f, q, _l), p in profiles(out).items() if f.endswith("child_module.py") and q == "work"]
    assert work.calls == 6, mode


ARGV_CODE = "import sys, json; print(json.dumps(sys.argv))"


@pytest.mark.parametrize("options", [
    ["-c", ARGV_CODE, "a"], ["-uc", ARGV_CODE, "a", "-c"], ["-c" + ARGV_CODE], ["-X", "utf8", "-c", ARGV_CODE],
    ["-Xutf8", "-W", "ignore", "-c", ARGV_CODE, "--", "x"], ["-u", "-m", "argvmod", "a"], ["-um", "argvmod"],
    ["-margvmod", "b", "-u"], ["-O", "--", "argv.py", "-c"], ["-E", "-s", "argv.py", "-m", "x"],
    ["--check-hash-based-pycs", "always", "argv.py"], ["-W", "error", "-bb", "argv.py", "q"], ["-I", "-c", ARGV_CODE],
])
def test_target_of_parses_as_the_interpreter(tmp_path: Path, options: list[str]) -> None:
    """What ``runtime.subprocs.target_of`` reads in an interpreter's argv is what that
    interpreter then runs: the oracle is the ``sys.argv`` the program itself sees."""
    from wholetrace.runtime.subprocs import target_of

    (tmp_path / "argv.py").write_text(ARGV_CODE + "\n")
    (tmp_path / "argvmod.py").write_text(ARGV_CODE + "\n")
    res = subprocess.run([sys.executable, *options], capture_output=True, text=True, cwd=tmp_path, timeout=60,
                         env={k: v for k, v in ENV.items() if k != "WHOLETRACE_CHILD"})
    assert res.returncode == 0, res.stderr
    seen = json.loads(res.stdout)
    got = target_of([sys.executable, *options])
    assert got is not None
    kind, what, args = got
    assert args == seen[1:]
    if seen[0] == "-c":
        assert (kind, what) == ("command", ARGV_CODE)
    elif seen[0].endswith("argvmod.py"):
        assert (kind, what) == ("module", "argvmod")
    else:
        assert (kind, what) == ("script", "argv.py") and seen[0] == "argv.py"


def test_target_of_leaves_other_interpreters_alone() -> None:
    from wholetrace.runtime.subprocs import target_of

    exe = sys.executable
    assert target_of([exe, "-i", "-c", "pass"]) is None                    # a prompt after the command
    assert target_of([exe, "--version"]) is None
    assert target_of([exe, "-c", "from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5)",
                      "--multiprocessing-fork"]) is None                   # recorded by runtime.children
    assert target_of([exe, "-c", "from multiprocessing.resource_tracker import main;main(5)"]) is None


FLAGS_MAIN = '''\
import os, subprocess, sys
here = os.path.dirname(os.path.abspath(__file__))
show = "import sys; print(sys.path[:2], sys.argv, sys.flags.safe_path, sys.flags.dev_mode, __name__)"
for opts in (["-P"], ["-I"], ["-X", "dev"], ["-W", "error"], ["-OO"]):
    for tail in (["-c", show, "x"], [os.path.join(here, "showp.py"), "y"], ["-m", "showp", "z"]):
        r = subprocess.run([sys.executable, *opts, *tail], capture_output=True, text=True, cwd=here)
        print(opts, tail[0][:3], r.returncode, r.stdout.strip(), r.stderr.strip())
r = subprocess.run([sys.executable, os.path.join(here, "no_such.py")], capture_output=True, text=True, cwd=here)
print("no script", r.returncode, r.stderr.strip())
r = subprocess.run([sys.executable, "-m", "no_such_module"], capture_output=True, text=True, cwd=here)
print("no module", r.returncode, r.stderr.strip())
for code in ["1 +", "def f(:\\n  pass", "raise SystemExit('bye')", "exit(5)",
             "import sys; print(type(help).__name__, type(copyright).__name__, type(quit).__name__, "
             "hasattr(sys, '__interactivehook__'))"]:
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=here)
    print("code", r.returncode, r.stdout.strip(), r.stderr)
'''


def test_interpreter_options_before_the_program(tmp: Path) -> None:
    """-P and -I (no main directory on sys.path: `-m` of a module in the current directory
    fails as it does plain), -X dev, -W error, -OO: the same output, the children that ran
    recorded; a missing script or module fails with the interpreter's own message; a syntax
    error reads as the interpreter's; `site`'s builtins (`exit`, `help`, ...) are there."""
    where = tmp / "flags"
    where.mkdir()
    _script(where, "showp", "import sys; print(sys.path[:2], sys.argv, sys.flags.safe_path, sys.flags.dev_mode, "
                            "__name__)\n")
    script = _script(where, "main", FLAGS_MAIN)
    plain = run_plain(script)
    assert "No module named showp" in plain.stdout and "can't open file" in plain.stdout
    out = where / "main.wt"
    res = run_recorded(script, out)
    assert (res.returncode, res.stdout, res.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    procs = _info(out)["processes"]
    assert "code 5" in plain.stdout and "code 0 _Helper _Printer Quitter True" in plain.stdout
    assert len(procs) == 1 + 5 * 3 - 2 + 5                # -P -m and -I -m find no module, as plain
    assert sorted(p["exit_code"] for p in procs) == [0] * 15 + [1, 1, 1, 5]
