"""Per-activation cost: what a call of a small instrumented function pays in each probe form.

Every activation of a trace mode pays a stream fetch, ENTER, the entry block's probe and LEAVE
(``instrument.emit.Emitter.prologue``/``epilogue``).  This times, in one process, CPU time,
forms interleaved round by round, a one-line function called in a loop:

* plain: no probe;
* the stream as ``array('i')`` (the form before): fetch, ENTER, entry block, LEAVE;
* the stream as a ``list`` (``runtime.buffers``, the form now): the same four;
* folded: the entry block's probe left out (ENTER implies it), the recorder restoring it
  after ENTER at flush (:func:`restore_entries`; measured, not adopted);
* the fetch alone, and a fetch with ``get()`` instead of ``get(None)``;
* witness mode's form (no entry block probe: fetch, ENTER, LEAVE), and path mode's: the
  register set at entry and the closing record set on the edge into EXIT (``wt.o``, appended by
  the ``finally``) as before wave 11, without the register (``instrument.modes.register_free``),
  and with a constant closing record appended by the ``finally`` (wave 13,
  ``instrument.pathforms.single_exit_record``), two CPython digits (2**30 + id, wave 13) and one
  (2**29 + id, wave 14: ``events.LEAVE_PATH``);

and, for the list forms, the cost of turning the appended ints into int32 events at flush
(``runtime.buffers.chunk_events``, or :func:`restore_entries`), per activation.  Writes the table
to docs/benchmarks.md (section ``fold``).

    python benchmarks/fold.py [--rounds N] [--calls N] [--no-write]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from array import array
from contextvars import ContextVar
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import machine, table, write_section  # noqa: E402

import numpy as np  # noqa: E402

from wholetrace.events import ENTER_BASE  # noqa: E402
from wholetrace.runtime.buffers import chunk_events  # noqa: E402


def restore_entries(chunk: list[int], table: np.ndarray) -> np.ndarray:
    """The folding design measured and not adopted: the recorder puts back, after each ENTER
    of a folded function, the entry block its probe no longer appends (``table``: fid ->
    block, -1 if not folded), so stored streams stay as they were."""
    raw = np.fromiter(chunk, np.int64, len(chunk))
    at = np.flatnonzero(raw <= -ENTER_BASE)
    fids = -raw[at] - ENTER_BASE
    known = fids < table.size
    at, entry = at[known], table[fids[known]]
    folded = entry >= 0
    return np.insert(raw, at[folded] + 1, entry[folded]).astype(np.int32)

FORMS = '''
def plain(x):
    return x + 1

def fetch_only(x):
    try:
        a = get(None) or new()
    except RecursionError:
        raise
    return x + 1

def fetch_noarg(x):
    try:
        a = get() or new()
    except RecursionError:
        raise
    return x + 1

def four(x):
    try:
        a = get(None) or new()
    except RecursionError:
        raise
    a(-9)
    try:
        a(2)
        return x + 1
    finally:
        a(-1)

def folded(x):
    try:
        a = get(None) or new()
    except RecursionError:
        raise
    a(-9)
    try:
        return x + 1
    finally:
        a(-1)

def path_register(x):
    try:
        a = get(None) or new()
    except RecursionError:
        raise
    a(-9)
    p = 0
    try:
        o = 1073741824
        return x + 1
    except BaseException:
        a.__self__.extend((-2, 0, p))
        p = -1
        o = -1
        raise
    finally:
        a(o)
'''
#: the same without the register (``instrument.modes.register_free``): no store at entry, 0 in the record
FORMS += (FORMS[FORMS.index("def path_register("):].replace("def path_register(", "def path_register_free(")
          .replace("    p = 0\n", "").replace("(-2, 0, p)", "(-2, 0, 0)").replace("        p = -1\n", ""))

#: a constant closing record (wave 13, ``instrument.pathforms.single_exit_record``): the epilogue appends
#: it, the handler appends the plain LEAVE with the exception record and turns ``a`` into ``skip``
FORMS += (FORMS[FORMS.index("def path_register_free("):].replace("def path_register_free(", "def path_closing_const(")
          .replace("        o = 1073741824\n", "").replace("        o = -1\n", "").replace("a(o)", "a(1073741824)")
          .replace("(-2, 0, 0)", "(-2, 0, 0, (-1, (a := skip))[0])"))
#: the same with a one-digit closing record (wave 14: ``events.LEAVE_PATH`` = 2**29, so every
#: ``LEAVE_PATH + id`` is below 2**30): what it saves in the flusher's int conversion
FORMS += (FORMS[FORMS.index("def path_closing_const("):].replace("def path_closing_const(", "def path_closing_small(")
          .replace("a(1073741824)", "a(536870912)"))

#: (row label, function, buffer type, events per call appended, restored at flush)
ROWS = (("plain call", "plain", None, 0, False),
        ("fetch `get(None) or new()` only", "fetch_only", None, 0, False),
        ("fetch `get() or new()` only", "fetch_noarg", None, 0, False),
        ("array('i'): fetch, ENTER, entry block, LEAVE (before)", "four", "array", 3, False),
        ("list: fetch, ENTER, entry block, LEAVE (now)", "four", "list", 3, False),
        ("list, entry folded, restored at flush: fetch, ENTER, LEAVE", "folded", "list", 2, True),
        ("witness (no entry probe): fetch, ENTER, LEAVE", "folded", "list", 2, False),
        ("path, register set at entry (wave 10): fetch, ENTER, `wt.p = 0`, `wt.o`", "path_register", "list", 2, False),
        ("path, register-free (wave 11): fetch, ENTER, `wt.o`", "path_register_free", "list", 2, False),
        ("path, constant closing record (wave 13, K >= 2**30): fetch, ENTER, `wt.a(K)`", "path_closing_const", "list", 2, False),
        ("path, the same, K below 2**30 (wave 14, one CPython digit)", "path_closing_small", "list", 2, False))


def _namespace(kind: str | None) -> tuple[dict[str, object], object]:
    buf: object = array("i") if kind == "array" else []
    var: ContextVar[object] = ContextVar("stream", default=None)
    var.set(buf.append)  # type: ignore[attr-defined]

    def new() -> None:
        raise AssertionError("the stream is set")

    ns: dict[str, object] = {"get": var.get, "new": new, "skip": bool}
    exec(FORMS, ns)
    return ns, buf


def measure(rounds: int, calls: int) -> dict[str, tuple[float, float]]:
    """Per row: median ns per call, and median ns per call of the flush conversion."""
    table_ = np.array([-1, 2], np.int64)      # fid 1 (ENTER -9) folds block 2
    runs: dict[str, list[tuple[float, float]]] = {r[0]: [] for r in ROWS}
    for _ in range(rounds):
        for label, fn, kind, n_events, restore in ROWS:
            ns, buf = _namespace(kind)
            f = ns[fn]
            t0 = time.process_time_ns()
            for i in range(calls):
                f(i)  # type: ignore[operator]
            t1 = time.process_time_ns()
            conv = 0
            if kind == "list":
                chunk = buf[:]  # type: ignore[index]
                c0 = time.process_time_ns()
                out = restore_entries(chunk, table_) if restore else chunk_events(chunk)
                conv = time.process_time_ns() - c0
                assert len(out) == 3 * calls if restore else len(out) == n_events * calls
            runs[label].append(((t1 - t0) / calls, conv / calls))
    return {k: (statistics.median(a for a, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items()}


def render(res: dict[str, tuple[float, float]], rounds: int, calls: int, argv: list[str]) -> str:
    base = res["plain call"][0]
    rows = []
    for label, _fn, kind, _n, _r in ROWS:
        call, conv = res[label]
        total = call + conv
        rows.append((label, f"{call:.0f}", f"{conv:.0f}" if kind == "list" else "-", f"{total:.0f}",
                     f"{total - base:.0f}" if label != "plain call" else "-"))
    before = sum(res[ROWS[3][0]]) - base
    now = sum(res[ROWS[4][0]]) - base
    folded = sum(res[ROWS[5][0]]) - base
    head = (f"## Per-activation cost (`benchmarks/fold.py`)\n\nMeasured {machine()}; "
            f"`python benchmarks/fold.py {' '.join(argv)}`".rstrip() + f" (CPU time, median of {rounds} interleaved "
            f"rounds of {calls:,} calls of a one-line function). Flush = turning the list into int32 events "
            "(`runtime.buffers.chunk_events`; the folded row restores the entry blocks), per call.\n\n")
    body = table(["form", "call ns", "flush ns", "total ns", "over plain ns"], rows)
    return head + body + (f"\n- probe cost per activation, flush included: {before:.0f} ns before (array), "
                          f"{now:.0f} ns now (list): **{before / now:.2f}×** less; with the entry block folded "
                          f"and restored at flush {folded:.0f} ns (restoring costs more than the list append "
                          "it saves: not adopted, see docs/design.md)\n"
                          f"- path mode per activation (one-block function), flush included: register set at entry "
                          f"{sum(res[ROWS[7][0]]) - base:.0f} ns, register-free {sum(res[ROWS[8][0]]) - base:.0f} ns, "
                          f"constant closing record {sum(res[ROWS[9][0]]) - base:.0f} ns (one-digit record, "
                          f"wave 14: {sum(res[ROWS[10][0]]) - base:.0f} ns); witness {sum(res[ROWS[6][0]]) - base:.0f} ns\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--calls", type=int, default=200_000)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    res = measure(args.rounds, args.calls)
    text = render(res, args.rounds, args.calls, [a for a in (argv or sys.argv[1:]) if a != "--no-write"])
    print(text)
    if not args.no_write:
        write_section("fold", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
