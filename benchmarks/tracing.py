"""The paper's Table 3 for Python: what `blocks`, `branches` and `witness` record, what they
cost, and how fast the full block trace is regenerated from `witness`/`branches` recordings.

For every program of the registry (``tests/corpus.py``, size ``bench``) this times the whole
process, wall clock, of four commands, interleaved round by round:

* plain:     ``python drive_X.py``
* MODE:      ``wholetrace record --mode MODE -q -o X.MODE.wt [--include M]... drive_X.py``
  for MODE in blocks, branches, witness

From the recordings (last round): events recorded, raw bytes (4 bytes x events), stored bytes
(zstd chunks, ``Recording.streams()[i].stored_bytes``); executed blocks come from the blocks
trace.  Regeneration: the decoding kernel (``trace.Trace``) on every stream of the
witness/branches recordings (blocks produced per second of decoding, CPU time, chunks already in
memory; ``benchmarks/decode.py`` measures it in detail), and the regenerated streams are
compared with the blocks streams (``=`` identical event for event, ``≈`` same block and
statement counts only).

    python benchmarks/tracing.py [--programs a,b] [--runs N] [--quick] [--no-write]
"""

from __future__ import annotations

import os
import shlex
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import ENTRY, corpus_options, geomean, machine, snapshot_env, source_version, table, timed, write_section  # noqa: E402
from corpus import PROGRAMS  # noqa: E402

import time  # noqa: E402

from wholetrace.events import EXC  # noqa: E402
from wholetrace.store import Recording  # noqa: E402
from wholetrace.trace.decode import StreamDecoder  # noqa: E402
from wholetrace.trace.session import Trace, block_events  # noqa: E402

PY = sys.executable
MODES = ("blocks", "branches", "witness")
TOOLS = ("plain",) + MODES


def commands(driver: Path, include: list[str], work: Path) -> dict[str, list[str]]:
    inc = [a for m in include for a in ("--include", m)]
    out = {"plain": [PY, str(driver)]}
    for mode in MODES:
        wt = work / f"{driver.stem}.{mode}.wt"
        out[mode] = [PY, *ENTRY, "record", "--mode", mode, "-q", "-o", str(wt), *inc, str(driver)]
    return out


def _counts(trace: Trace) -> dict[tuple[str, str, int], tuple[list[int], list[int]]]:
    """Block and statement counts of every function (the agreement check of ``≈``)."""
    from wholetrace.profile import profiles

    return {(p.file, p.qualname, p.firstline): (p.blocks.tolist(), p.stmts.tolist()) for p in profiles(trace)}


def stats_of(path: Path, blocks_streams: list[np.ndarray] | None,
             blocks_counts: dict[tuple[str, str, int], tuple[list[int], list[int]]] | None = None) -> dict[str, object]:
    """Events, stored bytes; for witness/branches also regeneration speed and agreement."""
    out: dict[str, object] = {}
    with Recording(path, check=False) as rec:
        streams = rec.streams()
        out["events"] = sum(s.n_events for s in streams)
        out["stored"] = sum(s.stored_bytes for s in streams)
        raw = [rec.events(s.sid) for s in streams]
        if blocks_streams is None:
            blocks = 0
            for ev in raw:
                exc = np.flatnonzero(ev[:-1] == EXC) + 1
                blocks += int(np.count_nonzero(ev >= 0)) - int(np.count_nonzero(ev[exc] >= 0))
            out["blocks"] = blocks
            out["streams"] = raw
            out["counts"] = _counts(Trace(rec))
            return out
        trace = Trace(rec)
        out["fallback"] = sum(1 for sh in trace.shapes() if sh.plan.get("strategy") == "trace")
        out["functions"] = len(trace.functions)
        made = secs = 0.0
        agree = "="
        for ev, base in zip(raw, blocks_streams):
            chunks = [ev[i:i + (1 << 16)] for i in range(0, len(ev), 1 << 16)]
            trace.tables.reset()
            t0 = time.process_time()
            for rows in StreamDecoder(trace.tables).decode(chunks, copy=False):
                made += int(((rows.eid >= -1) & (rows.dst >= 2)).sum())
            secs += time.process_time() - t0
            regen = np.concatenate([block_events(r) for r in StreamDecoder(trace.tables).decode(chunks, copy=False)])
            if not np.array_equal(regen, base):
                agree = "≈"
        if agree == "≈" and _counts(trace) != blocks_counts:
            agree = "✗"
    out["regen_blocks"] = made
    out["regen_rate"] = made / secs if secs > 0 else float("nan")
    out["agree"] = agree
    return out


