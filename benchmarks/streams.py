"""Bidirectional stream codecs (``wholetrace.streams``): size against zstd -19, xz -9 and
SEQUITUR, and encode / decode / walk / seek speed, on synthetic and recorded integer streams.

Streams (at most ``--max-values`` values each):

* synthetic: constant, stride, periodic with 2 % noise, random (small alphabet and 40-bit),
  a random walk, timestamp-like (a loop body's block times: runs of a fixed stride between
  irregular gaps) and label-like (instance ordinals of a dependence's definition).
* recorded: for each program of ``--programs`` (``tests/corpus.py``), recorded with
  ``wholetrace record`` in ``blocks``, ``witness`` and ``count`` mode: the block trace and
  the witness trace of the main thread (event ints), the ``counters`` array, and three
  streams derived from the block trace as the WET would keep them for its hottest node
  (block) X: X's timestamps (global block counter at each execution: WET node timestamps),
  the ordinal of X's function activation at each execution (a control-dependence label
  <t_use, t_def> with local timestamps), and the latest instance ordinal of the block most
  often executed just before X (a data-dependence label).
* WET: for each program of ``--wet-programs``, recorded with ``record --mode full`` (size
  ``small``) and its WET built (``wet.graph.wet_of``): the timestamps of the most executed
  statement, the control-parent instances of a hot statement (one whose parent is not a fixed
  distance back), the definition instances of the hottest data dependence edge (among
  those whose use-definition distance is not constant), and the values of the most
  written capture slot.

Sizes in bits per value; zstd -19 and xz -9 compress the same values as little-endian u64;
SEQUITUR is ``wholetrace.grammar`` on the values renumbered densely, its encoded grammar
plus the value table (xz).  Speed is CPU time of one thread (``time.process_time``),
best of ``--runs``: encode includes choosing the codec (``streams.choose``);
``decode`` is ``decode_range(0, m)``; forward / backward are a new cursor's ``next_many(m)``
from 0 / ``prev_many(m)`` from the end (a predictor step per value on predictor streams
longer than ``streams.SHORT_WALK``; else the cursor decodes each segment it enters and
copies from it), each repeated to ``WALK_VALUES`` values at least; seek is
``seek(random) + next()`` through the Python API.  JIT compile time is measured once in a
fresh process with an empty numba cache.

    python benchmarks/streams.py [--programs a,b] [--wet-programs a,b] [--max-values N] [--runs N] [--quick] [--no-write]
"""

from __future__ import annotations

import argparse
import lzma
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Iterator

import numpy as np
import zstandard

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import machine, snapshot_env, source_version, table, write_section  # noqa: E402
from corpus import PROGRAMS  # noqa: E402

from wholetrace import streams  # noqa: E402
from wholetrace.events import ENTER_BASE, EXC, LEAVE  # noqa: E402
from wholetrace.grammar import GrammarBuilder  # noqa: E402
from wholetrace.store import Recording  # noqa: E402

PY = sys.executable
DEFAULT_PROGRAMS = ("richards", "go", "raytrace", "json")
#: programs recorded in ``full`` mode (size ``small``: the WET build is the slow part) for WET streams
DEFAULT_WET_PROGRAMS = ("richards", "json")
TARGET_RATE = 30e6   # values/s decoded per direction
#: each speed figure times whole walks (or decodes) repeated to at least this many values
WALK_VALUES = 1_000_000
TARGET_VS_XZ = 1.2   # chosen codec at most this times xz -9 on timestamp- and label-like streams
KINDS = ("timestamp-like", "label-like", "symbols", "other")


# ---------------------------------------------------------------------- streams


def synthetic(n: int, seed: int = 1) -> list[tuple[str, str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    period = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5], np.uint64)
    noisy = np.resize(period, n)
    hit = rng.random(n) < 0.02
    noisy[hit] = rng.integers(0, 1000, int(hit.sum())).astype(np.uint64)
    ts, t = [], 0
    while len(ts) < n:  # a loop body: k iterations 17 blocks apart, then an irregular gap
        for _ in range(int(rng.integers(1, 40))):
            t += 17
            ts.append(t)
        t += int(rng.integers(20, 400))
    labels, d = [], 0
    for _ in range(n):  # uses of one definition instance, then a new instance
        if rng.random() < 0.15:
            d += int(rng.integers(1, 4))
        labels.append(d)
    return [
        ("constant", "other", np.full(n, 42, np.uint64)),
        ("stride 7", "other", np.arange(n, dtype=np.uint64) * np.uint64(7)),
        ("periodic 11 + 2% noise", "other", noisy),
        ("random 0..15", "other", rng.integers(0, 16, n).astype(np.uint64)),
        ("random 40-bit", "other", rng.integers(0, 1 << 40, n).astype(np.uint64)),
        ("random walk", "other", np.cumsum(rng.integers(-2, 3, n)).astype(np.int64).view(np.uint64)),
        ("timestamps (loop)", "timestamp-like", np.array(ts[:n], np.uint64)),
        ("labels (def ordinal)", "label-like", np.array(labels, np.uint64)),
    ]


