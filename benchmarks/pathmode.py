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

    python benchmarks/pathmode.py [--programs a,b] [--runs N] [--size small|bench] [--quick] [--no-write]
"""

from __future__ import annotations

import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import ENTRY, corpus_options, geomean, machine, snapshot_env, source_version, table, timed, write_section  # noqa: E402
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
        extra=(("--size", {"choices": ("small", "bench"), "help": "program size (default bench; small with --quick)"}),))
    size = args.size or size  # type: ignore[attr-defined]
    with tempfile.TemporaryDirectory(prefix="wt-pathmode-") as tmp:
        work = Path(tmp)
        env = snapshot_env(work)
        version = source_version()
        cmds = {n: commands(PROGRAMS[n].write(work, size), PROGRAMS[n].include, work) for n in names}
        for n in cmds:   # warm-up, untimed (OS file cache, wholetrace's code cache, numba's cache)
            for tool in TOOLS:
                timed(cmds[n][tool], work, env)
        times = {n: {t: [] for t in TOOLS} for n in cmds}
        mismatched: list[str] = []
        for r in range(runs):
            for n, cs in cmds.items():
                outs = set()
                for tool in TOOLS:
                    secs, proc = timed(cs[tool], work, env)
                    times[n][tool].append(secs)
                    outs.add(proc.stdout)
                if len(outs) != 1 and n not in mismatched:
                    mismatched.append(n)
                print(f"round {r + 1}/{runs} {n:14s} " + "  ".join(f"{t} {times[n][t][-1]:.2f}s" for t in TOOLS),
                      file=sys.stderr, flush=True)
        stats: dict[str, dict[str, object]] = {}
        for n, cs in cmds.items():
            stem = Path(cs["plain"][1]).stem
            wt = {m: work / f"{stem}.{m.replace(' ', '-')}.wt" for m, _, _ in MODES}
            stats[n] = {m: recorded(wt[m]) for m, _, _ in MODES}
            stats[n]["path_regen"] = path_stats(wt["path"], wt["blocks"])
            print(f"stats {n}: " + ", ".join(f"{m} {stats[n][m][0]:,}" for m, _, _ in MODES), file=sys.stderr, flush=True)
    body = render(names, times, stats, mismatched, runs, size, version, argv)
    print(body)
    if write:
        name = section(size)
        write_section(name, body)
        print(f"\nwrote section '{name}' of docs/benchmarks.md", file=sys.stderr)
    return 0


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


def render(names, times, stats, mismatched, runs, size, version, argv) -> str:  # type: ignore[no-untyped-def]
    med = {n: {t: statistics.median(v) for t, v in tt.items()} for n, tt in times.items()}
    cols = [m for m, _, _ in MODES]
    rows, ev_ratio, slow = [], [], {m: [] for m in cols}
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
        + f"; path (online WPP) ≤ witness on {sum(r <= 1 for r in path_vs_w)} of {len(names)} programs "
        f"(target path ≤ witness: {'met' if g['path'] <= g['witness'] else 'not met'}; target ≤ 1.6×: "
        f"{'met' if g['path'] <= 1.6 else 'not met'})",
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
    cmdline = "python benchmarks/pathmode.py" + "".join(" " + shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    return "\n".join([
        f"## Path mode: `path` against `blocks` and `witness` (size `{size}`)",
        "",
        f"Measured {machine()}; `{cmdline}` (size `{size}`, median of {runs} interleaved round"
        f"{'s' if runs != 1 else ''}); wholetrace {version}; 1-minute load average {os.getloadavg()[0]:.1f}. "
        "Whole-process wall time; × = median / median plain. Events = int32 values recorded. Decoding speed = "
        "blocks produced per CPU second by the decoding kernel (`Trace.rows` chunk by chunk, rows not kept; the "
        "recording's first decode, so its tables are loaded on the way and grammars expanded; "
        "`benchmarks/decode.py` measures it at size bench)."
        + (" **Taken under load** (other jobs share the 2 CPUs): the WPP builder process competes with them, "
           "so `path` (online WPP) is slower than it would be on a quiet machine." if os.getloadavg()[0] > 1.5 else ""),
        "",
        table(headers, rows),
        "\n".join(summ),
    ])


if __name__ == "__main__":
    sys.exit(main())
