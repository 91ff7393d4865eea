"""`path` mode against `blocks` and `witness`: events recorded and slowdown, interleaved on the corpus.

For every program of the registry (``tests/corpus.py``, size ``bench``) this times the whole
process, wall clock, of five commands, interleaved round by round: ``python drive_X.py`` and
``wholetrace record --mode MODE -q -o X.MODE.wt [--include M]... drive_X.py``
for MODE in blocks, witness, path with ``--wpp`` (the WPP built online by the builder process)
and path as recorded by default (raw chunks only).  From the recordings (last round): events
recorded (int32 values), stored bytes (zstd chunks; the grammars for `path`); the `path`
recording is decoded by the decoding kernel (``trace.Trace``: its streams expanded from the
grammars, then path ids decoded; blocks produced per second of CPU time) and compared with the
`blocks` recording (``=`` identical event for event, ``≈`` same activation form, ``✗``
differ); functions recorded with block ids instead of path ids are counted ("fallback").

Since wave 16 (docs/design.md, "Measuring path mode, wave 16") each run waits for its whole process
tree (this script is the subreaper of ``record --wpp``'s orphaned builder) and is charged its CPU;
programs and commands are shuffled per round (seeded); beside the medians the table gives each
command's least round and the ratio paired inside each round, and the targets' verdict uses the
paired wall figure with a bootstrap interval over rounds.

    python benchmarks/pathmode.py [--programs a,b] [--runs N] [--size small|bench] [--quick] [--no-write]
        [--order shuffle|adjacent|rotate|fixed] [--seed S] [--repeat K] [--settle SECONDS] [--json PATH]
"""

from __future__ import annotations

import json
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import (ENTRY, Run, become_subreaper, corpus_options, geomean, machine, run_tree, snapshot_env,  # noqa: E402
                     source_version, table, write_section)
from _rounds import (LOADED, MIN_ROUNDS, ORDERS, bootstrap_interval, least_ratio, median_ratio, order, paired_ratio,  # noqa: E402
                     progress, verdict)
from corpus import PROGRAMS  # noqa: E402

from wholetrace.trace.session import Trace, activation_form, block_events  # noqa: E402
from wholetrace.trace.decode import Rows  # noqa: E402

PY = sys.executable
#: (column, record mode, extra options)
MODES = (("blocks", "blocks", ()), ("witness", "witness", ()), ("path", "path", ("--wpp",)),
         ("path raw", "path", ()))
TOOLS = ("plain",) + tuple(m[0] for m in MODES)


def commands(driver: Path, include: list[str], work: Path) -> dict[str, list[str]]:
    inc = [a for m in include for a in ("--include", m)]
    out = {"plain": [PY, str(driver)]}
    for name, mode, opts in MODES:
        wt = work / f"{driver.stem}.{name.replace(' ', '-')}.wt"
        out[name] = [PY, *ENTRY, "record", "--mode", mode, *opts, "-q", "-o", str(wt), *inc, str(driver)]
    return out


def recorded(path: Path) -> tuple[int, int]:
    """(events, stored bytes) of one recording (a --wpp recording: its grammars' encoded bytes)."""
    with Trace.open(path, check=False) as t:
        streams = t.streams()
        stored = sum(s.stored_bytes for s in streams)
        wpp = t.meta.get("wpp")
        if isinstance(wpp, dict) and not wpp.get("keep_raw"):
            from wholetrace.wpp.stored import StoredWpp
            w = StoredWpp(t.recording.rec)   # the grammars and the terminal table they share
            stored = sum(s.encoded_bytes for s in w.streams) + w.symbols_bytes
        return sum(s.n_events for s in streams), stored