def record(name: str, size: str, work: Path, env: dict[str, str]) -> dict[str, Path]:
    """Record one corpus program in blocks, witness and count mode; the three .wt paths."""
    prog = PROGRAMS[name]
    driver = prog.write(work, size)
    inc = [a for m in prog.include for a in ("--include", m)]
    out = {}
    for mode in ("blocks", "witness", "count"):
        wt = work / f"{name}.{mode}.wt"
        subprocess.run([PY, "-m", "wholetrace.cli", "record", "--mode", mode, "-q", "-o", str(wt), *inc,
                        str(driver)], cwd=work, env=env, check=True, stdout=subprocess.DEVNULL)
        out[mode] = wt
    return out


def main_events(path: Path) -> np.ndarray:
    with Recording(path, check=False) as rec:
        sid = max(rec.streams(), key=lambda s: s.n_events).sid
        return rec.events(sid).astype(np.int64)


def executed_blocks(ev: list[int]) -> Iterator[tuple[int, int]]:
    """(node id, ordinal of its function's activation) of every executed block of a block trace."""
    frames: list[tuple[int, int]] = []  # (fid, activation ordinal)
    acts: Counter[int] = Counter()
    k = 0
    while k < len(ev):
        e = ev[k]
        if e >= 0 and frames:
            yield frames[-1][0] << 20 | e, frames[-1][1]
        elif e == EXC:
            k += 1  # the statement id after EXC is not a block
        elif e == LEAVE:
            if frames:
                frames.pop()
        elif e <= -ENTER_BASE:
            fid = -e - ENTER_BASE
            frames.append((fid, acts[fid]))
            acts[fid] += 1
        k += 1


def wet_streams(ev: np.ndarray, limit: int) -> list[tuple[str, str, np.ndarray]]:
    """Timestamps and two dependence-label streams of the hottest block, from a block trace."""
    events = ev[:4 * limit].tolist()
    node = [nid for nid, _ in executed_blocks(events)]
    if not node:
        return []
    hot = Counter(node).most_common(1)[0][0]
    before = Counter(node[i - 1] for i in range(1, len(node)) if node[i] == hot)
    dep = before.most_common(1)[0][0] if before else hot
    ts, act_label, def_label = [], [], []
    seen_dep = 0
    for t, (nid, act) in enumerate(executed_blocks(events), start=1):
        if nid == dep:
            seen_dep += 1
        if nid == hot:
            ts.append(t)
            act_label.append(act)
            def_label.append(seen_dep - 1)
    cut = slice(0, limit)
    return [("timestamps (hot block)", "timestamp-like", np.array(ts[cut], np.uint64)),
            ("labels (activation)", "label-like", np.array(act_label[cut], np.uint64)),
            ("labels (last def)", "label-like", np.array(def_label[cut], np.int64).view(np.uint64))]


