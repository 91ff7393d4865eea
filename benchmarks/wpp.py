"""The WPP built online (Larus 1999 Table 1 for Python): grammar sizes, builder cost and lag, slowdown with the
builder running, and the WPP against zstd -19 and xz -9 of the raw stream.

For every program of the registry (``tests/corpus.py``) this times the whole process, wall clock,
interleaved round by round: plain, ``record --mode M`` and ``record --mode M --wpp`` for M in
blocks and witness (and path, once that mode exists).  The ``--wpp`` recordings give Larus's
Table 1 per program (summed over streams): events, distinct paths (blocks or witness values),
rules, right-hand-side symbols, raw bytes (4 per event), WPP bytes (as the builder stores them:
``encode_explicit(g, fast=True)``, zstd only; the offline table's are ``Grammar.to_bytes()``),
trace/WPP ratio, rules per path, builder CPU, and how far the builder lagged (most events queued,
events left when the program ended, seconds it finished after the program, events spilled).

Compressors, and SEQUITUR against SEQUITUR(1), are compared on one more untimed recording per
program at size ``small`` (``--wpp --keep-raw``): zstd -19 and xz -9 of its raw int32 streams,
and both grammars built offline from the same interned symbols (CPU time of each build).

    python benchmarks/wpp.py [--programs a,b] [--runs N] [--size small|bench] [--quick] [--no-write]
"""

from __future__ import annotations

import lzma
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

import zstandard

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import (ENTRY, corpus_options, geomean, machine, run_tree, snapshot_env, source_version, table, timed,  # noqa: E402
                     write_section)
from corpus import PROGRAMS  # noqa: E402

from wholetrace.grammar import GrammarBuilder  # noqa: E402
from wholetrace.instrument.modes import MODES as ALL_MODES  # noqa: E402
from wholetrace.store import Recording  # noqa: E402
from wholetrace.wpp.intern import interner_for  # noqa: E402
from wholetrace.wpp.stored import StoredWpp  # noqa: E402

PY = sys.executable
MODES = tuple(m for m in ("blocks", "witness", "path") if m in ALL_MODES)
TABLE_MODE = "path" if "path" in MODES else "blocks"


def commands(driver: Path, include: list[str], work: Path) -> dict[str, list[str]]:
    inc = [a for m in include for a in ("--include", m)]
    out = {"plain": [PY, str(driver)]}
    for mode in MODES:
        for wpp in ("--no-wpp", "--wpp"):
            wt = work / f"{driver.stem}.{mode}{wpp[1:].replace('-', '')}.wt"
            out[f"{mode}{' +wpp' if wpp == '--wpp' else ''}"] = [
                PY, *ENTRY, "record", "--mode", mode, wpp, "-q", "-o", str(wt), *inc, str(driver)]
    return out


