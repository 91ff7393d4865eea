"""SEQUITUR benchmark on the five large shared vectors: speed, peak RSS, encoded size vs compressors."""

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
t = time.perf_counter()
from wholetrace.grammar import GrammarBuilder
b = GrammarBuilder(); b.feed(np.array([1, 2, 1, 2, 1, 2, 3])); b.finish()
jit = time.perf_counter() - t
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # imports + loaded builder kernels
a = np.fromfile(sys.argv[1], np.uint16)
t = time.perf_counter()
c = resource.getrusage(resource.RUSAGE_SELF).ru_utime
b = GrammarBuilder(lookahead=sys.argv[2] == "1", expected_symbols=a.size)
for i in range(0, a.size, 1 << 20):
    b.feed(a[i:i + (1 << 20)])
g = b.finish()
secs = time.perf_counter() - t
cpu = resource.getrusage(resource.RUSAGE_SELF).ru_utime - c
rss_build = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t = time.perf_counter(); enc = g.to_bytes(); enc_s = time.perf_counter() - t
print(json.dumps(dict(n=int(a.size), rules=g.num_rules, rhs=g.num_symbols, len_S=g.start_length,
    jit=jit, secs=secs, cpu=cpu, enc=len(enc), enc_s=enc_s, rss_build=rss_build, base=base,
    rss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)))
"""


def vectors() -> Path:
    src = Path(os.environ.get("WHOLETRACE_VECTORS", REPO.parent / "shared" / "vectors")).resolve()
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "wholetrace" / "vectors"
    missing = [n for n in NAMES if not (cache / f"{n}.u16").exists()]
    if missing:
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(src / "gen.py"), str(cache), *missing], check=True)
    return cache


def compressors(data: bytes) -> dict[str, int]:
    return {
        "gzip -9": len(gzip.compress(data, 9)),
        "bzip2 -9": len(bz2.compress(data, 9)),
        "xz -9": len(lzma.compress(data, preset=9)),
        "zstd -19": len(zstandard.ZstdCompressor(level=19).compress(data)),
    }


def main() -> None:
    d = vectors()
    rows, comp_rows = [], []
    for name in NAMES:
        path = d / f"{name}.u16"
        for la in ("0", "1") if name in ("loopy", "markov") else ("0",):
            out = subprocess.run([sys.executable, "-c", CHILD, str(path), la], check=True,
                                 capture_output=True, text=True, cwd=REPO).stdout
            r = json.loads(out)
            label = name + (" (SEQUITUR(1))" if la == "1" else "")
            rows.append([label, f"{r['n']:,}", f"{r['rules']:,}", f"{r['rhs']:,}", f"{r['len_S']:,}",
                         f"{r['secs']:.2f}", f"{r['n'] / r['secs'] / 1e6:.2f}",
                         f"{r['n'] / r['cpu'] / 1e6:.2f}", f"{r['jit']:.1f}", f"{r['base']:.0f}",
                         f"{r['rss_build']:.0f}", f"{r['rss_build'] - r['base']:.0f}", f"{r['rss']:.0f}",
                         f"{r['enc']:,}", f"{r['enc_s']:.1f}"])
            print(rows[-1], flush=True)
            if la == "0":
                enc = r["enc"]
        # in a child as well: Linux children inherit the parent's peak RSS (ru_maxrss), so the
        # parent must never run the compressors itself
        c = json.loads(subprocess.run([sys.executable, __file__, "--compressors", str(path)], check=True,
                                      capture_output=True, text=True).stdout)
        comp_rows.append([name, f"{enc:,}"] + [f"{v:,}" for v in c.values()] + [f"{enc / c['xz -9']:.2f}"])
        print(comp_rows[-1], flush=True)
    body = (
        f"Measured {machine()}; `python benchmarks/sequitur.py` (each build in its own process;\n"
        "symbols/s exclude JIT, which is the separate import+compile/cache-load column; M sym/s (CPU)\n"
        "divides by the process's user CPU time, which is steadier than wall time on a shared machine;\n"
        "base RSS is the process after imports and loading the kernels, before reading the input, and\n"
        "\"above base\" is the build's peak minus it, input array included; the encoding kernels load\n"
        "inside \"encode s\").\n\n"
        + table(["input", "symbols", "rules", "rhs", "len_S", "build s", "M sym/s", "M sym/s (CPU)", "JIT s",
                 "base RSS MB", "peak RSS MB (build)", "above base MB", "peak RSS MB (+encode)",
                 "encoded B", "encode s"], rows)
        + "\nEncoded grammar (`Grammar.to_bytes`) against general-purpose compressors on the `.u16` file (bytes):\n\n"
        + table(["input", "grammar", "gzip -9", "bzip2 -9", "xz -9", "zstd -19", "grammar / xz"], comp_rows)
    )
    write_section("sequitur", body)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--compressors"]:
        print(json.dumps(compressors(Path(sys.argv[2]).read_bytes())))
    else:
        main()
