"""What the README promises, through the command line: `profile` (`--naive`, `--limit`,
formats), `counts` options, `--weights OLD.wt` end to end, `trace --thread`, a recording
killed by SIGKILL or ended by `os._exit` keeps its flushed events, and no `.pyc` file ever
holds instrumented code.  Expected counts are worked out by hand from the programs."""

from __future__ import annotations

import json
import marshal
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wholetrace.store import Recording
from wtutil import ENV, fbe_lines, profiles, run_plain, run_recorded

# work(n) runs its loop body n times; odd(i) is true for 1, 3, ... (n // 2 of them)
PROGRAM = '''\
def odd(i):
    return i % 2 == 1


def work(n):
    total = 0
    for i in range(n):
        if odd(i):
            total += i
        else:
            total -= 1
    return total


def rare(n):
    for i in range(n):
        if i == 1000:
            print("never")
    return n


print(work(10), work(7), rare(3))
'''
LINES = {7: 2, 8: 17, 9: 8, 11: 9, 12: 2}   # line -> count in work (two calls, 10 + 7 iterations)


def cli(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wholetrace.cli", *args], capture_output=True, text=True,
                          env=env or ENV, cwd=cwd, stdin=subprocess.DEVNULL, timeout=300)


@pytest.fixture()
def program(tmp_path: Path) -> Path:
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    return script


def _work_lines(text: str) -> dict[int, int]:
    """Line counts of ``work`` in a text report."""
    section = text.split("== work ")[1].split("\n== ")[0]
    out = {}
    for row in section.splitlines()[1:]:
        parts = row.split()
        if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
            out[int(parts[1])] = int(parts[0])
    return out


@pytest.mark.parametrize("naive", [False, True])
def test_profile_prints_exact_counts(program: Path, naive: bool) -> None:
    proc = cli("profile", *(["--naive"] if naive else []), str(program))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("20 5 3\n")                # the program's own output comes first
    got = _work_lines(proc.stdout)
    assert {ln: got[ln] for ln in LINES} == LINES
    if not naive:                                                # count-naive measures no edges
        assert "[true: 8, false: 9]" in proc.stdout              # the branch of line 8
        assert "[true: 0, false: 3]" in proc.stdout              # rare's never-taken branch


def test_profile_limit_format_and_output(program: Path, tmp_path: Path) -> None:
    proc = cli("profile", "--limit", "1", str(program))
    assert proc.returncode == 0
    assert proc.stdout.count("\n== ") + proc.stdout.startswith("== ") == 1
    assert "== work " in proc.stdout                             # the hottest function
    out = tmp_path / "p.json"
    assert cli("profile", "--format", "json", "-o", str(out), str(program)).returncode == 0
    d = json.loads(out.read_text())
    lines = d["lines"][str(program.resolve())] if str(program.resolve()) in d["lines"] else d["lines"][str(program)]
    assert {ln: lines[str(ln)] for ln in LINES} == LINES
    lcov = cli("profile", "--format", "lcov", str(program)).stdout
    assert "DA:9,8" in lcov and "DA:11,9" in lcov and lcov.rstrip().endswith("end_of_record")


def test_profile_passes_the_exit_status_through(tmp_path: Path) -> None:
    script = tmp_path / "fail.py"
    script.write_text("def f():\n    raise SystemExit(3)\nf()\n")
    proc = cli("profile", str(script))
    assert proc.returncode == 3
    assert "== f " in proc.stdout


def test_counts_options(program: Path, tmp_path: Path) -> None:
    wt = tmp_path / "b.wt"
    assert run_recorded(program, wt).returncode == 0
    text = cli("counts", "--limit", "1", str(wt)).stdout
    assert text.count("== ") == 1 and _work_lines(text) == {**_work_lines(text), **LINES}
    out = tmp_path / "c.lcov"
    assert cli("counts", "--format", "lcov", "-o", str(out), str(wt)).returncode == 0
    assert "DA:9,8" in out.read_text()
    bad = cli("counts", "-o", str(tmp_path / "no-such-dir" / "c.txt"), str(wt))
    assert bad.returncode == 2 and bad.stderr.startswith("wholetrace: error: cannot write ") and bad.stderr.count("\n") == 1


def test_weights_from_an_earlier_recording(program: Path, tmp_path: Path) -> None:
    """``--weights OLD.wt`` places counters by measured edge counts: other chords than the
    heuristic's (rare's loop body never takes its branch), the same exact counts."""
    old = tmp_path / "old.wt"
    assert run_recorded(program, old).returncode == 0
    plain, weighted = tmp_path / "heuristic.wt", tmp_path / "weighted.wt"
    assert cli("record", "-q", "--mode", "count", "-o", str(plain), str(program)).returncode == 0
    assert cli("record", "-q", "--mode", "count", "--weights", str(old), "-o", str(weighted),
               str(program)).returncode == 0
    chords = {}
    for path in (plain, weighted):
        with Recording(path) as rec:
            chords[path] = {f.qualname: f.cfg["plan"]["chords"] for f in rec.functions()}
    assert chords[plain] != chords[weighted]
    want = profiles(old)
    for path in (plain, weighted):
        got = profiles(path)
        for key, p in want.items():
            assert list(p.stmts) == list(got[key].stmts), (path.name, key)
    proc = cli("profile", "--weights", str(old), str(program))
    assert proc.returncode == 0 and {ln: _work_lines(proc.stdout)[ln] for ln in LINES} == LINES