def wet_full(name: str, work: Path, env: dict[str, str], limit: int) -> list[tuple[str, str, np.ndarray]]:
    """Streams of the stored WET of a ``record --mode full`` recording (size ``small``):
    the timestamps (instance ids) of the most executed statement; the control-parent
    instances of the hottest statement whose control parent is not a fixed distance back;
    the definition instances of the most frequent static data-dependence edge whose
    use-to-definition distance varies (uses in order); the values the capture log holds
    for its most written slot."""
    from wholetrace.wet.graph import wet_of

    prog = PROGRAMS[name]
    driver = prog.write(work, "small")
    wt = work / f"{name}.full.wt"
    inc = [a for m in prog.include for a in ("--include", m)]
    subprocess.run([PY, "-m", "wholetrace.cli", "record", "--mode", "full", "-q", "-o", str(wt), *inc, str(driver)],
                   cwd=work, env=env, check=True, stdout=subprocess.DEVNULL)
    wet, log = wet_of(wt, cache=False)
    n = wet.n_inst
    node = wet.fid.astype(np.int64) << 20 | wet.sid.astype(np.int64)
    ranked = [x for x, _count in Counter(node[:n].tolist()).most_common(20)]
    ts = np.flatnonzero(node[:n] == ranked[0])
    out = [("WET timestamps (hot statement)", "timestamp-like", ts.astype(np.uint64))]
    for stmt in ranked:  # the hottest statement whose control parent is not a fixed distance back
        at = np.flatnonzero(node[:n] == stmt)
        if np.unique(at - wet.cd[at]).size > 1:
            out.append(("WET labels (control parent)", "label-like", wet.cd[at].astype(np.int64).view(np.uint64)))
            break
    real = (wet.d_use < n) & (wet.d_def < n)
    use, dfn = wet.d_use[real], wet.d_def[real]
    for edge, _count in Counter(zip(node[use].tolist(), node[dfn].tolist())).most_common(20):
        sel = (node[use] == edge[0]) & (node[dfn] == edge[1])
        if np.unique(use[sel] - dfn[sel]).size > 1:  # not a shifted copy of the use timestamps
            out.append(("WET labels (data def, hot edge)", "label-like", dfn[sel].astype(np.int64).view(np.uint64)))
            break
    st = max(log.streams.values(), key=lambda s: s.val.size, default=None)
    if st is not None and st.val.size:
        slot = Counter(st.slot.tolist()).most_common(1)[0][0]
        out.append(("WET values (hot slot)", "other", st.val[st.slot == slot].astype(np.int64).view(np.uint64)))
    print(f"recorded {name} (full): {n:,} instances", file=sys.stderr, flush=True)
    return [(f"{name}: {label}", kind, arr[:limit]) for label, kind, arr in out]


def recorded(names: list[str], size: str, limit: int, work: Path,
             wet_names: tuple[str, ...] = ()) -> list[tuple[str, str, np.ndarray]]:
    env = snapshot_env(work)
    out = []
    for name in names:
        paths = record(name, size, work, env)
        blocks = main_events(paths["blocks"])
        out.append((f"{name}: block trace", "symbols", blocks[:limit].view(np.uint64)))
        out.append((f"{name}: witness trace", "symbols", main_events(paths["witness"])[:limit].view(np.uint64)))
        with Recording(paths["count"], check=False) as rec:
            counters = rec.get_array("counters")
        if counters is not None and counters.size:
            out.append((f"{name}: counters", "other", counters.astype(np.int64)[:limit].view(np.uint64)))
        out += [(f"{name}: {label}", kind, arr) for label, kind, arr in wet_streams(blocks, limit)]
        print(f"recorded {name}: {blocks.size:,} block-trace events", file=sys.stderr, flush=True)
    for name in wet_names:
        out += wet_full(name, work, env, limit)
    return out


# ---------------------------------------------------------------------- measures


def sequitur_bytes(values: np.ndarray) -> int:
    uniq, dense = np.unique(values, return_inverse=True)
    b = GrammarBuilder(expected_symbols=values.size)
    b.feed(dense.astype(np.int64))
    grammar = b.finish().to_bytes()
    return len(grammar) + len(lzma.compress(uniq.astype("<u8").tobytes(), preset=9))


