"""The text report built in bulk (shared file lines, branch and count columns for all functions
at once) against a naive twin that formats every function line by line from its own source, on
recordings of a program with odd line ends, nested functions, decorators and a function that
never ran; and the helpers it rests on (``branch_rows``, ``Tally.per_function``, ``gc_paused``)."""

from __future__ import annotations

import dataclasses
import gc
import re
from pathlib import Path

import numpy as np
import pytest

from wholetrace.profile import counted, gc_paused
from wholetrace.profile.model import FunctionProfile, Idle, branches, hottest, ran, summary
from wholetrace.profile.rows import branch_rows
from wholetrace.render.counts import report_text
from wholetrace.trace.session import Trace
from wtutil import run_recorded

# \r\n and \x0c line ends, trailing blanks, a branch whose line is the last of a fold's header,
# nested classes and functions, decorators, a lambda, a generator, a function that never ran.
PROG = (
    "import functools\r\n"
    "\r\n"
    "def deco(f):\r\n"
    "    @functools.wraps(f)\r\n"
    "    def inner(*a):   \r\n"
    "        if a:\r\n"
    "            return f(*a)\r\n"
    "        return None\r\n"
    "    return inner\r\n"
    "\x0c\n"
    "class Shape:\n"
    "    sides = 0   \n"
    "\n"
    "    @deco\n"
    "    def area(self, k):\n"
    "        if k > 2:\n"
    "            return k * 2\n"
    "        return 0\n"
    "\n"
    "    class Inner:\n"
    "        def f(self):\n"
    "            return [x for x in range(3) if x]\n"
    "\n"
    "    def never(self):\n"
    "        if self.sides:\n"
    "            return 1\n"
    "        return 2\n"
    "\n"
    "def gen(n):\n"
    "    for i in range(n):\n"
    "        yield i\n"
    "\n"
    "def one(): return 1\n"
    "\n"
    "s = Shape()\n"
    "print([s.area(k) for k in range(5)], Shape.Inner().f(), list(gen(3)), one(), (lambda y: y + 1)(2))\n"
    "try:\n"
    "    s.area(None)\n"
    "except TypeError:\n"
    "    pass\n"
)


def naive_text(entries: list[FunctionProfile | Idle]) -> str:
    """The text report written the slow, obvious way: per function, its own source split,
    ``model.branches`` per function, and each line formatted on its own."""
    done = [p for p in entries if ran(p)]
    idle = [summary(p) for p in entries if not ran(p)]
    everyone = [(p.file, p.firstline, p.lastline, p.qualname, ran(p), p) for p in done + idle]
    out: list[str] = []
    for p in hottest([*done, *idle]):
        if isinstance(p, Idle):
            n = p.lastline - p.firstline + 1
            out.append(f"== {p.qualname}  ({p.file}:{p.firstline}-{p.lastline})  never ran, "
                       f"{n} line{'s' if n != 1 else ''}")
            continue
        first, last = p.firstline, p.lastline
        n = last - first + 1
        src = re.split(r"\r\n|\r|\n", p.source)[:n]      # the compiler's line ends only
        src += [""] * (n - len(src))
        counts: dict[int, int] = {}
        for ln, sid in zip(p.shape.stmt_line.tolist(), range(p.shape.nstmts)):   # first statement per line
            if ln not in counts:
                counts[ln] = int(p.stmts[sid])
        tails: dict[int, list[str]] = {}
        for br in branches(p):
            tails.setdefault(br.line, []).append(f"{br.name}: {'-' if br.taken is None else br.taken}")
        for ln, items in tails.items():
            if first <= ln <= last:
                src[ln - first] += f"    [{', '.join(items)}]"
        # functions directly nested: inside p's lines, same file, not inside another nested one
        inside = [q for q in everyone if q[5] is not p and q[0] == p.file and first <= q[1] and q[2] <= last
                  and (q[1], q[2]) != (first, last)]
        direct = [q for q in inside if not any(r is not q and r[1] <= q[1] and q[2] <= r[2]
                                               and (r[1], r[2]) != (q[1], q[2]) for r in inside)]
        direct.sort(key=lambda q: (q[1], -q[2], q[3]))
        folded: dict[int, str] = {}
        hidden: set[int] = set()
        for _f, q_first, q_last, name, q_ran, _q in direct:
            head = q_first
            while head + 1 <= q_last and head + 1 in counts:
                head += 1
            if head + 1 < q_last:
                line = src[head + 1 - first]
                indent = line[:len(line) - len(line.lstrip())]
                folded[head + 1] = (f"{' ' * 10} {'':>6}  {indent}... lines {head + 1}-{q_last}: {name}"
                                    f"{'' if q_ran else ' never ran'}")
                hidden.update(range(head + 1, q_last + 1))
        out.append(f"== {p.qualname}  ({p.file}:{first}-{last})  calls {p.calls}, blocks {p.weight}")
        for ln in range(first, last + 1):
            if ln in folded:
                out.append(folded[ln])
            elif ln not in hidden:
                count = f"{counts[ln]:>10}" if ln in counts else " " * 10
                out.append(f"{count} {ln:>6}  {src[ln - first]}".rstrip())
        out.append("")
    return "\n".join(out)