def path_stats(path: Path, blocks_path: Path) -> dict[str, object]:
    """Decoding speed of a path recording, agreement with the blocks streams, fallbacks."""
    with Trace.open(blocks_path, check=False) as b, Trace.open(path, check=False) as t:
        made, cpu, agree = 0, 0.0, "=" if len(t.streams()) == len(b.streams()) else "✗"
        for st, bst in zip(t.streams(), b.streams()):
            t0 = time.process_time()   # the decoding alone: rows counted chunk by chunk, not kept
            made += sum(int(((r.eid >= -1) & (r.dst >= 2)).sum()) for r in t.rows(st.sid, copy=False))
            cpu += time.process_time() - t0
            rows = Rows.concat(t.rows(st.sid))
            if not np.array_equal(block_events(rows), b.recording.events(bst.sid)):
                same = agree != "✗" and activation_form(rows) == b.activation_form(bst.sid)
                agree = "≈" if same else "✗"
        plans = [f.cfg.get("plan", {}) for f in t.functions.values()]
        wpp = t.meta.get("wpp") or {}
    return {"rate": made / cpu if cpu > 0 else float("nan"), "agree": agree,
            "fallback": sum(1 for p in plans if p.get("strategy") == "trace"), "functions": len(plans),
            "lag": {k: wpp.get(k) for k in ("tail_seconds", "backlog_at_end_events", "events", "ready_seconds",
                                           "spilled_events", "builder_cpu_seconds")}
            | {"idle_seconds": (wpp.get("feed") or {}).get("idle_seconds"),
               "chunks": (wpp.get("feed") or {}).get("chunks")}
            | {"build_seconds": sum(s.get("build_seconds") or 0 for s in (wpp.get("streams") or {}).values()),
               "symbols": sum(s.get("symbols") or 0 for s in (wpp.get("streams") or {}).values())}}


def main(argv: list[str] | None = None) -> int:
    args, names, runs, size, write = corpus_options(
        __doc__.split("\n\n")[0], 1, list(PROGRAMS), argv,
        extra=(("--size", {"choices": ("small", "bench"), "help": "program size (default bench; small with --quick)"}),
               ("--order", {"choices": ORDERS, "default": "shuffle",
                            "help": "order of the five commands inside each round (programs are shuffled unless fixed): "
                                    "shuffle (default): shuffled, seeded; adjacent: shuffled, with path --wpp between "
                                    "plain and witness (which side drawn; not the default until a quiet run shows the "
                                    "side neutral: see the summary's split by what ran before path); rotate; "
                                    "fixed: as before wave 16, path --wpp always right after witness"}),
               ("--seed", {"type": int, "default": 16, "help": "seed of the shuffled order (default 16)"}),
               ("--repeat", {"type": int, "default": 1, "help": "back-to-back runs of each command inside a round; "
                                                              "the round keeps the run with the least wall time, and "
                                                              "that run's CPU (so the CPU columns are not the least "
                                                              "CPU) (default 1)"}),
               ("--settle", {"type": float, "default": 0.0, "help": "seconds to sleep after each run (default 0)"}),
               ("--timeout", {"type": float, "default": 600.0, "help": "seconds a run may take before it and every "
                              "process it left are killed and the benchmark stops (default 600)"}),
               ("--json", {"metavar": "PATH", "help": "also write every run's wall and CPU seconds to PATH"})))
    size = args.size or size  # type: ignore[attr-defined]
    plan = Plan(args.order, args.seed, max(1, args.repeat), max(0.0, args.settle), args.timeout)  # type: ignore[attr-defined]
    reaper = become_subreaper()
    with tempfile.TemporaryDirectory(prefix="wt-pathmode-") as tmp:
        work = Path(tmp)
        env = snapshot_env(work)
        version = source_version()
        cmds = {n: commands(PROGRAMS[n].write(work, size), PROGRAMS[n].include, work) for n in names}
        total = len(cmds) * len(TOOLS) * (1 + runs * plan.repeat)
        with progress(total, "pathmode") as advance:
            for n in cmds:   # warm-up, untimed (OS file cache, wholetrace's code cache, numba's cache)
                for tool in TOOLS:
                    run_tree(cmds[n][tool], work, env, timeout=plan.timeout)
                    advance(f"warm-up {n} {tool}")
            times, cpus, raw, mismatched = rounds(cmds, runs, plan, work, env, advance)
        stats: dict[str, dict[str, object]] = {}
        for n, cs in cmds.items():
            stem = Path(cs["plain"][1]).stem
            wt = {m: work / f"{stem}.{m.replace(' ', '-')}.wt" for m, _, _ in MODES}
            stats[n] = {m: recorded(wt[m]) for m, _, _ in MODES}
            stats[n]["path_regen"] = path_stats(wt["path"], wt["blocks"])
            print(f"stats {n}: " + ", ".join(f"{m} {stats[n][m][0]:,}" for m, _, _ in MODES), file=sys.stderr, flush=True)
    if args.json:  # type: ignore[attr-defined]
        Path(args.json).write_text(json.dumps({"runs": runs, "size": size, "plan": plan._asdict(), "version": version,  # type: ignore[attr-defined]
                                              "samples": raw, "load": os.getloadavg()[0]}, indent=1))
    body = render(names, times, stats, mismatched, runs, size, version, argv, cpus=cpus, raw=raw, plan=plan, reaper=reaper)
    print(body)
    if write:
        name = section(size)
        write_section(name, body)
        print(f"\nwrote section '{name}' of docs/benchmarks.md", file=sys.stderr)
    return 0


