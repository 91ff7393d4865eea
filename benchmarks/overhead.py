"""Overhead of ``wholetrace record --mode blocks`` on the corpus, against plain Python,
coverage.py ``--branch`` and a minimal ``sys.settrace`` line counter.

For every program of the registry (``tests/corpus.py``, size ``bench``) this times the
whole process, wall clock, of four commands, interleaved round by round (every program
once per round, the four commands back to back):

* plain:     ``python drive_X.py``
* blocks:    ``wholetrace record --mode blocks -q -o X.wt [--include M]... drive_X.py``
* coverage:  ``python -m coverage run --branch drive_X.py`` (data file in the temp dir; for the
  standard-library programs also ``--pylib --include=<the module's files and the driver>``,
  so coverage measures the same code wholetrace instruments)
* settrace:  a tiny runner that installs a ``sys.settrace`` hook counting line events per
  (code, line) in a dict, then ``runpy.run_path(drive_X.py)``

Medians over ``--runs`` rounds; slowdown = median / median plain. An empty script is timed
the same way to separate the fixed start-up cost (interpreter + wholetrace import + store
set-up); "minus start-up" = (blocks - blocks on empty) / (plain - plain on empty).

From the recording (the last round's ``X.wt``): events, executed blocks (B events; the int
after an EXC event is a statement id and is not counted), raw trace bytes per executed block
(4 bytes x events / blocks), stored (zstd) event bytes per executed block, and the file size.

    python benchmarks/overhead.py [--programs a,b] [--runs N] [--quick] [--no-write]

``--quick``: size ``small``, one round, prints only (does not touch docs/benchmarks.md).
"""

from __future__ import annotations

import datetime as _dt
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import (ENTRY, corpus_options, geomean, machine, snapshot_env, source_version,  # noqa: E402
                     table, timed, write_section)
from corpus import PROGRAMS  # noqa: E402

from wholetrace.events import EXC  # noqa: E402
from wholetrace.store import Recording  # noqa: E402

PY = sys.executable
TOOLS = ("plain", "blocks", "coverage", "settrace")
EMPTY = "(empty script)"
#: The ten programs whose tool slowdowns shared/corpus.md quotes.
CORPUS_MD_TEN = ("richards", "deltablue", "go", "hexiom", "raytrace", "nbody", "spectral_norm",
                 "fannkuch", "nqueens", "float")

SETTRACE_RUNNER = r'''
import runpy, sys

counts = {}


def _local(frame, event, arg):
    if event == "line":
        key = (frame.f_code, frame.f_lineno)
        counts[key] = counts.get(key, 0) + 1
    return _local


def _global(frame, event, arg):
    return _local


script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.settrace(_global)
try:
    runpy.run_path(script, run_name="__main__")
finally:
    sys.settrace(None)
    sys.stderr.write("settrace-lines %d\n" % sum(counts.values()))
'''


def commands(name: str, driver: Path, include: list[str], files: set[str], work: Path) -> dict[str, list[str]]:
    wt = work / f"{driver.stem}.wt"
    inc = [a for m in include for a in ("--include", m)]
    cov = [PY, "-m", "coverage", "run", "--branch"]
    if include:  # stdlib programs: make coverage measure the same code wholetrace instruments
        cov += ["--pylib", "--include=" + ",".join(sorted(files))]
    return {
        "plain": [PY, str(driver)],
        "blocks": [PY, *ENTRY, "record", "--mode", "blocks", "-q", "-o", str(wt), *inc, str(driver)],
        "coverage": [*cov, str(driver)],
        "settrace": [PY, str(work / "_settrace_runner.py"), str(driver)],
    }


def trace_stats(path: Path) -> dict[str, float]:
    """Events, executed blocks, stored event bytes and file size of one recording."""
    with Recording(path, check=False) as rec:
        events = blocks = stored = 0
        for st in rec.streams():
            ev = rec.events(st.sid)
            exc = np.flatnonzero(ev[:-1] == EXC) + 1  # position of the statement id after each EXC
            blocks += int(np.count_nonzero(ev >= 0)) - int(np.count_nonzero(ev[exc] >= 0))
            events += st.n_events
            stored += st.stored_bytes
    return {"events": events, "blocks": blocks, "stored": stored, "size": path.stat().st_size}


