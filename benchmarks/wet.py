"""WET capture (``record --mode full``, issue 13 stage 1) on the corpus: slowdown against plain
Python and ``--mode blocks`` in one run, executed statements, value records, bytes per statement.

For every program of the registry (``tests/corpus.py``, size ``bench``) this times the whole
process, wall clock, of ``plain``, ``blocks`` and ``full`` interleaved round by round (the minimum
over ``--runs`` rounds: the machine is shared, and the fastest round is the one least disturbed;
slowdown = min / min plain).  From the last ``full`` recording:
executed statements (from the blocks trace), value records, raw bytes per executed statement
(int32 events + the uncompressed capture log: 25 bytes a record, distinct contents, object
table) and stored bytes per statement (zstd chunks of both).  Then the WET is built from
it (decode, dependences; JIT compile measured apart in a fresh process) and sliced back from
the last print().

With ``--big N`` it also records a generated loop of about N statement instances (default
10 M) in ``full`` mode and times a backward slice from its last print() (target: <= 2 s).

    python benchmarks/wet.py [--programs a,b] [--runs N] [--size small|bench] [--quick] [--no-write] [--big N]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import corpus_options, geomean, machine, snapshot_env, source_version, table, timed, write_section  # noqa: E402
from corpus import PROGRAMS  # noqa: E402

from wholetrace.store import Recording  # noqa: E402
from wholetrace.trace.session import Trace  # noqa: E402
from wholetrace.wet.capture import log_bytes  # noqa: E402
import numpy as np  # noqa: E402

from wholetrace.errors import WholetraceError  # noqa: E402
from wholetrace.kernels.wetdecode import decode_streams  # noqa: E402
from wholetrace.kernels.wetdeps import closure, csr, data_deps  # noqa: E402
from wholetrace.wet.graph import build, save  # noqa: E402
from wholetrace.wet.queries import last_output, open_session, slice_  # noqa: E402

PY = sys.executable
TOOLS = ("plain", "blocks", "full")


def commands(driver: Path, include: list[str], work: Path) -> dict[str, list[str]]:
    inc = [a for m in include for a in ("--include", m)]
    rec = [PY, "-m", "wholetrace.cli", "record", "-q"]
    return {"plain": [PY, str(driver)],
            "blocks": [*rec, "--mode", "blocks", "-o", str(work / f"{driver.stem}.blocks.wt"), *inc, str(driver)],
            "full": [*rec, "--mode", "full", "-o", str(work / f"{driver.stem}.full.wt"), *inc, str(driver)]}


def full_stats(path: Path) -> dict[str, float]:
    with Recording(path, check=False) as rec:
        trace = Trace(rec)
        tally = trace.counts()
        stmts = sum(int(tally.stmts_of(sh).sum()) for sh in trace.shapes())
        sizes = rec.sizes()
        raw, stored = log_bytes(rec)
        records = int(rec.meta.get("wet_records", 0))
        parts: dict[str, float] = {}
        for name, _key, n in rec.array_sizes("wet."):
            part = "wet.content" if name.startswith("wet.content.") else name
            parts[part] = parts.get(part, 0) + n
    return {"stmts": stmts, "records": records, "raw": sizes["events_raw"] + raw,
            "stored": sizes["events_stored"] + stored, "log_stored": stored, "events_stored": sizes["events_stored"],
            **{f"part:{k}": v for k, v in parts.items()}}


def jit_seconds() -> float:
    """Compile (or load from numba's cache) the WET kernels once, on tiny inputs."""
    t0 = time.perf_counter()
    one = np.zeros(1, np.int64)
    data_deps(one, one, one, one - 1, one - 1, one - 1, 1, 1)
    closure(np.zeros(2, np.int64), one, one, False, 1)
    closure(np.zeros(2, np.int64), one, one, True, 1)
    csr((one, one, one), (one, one, one), 2)
    z1, z2 = np.zeros(0, np.int64), np.zeros((0, 1), np.int64)
    decode_streams(z1, one, z1, z1, z1, z1, one, z1, np.zeros((1, 8), np.int64), np.zeros((0, 5), np.int64), z1,
                   z1, np.zeros((0, 12), np.int64), np.zeros((0, 3), np.int64), np.zeros((0, 9), np.int64),
                   np.zeros((0, 3), np.int64), z1, z1, z2, 64)
    return time.perf_counter() - t0


def jit_cold_seconds(work: Path) -> float:
    """The same in a fresh process with an empty numba cache: the compile time proper."""
    code = ("import sys, time; sys.path.insert(0, %r); import wet; t = time.perf_counter(); "
            "wet.jit_seconds(); print(time.perf_counter() - t)" % str(Path(__file__).resolve().parent))
    env = {**os.environ, "NUMBA_CACHE_DIR": str(work / "numba-cold")}
    got = subprocess.run([PY, "-c", code], capture_output=True, text=True, env=env, check=True)
    return float(got.stdout.strip().splitlines()[-1])


def wet_stats(path: Path) -> dict[str, float]:
    """Seconds to build the dependences (decode, kernel) and to slice back from the last output."""
    with Recording(path, check=False) as rec:
        t0 = time.perf_counter()
        w = build(rec)
        t_build = time.perf_counter() - t0
    save(path, w)
    with Recording(path, check=False) as rec:           # the stored WET: every encoding's bytes
        enc_bytes = json.loads(rec.get_array("wet.g.meta").tobytes()).get("enc_bytes", {})
    s = open_session(str(path))
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        _label, inst = last_output(s)
        n = slice_(s, [inst], False)["instances"]
    except WholetraceError:
        n = 0
    slice_cpu = time.process_time() - c0
    return {"slice_cpu": slice_cpu, "build_s": t_build, "decode_s": w.meta["decode_s"],
            "kernel_s": w.meta["decode_kernel_s"],
            "deps_s": w.meta["deps_s"],
            "slice_s": time.perf_counter() - t0, "slice_n": n, "inst": w.n_inst, "pairs": int(w.d_use.size),
            "wet_z": sum(v["z"] for v in enc_bytes.values()), "wet_best": sum(min(v.values()) for v in enc_bytes.values())}


_BIG = """
def step(i, acc):
    acc = acc + (i * 7) % 13
    return acc


acc = 0
side = 0
for i in range(ITER):
    acc = step(i, acc)
    side = side + 1
print(acc)
"""


def big_slice(work: Path, instances: int, env: dict[str, str]) -> dict[str, float]:
    """Record a loop of about ``instances`` statement instances (3 a iteration in the loop, 2 in
    the callee: 5 per iteration), build its WET, and time a backward slice from the last print
    (CPU and wall; the closure also passes through the callee's instances)."""
    prog = work / "big_slice.py"
    prog.write_text(_BIG.replace("ITER", str(max(instances // 5, 1))))
    out = work / "big_slice.wt"
    t0 = time.perf_counter()
    subprocess.run([PY, "-m", "wholetrace.cli", "record", "-q", "--mode", "full", "-o", str(out), str(prog)],
                   cwd=work, env=env, check=True, capture_output=True)
    t_rec = time.perf_counter() - t0
    with Recording(out, check=False) as rec:
        t0 = time.perf_counter()
        w = build(rec)
        t_build = time.perf_counter() - t0
    save(out, w)
    s = open_session(str(out))
    _label, inst = last_output(s)       # a warm closure: kernels loaded, CSR built once
    slice_(s, [inst], False)
    s = open_session(str(out))
    t0, c0 = time.perf_counter(), time.process_time()
    _label, inst = last_output(s)
    n = slice_(s, [inst], False)["instances"]
    return {"inst": w.n_inst, "slice_n": n, "cpu": time.process_time() - c0, "wall": time.perf_counter() - t0,
            "record_s": t_rec, "build_s": t_build}


def main(argv: list[str] | None = None) -> int:
    args, names, runs, size, write = corpus_options(
        __doc__.split("\n\n")[0], 3, list(PROGRAMS), argv,
        [("--size", {"choices": ["small", "bench"], "help": "workload size (default bench; small with --quick)"}),
         ("--big", {"type": int, "nargs": "?", "const": 10_000_000, "default": None,
                    "help": "also time a backward slice over about N statement instances (default 10 M)"})])
    size = args.size or size
    with tempfile.TemporaryDirectory(prefix="wt-wet-") as tmp:
        work = Path(tmp)
        env = snapshot_env(work)
        version = source_version()
        load = [os.getloadavg()[0]]
        jit = (jit_cold_seconds(work), jit_seconds())
        big = big_slice(work, args.big, env) if args.big else None
        cmds = {}
        for n in names:
            p = PROGRAMS[n]
            cmds[n] = commands(p.write(work, size), p.include, work)
        for n in names:                 # untimed warm-up: fills the code cache, checks the drivers
            for tool in TOOLS:
                timed(cmds[n][tool], work, env)
        times = {n: {t: [] for t in TOOLS} for n in names}
        stats: dict[str, dict[str, float]] = {}
        mismatched: list[str] = []
        for r in range(runs):
            for n in names:
                outs = {}
                for tool in TOOLS:
                    secs, proc = timed(cmds[n][tool], work, env)
                    times[n][tool].append(secs)
                    outs[tool] = proc.stdout
                if r == 0:
                    stats[n] = full_stats(work / f"drive_{n}.full.wt")
                    stats[n].update(wet_stats(work / f"drive_{n}.full.wt"))
                    if len(set(outs.values())) != 1:
                        mismatched.append(n)
                print(f"round {r + 1}/{runs} {n:14s} " + "  ".join(f"{t} {times[n][t][-1]:.2f}s" for t in TOOLS),
                      file=sys.stderr, flush=True)
        load.append(os.getloadavg()[0])
    body = render(names, times, stats, mismatched, runs, size, version, load, jit, big)
    print(body)
    if write:
        write_section("wet", body)
        print("\nwrote section 'wet' of docs/benchmarks.md", file=sys.stderr)
    return 0


def render(names: list[str], times: dict[str, dict[str, list[float]]], stats: dict[str, dict[str, float]],
           mismatched: list[str], runs: int, size: str, version: str, load: list[float], jit: tuple[float, float],
           big: dict[str, float] | None = None) -> str:
    med = {n: {t: min(v) for t, v in tt.items()} for n, tt in times.items()}
    rows = []
    vs_plain, vs_blocks = {}, {}
    for n in names:
        m, s = med[n], stats[n]
        vs_plain[n] = m["full"] / m["plain"]
        vs_blocks[n] = m["full"] / m["blocks"]
        st = max(s["stmts"], 1)
        rows.append([n, f"{m['plain']:.2f}", f"{m['blocks'] / m['plain']:.2f}×", f"**{vs_plain[n]:.2f}×**",
                     f"{vs_blocks[n]:.2f}×", f"{s['stmts']:,}", f"{s['records']:,}",
                     f"{s['records'] / st:.2f}", f"{s['raw'] / st:.2f}", f"{s['stored'] / st:.3f}",
                     f"{s['inst']:,}", f"{s['decode_s']:.2f}", f"{s['kernel_s']:.2f}", f"{s['deps_s']:.3f}",
                     f"{s['slice_s']:.3f} ({s['slice_cpu']:.3f})",
                     f"{s['slice_n']:,}",
                     f"{s['wet_z'] / max(s['inst'], 1):.2f} → {s['wet_best'] / max(s['inst'], 1):.2f}"])
    headers = ["program", "plain s", "blocks ×", "full ×", "full / blocks", "executed statements",
               "value records", "records / stmt", "raw B/stmt", "stored B/stmt", "WET instances",
               "decode s", "of it kernel s", "deps s", "slice of last output s (CPU s)", "slice instances",
               "stored WET B/instance (zstd int64 → chosen)"]
    tot = {k: sum(s[k] for s in stats.values()) for k in ("stmts", "records", "raw", "stored", "events_stored")}
    parts = sorted({k for s in stats.values() for k in s if k.startswith("part:")})
    part_tot = {k[5:]: sum(s.get(k, 0) for s in stats.values()) for k in parts}
    lines = [
        f"Measured {machine()}, size `{size}`, minimum of {runs} round(s) after a warm-up, source {version}; "
        f"load average {load[0]:.1f} before, {load[-1]:.1f} after"
        + (" (taken under load: other jobs shared the machine)." if max(load) > 1.5 else "."),
        "",
        table(headers, rows),
        f"- `full` against plain: geometric mean **{geomean(vs_plain.values()):.2f}×** "
        f"(target ≤ 15×), worst {max(vs_plain, key=vs_plain.get)} {max(vs_plain.values()):.2f}×",
        f"- `full` against `blocks`: geometric mean {geomean(vs_blocks.values()):.2f}×",
        f"- over all programs: {tot['records'] / tot['stmts']:.2f} value records per executed statement, "
        f"raw {tot['raw'] / tot['stmts']:.2f} B/statement, stored {tot['stored'] / tot['stmts']:.3f} B/statement "
        f"(target ≤ 4 B before the tier-2 codecs); per program geometric mean "
        f"{geomean(s['stored'] / max(s['stmts'], 1) for s in stats.values()):.3f} B/statement",
        "- stored bytes per executed statement by part, over all programs: control flow (events) "
        f"{tot['events_stored'] / tot['stmts']:.3f}, "
        + ", ".join(f"`{k}` {v / tot['stmts']:.3f}" for k, v in part_tot.items()),
    ]
    wz, wb, wi = (sum(s[k] for s in stats.values()) for k in ("wet_z", "wet_best", "inst"))
    lines.append(f"- stored WET (`wet.g.*`, built by the first query): {wz / max(wi, 1):.2f} B/instance as zstd of "
                 f"int64 words, {wb / max(wi, 1):.2f} B/instance with each chunk in its smallest encoding "
                 "(zstd / transformed byte planes / `streams` codec: `wet/packing.py`)")
    lines.append(f"- WET kernels (decode, last writer, closure): JIT compile {jit[0]:.1f} s in a fresh process "
                 f"with an empty numba cache, cache load {jit[1]:.2f} s; neither is in the columns. "
                 "decode = loading the capture log, static facts, flat tables and the decoding kernel "
                 "(instances, control parents, calls, access log; 'of it kernel' = the kernel alone); deps = "
                 "last-writer kernel + pair dedup; slice = criterion lookup + closure from the last print() "
                 "(target: ≤ 2 s over 10 M instances)")
    if big is not None:
        lines.append(f"- backward slice over {big['inst']:,} statement instances (a generated loop with a call, "
                     f"`--big`): **{big['cpu']:.2f} s CPU** ({big['wall']:.2f} s wall) for criterion + CSR + closure "
                     f"+ lines, {big['slice_n']:,} instances in the slice (target <= 2 s; the session was opened and "
                     f"sliced once before, so kernels are loaded); recording it took {big['record_s']:.0f} s, "
                     f"building its WET {big['build_s']:.0f} s")
    if mismatched:
        lines.append(f"- **stdout differed between tools** for: {', '.join(mismatched)}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
