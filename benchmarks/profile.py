"""Cost of exact counts: ``record --mode count`` (Ball-Larus chord counters) against
``--mode count-naive`` (a counter per block), coverage.py ``--branch`` and cProfile.

For every program of the registry (``tests/corpus.py``, size ``bench``) this times the
whole process, wall clock, of six commands, interleaved round by round (every program
once per round, the six commands back to back):

* plain:     ``python drive_X.py``
* count:     ``python -m wholetrace.cli record --mode count -q -o X.count.wt [--include M]... drive_X.py``
  (instrumented code comes from wholetrace's cache, filled by an untimed warm-up run, as on
  every run after a program's first)
* cold:      the same with ``--no-cache``: every module instrumented afresh, as on a first run
* naive:     ``--mode count-naive`` (``X.naive.wt``), cache warm
* coverage:  ``python -m coverage run --branch drive_X.py`` (stdlib programs: ``--pylib
  --include=<the module's files and the driver>``, as ``benchmarks/overhead.py`` does)
* cprofile:  ``python -m cProfile -o /dev/null drive_X.py``

Medians over ``--runs`` rounds; slowdown = median / median plain; "minus start-up" subtracts
each command's time on an empty script from both sides.

From the two recordings of the first round (untimed, after the timed runs): counters placed
(the sum over the function registry of ``cfg["plan"]["counters"]``, over all instrumented
functions and over those that ran, i.e. have a non-zero block count), counter increments
executed (the sum of the ``counters`` array; the paper's Table 2), and the split of ``count``'s
functions and increments between the ``chords`` strategy (optimal) and ``full`` (a counter on
every block and instrumentable edge: functions with a chord that has no probe site).  Once per program the block counts of the two recordings
(``wholetrace.profile.profiles``) are compared function by function; a difference prints a
warning and is listed in the section.

    python benchmarks/profile.py [--programs a,b] [--runs N] [--quick] [--no-write] [--note TEXT]

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
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import corpus_options, geomean, machine, snapshot_env, source_version, table, timed, write_section  # noqa: E402
from corpus import PROGRAMS  # noqa: E402
from overhead import PY, commands as overhead_commands, fmt_int  # noqa: E402

from wholetrace.profile import profiles  # noqa: E402
from wholetrace.trace.session import Trace  # noqa: E402
from wholetrace.store import Recording  # noqa: E402

TOOLS = ("plain", "count", "cold", "naive", "coverage", "cprofile")
EMPTY = "(empty script)"
TARGET_SLOWDOWN = 1.15   # issue 3: count geometric-mean slowdown at most this
TARGET_RATIO = 2.0       # issue 3: at least this many times fewer increments than count-naive, median


def commands(driver: Path, include: list[str], files: set[str], work: Path) -> dict[str, list[str]]:
    """plain and coverage exactly as benchmarks/overhead.py runs them, plus the two count modes and cProfile."""
    base = overhead_commands(driver.stem, driver, include, files, work)
    inc = [a for m in include for a in ("--include", m)]

    def record(mode: str, suffix: str, *extra: str) -> list[str]:
        return [PY, "-m", "wholetrace.cli", "record", "--mode", mode, "-q",
                "-o", str(work / f"{driver.stem}.{suffix}.wt"), *extra, *inc, str(driver)]

    return {
        "plain": base["plain"],
        "count": record("count", "count"),
        "cold": record("count", "cold", "--no-cache"),
        "naive": record("count-naive", "naive"),
        "coverage": base["coverage"],
        "cprofile": [PY, "-m", "cProfile", "-o", os.devnull, str(driver)],
    }


def _why_full(desc: dict) -> str:  # type: ignore[type-arg]
    if desc.get("is_generator"):
        return "generator"
    if desc.get("kind") != "function":
        return str(desc.get("kind"))
    return "chord without probe site"


def recording_stats(count_wt: Path, naive_wt: Path) -> dict[str, object]:
    """Counters placed, increments executed and the block-count comparison of one program's two recordings."""
    out: dict[str, object] = {}
    per: dict[str, dict[tuple[str, str, int], dict[str, object]]] = {}
    for label, path in (("count", count_wt), ("naive", naive_wt)):
        with Recording(path) as rec:
            counters = rec.get_array("counters")
            if counters is None:
                raise RuntimeError(f"{path}: no counters array")
            counters = np.asarray(counters, np.int64)
            profs = {(p.file, p.qualname, p.firstline): p for p in profiles(Trace(rec))}
            funcs = {}
            for f in rec.functions():
                desc = f.cfg
                plan = desc["plan"]
                key = (f.file, f.qualname, int(desc["firstline"]))
                base, n = int(plan["counter_base"]), int(plan["counters"])
                prof = profs[key]
                funcs[key] = {"counters": n, "strategy": plan["strategy"],
                              "increments": int(counters[base:base + n].sum()),
                              "ran": bool(np.asarray(prof.blocks).sum() > 0),
                              "blocks": [int(x) for x in prof.blocks], "why": _why_full(desc)}
            per[label] = funcs
            out[f"{label}_increments"] = int(counters.sum())
            out[f"{label}_counters"] = sum(v["counters"] for v in funcs.values())
            out[f"{label}_counters_ran"] = sum(v["counters"] for v in funcs.values() if v["ran"])
    c, nv = per["count"], per["naive"]
    diffs = []
    for key in sorted(set(c) | set(nv)):
        if key not in c or key not in nv:
            diffs.append(f"{key[1]} ({Path(key[0]).name}:{key[2]}) only in {'count' if key in c else 'count-naive'}")
        elif c[key]["blocks"] != nv[key]["blocks"]:
            bad = [i for i, (a, b) in enumerate(zip(c[key]["blocks"], nv[key]["blocks"])) if a != b]
            diffs.append(f"{key[1]} ({Path(key[0]).name}:{key[2]}) blocks {bad[:5]}")
    out["diffs"] = diffs
    ran = [k for k in c if c[k]["ran"]]
    strat = Counter(c[k]["strategy"] for k in ran)
    out["ran_chords"], out["ran_full"] = strat.get("chords", 0), strat.get("full", 0)
    full = [k for k in ran if c[k]["strategy"] == "full"]
    chords = [k for k in ran if c[k]["strategy"] == "chords"]
    out["count_incr_full"] = sum(c[k]["increments"] for k in full)
    out["count_incr_chords"] = sum(c[k]["increments"] for k in chords)
    out["naive_incr_chords"] = sum(nv[k]["increments"] for k in chords if k in nv)
    out["naive_incr_full"] = sum(nv[k]["increments"] for k in full if k in nv)
    hot = sorted(full, key=lambda k: -c[k]["increments"])[:3]
    out["hot_full"] = [f"{k[1]} [{c[k]['why']}] {c[k]['increments']:,} vs naive {nv[k]['increments'] if k in nv else 0:,}"
                       for k in hot if c[k]["increments"]]
    return out


