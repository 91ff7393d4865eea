"""SEQUITUR benchmark on the five large shared vectors: build and encode speed, peak RSS, encoded size vs compressors."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import subprocess
import sys
from pathlib import Path

import zstandard

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import machine, table, write_section  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
NAMES = ["loopy", "loopy_noisy", "markov", "textlike", "rand4"]
CHILD = r"""
import json, resource, sys, time
import numpy as np
def cpu():
    return resource.getrusage(resource.RUSAGE_SELF).ru_utime
t = time.perf_counter()
from wholetrace.grammar import Grammar, GrammarBuilder
b = GrammarBuilder(); b.feed(np.array([1, 2, 1, 2, 1, 2, 3])); g0 = b.finish()
jit = time.perf_counter() - t
t = time.perf_counter()
Grammar.from_bytes(g0.to_bytes(compact=True))  # loads the coder's kernels
jit_enc = time.perf_counter() - t
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # imports + loaded kernels
a = np.fromfile(sys.argv[1], np.uint16)
t = time.perf_counter()
c = cpu()
b = GrammarBuilder(lookahead=sys.argv[2] == "1", expected_symbols=a.size)
for i in range(0, a.size, 1 << 20):
    b.feed(a[i:i + (1 << 20)])
g = b.finish()
secs = time.perf_counter() - t
build_cpu = cpu() - c
rss_build = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
# load the coder's variant for this input's model set (the ladder picks it on a prefix; the text-like
# loop is a copy of its own) outside the timed encode: encode a grammar of the input's first 128 Ki symbols
w = GrammarBuilder(); w.feed(a[:1 << 17]); w.finish().to_bytes(compact=True); del w
c = cpu(); enc = g.to_bytes(compact=True); enc_cpu = cpu() - c
rss_enc = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
c = cpu(); back = Grammar.from_bytes(enc); dec_cpu = cpu() - c
assert back == g
explicit, exp_cpu = 0, 0.0
if sys.argv[3] == "1":
    c = cpu(); explicit = len(g.to_bytes()); exp_cpu = cpu() - c
dropped = int.from_bytes(enc[28:32], "little")  # header: the coder's context models left out | flag << 8
print(json.dumps(dict(n=int(a.size), rules=g.num_rules, rhs=g.num_symbols, len_S=g.start_length,
    jit=jit, jit_enc=jit_enc, secs=secs, cpu=build_cpu, enc=len(enc), enc_cpu=enc_cpu, dec_cpu=dec_cpu,
    explicit=explicit, exp_cpu=exp_cpu, dropped=dropped, rss_build=rss_build, base=base, rss=rss_enc)))