#: seconds per program, command and round
Series = dict[str, dict[str, list[float]]]


class Plan(NamedTuple):
    """How the rounds run: order of programs and commands, back-to-back repeats, settle seconds."""
    order: str
    seed: int
    repeat: int
    settle: float
    timeout: float = 600.0


def rounds(cmds: dict[str, dict[str, list[str]]], runs: int, plan: Plan, work: Path, env: dict[str, str],
           advance: Callable[[str], None]) -> tuple[Series, Series, list[dict[str, object]], list[str]]:
    """The timed rounds: per round and program, every command ``plan.repeat`` times back to back (the
    least kept), programs and commands in the plan's order; each run waits for its whole process
    tree. Returns wall and CPU seconds per program, command and round, every run, and the programs
    whose stdout differed between commands."""
    times: Series = {n: {t: [] for t in TOOLS} for n in cmds}
    cpus: Series = {n: {t: [] for t in (*TOOLS, REC)} for n in cmds}
    raw: list[dict[str, object]] = []
    mismatched: list[str] = []
    prev: tuple[str, str] | None = None   # (program, command) of the run just before
    for r in range(runs):
        for n in order(list(cmds), "fixed" if plan.order == "fixed" else "shuffle", plan.seed, r, "programs"):
            outs = set()
            for tool in order(TOOLS, plan.order, plan.seed, r, n, around=("path", ("plain", "witness"))):
                best: Run | None = None
                for k in range(plan.repeat):
                    run = run_tree(cmds[n][tool], work, env, timeout=plan.timeout)
                    raw.append({"round": r, "program": n, "tool": tool, "repeat": k, "wall": run.wall, "cpu": run.cpu,
                                "orphan_cpu": run.orphan_cpu, "orphans": run.orphans, "tail": run.tail,
                                "load": os.getloadavg()[0], "prev": prev[1] if prev else None,
                                "prev_program": prev[0] if prev else None})
                    prev = (n, tool)
                    outs.add(run.stdout)
                    best = run if best is None or run.wall < best.wall else best
                    advance(f"round {r + 1}/{runs} {n} {tool}")
                    if plan.settle:
                        time.sleep(plan.settle)
                assert best is not None
                times[n][tool].append(best.wall)
                cpus[n][tool].append(best.cpu)
                if tool == "path":
                    cpus[n][REC].append(best.cpu - best.orphan_cpu)
            if len(outs) != 1 and n not in mismatched:
                mismatched.append(n)
            print(f"round {r + 1}/{runs} {n:14s} " + "  ".join(f"{t} {times[n][t][-1]:.2f}s/{cpus[n][t][-1]:.2f}c" for t in TOOLS),
                  file=sys.stderr, flush=True)
    return times, cpus, raw, mismatched


def section(size: str) -> str:
    """The docs/benchmarks.md section of a size: one table per size, side by side."""
    return "pathmode" if size == "small" else f"pathmode-{size}"


def _lag_cells(lag: dict[str, object]) -> list[str]:
    """ready s, share of events left when the program ended, tail s (``--wpp``'s builder lag), the
    builder process's CPU s and its build rate (events per CPU second of interning, SEQUITUR and
    encoding: load disturbs it less than the wall figures), and the symbols it built per event."""
    ready, left, ev, tail = lag.get("ready_seconds"), lag.get("backlog_at_end_events"), lag.get("events"), lag.get("tail_seconds")
    cpu, build, symbols = lag.get("builder_cpu_seconds"), lag.get("build_seconds"), lag.get("symbols")
    idle, chunks = lag.get("idle_seconds"), lag.get("chunks")
    return [f"{ready:.2f}" if isinstance(ready, (int, float)) else "–",
            f"{idle:.2f}" if isinstance(idle, (int, float)) else "–",
            f"{chunks}" if isinstance(chunks, int) else "–",
            f"{100 * left / ev:.0f}%" if isinstance(left, int) and isinstance(ev, int) and ev else "–",
            f"{tail:.2f}" if isinstance(tail, (int, float)) else "–",
            f"{cpu:.2f}" if isinstance(cpu, (int, float)) else "–",
            f"{ev / build / 1e6:.2f}" if isinstance(build, (int, float)) and build > 0 and isinstance(ev, int) else "–",
            f"{symbols / ev:.3f}" if isinstance(symbols, int) and isinstance(ev, int) and ev else "–"]