def timed_cpu(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, all threads) of one whole process."""
    run = run_tree(cmd, cwd, env, timeout=None)
    return run.wall, run.cpu


def builder_cpu(path: Path) -> float:
    """CPU seconds of the WPP builder process of a --wpp recording (0 if it did not say)."""
    with Recording(path, check=False) as rec:
        meta = rec.meta.get("wpp") or {}
    return float(meta.get("builder_cpu_seconds") or 0.0)


def table1(path: Path) -> dict[str, float]:
    """Larus's Table 1 of one --wpp recording, summed over its streams, and the builder's lag."""
    with Recording(path, check=False) as rec:
        wpp = StoredWpp(rec)
        rows = [s.table1(wpp.terminals) for s in wpp.streams]
        meta = wpp.meta
    out = {k: sum(r[k] for r in rows) for k in ("events", "rules", "rhs", "len_S", "raw_bytes", "encoded_bytes")}
    out["encoded_bytes"] += wpp.symbols_bytes   # the terminal table the grammars share (SEQ groups: wave 12)
    out["paths"] = sum(r["distinct_paths"] for r in rows)   # as `wholetrace wpp` counts them (fused terminals split)
    out["streams"] = len(rows)
    out["build"] = sum(r["build_seconds"] or 0 for r in rows)
    for k in ("max_backlog_events", "backlog_at_end_events", "tail_seconds", "spilled_events", "jit_seconds"):
        out[k] = meta[k]
    return out


def compressors(path: Path) -> dict[str, float]:
    """zstd -19 / xz -9 of the raw streams, and the WPP of SEQUITUR vs SEQUITUR(1) built offline."""
    with Recording(path, check=False) as rec:
        streams = [(s.sid, rec.events(s.sid)) for s in rec.streams()]
        mode = str(rec.meta.get("mode"))
    raw = b"".join(ev.astype("<i4").tobytes() for _, ev in streams)
    out: dict[str, float] = {"raw": len(raw), "zstd19": len(zstandard.ZstdCompressor(level=19).compress(raw)),
                             "xz9": len(lzma.compress(raw, preset=9))}
    interner = interner_for(mode)
    symbols = [interner.codes(sid, ev, final=True) for sid, ev in streams if len(ev)]
    for la in (False, True):
        size = rules = 0
        t = time.process_time()
        for s in symbols:
            b = GrammarBuilder(lookahead=la)
            b.feed(s)
            g = b.finish()
            size += len(g.to_bytes())
            rules += g.num_rules
        out[f"cpu{int(la)}"] = time.process_time() - t
        out[f"wpp{int(la)}"] = size
        out[f"rules{int(la)}"] = rules
    out["symbols"] = sum(len(s) for s in symbols)
    return out


def main(argv: list[str] | None = None) -> int:
    args, names, runs, size, write = corpus_options(
        __doc__.split("\n\n")[0], 1, list(PROGRAMS), argv,
        extra=[("--size", {"choices": ("small", "bench"), "help": "program size of the timed runs"})])
    size = args.size or size
    with tempfile.TemporaryDirectory(prefix="wt-wpp-") as tmp:
        work = Path(tmp)
        env = snapshot_env(work)
        version = source_version()
        cmds = {n: commands(PROGRAMS[n].write(work / n, size), PROGRAMS[n].include, work / n) for n in names}
        tools = list(next(iter(cmds.values())))
        for n in cmds:   # warm-up, untimed (OS file cache, numba's cache, and wholetrace's code cache,
            # which is per mode: warming one mode left the first run of the others instrumenting the
            # stdlib programs' big modules, 2-3x slower than their +wpp runs)
            for tool in tools:
                timed(cmds[n][tool], work / n, env)
        times = {n: {t: [] for t in tools} for n in cmds}
        cpus = {n: {t: [] for t in tools} for n in cmds}
        for r in range(runs):
            for n, cs in cmds.items():
                for tool in tools:
                    wall, cpu = timed_cpu(cs[tool], work / n, env)
                    if tool.endswith("+wpp"):   # the builder process is no child of ours: its CPU from its meta
                        cpu += builder_cpu(Path(cs[tool][cs[tool].index("-o") + 1]))
                    times[n][tool].append(wall)
                    cpus[n][tool].append(cpu)
                print(f"round {r + 1}/{runs} {n:14s} " + "  ".join(f"{t} {times[n][t][-1]:.2f}s" for t in tools),
                      file=sys.stderr, flush=True)
        t1: dict[str, dict[str, float]] = {}
        comp: dict[str, dict[str, float]] = {}
        for n, cs in cmds.items():
            stem = Path(cs["plain"][1]).stem
            t1[n] = table1(work / n / f"{stem}.{TABLE_MODE}wpp.wt")
            small = PROGRAMS[n].write(work / n / "small", "small")
            keep = work / n / "small.wt"
            inc = [a for m in PROGRAMS[n].include for a in ("--include", m)]
            timed([PY, *ENTRY, "record", "--mode", TABLE_MODE, "--wpp", "--keep-raw", "-q", "-o",
                   str(keep), *inc, str(small)], small.parent, env)
            comp[n] = compressors(keep)
            print(f"stats {n}: ratio {t1[n]['raw_bytes'] / t1[n]['encoded_bytes']:.1f}, lag "
                  f"{t1[n]['tail_seconds']:.2f}s", file=sys.stderr, flush=True)
    body = render(names, times, cpus, t1, comp, tools, runs, size, version, argv)
    print(body)
    if write:
        write_section("wpp", body)
        print("\nwrote section 'wpp' of docs/benchmarks.md", file=sys.stderr)
    return 0


def _k(n: float) -> str:
    return f"{int(n):,}"


def render(names, times, cpus, t1, comp, tools, runs, size, version, argv) -> str:  # type: ignore[no-untyped-def]
    med = {n: {t: statistics.median(v) for t, v in tt.items()} for n, tt in times.items()}
    cpu = {n: {t: statistics.median(v) for t, v in tt.items()} for n, tt in cpus.items()}
    rows1, rows2, rows3 = [], [], []
    ratios, slow = [], {t: [] for t in tools if t != "plain"}
    cslow: dict[str, list[float]] = {t: [] for t in slow}
    for n in names:
        s, m, c = t1[n], med[n], comp[n]
        ratio = s["raw_bytes"] / s["encoded_bytes"]
        ratios.append(ratio)
        rows1.append([n, s["streams"], _k(s["events"]), _k(s["paths"]), _k(s["rules"]), _k(s["rhs"]),
                      _k(s["len_S"]), _k(s["raw_bytes"]), _k(s["encoded_bytes"]), f"{ratio:,.1f}",
                      f"{s['rules'] / max(1, s['paths']):.1f}", f"{s['build']:.2f}",
                      f"{s['events'] / s['build'] / 1e6:.2f}" if s["build"] else "-",
                      _k(s["max_backlog_events"]), _k(s["backlog_at_end_events"]), f"{s['tail_seconds']:.2f}",
                      _k(s["spilled_events"])])
        c2 = cpu[n]
        for t in slow:
            slow[t].append(m[t] / m["plain"])
            cslow[t].append(c2[t] / c2["plain"])
        rows2.append([n, f"{m['plain']:.2f}"] + [f"{m[t] / m['plain']:.2f}×" for t in slow]
                     + [f"{c2['plain']:.2f}"] + [f"{c2[t] / c2['plain']:.2f}×" for t in slow])
        rows3.append([n, _k(c["symbols"]), _k(c["raw"]), _k(c["zstd19"]), _k(c["xz9"]), _k(c["wpp0"]), _k(c["wpp1"]),
                      f"{c['raw'] / c['wpp0']:.1f}", f"{c['raw'] / c['zstd19']:.1f}", f"{c['raw'] / c['xz9']:.1f}",
                      _k(c["rules0"]), _k(c["rules1"]), f"{c['cpu0']:.2f}", f"{c['cpu1']:.2f}"])
    h1 = ["program", "streams", "events", "distinct paths", "rules", "rhs", "|S|", "raw B", "WPP B", "trace/WPP",
          "rules/path", "build CPU s", "build M ev/s", "max queued", "left at end", "tail s", "spilled"]
    h2 = (["program", "plain s"] + [f"{t} ×" for t in slow] + ["plain CPU s"]
          + [f"{t} CPU ×" for t in slow])
    h3 = ["program", "symbols", "raw B", "zstd -19 B", "xz -9 B", "WPP B", "WPP(1) B", "raw/WPP", "raw/zstd",
          "raw/xz", "rules", "rules (1)", "build s", "build(1) s"]
    la_smaller = sum(c["wpp1"] <= c["wpp0"] for c in comp.values())
    cpu0, cpu1 = sum(c["cpu0"] for c in comp.values()), sum(c["cpu1"] for c in comp.values())
    summ = [
        f"- trace/WPP ratio ({TABLE_MODE} +wpp), median over programs: **{statistics.median(ratios):,.1f}×** "
        "(target ≥ 10×; Larus: 7.3–392.8×)",
        "- slowdown vs plain, geometric mean, wall: " + ", ".join(f"{t} **{geomean(v):.2f}×**" for t, v in slow.items())
        + "; CPU (all threads): " + ", ".join(f"{t} {geomean(v):.2f}×" for t, v in cslow.items()),
        f"- builder lag: the builder finished within 1 s of the program on "
        f"{sum(t1[n]['tail_seconds'] <= 1 for n in names)} of {len(names)} programs; it spilled on "
        f"{sum(t1[n]['spilled_events'] > 0 for n in names)} (queue bound 4,194,304 events)",
        f"- SEQUITUR(1) gave a WPP no larger than SEQUITUR on {la_smaller} of {len(names)} programs; total build CPU "
        f"{cpu0:.2f} s plain vs {cpu1:.2f} s with look-ahead",
        "- WPP B in Table 1 = the grammars as the builder stores them (explicit rules, what queries read, "
        "`encode_explicit(g, fast=True)`: zstd only, since wave 9) plus the stored terminal table (`wpp.symbols`); in the compressor table = `Grammar.to_bytes()` "
        "(explicit rules, every codec tried). Distinct paths = `wholetrace wpp`'s distinct paths per stream (fused and grouped terminals split into their events), summed over the streams.",
    ]
    cmdline = "python benchmarks/wpp.py" + "".join(" " + shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    return "\n".join([
        "## WPP built online (Larus 1999 Table 1)",
        "",
        f"Measured {machine()}; `{cmdline}` (size `{size}`, median of {runs} interleaved round"
        f"{'s' if runs != 1 else ''}); wholetrace {version}; 1-minute load average {os.getloadavg()[0]:.1f}."
        + (" **Taken under load** (other jobs share the 2 CPUs): the builder process competes with them, so "
           "its lag and the +wpp slowdowns are worse than on a quiet machine." if os.getloadavg()[0] > 1.5 else ""),
        "",
        f"Table 1 from the `{TABLE_MODE} --wpp` recordings (all streams summed):",
        "",
        table(h1, rows1),
        "Whole-process wall time and CPU time (user + system, every thread), × = median / median plain; the +wpp "
        "runs include the builder's start (numpy and its kernels: compiled ahead of time, `wpp/aot.py`, else numba's JIT) and waiting for it at exit:",
        "",
        table(h2, rows2),
        f"Raw stream against zstd -19, xz -9 and the WPP, SEQUITUR vs SEQUITUR(1) built offline on the same "
        f"symbols (size `small`, `{TABLE_MODE} --wpp --keep-raw`):",
        "",
        table(h3, rows3),
        "\n".join(summ),
    ])


if __name__ == "__main__":
    sys.exit(main())
