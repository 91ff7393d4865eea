"""Which probe form is cheapest in CPython: a counter list increment, or appending a counter id?

Times the same code with no probe and with each candidate form, in two shapes: a probe in a
loop body (``loop``), and a probe at the start of a small method called in a loop
(``call``, where a form that needs a local must fetch it in a prologue on every call).
Forms: ``_wt_C[k] += 1`` on a list reached as a builtin, the same with float counts
(``+= 1.0``: what `count` emits; a float result comes from CPython's free list, an int
above 256 is a new allocation), the int list fetched into a local, ``_wt_inc(k)`` (a Python function: the expression form `count` uses
in ``while`` tests and ``for`` iterables), ``array.append(k)`` of a counter id (summed
later, the form `count` used before), and ``n += 1`` on a local int or float added to the list when
the activation ends (what `count` does, with floats, for a chord expected to run several times per call;
in the *call* shape it pays its prologue and that addition on every call).  Medians of
several runs; writes the table to docs/benchmarks.md (section ``probe_forms``).

    python benchmarks/probe_forms.py [--no-write]
"""

from __future__ import annotations

import builtins
import statistics
import sys
import timeit
from array import array
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import machine, table, write_section  # noqa: E402

N = 300_000
COUNTERS = [0] * 64
FLOATS = [0.0] * 64


def _inc(k: int) -> None:
    COUNTERS[k] += 1


NAMES = {"_wt_C": COUNTERS, "_wt_F": FLOATS, "_wt_inc": _inc, "_wt_ap": array("q").append}

#: name -> (prologue, probe, epilogue); prologue and epilogue run once per activation.
FORMS = {
    "no probe": ("", "pass", ""),
    "int list as builtin: _wt_C[k] += 1": ("", "_wt_C[3] += 1", ""),
    "float list as builtin: _wt_F[k] += 1.0 (count)": ("", "_wt_F[3] += 1.0", ""),
    "list in a local: c[k] += 1": ("c = _wt_C", "c[3] += 1", ""),
    "function: _wt_inc(k)": ("", "_wt_inc(3)", ""),
    "append id, builtin: _wt_ap(k)": ("", "_wt_ap(3)", ""),
    "append id, local: a(k)": ("a = _wt_ap", "a(3)", ""),
    "local int, added at exit: n += 1": ("n = 0", "n += 1", "_wt_C[3] += n"),
    "local float, added at exit: n += 1.0 (count, in loops)": ("n = 0.0", "n += 1.0", "_wt_F[3] += n"),
}

LOOP = """
def f():
    {prologue}
    try:
        x = 0
        for i in range({n}):
            {probe}
            x += i & 7
    finally:
        {epilogue}
"""

CALL = """
class T:
    def __init__(self):
        self.a, self.b = True, False
    def m(self):
        {prologue}
        try:
            {probe}
            return self.a or (not self.b and self.a)
        finally:
            {epilogue}
def f():
    t = T()
    for i in range({n}):
        t.m()
"""


def measure(shape: str, prologue: str, probe: str, epilogue: str, repeat: int) -> float:
    g: dict[str, object] = {}
    code = shape.format(prologue=prologue or "pass", probe=probe, epilogue=epilogue or "pass", n=N)
    exec(compile(code, "<probe>", "exec"), g)
    fn = g["f"]
    return statistics.median(timeit.repeat(fn, number=1, repeat=repeat))  # type: ignore[arg-type]


def main(argv: list[str]) -> int:
    for k, v in NAMES.items():
        setattr(builtins, k, v)
    results: dict[str, dict[str, list[float]]] = {}
    for _round in range(3):          # interleave forms so drifting machine load hits all alike
        for name, (prologue, probe, epilogue) in FORMS.items():
            for shape_name, shape in (("loop", LOOP), ("call", CALL)):
                results.setdefault(name, {}).setdefault(shape_name, []).append(
                    measure(shape, prologue, probe, epilogue, 5))
    med = {name: {s: statistics.median(v) for s, v in shapes.items()} for name, shapes in results.items()}
    base = med["no probe"]
    rows = []
    for name, m in med.items():
        cells = [name]
        for s in ("loop", "call"):
            cells += [f"{m[s] * 1e3:.1f}", "-" if name == "no probe" else f"{(m[s] - base[s]) / N * 1e9:.1f}"]
        rows.append(tuple(cells))
    body = (f"## Probe forms (why `count` increments a list)\n\nMeasured {machine()}; "
            f"`python benchmarks/probe_forms.py` (median of 15 runs of {N:,} probes per shape, "
            "forms interleaved). *loop*: one probe in a loop body; *call*: one probe at the start "
            "of a small method, with the form's prologue and epilogue (if any) on every call. "
            "Every shape runs inside try/finally, as instrumented code does.\n\n"
            + table(["probe form", "loop ms", "loop ns/probe", "call ms", "call ns/probe"], rows))
    print(body)
    if "--no-write" not in argv:
        write_section("probe_forms", body)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