def fmt_int(n: float) -> str:
    return f"{int(n):,}"


def main(argv: list[str] | None = None) -> int:
    args, names, runs, size, write = corpus_options(__doc__.split("\n\n")[0], 3, list(PROGRAMS), argv)

    with tempfile.TemporaryDirectory(prefix="wt-overhead-") as tmp:
        work = Path(tmp)
        (work / "_settrace_runner.py").write_text(SETTRACE_RUNNER)
        env = snapshot_env(work, COVERAGE_FILE=str(work / ".coverage"))
        version = source_version()
        load = [os.getloadavg()[0]]
        empty = work / "drive_empty.py"
        empty.write_text("pass\n")
        cmds = {EMPTY: commands(EMPTY, empty, [], set(), work)}
        for n in names:
            p = PROGRAMS[n]
            drv = p.write(work, size)
            cmds[n] = commands(n, drv, p.include, p.files(work), work)
        # Warm-up (untimed): checks every driver runs, stages the benchmark files, warms the OS file cache
        # (and writes __pycache__ unless PYTHONDONTWRITEBYTECODE is set) and wholetrace's code cache.
        for n in cmds:
            timed(cmds[n]["plain"], work, env)
            timed(cmds[n]["blocks"], work, env)

        times: dict[str, dict[str, list[float]]] = {n: {t: [] for t in TOOLS} for n in cmds}
        lines: dict[str, int] = {}
        stats: dict[str, dict[str, float]] = {}
        mismatched: list[str] = []
        t0 = time.perf_counter()
        body = ""
        for r in range(runs):
            for n, cs in cmds.items():
                outs = {}
                for tool in TOOLS:
                    secs, proc = timed(cs[tool], work, env)
                    times[n][tool].append(secs)
                    outs[tool] = proc.stdout
                    if tool == "settrace":
                        tail = proc.stderr.decode(errors="replace").strip().rsplit("\n", 1)[-1]
                        if tail.startswith("settrace-lines "):
                            lines[n] = int(tail.split()[1])
                    if tool == "blocks" and r == 0 and n != EMPTY:  # untimed; the trace is deterministic
                        stats[n] = trace_stats(work / f"drive_{n}.wt")
                if r == 0 and len(set(outs.values())) != 1 and n not in mismatched:
                    mismatched.append(n)
                print(f"round {r + 1}/{runs} {n:14s} " + "  ".join(f"{t} {times[n][t][-1]:.2f}s" for t in TOOLS),
                      file=sys.stderr, flush=True)
            if r == 0 and runs > 1:
                print(f"round 1 took {time.perf_counter() - t0:.0f} s; about "
                      f"{(time.perf_counter() - t0) * (runs - 1):.0f} s to go", file=sys.stderr, flush=True)
            # Render (and write) after every completed round, so an interrupted run leaves its
            # completed rounds documented; the text says how many rounds the medians cover.
            load.append(os.getloadavg()[0])
            body = render(names, times, stats, lines, mismatched, r + 1, runs, size, argv, version, load)
            if write:
                write_section("overhead", body)
    print(body)
    if write:
        print("\nwrote section 'overhead' of docs/benchmarks.md", file=sys.stderr)
    return 0