def cpu(fn, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return max(best, 1e-9)


def measure(name: str, kind: str, vals: np.ndarray, runs: int) -> dict[str, object]:
    m = int(vals.size)
    raw = vals.astype("<u8").tobytes()
    sizes = {c: streams.encode(vals, c).nbytes for c in streams.CODEC_NAMES if vals.size or c in ("raw",)}
    enc_s = cpu(lambda: streams.encode(vals), runs)
    cs = streams.encode(vals)
    assert np.array_equal(cs.decode(), vals), name
    r: dict[str, object] = {"name": name, "kind": kind, "m": m, "codec": cs.codec, "chosen": cs.nbytes,
                            "sizes": sizes, "xz": len(lzma.compress(raw, preset=9)),
                            "zstd": len(zstandard.ZstdCompressor(level=19).compress(raw)),
                            "sequitur": sequitur_bytes(vals), "enc": m / enc_s}
    # each timed unit is a whole walk as a user makes it: a new cursor (none starts with a
    # segment decoded, the stream caches nothing) and one call that walks every value; it is
    # repeated to at least WALK_VALUES values so that short streams are timed over many
    # walks, not over one call near the clock's resolution
    reps = max(1, WALK_VALUES // max(m, 1))

    def dec() -> None:
        for _ in range(reps):
            cs.decode_range(0, m)

    def fwd() -> None:
        for _ in range(reps):
            cs.cursor(0).next_many(m)

    def bwd() -> None:
        for _ in range(reps):
            cs.cursor(m).prev_many(m)

    assert cs.cursor(0).next_many(m).shape[0] == m and cs.cursor(m).prev_many(m).shape[0] == m
    r["dec"] = m * reps / cpu(dec, runs)
    r["fwd"] = m * reps / cpu(fwd, runs)
    r["bwd"] = m * reps / cpu(bwd, runs)
    targets = np.random.default_rng(0).integers(0, max(m, 1), 500)
    cur = cs.cursor()

    def seeks() -> None:
        for q in targets.tolist():
            cur.seek(q)
            cur.next()

    r["seek_us"] = cpu(seeks, runs) / targets.size * 1e6
    return r


JIT_CHILD = r"""
import time, numpy as np
t, c = time.perf_counter(), time.process_time()
from wholetrace import streams
v = (np.arange(300) % 7).astype(np.uint64)
for name in streams.CODEC_NAMES:
    cs = streams.CompressedStream.from_bytes(streams.encode(v, name, segment=64).to_bytes())
    cs.decode_range(3, 200)
    for step in (True, False):
        k = cs.cursor(10, step=step); k.next_many(100); k.prev_many(50); k.seek(250); k.next(); k.prev()
print(time.perf_counter() - t, time.process_time() - c)
"""


def jit_seconds() -> tuple[float, float]:
    """Wall and CPU seconds to import and compile every codec's kernels in a fresh process."""
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, NUMBA_CACHE_DIR=d)
        proc = subprocess.run([PY, "-c", JIT_CHILD], env=env, capture_output=True, text=True)
        if proc.returncode:
            raise SystemExit(f"JIT child failed:\n{proc.stderr[-3000:]}")
        out = proc.stdout
    wall, cpu_s = out.split()[-2:]
    return float(wall), float(cpu_s)


# ---------------------------------------------------------------------- report


def bpv(nbytes: int, m: int) -> str:
    return f"{8 * nbytes / m:.3f}" if m else "-"


def report(rows: list[dict[str, object]], jit: tuple[float, float], note: str) -> str:
    size_rows, codec_rows, speed_rows = [], [], []
    for r in rows:
        m = int(r["m"])  # type: ignore[arg-type]
        best = min(r["sizes"], key=r["sizes"].get)  # type: ignore[arg-type]
        ratio = int(r["chosen"]) / int(r["xz"])  # type: ignore[arg-type]
        size_rows.append([r["name"], r["kind"], f"{m:,}", r["codec"], bpv(r["chosen"], m), best,  # type: ignore[arg-type]
                          bpv(r["zstd"], m), bpv(r["xz"], m), bpv(r["sequitur"], m), f"{ratio:.2f}"])  # type: ignore[arg-type]
        codec_rows.append([r["name"]] + [bpv(r["sizes"].get(c, 0), m) for c in streams.CODEC_NAMES])  # type: ignore[union-attr]
        speed_rows.append([r["name"], r["codec"]] + [f"{float(r[k]) / 1e6:.1f}" for k in ("enc", "dec", "fwd", "bwd")]  # type: ignore[arg-type]
                          + [f"{float(r['seek_us']):.0f}"])  # type: ignore[arg-type]
    watched = [r for r in rows if r["kind"] in ("timestamp-like", "label-like")]
    within = [r for r in watched if int(r["chosen"]) <= TARGET_VS_XZ * int(r["xz"])]  # type: ignore[arg-type]
    slowest = min(min(float(r["fwd"]), float(r["bwd"])) for r in rows)  # type: ignore[arg-type]
    back_ok = sum(1 for r in rows if float(r["bwd"]) >= 0.95 * float(r["fwd"]))  # type: ignore[arg-type]
    lines = [
        "## Stream codecs (`benchmarks/streams.py`)",
        "",
        f"{machine()}; source {source_version()}. {note}",
        "",
        "Bits per value (bpv). *chosen*: the codec `encode(values)` picks (every codec on the first "
        "32 Ki values, raw/varint/packed sized exactly on the whole stream, a prefix-only leader "
        "judged again on the middle and the end); *best*: the smallest codec on the whole stream; zstd -19 / xz -9: the values as "
        "little-endian u64; SEQUITUR: `wholetrace.grammar` on the values renumbered densely, plus "
        "the value table (xz); *chosen / xz*: size ratio (below 1: smaller than xz).",
        "",
        table(["stream", "kind", "values", "chosen", "bpv", "best", "zstd -19", "xz -9", "SEQUITUR", "chosen / xz"],
              size_rows),
        "Bits per value of every codec:",
        "",
        table(["stream"] + list(streams.CODEC_NAMES), codec_rows),
        "Speed of the chosen codec, M values per CPU second of one thread (best of the runs): encode "
        "(with codec selection), `decode_range(0, m)`, a new cursor's `next_many(m)` from 0 (forward) and "
        "`prev_many(m)` from the end (backward), each a whole walk repeated (a new cursor each time) to "
        f"{WALK_VALUES:,} values at least; seek: µs per `seek(random)` + `next()` through the "
        "Python API.",
        "",
        table(["stream", "codec", "encode", "decode", "forward", "backward", "seek µs"], speed_rows),
        f"JIT compile time (fresh process, empty numba cache, every codec's kernels): {jit[0]:.1f} s "
        f"wall, {jit[1]:.1f} s CPU; not included above (numba caches the kernels on disk).",
        "",
        "Targets (issue 14):",
        f"- >= {TARGET_RATE / 1e6:.0f} M values/s per direction: slowest cursor walk "
        f"{slowest / 1e6:.1f} M/s; {sum(1 for r in rows if min(float(r['fwd']), float(r['bwd'])) >= TARGET_RATE)}"  # type: ignore[arg-type]
        f" of {len(rows)} streams reach it both ways.",
        f"- chosen codec within {TARGET_VS_XZ}x of xz -9 on timestamp- and label-like streams: "
        f"{len(within)} of {len(watched)}"
        + (f" (not: {', '.join(str(r['name']) for r in watched if r not in within)})" if len(within) < len(watched) else "")
        + ".",
        f"- backward no slower than forward (within 5 %): {back_ok} of {len(rows)} streams.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", default=",".join(DEFAULT_PROGRAMS))
    ap.add_argument("--wet-programs", default=",".join(DEFAULT_WET_PROGRAMS),
                    help="programs recorded in full mode (size small) for WET streams; empty for none")
    ap.add_argument("--max-values", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="small sizes, one run, print only")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--note", default=None, help="the sentence after the machine line (default: the load and the command)")
    args = ap.parse_args(argv)
    limit = 100_000 if args.quick else args.max_values
    runs = 1 if args.quick else args.runs
    names = [n for n in args.programs.split(",") if n]
    wet_names = tuple(n for n in args.wet_programs.split(",") if n)
    unknown = [n for n in names + list(wet_names) if n not in PROGRAMS]
    if unknown:
        ap.error(f"unknown program(s) {', '.join(unknown)}")
    load = os.getloadavg()
    jit = jit_seconds()
    print(f"JIT compile {jit[0]:.1f} s wall, {jit[1]:.1f} s CPU", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="wt-streams-") as tmp:
        data = synthetic(limit) + recorded(names, "small" if args.quick else "bench", limit, Path(tmp), wet_names)
    rows = []
    for name, kind, vals in data:
        if vals.size == 0:
            continue
        rows.append(measure(name, kind, vals, runs))
        r = rows[-1]
        print(f"{name}: {r['codec']} {bpv(r['chosen'], r['m'])} bpv (xz {bpv(r['xz'], r['m'])}), "  # type: ignore[arg-type]
              f"fwd {float(r['fwd']) / 1e6:.1f} bwd {float(r['bwd']) / 1e6:.1f} M/s", file=sys.stderr, flush=True)  # type: ignore[arg-type]
    note = args.note or (f"Measured while other jobs loaded the machine (1-minute load {load[0]:.1f} at the start, "
                         f"{os.getloadavg()[0]:.1f} at the end, on {os.cpu_count()} CPUs) with `python "
                         f"benchmarks/streams.py {' '.join(sys.argv[1:] if argv is None else argv)}`: CPU times, "
                         f"best of {runs}, noisy.")
    body = report(rows, jit, note)
    print(body)
    if not (args.quick or args.no_write):
        write_section("streams", body)


if __name__ == "__main__":
    main()