#: the recording process of ``path --wpp`` without its builder (CPU series key)
REC = "path recorder"
ROBUST_HEADERS = (["plain CPU s"] + [f"{k} CPU ×" for k, _, _ in MODES] + ["path CPU × without builder"]
                  + ["path × least", "path × paired", "path / witness least", "path / witness paired", "path / witness spread"])


def _robust_cells(wall: dict[str, list[float]], cpu: dict[str, list[float]]) -> list[str]:
    """A program's CPU columns (median CPU of the tree / median plain CPU) and the robust wall ratios
    (least: least round / least round; paired: median over rounds of the ratio inside each round;
    spread: max / min over rounds of the paired path / witness ratio)."""
    pw = [a / b for a, b in zip(wall["path"], wall["witness"])]
    return ([f"{statistics.median(cpu['plain']):.2f}"]
            + [f"{median_ratio(cpu[k], cpu['plain']):.2f}×" for k in (*(m for m, _, _ in MODES), REC)]
            + [f"{least_ratio(wall['path'], wall['plain']):.2f}×", f"{paired_ratio(wall['path'], wall['plain']):.2f}×",
               f"{least_ratio(wall['path'], wall['witness']):.2f}×", f"{paired_ratio(wall['path'], wall['witness']):.2f}×",
               f"{max(pw) / min(pw):.2f}"])


def figures(names: list[str], series: dict[str, dict[str, list[float]]], a: str, b: str, seed: int = 0) -> dict[str, object]:
    """Geometric means over programs of a / b three ways (median, least, paired), and the paired
    figure's 90% bootstrap interval over rounds."""
    per = [[x / y for x, y in zip(series[n][a], series[n][b])] for n in names]
    return {"median": geomean([median_ratio(series[n][a], series[n][b]) for n in names]),
            "least": geomean([least_ratio(series[n][a], series[n][b]) for n in names]),
            "paired": geomean([paired_ratio(series[n][a], series[n][b]) for n in names]),
            "interval": bootstrap_interval(per, seed=seed)}


def by_predecessor(times: dict[str, dict[str, list[float]]], raw: list[dict[str, object]]) -> dict[str, list[float]]:
    """The paired path / witness wall ratio of every program and round, split by what ran just before
    path --wpp (its first run of the round): ``plain`` or ``witness`` of the same program (the two arms
    of the adjacent order, [plain, path, witness] and [witness, path, plain]), else ``other``."""
    out: dict[str, list[float]] = {"plain": [], "witness": [], "other": []}
    for x in raw:
        if x["tool"] != "path" or x["repeat"] != 0:
            continue
        n, r = str(x["program"]), int(x["round"])  # type: ignore[call-overload]
        arm = str(x["prev"]) if x.get("prev_program") == n and x.get("prev") in ("plain", "witness") else "other"
        out[arm].append(times[n]["path"][r] / times[n]["witness"][r])
    return out


def orphan_check(raw: list[dict[str, object]]) -> list[str]:
    """Runs whose reaped orphans were not what ``path CPU × without builder`` (tree CPU minus orphans'
    CPU) assumes: exactly one (the builder) for path --wpp, none for the other commands."""
    return [f"{x['program']} {x['tool']} round {int(x['round']) + 1}: {x['orphans']}"  # type: ignore[call-overload]
            for x in raw if x["orphans"] != (1 if x["tool"] == "path" else 0)]