def render(names: list[str], times: dict[str, dict[str, list[float]]], stats: dict[str, dict[str, float]],
           lines: dict[str, int], mismatched: list[str], done: int, runs: int, size: str,
           argv: list[str] | None, version: str, load: list[float]) -> str:
    """The markdown section for the rounds completed so far."""
    med = {n: {t: statistics.median(v) for t, v in tt.items()} for n, tt in times.items()}
    e = med[EMPTY]
    rows, slow, slow_net, slow_cov, slow_st = [], {}, {}, {}, {}
    for n in names:
        m, s = med[n], stats[n]
        slow[n] = m["blocks"] / m["plain"]
        net_plain = m["plain"] - e["plain"]
        slow_net[n] = (m["blocks"] - e["blocks"]) / net_plain if net_plain > 0 else float("nan")
        slow_cov[n] = m["coverage"] / m["plain"]
        slow_st[n] = m["settrace"] / m["plain"]
        rows.append([n, f"{m['plain']:.2f}", f"{m['blocks']:.2f}", f"**{slow[n]:.2f}×**", f"{slow_net[n]:.2f}×",
                     f"{slow_cov[n]:.2f}×", f"{slow_st[n]:.2f}×",
                     fmt_int(lines.get(n, 0)), fmt_int(s["events"]), fmt_int(s["blocks"]),
                     f"{4 * s['events'] / s['blocks']:.2f}" if s["blocks"] else "-",
                     f"{s['stored'] / s['blocks']:.3f}" if s["blocks"] else "-",
                     fmt_int(s["size"])])
    rows.append([EMPTY, f"{e['plain']:.3f}", f"{e['blocks']:.3f}", f"{e['blocks'] / e['plain']:.2f}×", "-",
                 f"{e['coverage'] / e['plain']:.2f}×", f"{e['settrace'] / e['plain']:.2f}×",
                 "", "", "", "", "", ""])
    headers = ["program", "plain s", "blocks s", "blocks ×", "blocks × minus start-up", "coverage --branch ×",
               "settrace counter ×", "settrace line events", "events", "executed blocks",
               "raw B/block", "stored B/block", ".wt bytes"]

    def summary(label: str, d: dict[str, float]) -> str:
        worst = max(d, key=lambda k: d[k])
        ten = [d[k] for k in CORPUS_MD_TEN if k in d]
        extra = (f"; on the ten programs of shared/corpus.md {geomean(ten):.2f}×"
                 if len(ten) == len(CORPUS_MD_TEN) and len(d) > len(ten) else "")
        return f"- {label}: geometric mean **{geomean(d.values()):.2f}×**, worst {worst} {d[worst]:.2f}×{extra}"

    all_events = sum(s["events"] for s in stats.values())
    all_blocks = sum(s["blocks"] for s in stats.values())
    all_stored = sum(s["stored"] for s in stats.values())
    summ = "\n".join([
        summary("wholetrace `--mode blocks`", slow),
        summary("wholetrace `--mode blocks`, start-up subtracted", slow_net),
        summary("coverage.py `--branch`", slow_cov),
        summary("`sys.settrace` line counter", slow_st),
        f"- start-up (empty script, median): plain {e['plain']:.3f} s, `wholetrace record` {e['blocks']:.3f} s "
        f"(+{e['blocks'] - e['plain']:.3f} s), coverage {e['coverage']:.3f} s, settrace runner {e['settrace']:.3f} s",
        f"- trace size over all programs: {all_events / all_blocks:.3f} events per executed block = "
        f"{4 * all_events / all_blocks:.2f} raw bytes per block; stored (zstd) "
        f"{all_stored / all_blocks:.3f} bytes per block ({8 * all_stored / all_blocks:.2f} bits)",
    ])
    if mismatched:
        summ += f"\n- stdout differed between tools on: {', '.join(mismatched)}"
    cmdline = "python benchmarks/overhead.py" + "".join(" " + shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    return "\n".join([
        "## Overhead of `record --mode blocks`",
        "",
        f"Measured {machine()}; `{cmdline}` (size `{size}`, median of {done} interleaved "
        f"round{'s' if done != 1 else ''}{'' if done == runs else f' (run interrupted: {done} of {runs} rounds completed)'}, "
        f"finished {_dt.datetime.now().strftime('%H:%M')} local time); wholetrace {version}. "
        f"1-minute load average {' → '.join(f'{x:.1f}' for x in load)} (start, after each round) on "
        f"{os.cpu_count()} CPUs: other jobs on the machine add noise to wall times.",
        "",
        "Whole-process wall time of `python drive_X.py` (plain) against "
        "`wholetrace record --mode blocks -q -o X.wt [--include M] drive_X.py`, "
        "`python -m coverage run --branch` (stdlib programs: `--pylib --include` their module files) and a "
        "minimal `sys.settrace` runner counting line events in a dict; × = median / median plain. "
        "wholetrace's instrumented code comes from its cache, filled by an untimed warm-up run. "
        "\"minus start-up\" subtracts each command's time on an empty script from both sides. "
        "Events, executed blocks (B events) and sizes come from the recording: raw = 4 bytes per int32 "
        "event (F, B, E and EXC pairs) per executed block; stored = zstd chunk bytes per executed block.",
        "",
        table(headers, rows),
        summ,
    ])


if __name__ == "__main__":
    sys.exit(main())
