"""Full mode in fork children, wave 22: a fork child asks the recording's split server for a
sibling of its own (``splitserver.ask``) and splits in Python (``splitpure``) until it has it, so
numpy is never imported into it and its first flush takes milliseconds; a grandchild does the
same; the FIFOs are gone at the end.

Oracles: plain's output (``"numpy" in sys.modules`` in each process), the same program recorded
with ``WHOLETRACE_SPLIT_SERVER=0`` (the in-process split: each part's log equal), ``blocks`` mode's
counts (summed over processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from wtutil import ENV, cli_in_process, run_plain

# The child lives through several flushes (its first ones split in Python, then by its own
# server once the recording's server, importing numpy at the start, has forked it), then forks a
# grandchild; both end through SystemExit, so their parts hold the split tally.
PROG = '''
import os, sys, time
def work(n, seed):
    out = []
    for i in range(n):
        s = str(i + seed) + "s"
        f = i * 0.5 + seed
        out.append((s, f, i % 3 == 0, None))
    return len(out)
work(200, 0)
pid = os.fork()
if pid == 0:
    for r in range(8):
        work(300, r)
        time.sleep(0.3)
    if os.fork() == 0:        # (a pid is no recorded value here: it differs between runs)
        work(100, 9)
        time.sleep(0.6)
        print("grandchild", "numpy" in sys.modules, flush=True)
        raise SystemExit(0)
    os.wait()
    print("child", "numpy" in sys.modules, flush=True)
    raise SystemExit(0)
os.waitpid(pid, 0)
print("parent", work(10, 1), "numpy" in sys.modules)
'''


def _record(script: Path, out: Path, mode: str = "full", server: bool = True) -> subprocess.CompletedProcess:
    env = dict(ENV, WHOLETRACE_SPLIT_SERVER="1" if server else "0")
    return subprocess.run([sys.executable, "-m", "wholetrace.cli", "record", "--mode", mode, "-q", "-o", str(out),
                           str(script)], capture_output=True, text=True, cwd=script.parent, timeout=120, env=env,
                          stdin=subprocess.DEVNULL)


def _parts(out: Path) -> dict[str, Path]:
    """The parts by their process's place: "child", "grandchild"."""
    from wholetrace.store import open_recording

    got = {}
    for p in Path(str(out) + ".parts").glob("*.wt"):
        with open_recording(p) as rec:
            got["grandchild" if rec.meta["process"]["parent"] else "child"] = p
    return got


def _log(path: Path) -> tuple:
    from wholetrace.store import open_recording
    from wholetrace.wet.capture import load

    with open_recording(path) as rec:
        log = load(rec)
        streams = {s: [getattr(st, f).tolist() for f in ("pos", "slot", "tag", "val")] for s, st in log.streams.items()}
        events = {st.sid: rec.events(st.sid).tolist() for st in rec.streams()}
        return (streams, events, log.contents, sorted(log.object_types.values())), rec.meta.get("wet_splits")


def test_fork_children_split_by_a_server_of_their_own(tmp_path: Path) -> None:
    script = tmp_path / "prog.py"
    script.write_text(PROG)
    plain = run_plain(script)
    assert plain.stdout == "grandchild False\nchild False\nparent 10 False\n", plain.stderr
    logs = {}
    for server in (True, False):
        out = tmp_path / f"{int(server)}.wt"
        rec = _record(script, out, server=server)
        assert rec.returncode == 0, rec.stderr
        assert rec.stdout == (plain.stdout if server else plain.stdout.replace("10 False", "10 True")), rec.stderr
        assert sorted(os.listdir(str(out) + ".parts")) == sorted(p.name for p in Path(str(out) + ".parts").glob("*.wt"))
        logs[server] = {k: _log(p) for k, p in _parts(out).items()}
    assert set(logs[True]) == set(logs[False]) == {"child", "grandchild"}
    for who in ("child", "grandchild"):
        (got, splits), (want, _) = logs[True][who], logs[False][who]
        assert got == want                           # the in-process split's log
        assert got[0][0][0] and got[1][0]            # records and events stored
    assert logs[True]["child"][1][0] > 0             # chunks split by its own server
    assert logs[False]["child"][1][0] == 0


def test_counts_of_every_process_equal_blocks(tmp_path: Path) -> None:
    script = tmp_path / "prog.py"
    script.write_text(PROG)
    got = {}
    for mode in ("blocks", "full"):
        out = tmp_path / f"{mode}.wt"
        rec = _record(script, out, mode)
        assert rec.returncode == 0, rec.stderr
        rc, text, err = cli_in_process("counts", str(out), "--format", "json")
        assert rc == 0, err
        got[mode] = json.loads(text)
    assert got["full"] == got["blocks"]