def robust_summary(names: list[str], times: Series, cpus: Series, raw: list[dict[str, object]], runs: int,
                   plan: Plan, reaper: bool, stats: dict[str, Any]) -> list[str]:
    """The summary lines of the robust figures, the targets' verdict, CPU, the noise and the order, and a
    warning when a run's orphans were not the one builder of path --wpp."""
    cols = [m for m, _, _ in MODES]
    f = {k: figures(names, times, k, "plain") for k in cols}
    pw = figures(names, times, "path", "witness")
    c = {k: figures(names, cpus, k, "plain") for k in cols}
    cpw = figures(names, cpus, "path", "witness")
    rpw, rp = figures(names, cpus, REC, "witness"), figures(names, cpus, REC, "plain")
    spread = {n: (lambda r: max(r) / min(r))([a / b for a, b in zip(times[n]["path"], times[n]["witness"])]) for n in names}
    worst = max(spread, key=spread.__getitem__)
    last = {}
    for x in raw:   # the last run of path --wpp per program: the recording whose meta the columns show
        if x["tool"] == "path":
            last[x["program"]] = x
    gap = [last[n]["orphan_cpu"] - float(stats[n]["path_regen"]["lag"].get("builder_cpu_seconds") or 0) for n in names if n in last]
    tails = [float(x["tail"]) for x in raw if x["orphans"]]
    loads = [float(x["load"]) for x in raw if "load" in x]
    load = statistics.median(loads) if loads else None
    arms = by_predecessor(times, raw)
    odd = orphan_check(raw) if reaper else []
    if odd:
        print(f"warning: orphans other than path --wpp's one builder: {'; '.join(odd[:10])}", file=sys.stderr)
    three = lambda d: f"{d['median']:.2f} / {d['least']:.2f} / {d['paired']:.2f}×"  # noqa: E731
    return [
        "- **wall, geometric mean over programs, three ways** (*median* = median round / median plain round, the "
        "× columns; *least* = least round / least plain round, each command's least disturbed run; *paired* = the "
        "ratio taken inside each round, then the median over rounds, so a drift of the machine between rounds "
        "cancels), median / least / paired: " + ", ".join(f"{k} {three(f[k])}" for k in cols)
        + f"; path / witness {three(pw)}",
        f"- **targets' verdict: the paired wall figure** (90% percentile-bootstrap interval: the {runs} round{'s' if runs != 1 else ''} resampled "
        "with replacement, the same rounds for every program, 2,000 draws; *decided* when the interval lies on the "
        f"point's side of the target, the median figure is on that side too, there are at least {MIN_ROUNDS} rounds and the "
        f"load during the rounds was at most {LOADED:g}; the median figure is printed beside it: under load the two "
        f"differed in level, docs/design.md \"Measuring path mode, wave 16\"): path (online WPP) ≤ witness: path / witness **{pw['paired']:.3f}×**, "
        f"{verdict(pw['paired'], pw['interval'], 1.0, runs, median=pw['median'], load=load)}; path ≤ 1.6×: "
        f"**{f['path']['paired']:.3f}×**, "
        f"{verdict(f['path']['paired'], f['path']['interval'], 1.6, runs, median=f['path']['median'], load=load)}.",
        "- **CPU** (user + sys seconds of the whole process tree: the recording process, the shell it starts the builder "
        "through and the builder process, "
        + ("which outlives that shell and is reaped by this script as their subreaper" if reaper else
           "**not** counted: this system could not make the script a subreaper")
        + "), geometric mean over programs, median / least / paired: " + ", ".join(f"{k} {three(c[k])}" for k in cols)
        + f"; path / witness {three(cpw)} (CPU counts the builder's work on the second core, which wall time overlaps). "
        f"The recording process of path without its builder (what a quiet second core hides; less disturbed by load "
        f"than wall, so a check on the wall verdict, not the target): path / plain {three(rp)}, path / witness {three(rpw)}"
        + (f". The builder's CPU reaped here minus the meta's `builder_cpu_seconds`: median {statistics.median(gap):+.3f} s "
           f"(range {min(gap):+.3f} to {max(gap):+.3f}: its exit after the meta's clock)" if gap and reaper else "")
        + (f"; its exit came {1000 * max(tails):.1f} ms at most after `record`'s (each run waits for it)" if tails else ""),
        f"- **noise and order**: per program, max / min over rounds of the paired path / witness ratio: median "
        f"{statistics.median(spread.values()):.2f}, worst {spread[worst]:.2f} ({worst}). "
        "Paired path / witness by what ran just before path --wpp (geometric mean over program-rounds; the "
        "adjacent order's arms are *after plain* and *after witness*): "
        + ", ".join(f"after {k} {geomean(v):.3f}× (n={len(v)})" for k, v in arms.items() if v) + ". "
        f"Order inside each round: {ORDER_TEXT.get(plan.order, plan.order)}"
        + (f" (seed {plan.seed})" if plan.order != "fixed" else "")
        + (f"; each command {plan.repeat}× back to back, the round keeps the least" if plan.repeat > 1 else "")
        + (f"; {plan.settle:g} s settle after each run" if plan.settle else "")
        + (f". 1-minute load average during the rounds (the benchmark's own 1-1.3 runnable processes included): "
           f"median {statistics.median(loads):.1f} ({min(loads):.1f}–{max(loads):.1f})" if loads else "") + ".",
        *([f"- **warning**: {len(odd)} run{'s' if len(odd) != 1 else ''} left other orphans than path --wpp's one "
           f"builder (program, command, round: orphans): {'; '.join(odd[:10])}{'; …' if len(odd) > 10 else ''}; "
           "`path CPU × without builder` (tree CPU minus the orphans') then is not the recording process alone"]
          if odd else []),
    ]


