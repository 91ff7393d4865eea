"""Which probe form is cheapest in CPython: a counter list increment, or appending a counter id?
And how should instrumented code reach the recording's objects: as builtins, or as constants?

Times the same code with no probe and with each candidate form, in two shapes: a probe in a
loop body (``loop``), and a probe at the start of a small method called in a loop
(``call``, where a form that needs a local must fetch it in a prologue on every call).

Names ``_wt_*`` are builtins (how instrumented code reached the recording before); names
``K_*`` are *constants* of the compiled code (``LOAD_CONST``: how it does now, the
recording's objects relocated in at load, ``instrument.emit.runtime_constant``).  Forms: an
item of an int or float list reached as a builtin (``count`` before; a float result comes
from CPython's free list, an int above 256 is a new allocation), the list fetched into a
local, a Python function (``_wt_inc(k)``, the expression form ``count`` used before), a
list in a slot of a constant (``K_B.c[k]``: a list cannot be a constant itself, since a
code object whose constants hold one cannot be hashed, and programs hash code objects),
one slot per counter of a constant (``K_S.c3``: what ``count`` does now, one object per
file), ``array.append`` of an id (as a builtin, a local — what ``blocks`` does — or a
constant), and ``n += 1`` on a local int or float added when the activation ends (what
``count`` does for a chord expected to run several times per call; in the *call* shape it
pays its prologue and that addition on every call), also in its expression form.  Median
CPU times of several runs, forms interleaved; writes the table to docs/benchmarks.md
(section ``probe_forms``).

    python benchmarks/probe_forms.py [--no-write]
"""

from __future__ import annotations

import ast
import builtins
import statistics
import sys
import time
import timeit
from array import array
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import machine, table, write_section  # noqa: E402

from wholetrace.instrument.bytecode import quiet_placeholders  # noqa: E402
from wholetrace.instrument.cache import relocate  # noqa: E402
from wholetrace.instrument.emit import runtime_constant  # noqa: E402

N = 300_000
COUNTERS = [0] * 64
FLOATS = [0.0] * 64


def _inc(k: int) -> None:
    COUNTERS[k] += 1


NAMES = {"_wt_C": COUNTERS, "_wt_F": FLOATS, "_wt_inc": _inc, "_wt_ap": array("q").append}


class _Box:
    __slots__ = ("c",)

    def __init__(self) -> None:
        self.c = FLOATS


class _Slots:
    __slots__ = tuple(f"c{i}" for i in range(8))

    def __init__(self) -> None:
        for name in self.__slots__:
            setattr(self, name, 0.0)


def _finc(k: int) -> None:
    FLOATS[k] += 1.0


CONSTS = {"K_B": _Box(), "K_S": _Slots(), "K_F": FLOATS, "K_inc": _finc, "K_ap": array("q").append}

#: name -> (prologue, probe, epilogue); prologue and epilogue run once per activation.
FORMS = {
    "no probe": ("", "pass", ""),
    "int list as builtin: _wt_C[k] += 1": ("", "_wt_C[3] += 1", ""),
    "float list as builtin: _wt_F[k] += 1.0 (count before)": ("", "_wt_F[3] += 1.0", ""),
    "list in a local: c[k] += 1": ("c = _wt_C", "c[3] += 1", ""),
    "function: _wt_inc(k)": ("", "_wt_inc(3)", ""),
    "append id, builtin: _wt_ap(k)": ("", "_wt_ap(3)", ""),
    "append id, local: a(k) (blocks)": ("a = _wt_ap", "a(3)", ""),
    "local int, added at exit: n += 1": ("n = 0", "n += 1", "_wt_C[3] += n"),
    "local float, added at exit: n += 1.0 (count, in loops)": ("n = 0.0", "n += 1.0", "_wt_F[3] += n"),
    "float list in a constant's slot: K_B.c[k] += 1.0": ("", "K_B.c[3] += 1.0", ""),
    "slot per counter of a constant: K_S.ck += 1.0 (count)": ("", "K_S.c3 += 1.0", ""),
    "float list as a constant (unhashable code)": ("", "K_F[3] += 1.0", ""),
    "function as a constant: K_inc(k)": ("", "K_inc(3)", ""),
    "append id, constant: K_ap(k)": ("", "K_ap(3)", ""),
    "local float in an expression: (n := n + 1.0) * 0 (count)": ("n = 0.0", "(n := n + 1.0) * 0", "K_S.c3 += n"),
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


class _Constants(ast.NodeTransformer):
    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in CONSTS and isinstance(node.ctx, ast.Load):
            return ast.copy_location(ast.Constant(runtime_constant(node.id)), node)
        return node


def measure(shape: str, prologue: str, probe: str, epilogue: str, repeat: int) -> float:
    g: dict[str, object] = {}
    source = shape.format(prologue=prologue or "pass", probe=probe, epilogue=epilogue or "pass", n=N)
    with quiet_placeholders():
        code = compile(_Constants().visit(ast.parse(source)), "<probe>", "exec")
    exec(relocate(code, 0, 0, CONSTS), g)
    fn = g["f"]
    # CPU time of this process: the machine may be shared, and what is measured is the probe
    return statistics.median(timeit.repeat(fn, number=1, repeat=repeat, timer=time.process_time))  # type: ignore[arg-type]


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
    body = (f"## Probe forms (why `count` increments a slot of a constant)\n\nMeasured {machine()}; "
            f"`python benchmarks/probe_forms.py` (median CPU time of 15 runs of {N:,} probes per "
            "shape, forms interleaved). *loop*: one probe in a loop body; *call*: one probe at the start "
            "of a small method, with the form's prologue and epilogue (if any) on every call. "
            "Every shape runs inside try/finally, as instrumented code does. `_wt_*`: a builtin "
            "(the form used before); `K_*`: a constant of the code (`LOAD_CONST`, the form used now).\n\n"
            + table(["probe form", "loop ms", "loop ns/probe", "call ms", "call ns/probe"], rows))
    print(body)
    if "--no-write" not in argv:
        write_section("probe_forms", body)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