@pytest.fixture(scope="module", params=["blocks", "count", "witness"])
def recording(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("text")
    script = root / "prog.py"
    script.write_bytes(PROG.encode())
    out = root / f"prog.{request.param}.wt"
    r = run_recorded(script, out, mode=request.param, include=("textwrap",))
    assert r.returncode == 0, r.stderr
    return out


def test_text_report_equals_the_naive_twin(recording: Path) -> None:
    with Trace.open(recording) as trace:
        entries = counted(trace)
        text = report_text(entries)
        assert "Shape.area" in text and "never ran" in text and "... lines" in text
        assert text == naive_text(entries)
        # line numbers are the compiler's: the form feed on line 10 is not a line end
        assert "    16          if k > 2:" in text and "    33  def one(): return 1" in text


def test_text_report_without_shared_lines(recording: Path) -> None:
    """Profiles whose registry rows share no file lines (older recordings) split their own source."""
    with Trace.open(recording) as trace:
        entries = counted(trace)
        assert any(isinstance(p, FunctionProfile) and p.source_lines is not None for p in entries)
        bare = [dataclasses.replace(p, source_lines=None) if isinstance(p, FunctionProfile) else p for p in entries]
        assert report_text(bare) == report_text(entries)


def test_branch_rows_equal_model_branches(recording: Path) -> None:
    with Trace.open(recording) as trace:
        done = [p for p in counted(trace) if isinstance(p, FunctionProfile)]
        rows = branch_rows(done)
        want = [(i, b.line, -1 if b.taken is None else b.taken, b.name) for i, p in enumerate(done) for b in branches(p)]
        assert want
        assert list(zip(rows.pos.tolist(), rows.line.tolist(), rows.taken.tolist(), rows.names)) == want


def test_tally_per_function_equals_slices(recording: Path) -> None:
    with Trace.open(recording) as trace:
        if trace.mode == "count":
            pytest.skip("counters, no tally")
        tally = trace.counts()
        stmts = tally.stmt_counts()
        shapes = list(trace.tables.shapes.values())
        for sh, (b, s, e) in zip(shapes, tally.per_function(shapes, stmts)):
            assert np.array_equal(b, tally.blocks_of(sh))
            assert np.array_equal(s, tally.piece(stmts, sh))
            assert np.array_equal(e, tally.edges_of(sh))


@pytest.mark.parametrize("enabled", [True, False])
def test_gc_paused_restores_the_collector(enabled: bool) -> None:
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        with gc_paused():
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
        with pytest.raises(ZeroDivisionError), gc_paused():
            1 // 0  # noqa: B018
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
