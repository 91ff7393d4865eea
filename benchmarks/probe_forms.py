"""Which probe form is cheapest in CPython: appending a counter id, or incrementing a counter list?

Times one loop of simple work with no probe, with ``a(k)`` (``array('i').append``, the
form `count` uses, summed later with numpy.bincount), with ``c[k] += 1`` on a list, and
with ``c[k] += 1`` on a numpy array, each as the median of several runs; writes the table
to docs/benchmarks.md (section ``probe_forms``).
"""

from __future__ import annotations

import statistics
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import machine, table, write_section  # noqa: E402

SETUP = "from array import array; import numpy as np; buf = array('i'); a = buf.append; c = [0] * 64; n = np.zeros(64, np.int64)"
BODY = """
x = 0
for i in range(200_000):
    {probe}
    x += i & 7
    if x > 1000:
        {probe2}
        x -= 1000
"""
FORMS = {
    "no probe": ("pass", "pass"),
    "append id: a(k)": ("a(3)", "a(5)"),
    "list counter: c[k] += 1": ("c[3] += 1", "c[5] += 1"),
    "numpy counter: n[k] += 1": ("n[3] += 1", "n[5] += 1"),
}


def main() -> int:
    results = {}
    for name, (p1, p2) in FORMS.items():
        code = BODY.format(probe=p1, probe2=p2)
        runs = timeit.repeat(code, SETUP + "; buf = array('i'); a = buf.append", number=1, repeat=9)
        results[name] = statistics.median(runs)
    base = results["no probe"]
    rows = [(name, f"{t * 1e3:.1f}", f"{t / base:.2f}×", f"{(t - base) / 400_000 * 1e9:.1f}" if name != "no probe" else "-")
            for name, t in results.items()]
    body = (f"## Probe forms (why `count` appends counter ids)\n\nMeasured {machine()}; `python benchmarks/probe_forms.py` "
            "(median of 9 runs of a 200,000-iteration loop with two probe sites, ~400,000 probes).\n\n"
            + table(["probe", "ms", "× no probe", "ns per probe"], rows))
    print(body)
    write_section("probe_forms", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