def main(argv: list[str] | None = None) -> int:
    args, names, runs, size, write = corpus_options(
        __doc__.split("\n\n")[0], 2, list(PROGRAMS), argv,
        [("--note", {"default": "", "help": "a note on this run, appended to the section"})])

    with tempfile.TemporaryDirectory(prefix="wt-profile-") as tmp:
        work = Path(tmp)
        env = snapshot_env(work, COVERAGE_FILE=str(work / ".coverage"))
        version = source_version()
        load = [os.getloadavg()[0]]
        empty = work / "drive_empty.py"
        empty.write_text("pass\n")
        cmds = {EMPTY: commands(empty, [], set(), work)}
        for n in names:
            p = PROGRAMS[n]
            cmds[n] = commands(p.write(work, size), p.include, p.files(work), work)
        for n in cmds:  # untimed warm-up: OS file cache and __pycache__ warm, instrumented-code cache filled
            for tool in ("plain", "count", "naive"):
                timed(cmds[n][tool], work, env)

        times: dict[str, dict[str, list[float]]] = {n: {t: [] for t in TOOLS} for n in cmds}
        stats: dict[str, dict[str, object]] = {}
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
                if r == 0 and n != EMPTY:  # untimed; counts are deterministic
                    st = recording_stats(work / f"drive_{n}.count.wt", work / f"drive_{n}.naive.wt")
                    stats[n] = st
                    if st["diffs"]:
                        print(f"WARNING: {n}: count and count-naive block counts differ in {len(st['diffs'])} "
                              f"function(s): {'; '.join(st['diffs'][:5])}", file=sys.stderr, flush=True)
                    for h in st["hot_full"]:
                        print(f"  {n}: hottest 'full' function: {h}", file=sys.stderr)
                if r == 0 and len(set(outs.values())) != 1 and n not in mismatched:
                    mismatched.append(n)
                print(f"round {r + 1}/{runs} {n:14s} " + "  ".join(f"{t} {times[n][t][-1]:.2f}s" for t in TOOLS),
                      file=sys.stderr, flush=True)
            if r == 0 and runs > 1:
                print(f"round 1 took {time.perf_counter() - t0:.0f} s; about "
                      f"{(time.perf_counter() - t0) * (runs - 1):.0f} s to go", file=sys.stderr, flush=True)
            load.append(os.getloadavg()[0])
            body = render(names, times, stats, mismatched, r + 1, runs, size, argv, version, load, args.note)
            if write:  # after every round: an interrupted run leaves its completed rounds documented
                write_section("profile", body)
    print(body)
    if write:
        print("\nwrote section 'profile' of docs/benchmarks.md", file=sys.stderr)
    return 0