def main(argv: list[str] | None = None) -> int:
    args, names, runs, size, write = corpus_options(__doc__.split("\n\n")[0], 1, list(PROGRAMS), argv)

    with tempfile.TemporaryDirectory(prefix="wt-tracing-") as tmp:
        work = Path(tmp)
        env = snapshot_env(work)
        version = source_version()
        cmds = {}
        for n in names:
            p = PROGRAMS[n]
            cmds[n] = commands(p.write(work, size), p.include, work)
        for n in cmds:   # warm-up, untimed (OS file cache, wholetrace's code cache)
            for tool in TOOLS:
                timed(cmds[n][tool], work, env)
        times = {n: {t: [] for t in TOOLS} for n in cmds}
        mismatched: list[str] = []
        for r in range(runs):
            for n, cs in cmds.items():
                outs = set()
                for tool in TOOLS:
                    secs, proc = timed(cs[tool], work, env)
                    stdout = proc.stdout
                    times[n][tool].append(secs)
                    outs.add(stdout)
                if len(outs) != 1 and n not in mismatched:
                    mismatched.append(n)
                print(f"round {r + 1}/{runs} {n:14s} " + "  ".join(f"{t} {times[n][t][-1]:.2f}s" for t in TOOLS),
                      file=sys.stderr, flush=True)
        stats: dict[str, dict[str, dict[str, object]]] = {}
        for n, cs in cmds.items():
            stem = Path(cs["plain"][1]).stem
            b = stats_of(work / f"{stem}.blocks.wt", None)
            stats[n] = {"blocks": b}
            for mode in ("branches", "witness"):
                stats[n][mode] = stats_of(work / f"{stem}.{mode}.wt", b["streams"], b["counts"])  # type: ignore[arg-type]
            print(f"stats {n}: " + ", ".join(f"{m} {stats[n][m]['events']:,}" for m in MODES)
                  + f"; regen {stats[n]['witness']['regen_rate'] / 1e6:.2f} M blocks/s", file=sys.stderr, flush=True)
    body = render(names, times, stats, mismatched, runs, size, version, argv)
    print(body)
    if write:
        write_section("tracing", body)
        print("\nwrote section 'tracing' of docs/benchmarks.md", file=sys.stderr)
    return 0


def _k(n: float) -> str:
    return f"{int(n):,}"


def render(names, times, stats, mismatched, runs, size, version, argv) -> str:  # type: ignore[no-untyped-def]
    med = {n: {t: statistics.median(v) for t, v in tt.items()} for n, tt in times.items()}
    rows = []
    r_blocks, r_branches, slow = [], [], {m: [] for m in MODES}
    rates = {"branches": [], "witness": []}
    for n in names:
        s, m = stats[n], med[n]
        ev = {k: s[k]["events"] for k in MODES}
        r_blocks.append(ev["blocks"] / ev["witness"])
        r_branches.append(ev["branches"] / ev["witness"])
        for k in MODES:
            slow[k].append(m[k] / m["plain"])
        for k in rates:
            rates[k].append(s[k]["regen_rate"])
        rows.append([n, _k(s["blocks"]["blocks"])]
                    + [_k(ev[k]) for k in MODES]
                    + [_k(4 * ev[k]) for k in MODES]
                    + [_k(s[k]["stored"]) for k in MODES]
                    + [f"{m['plain']:.2f}"] + [f"{m[k] / m['plain']:.2f}×" for k in MODES]
                    + [f"{s[k]['regen_rate'] / 1e6:.2f}" for k in ("branches", "witness")]
                    + [f"{s['branches']['agree']} {s['witness']['agree']}",
                       f"{s['witness']['fallback']}/{s['witness']['functions']}"])
    headers = (["program", "executed blocks"] + [f"{k} events" for k in MODES] + [f"{k} raw B" for k in MODES]
               + [f"{k} zstd B" for k in MODES] + ["plain s"] + [f"{k} ×" for k in MODES]
               + ["regen branches M blocks/s", "regen witness M blocks/s", "regen = blocks (br, wi)",
                  "witness fallback fns"])
    med_b, med_br = statistics.median(r_blocks), statistics.median(r_branches)
    summ = [
        f"- events, median over programs: blocks / witness **{med_b:.2f}×**, branches / witness **{med_br:.2f}×** "
        f"(targets: ≥ 2× and ≥ 1.5×)",
        "- slowdown vs plain, geometric mean: " + ", ".join(f"{k} **{geomean(slow[k]):.2f}×**" for k in MODES)
        + f"; witness ≤ blocks on {sum(w <= b for w, b in zip(slow['witness'], slow['blocks']))} of {len(names)} programs",
        "- regeneration, median over programs: " + ", ".join(
            f"{k} {statistics.median(v) / 1e6:.2f} M blocks/s" for k, v in rates.items())
        + (" (target ≥ 10 M blocks/s: met)" if min(statistics.median(v) for v in rates.values()) >= 1e7
           else " (target ≥ 10 M blocks/s: not met)"),
        "- `=`: regenerated streams identical to the blocks streams event for event; `≈`: same block and "
        "statement counts (implicit calls into instrumented code sit elsewhere among the caller's blocks; "
        "the tests compare activation forms); `✗`: differ. "
        "\"fallback fns\": functions recorded with block ids because a witness would need an edge without a "
        "probe site (a `finally`/`with` dispatch with several successors).",
    ]
    if mismatched:
        summ.append(f"- stdout differed between modes on: {', '.join(mismatched)}")
    cmdline = "python benchmarks/tracing.py" + "".join(" " + shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    return "\n".join([
        "## Tracing: `blocks`, `branches`, `witness` (the paper's Table 3)",
        "",
        f"Measured {machine()}; `{cmdline}` (size `{size}`, median of {runs} interleaved round"
        f"{'s' if runs != 1 else ''}); wholetrace {version}; 1-minute load average {os.getloadavg()[0]:.1f}. "
        "Whole-process wall time; × = median / median plain. Events = int32 values recorded (raw = 4 bytes each); "
        "zstd = stored chunk bytes. Regeneration speed = blocks produced per CPU second by the decoding "
        "kernel (`trace.Trace`, one process, recording already read).",
        "",
        table(headers, rows),
        "\n".join(summ),
    ])


if __name__ == "__main__":
    sys.exit(main())