"""


def vectors() -> Path:
    src = Path(os.environ.get("WHOLETRACE_VECTORS", REPO.parent / "shared" / "vectors")).resolve()
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "wholetrace" / "vectors"
    missing = [n for n in NAMES if not (cache / f"{n}.u16").exists()]
    if missing:
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(src / "gen.py"), str(cache), *missing], check=True)
    return cache


def _models(dropped: int) -> str:
    """The compact coder's context models (orders 0, 1, 2, 3, 4, 6) from the mask left out, and
    the flag of versions 5 and 6 (bits 8-15: the order of the predicting context, 0: no flag)."""
    mode = dropped >> 8
    flag = "" if not mode else " + flag (order-3 prediction)" if mode == 3 else f" + flag mode {mode}"
    return _kept(dropped & 0xFF) + flag


def _kept(dropped: int) -> str:
    kept = [o for m, o in enumerate((0, 1, 2, 3, 4, 6)) if not dropped >> m & 1]
    if not kept:  # version 7: no context model, the order-0 tree coder
        return "order-0 tree coder (version 7)"
    return "all six" if len(kept) == 6 else "order 0" if kept == [0] else f"orders 0-{kept[-1]}" if kept == list(
        range(kept[-1] + 1)) else "orders " + ", ".join(map(str, kept))


def compressors(data: bytes) -> dict[str, int]:
    return {
        "gzip -9": len(gzip.compress(data, 9)),
        "bzip2 -9": len(bz2.compress(data, 9)),
        "xz -9": len(lzma.compress(data, preset=9)),
        "zstd -19": len(zstandard.ZstdCompressor(level=19).compress(data)),
    }


def main() -> None:
    d = vectors()
    rows, comp_rows, exp_rows = [], [], []
    for name in NAMES:
        path = d / f"{name}.u16"
        for la in ("0", "1") if name in ("loopy", "markov") else ("0",):
            out = subprocess.run([sys.executable, "-c", CHILD, str(path), la, "1" if la == "0" else "0"],
                                 check=True, capture_output=True, text=True, cwd=REPO).stdout
            r = json.loads(out)
            label = name + (" (SEQUITUR(1))" if la == "1" else "")
            rows.append([label, f"{r['n']:,}", f"{r['rules']:,}", f"{r['rhs']:,}", f"{r['len_S']:,}",
                         f"{r['secs']:.2f}", f"{r['cpu']:.2f}", f"{r['n'] / r['cpu'] / 1e6:.2f}",
                         f"{r['enc_cpu']:.2f}", f"{r['enc_cpu'] / r['cpu']:.2f}", f"{r['dec_cpu']:.2f}",
                         f"{r['jit']:.1f} + {r['jit_enc']:.1f}", f"{r['base']:.0f}",
                         f"{r['rss_build']:.0f}", f"{r['rss_build'] - r['base']:.0f}", f"{r['rss']:.0f}",
                         f"{r['enc']:,}"])
            print(rows[-1], flush=True)
            if la == "0":
                enc, explicit = r["enc"], r["explicit"]
                exp_rows.append([name, f"{r['cpu']:.2f}", f"{r['exp_cpu']:.2f}", f"{r['exp_cpu'] / r['cpu']:.2f}",
                                 f"{explicit:,}", _models(r["dropped"])])
        # in a child as well: Linux children inherit the parent's peak RSS (ru_maxrss), so the
        # parent must never run the compressors itself
        c = json.loads(subprocess.run([sys.executable, __file__, "--compressors", str(path)], check=True,
                                      capture_output=True, text=True).stdout)
        comp_rows.append([name, f"{enc:,}", f"{explicit:,}"] + [f"{v:,}" for v in c.values()]
                         + [f"{enc / c['xz -9']:.2f}", f"{enc / c['zstd -19']:.2f}"])
        print(comp_rows[-1], flush=True)
    load = os.getloadavg()
    body = (
        f"Measured {machine()}; 1-minute load average at the end {load[0]:.1f} on {os.cpu_count()} CPUs\n"
        "(other jobs share the machine: compare the columns of one row, measured in one process).\n"
        "`python benchmarks/sequitur.py`: each input in its own process; build and encode times are user\n"
        "CPU seconds of that process (steadier than wall time on a shared machine; wall time of the build\n"
        "in \"build s\"); \"encode s\" is `Grammar.to_bytes(compact=True)` (the compact encoding: expansion + coder)\n"
        "and \"decode s\" `Grammar.from_bytes` (coder + rebuilding the grammar). JIT: import and\n"
        "compile/cache-load of the builder + of the coder, apart from every other column (before the timed\n"
        "encode, a grammar of the input's first 128 Ki symbols is encoded, untimed, so the coder variant the input uses is loaded). Base RSS\n"
        "is the process after imports and loading the kernels; \"above base\" is the build's peak minus\n"
        "it, input array included.\n\n"
        + table(["input", "symbols", "rules", "rhs", "len_S", "build s", "build CPU s", "M sym/s (CPU)",
                 "encode CPU s", "encode / build", "decode CPU s", "JIT s", "base RSS MB",
                 "peak RSS MB (build)", "above base MB", "peak RSS MB (+encode)", "encoded B"], rows)
        + "\nEncoded grammar against general-purpose compressors of the `.u16` file (bytes): compact =\n"
        "`to_bytes(compact=True)` (version 3; 6 where the coder takes the flag, 7 where the order-0 tree coder codes it), explicit = `to_bytes()` (version 4, the default, the rules):\n\n"
        + table(["input", "compact", "explicit", "gzip -9", "bzip2 -9", "xz -9", "zstd -19",
                 "compact / xz", "compact / zstd"], comp_rows)
        + "\nThe explicit encoding (`to_bytes()`, version 4: what recordings store, read without a rebuild),\n"
        "user CPU seconds against the build's, and which context models the compact coder kept and whether it\n"
        "codes the flag (version 6; chosen on a prefix of 1/32 of the input, 16-64 Ki symbols):\n\n"
        + table(["input", "build CPU s", "explicit encode CPU s", "explicit / build", "explicit B",
                 "compact coder models"], exp_rows)
    )
    write_section("sequitur", body)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--compressors"]:
        print(json.dumps(compressors(Path(sys.argv[2]).read_bytes())))
    else:
        main()