def test_trace_one_thread(tmp_path: Path) -> None:
    script = tmp_path / "threads.py"
    script.write_text("import threading\n\ndef f(k):\n    return k + 1\n\n"
                      "t = threading.Thread(target=f, args=(1,))\nt.start()\nt.join()\nprint(f(2))\n")
    wt = tmp_path / "t.wt"
    assert run_recorded(script, wt).returncode == 0
    with Recording(wt) as rec:
        other = [s.sid for s in rec.streams() if s.sid != 0]
    assert len(other) == 1
    one = cli("trace", "--thread", str(other[0]), str(wt)).stdout.splitlines()
    assert one == [f"T {other[0]}", f"F f@{script.resolve()}:3", "B 2", "E"]
    main = cli("trace", "--thread", "0", str(wt)).stdout.splitlines()
    assert main[0] == "T 0" and f"T {other[0]}" not in main and main.count(f"F f@{script.resolve()}:3") == 1


LONG = '''\
import os
import sys
import time

def step(i):
    return i * 2

t0 = time.time()
n = 0
while time.time() - t0 < 0.8:
    n += step(n) % 7
print("ready", flush=True)
if sys.argv[1] == "exit":
    os._exit(3)
time.sleep(60)
'''


def _flushed_events_are_a_prefix(wt: Path) -> None:
    with Recording(wt) as rec:
        assert rec.meta.get("ended") is None                     # the run never finished
        names = {f.fid: f.qualname for f in rec.functions()}
        assert set(names.values()) >= {"<module>", "step"}
        n = sum(s.n_events for s in rec.streams())
    assert n > 1000                                              # flushed during the 0.8 s loop
    lines = fbe_lines(wt)
    assert lines[:2] == ["T thread", "F <module>"] and lines.count("F step") > 100


@pytest.mark.parametrize("how", ["exit", "kill"])
def test_a_killed_recording_keeps_its_flushed_events(how: str, tmp_path: Path) -> None:
    script = tmp_path / "long.py"
    script.write_text(LONG)
    wt = tmp_path / "long.wt"
    cmd = [sys.executable, "-m", "wholetrace.cli", "record", "-q", "-o", str(wt), str(script), how]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=tmp_path)
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    if how == "kill":
        time.sleep(0.6)                                          # past one flush of the buffer
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=60) == -signal.SIGKILL
    else:
        assert proc.wait(timeout=60) == 3
    _flushed_events_are_a_prefix(wt)
    info = cli("info", str(wt))
    assert info.returncode == 0 and "recording did not finish" in info.stdout
    assert cli("counts", str(wt)).returncode == 0


def test_no_pyc_holds_instrumented_code(tmp_path: Path) -> None:
    """Recorded with bytecode writing on: the imported module's .pyc, if Python writes one, is
    the plain compilation, and a plain run afterwards behaves as before."""
    (tmp_path / "helper.py").write_text("def double(x):\n    return 2 * x\n")
    script = tmp_path / "main.py"
    script.write_text("import helper\nprint(helper.double(21))\n")
    env = {k: v for k, v in ENV.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for mode in ("blocks", "count", "witness"):
        assert cli("record", "-q", "--mode", mode, "-o", str(tmp_path / f"{mode}.wt"), str(script),
                   cwd=tmp_path, env=env).stdout == "42\n"
    def probe_locals(code: object) -> set[str]:   # instrumented code has locals named wt.* (emit.A, ...)
        names = {n for n in code.co_varnames if n.startswith("wt.")}
        return names.union(*(probe_locals(c) for c in code.co_consts if hasattr(c, "co_varnames")))

    from wholetrace.instrument.loader import Instrumenter
    from wholetrace.runtime.recorder import Recorder
    from wholetrace.store.writer import RecordingWriter

    for mode in ("blocks", "count", "witness"):   # the check can fail: instrumented code has them
        writer = RecordingWriter(tmp_path / f"probe-{mode}.wt")
        assert probe_locals(Instrumenter(Recorder(writer, mode)).compile((tmp_path / "helper.py").read_text(),
                                                                          str(tmp_path / "helper.py")))
        writer.close(ended="exit", exit_code=0)
    cache = tmp_path / "__pycache__"
    for pyc in cache.glob("*.pyc") if cache.exists() else []:
        assert not probe_locals(marshal.loads(pyc.read_bytes()[16:])), pyc
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert plain.stdout == "42\n"
    assert not probe_locals(marshal.loads(next(cache.glob("helper*.pyc")).read_bytes()[16:]))
    assert run_plain(script).stdout == "42\n"
    assert os.path.exists(cache)


@pytest.mark.parametrize("flags", [["--mode", "path", "--include", "json", "--wpp", "--no-lookahead"],
                                   ["--mode", "witness", "--include", "json", "--include", "csv"],
                                   ["--mode", "blocks", "--wpp", "--keep-raw"]])
def test_info_shows_the_record_options(tmp_path: Path, flags: list[str]) -> None:
    """``info``'s command line, parsed by ``record``'s own parser, asks for what was recorded
    (it showed ``--mode M script`` alone, without --include or --wpp)."""
    import shlex

    from wholetrace.runtime.cli import parse_target, record_parser

    script = tmp_path / "prog.py"
    script.write_text("import json, csv\nprint(json.dumps([1]))\n")
    assert cli("record", "-q", *flags, "-o", str(tmp_path / "p.wt"), str(script), cwd=tmp_path).returncode == 0
    line = next(l for l in cli("info", str(tmp_path / "p.wt")).stdout.splitlines() if l.startswith("command:"))
    words = shlex.split(line.split(":", 1)[1])
    assert words[:2] == ["wholetrace", "record"]
    shown, wanted = (parse_target(record_parser(), w, "record")[0] for w in (words[2:], [*flags, str(script)]))
    for key in ("mode", "include", "wpp", "keep_raw", "lookahead"):
        assert getattr(shown, key) == getattr(wanted, key), key