ORDER_TEXT = {"adjacent": "programs and the five commands of each program shuffled per round, path --wpp kept "
                          "between plain and witness (its paired ratios taken between neighbours)",
              "shuffle": "programs and the five commands of each program shuffled per round",
              "rotate": "programs shuffled, the five commands rotated by one place per round",
              "fixed": "fixed (plain, blocks, witness, path, path raw: path always right after witness)"}


def render(names, times, stats, mismatched, runs, size, version, argv, *, cpus=None, raw=(), plan=None,  # type: ignore[no-untyped-def]
           reaper=True) -> str:
    med = {n: {t: statistics.median(v) for t, v in tt.items()} for n, tt in times.items()}
    cols = [m for m, _, _ in MODES]
    rows, robust, ev_ratio, slow = [], [], [], {m: [] for m in cols}
    for n in names:
        s, m, pr = stats[n], med[n], stats[n]["path_regen"]
        ev = {k: s[k][0] for k in cols}
        ev_ratio.append(ev["path"] / ev["witness"])
        for k in cols:
            slow[k].append(m[k] / m["plain"])
        rows.append([n] + [f"{ev[k]:,}" for k in ("blocks", "witness", "path")] + [f"{ev['path'] / ev['witness']:.2f}×"]
                    + [f"{s[k][1]:,}" for k in cols] + [f"{m['plain']:.2f}"]
                    + [f"{m[k] / m['plain']:.2f}×" for k in cols]
                    + [f"{pr['rate'] / 1e6:.2f}", pr["agree"], f"{pr['fallback']}/{pr['functions']}"]
                    + _lag_cells(pr["lag"]))
        if cpus:
            robust.append([n] + _robust_cells(times[n], cpus[n]))
    headers = (["program", "blocks events", "witness events", "path events", "path / witness events"]
               + [f"{k} stored B" for k in cols] + ["plain s"] + [f"{k} ×" for k in cols]
               + ["decode path M blocks/s", "path = blocks", "path fallback fns",
                  "builder ready s", "builder idle s", "chunks", "left at end", "tail s", "builder CPU s", "build M ev/CPU s", "WPP symbols / event"])
    med_ev = statistics.median(ev_ratio)
    lags = [stats[n]["path_regen"]["lag"] for n in names]
    lag_tails = [float(x.get("tail_seconds") or 0) for x in lags]
    lag_left = [(x.get("backlog_at_end_events") or 0) / max(1, x.get("events") or 0) for x in lags]
    rates = [(x.get("events") or 0) / x["build_seconds"] / 1e6 for x in lags if x.get("build_seconds")]
    g = {k: geomean(slow[k]) for k in cols}
    path_vs_w = [a / b for a, b in zip(slow["path"], slow["witness"])]
    summ = [
        f"- events, median over programs: path / witness **{med_ev:.3f}×** (range {min(ev_ratio):.2f}–"
        f"{max(ev_ratio):.2f}×; target ≤ 1: {'met' if med_ev <= 1 else 'not met'}); path ≤ witness on "
        f"{sum(r <= 1 for r in ev_ratio)} of {len(names)} programs",
        "- slowdown vs plain, geometric mean: " + ", ".join(f"{k} **{g[k]:.2f}×**" for k in cols)
        + f" (median of rounds / median plain{'; not the verdict' if cpus else ''}); path (online WPP) ≤ witness on "
        f"{sum(r <= 1 for r in path_vs_w)} of {len(names)} programs" + (" (the targets' verdict: the paired figures below)" if cpus else
        f" (target path ≤ witness: {'met' if g['path'] <= g['witness'] else 'not met'}; target ≤ 1.6×: "
        f"{'met' if g['path'] <= 1.6 else 'not met'})"),
        *(robust_summary(names, times, cpus, raw, runs, plan, reaper, stats) if cpus else []),
        f"- the online WPP's own cost, path / path raw slowdown: geometric mean **{g['path'] / g['path raw']:.2f}×** "
        f"(range {min(a / b for a, b in zip(slow['path'], slow['path raw'])):.2f}–"
        f"{max(a / b for a, b in zip(slow['path'], slow['path raw'])):.2f}×)",
        "- builder lag (`path`, from the recording's meta `wpp`): *ready* = seconds from the builder process's "
        "start until its kernels were loaded (compiled ahead of time, `wpp/aot.py`; numba's JIT without them); *left at end* = share of the events not yet built when "
        "the program ended; *tail* = seconds the recording waited for the grammars after the program ended. "
        f"Median tail {statistics.median(lag_tails):.2f} s; the builder kept up (left ≤ 5%) on "
        f"{sum(x <= 0.05 for x in lag_left)} of {len(names)} programs. *idle* = seconds the ready builder waited "
        "for a chunk before the program ended (meta `wpp.feed`, docs/design.md \"The recorder-to-builder handoff, "
        f"wave 12\"; median {statistics.median(float(x.get('idle_seconds') or 0) for x in lags):.2f} s); "
        "*chunks* = chunks the recorder's flusher handed over. *builder CPU* = the builder process's "
        "CPU (start-up included); *build M ev/CPU s* = events per CPU second of its interning, SEQUITUR(1) and "
        f"encoding (median {statistics.median(rates) if rates else float('nan'):.2f}); *WPP symbols / event* = "
        "the builder's SEQUITUR input per recorded event (below 1: ENTER fused with the activation's first path, "
        "docs/design.md \"The WPP's terminals, wave 10\").",
        "- `path` is `--mode path --wpp`: the WPP built online (SEQUITUR in the builder process); "
        "`path raw` is `--mode path` as recorded by default (zstd chunks, as the other modes). Stored bytes of `path` are "
        "the grammars' encoded bytes plus the stored terminal table (`wpp.symbols`).",
        "- `=`: the decoded path streams equal the blocks streams event for event; `≈`: same activation "
        "form (implicit calls into instrumented code sit elsewhere among the caller's blocks); `✗`: differ. "
        "\"fallback fns\": functions recorded with block ids (module and class bodies, and functions whose "
        "path probes would need an edge without a probe site or that exceed the path limit).",
    ]
    if mismatched:
        summ.append(f"- stdout differed between modes on: {', '.join(mismatched)}")
    load = statistics.median(float(x["load"]) for x in raw) if raw else os.getloadavg()[0]
    cmdline = "python benchmarks/pathmode.py" + "".join(" " + shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    return "\n".join([
        f"## Path mode: `path` against `blocks` and `witness` (size `{size}`)",
        "",
        f"Measured {machine()}; `{cmdline}` (size `{size}`, median of {runs} interleaved round"
        f"{'s' if runs != 1 else ''}); wholetrace {version}; 1-minute load average {load:.1f}"
        + (" (median during the rounds; the benchmark's own runnable processes included: about 1-1.3 on a quiet "
           "machine)" if raw else "") + ". "
        "Whole-process wall time; × = median / median plain. Events = int32 values recorded. Decoding speed = "
        "blocks produced per CPU second by the decoding kernel (`Trace.rows` chunk by chunk, rows not kept; the "
        "recording's first decode, so its tables are loaded on the way and grammars expanded; "
        "`benchmarks/decode.py` measures it at size bench)."
        + (" **Taken under load** (other jobs share the 2 CPUs): the WPP builder process competes with them, "
           "so `path` (online WPP) is slower than it would be on a quiet machine." if load > (LOADED if raw else 1.5) else ""),
        "",
        table(headers, rows),
        *(["CPU of the whole process tree and the robust wall figures (summary below):", "",
           table(["program", *ROBUST_HEADERS], robust)] if robust else []),
        "\n".join(summ),
    ])


if __name__ == "__main__":
    sys.exit(main())
