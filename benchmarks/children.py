"""Overhead of recording a program that works in a process pool: plain vs `record` (every mode),
fork and spawn pools and two `python -c` subprocesses, with children recorded and with `--no-children`.

Run: ``.venv/bin/python benchmarks/children.py [--runs N] [--quick]``; writes section
``children`` of docs/benchmarks.md (wall time of the whole command, median of interleaved rounds).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import machine, table, write_section  # noqa: E402

PROGRAM = '''\
import multiprocessing as mp
import sys

def work(x):
    s = 0
    for i in range(x):
        if i % 3 == 0:
            s += i * i
        else:
            s -= i
    return s

DASH_C = "import sys\\n\\n{}\\nprint(sum(work(int(sys.argv[1])) for _ in range(20)))\\n"

if __name__ == "__main__" and sys.argv[1] == "dash-c":     # two `python -c` children, 20 items each
    import inspect, subprocess
    code = DASH_C.format(inspect.getsource(work))
    kids = [subprocess.Popen([sys.executable, "-c", code, sys.argv[2]], stdout=subprocess.PIPE) for _ in range(2)]
    print(sum(int(k.communicate()[0]) for k in kids))
elif __name__ == "__main__":
    ctx = mp.get_context(sys.argv[1])
    with ctx.Pool(2) as pool:
        print(sum(pool.map(work, [int(sys.argv[2])] * 40, chunksize=5)))
        pool.close()
        pool.join()
'''

METHODS = ("fork", "spawn", "dash-c")
CONFIGS = [("plain", None, ()), ("count", "count", ()), ("blocks", "blocks", ()), ("witness", "witness", ()),
           ("blocks, --no-children", "blocks", ("--no-children",))]


def run(cmd: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env={**os.environ, "PYTHONHASHSEED": "0"})
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--size", type=int, default=20000, help="loop length of each of the 40 work items")
    ap.add_argument("--quick", action="store_true", help="1 round, small size, do not write docs")
    args = ap.parse_args(argv)
    runs, size = (1, 2000) if args.quick else (args.runs, args.size)
    tmp = Path(tempfile.mkdtemp(prefix="wt-children-bench-"))
    try:
        script = tmp / "pool.py"
        script.write_text(PROGRAM)
        times: dict[tuple[str, str], list[float]] = {}
        for _ in range(runs):
            for method in METHODS:
                for label, mode, extra in CONFIGS:
                    if mode is None:
                        cmd = [sys.executable, str(script), method, str(size)]
                    else:
                        cmd = [sys.executable, "-m", "wholetrace.cli", "record", "-q", "--mode", mode, *extra,
                               "-o", str(tmp / "out.wt"), str(script), method, str(size)]
                    times.setdefault((method, label), []).append(run(cmd, tmp))
        rows = []
        for method in METHODS:
            base = statistics.median(times[(method, "plain")])
            for label, _mode, _extra in CONFIGS:
                t = statistics.median(times[(method, label)])
                rows.append((method, label, f"{t:.2f}", "1.00x" if label == "plain" else f"{t / base:.2f}x"))
        body = (f"### Child processes (`benchmarks/children.py`)\n\n{machine()}; a pool of 2 workers, 40 work "
                f"items of {size:,} loop iterations (`dash-c`: two `python -c CODE` subprocesses at once, 20 "
                f"items each, the work in CODE); wall time of the whole command, median of {runs} "
                "interleaved rounds (spawn includes starting the workers' interpreters).  "
                "`--no-children` records the parent only (the workers' work is lost).\n\n"
                + table(("start method", "run", "seconds", "vs plain"), rows))
        print(body)
        if not args.quick:
            write_section("children", body)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