def render(names: list[str], times: dict[str, dict[str, list[float]]], stats: dict[str, dict[str, object]],
           mismatched: list[str], done: int, runs: int, size: str, argv: list[str] | None, version: str,
           load: list[float], note: str) -> str:
    """The markdown section for the rounds completed so far."""
    med = {n: {t: statistics.median(v) for t, v in tt.items()} for n, tt in times.items()}
    e = med[EMPTY]
    slow: dict[str, dict[str, float]] = {t: {} for t in ("count", "count_net", "cold", "naive", "coverage", "cprofile")}
    ratio: dict[str, float] = {}
    ratio_chords: dict[str, float] = {}
    trows, crows = [], []
    for n in names:
        m, s = med[n], stats[n]
        for t in ("count", "cold", "naive", "coverage", "cprofile"):
            slow[t][n] = m[t] / m["plain"]
        net_plain = m["plain"] - e["plain"]
        slow["count_net"][n] = (m["count"] - e["count"]) / net_plain if net_plain > 0 else float("nan")
        trows.append([n, f"{m['plain']:.2f}", f"{m['count']:.2f}", f"**{slow['count'][n]:.2f}×**",
                      f"{slow['count_net'][n]:.2f}×", f"{slow['cold'][n]:.2f}×", f"{slow['naive'][n]:.2f}×",
                      f"{slow['coverage'][n]:.2f}×", f"{slow['cprofile'][n]:.2f}×"])
        ci, ni = int(s["count_increments"]), int(s["naive_increments"])
        ratio[n] = ni / ci if ci else float("inf")
        cc, nc = int(s["count_incr_chords"]), int(s["naive_incr_chords"])
        ratio_chords[n] = nc / cc if cc else float("nan")
        full_share = int(s["count_incr_full"]) / ci if ci else 0.0
        crows.append([n, f"{fmt_int(s['count_counters'])} / {fmt_int(s['naive_counters'])}",
                      f"{fmt_int(s['count_counters_ran'])} / {fmt_int(s['naive_counters_ran'])}",
                      fmt_int(ci), fmt_int(ni), f"**{ratio[n]:.2f}**",
                      f"{s['ran_chords']} / {s['ran_full']}", f"{100 * full_share:.0f}%",
                      f"{ratio_chords[n]:.2f}" if cc else "-",
                      "identical" if not s["diffs"] else f"**{len(s['diffs'])} differ**"])
    trows.append([EMPTY, f"{e['plain']:.3f}", f"{e['count']:.3f}", f"{e['count'] / e['plain']:.2f}×", "-",
                  f"{e['cold'] / e['plain']:.2f}×", f"{e['naive'] / e['plain']:.2f}×", f"{e['coverage'] / e['plain']:.2f}×",
                  f"{e['cprofile'] / e['plain']:.2f}×"])
    theaders = ["program", "plain s", "count s", "count ×", "count × minus start-up",
                "count × without the code cache", "count-naive ×",
                "coverage --branch ×", "cProfile ×"]
    cheaders = ["program", "counters placed, count / naive (all functions)", "counters placed, count / naive (functions that ran)",
                "increments, count", "increments, count-naive", "naive / count",
                "ran: chords / full functions", "count increments in full functions",
                "naive / count on chords functions", "block counts count vs naive"]

    def summary(label: str, d: dict[str, float]) -> str:
        worst = max(d, key=lambda k: d[k])
        return f"- {label}: geometric mean **{geomean(d.values()):.2f}×**, worst {worst} {d[worst]:.2f}×"

    g_count = geomean(slow["count"].values())
    med_ratio = statistics.median(ratio.values())
    not_cheaper = [n for n in names if ratio[n] <= 1.0]
    rc = [v for v in ratio_chords.values() if v == v]
    diffs = [n for n in names if stats[n]["diffs"]]
    lines = [
        summary("wholetrace `--mode count`", slow["count"]),
        summary("wholetrace `--mode count`, start-up subtracted", slow["count_net"]),
        summary("wholetrace `--mode count --no-cache` (every module instrumented afresh, as on a first run)",
                slow["cold"]),
        summary("wholetrace `--mode count-naive`", slow["naive"]),
        summary("coverage.py `--branch`", slow["coverage"]),
        summary("cProfile", slow["cprofile"]),
        f"- counter increments, count-naive / count: median **{med_ratio:.2f}** "
        f"(range {min(ratio.values()):.2f}–{max(ratio.values()):.2f}); on the functions where count used "
        f"the optimal chord placement only: median {statistics.median(rc):.2f}" if rc else "",
        f"- target `count` geometric-mean slowdown ≤ {TARGET_SLOWDOWN:.2f}×: measured {g_count:.2f}× — "
        f"**{'met' if g_count <= TARGET_SLOWDOWN else 'not met'}**",
        f"- target ≥ {TARGET_RATIO:.0f}× fewer increments than count-naive in the median: measured {med_ratio:.2f}× — "
        f"**{'met' if med_ratio >= TARGET_RATIO else 'not met'}**",
        f"- programs where count executes no fewer increments than count-naive: "
        f"{', '.join(not_cheaper) if not_cheaper else 'none'}",
        "- block counts of count and count-naive: "
        + ("identical for every function of every program" if not diffs else
           "**differ** on " + "; ".join(f"{n} ({len(stats[n]['diffs'])} functions, e.g. {stats[n]['diffs'][0]})" for n in diffs)),
        f"- start-up (empty script, median): plain {e['plain']:.3f} s, count {e['count']:.3f} s, "
        f"count-naive {e['naive']:.3f} s, coverage {e['coverage']:.3f} s, cProfile {e['cprofile']:.3f} s",
    ]
    if mismatched:
        lines.append(f"- stdout differed between tools on: {', '.join(mismatched)}")
    if note:
        lines.append(f"- note on this run: {note}")
    cmdline = "python benchmarks/profile.py" + "".join(" " + shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    return "\n".join([
        "## Exact counts: `record --mode count` against `count-naive`, coverage.py and cProfile",
        "",
        f"Measured {machine()}; `{cmdline}` (size `{size}`, median of {done} interleaved "
        f"round{'s' if done != 1 else ''}{'' if done == runs else f' (run interrupted: {done} of {runs} rounds completed)'}, "
        f"finished {_dt.datetime.now().strftime('%H:%M')} local time); wholetrace {version}. "
        f"1-minute load average {' → '.join(f'{x:.1f}' for x in load)} (start, after each round) on "
        f"{os.cpu_count()} CPUs: other jobs on the machine add noise to wall times.",
        "",
        "Targets (issue 3): `count` geometric-mean slowdown ≤ 1.15× across the programs; at least 2× fewer "
        "counter increments than `count-naive` in the median (the paper measured 2.8–4.1× on C programs).",
        "",
        "Whole-process wall time of `python drive_X.py` (plain) against `python -m wholetrace.cli record "
        "--mode count|count-naive -q -o X.wt [--include M] drive_X.py`, `python -m coverage run --branch` "
        "(stdlib programs: `--pylib --include` their module files) and `python -m cProfile -o /dev/null`; "
        "× = median / median plain; \"minus start-up\" subtracts each command's time on an empty script. "
        "`count` and `count-naive` take instrumented code from wholetrace's cache (filled by an untimed "
        "warm-up run, as on any run after a program's first); \"without the code cache\" is `count "
        "--no-cache`, every module instrumented afresh as on a first run. "
        "Every child runs with `PYTHONHASHSEED=0`.",
        "",
        table(theaders, trows),
        "Counters and increments, from the first round's recordings. Counters placed: the sum of each "
        "function's plan counters over every instrumented function, and over those with a non-zero block "
        "count. Increments: the sum of the recording's `counters` array. count's functions use the optimal "
        "`chords` placement, or `full` (a counter on every block and instrumentable edge: functions with a "
        "chord that has no probe site), which costs *more* than count-naive; "
        "the last ratio column restricts both recordings to the functions count placed on chords. "
        "The block counts of the two recordings (`wholetrace.profile.profiles`) are compared for every function.",
        "",
        table(cheaders, crows),
        "\n".join(x for x in lines if x),
    ])


if __name__ == "__main__":
    sys.exit(main())
