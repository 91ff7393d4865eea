"""Profile reports (text, JSON, lcov) for a small program recorded in `blocks` mode, checked by
hand; functions that never ran, checked against the settrace line tracer in every counting mode."""

from __future__ import annotations

import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

from wholetrace.instrument.flowgraph import from_cfg
from wholetrace.instrument.placement import place_counters
from wholetrace.instrument.weighting import static_weights
from wholetrace.profile import profiles as profiles_of
from wholetrace.profile.model import FunctionProfile
from wholetrace.profile.propagate import propagate_counts
from wholetrace.render.counts import report_json, report_lcov, report_text
from wholetrace.trace.session import Trace
from wtutil import run_recorded

PROG = textwrap.dedent('''\
    def classify(n):
        if n % 2 == 0:
            return "even"
        return "odd"


    def total(xs):
        s = 0
        for x in xs:
            if x > 2:
                s += x
        return s


    def risky(x):
        try:
            return 10 // x
        except ZeroDivisionError:
            return -1


    def gen(n):
        for i in range(n):
            yield i


    def unused(x):
        if x:
            return 1
        return 2


    print(classify(3), classify(4), classify(6))
    print(total([1, 2, 3, 4]))
    print(risky(0), risky(5))
    print(sum(gen(3)))
''')

# by hand: classify runs 3× (2 even), the loop of total 4× (x > 2 twice), risky 2× (one raise),
# gen yields 3× (4 for-next steps), unused never; every module statement once.  JSON and lcov
# list `unused` (lines 27-30) at zero; the text report sums it up in one line.
LINES = {1: 1, 2: 3, 3: 2, 4: 1, 7: 1, 8: 1, 9: 1, 10: 4, 11: 2, 12: 1, 15: 1, 17: 2, 19: 1,
         22: 1, 23: 1, 24: 3, 27: 1, 28: 0, 29: 0, 30: 0, 33: 1, 34: 1, 35: 1, 36: 1}
BRANCHES = {2: {"true": 2, "false": 1}, 9: {"next": 4, "exhausted": 1},
            10: {"true": 2, "false": 2}, 23: {"next": 3, "exhausted": 1}, 28: {"true": 0, "false": 0}}
CALLS = {"classify": 3, "total": 1, "risky": 2, "gen": 1, "unused": 0, "<module>": 1}


@pytest.fixture(scope="module")
def profiles(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[FunctionProfile]]:
    root = tmp_path_factory.mktemp("report")
    script = root / "prog.py"
    script.write_text(PROG)
    r = run_recorded(script, root / "prog.wt")
    assert r.returncode == 0, r.stderr
    with Trace.open(root / "prog.wt") as trace:
        return script, profiles_of(trace)


def test_json_lines_branches_functions(profiles: tuple[Path, list[FunctionProfile]]) -> None:
    script, ps = profiles
    doc = report_json(ps)
    path = str(script)
    assert set(doc["lines"]) == {path}
    assert doc["lines"][path] == {str(k): v for k, v in LINES.items()}
    assert doc["branches"][path] == {str(k): v for k, v in BRANCHES.items()}
    funcs = doc["functions"]
    assert {f["name"]: f["calls"] for f in funcs} == CALLS
    assert [f["name"] for f in funcs[:3]] == ["total", "gen", "classify"]  # 13, 8, 6 blocks
    assert funcs[-1] == {"name": "unused", "file": path, "firstline": 27, "lastline": 30, "kind": "function",
                         "calls": 0, "blocks": 0}


def test_annotated_text(profiles: tuple[Path, list[FunctionProfile]]) -> None:
    _, ps = profiles
    text = report_text(ps)
    heads = [ln for ln in text.splitlines() if ln.startswith("== ")]
    assert heads[0].startswith("== total ") and "calls 1, blocks 13" in heads[0]
    rows = {int(m.group(2)): (m.group(1).strip(), m.group(3)) for m in
            re.finditer(r"^(.{10}) +(\d+)  (.*)$", text.split("\n\n")[0], re.M)}
    assert rows[10] == ("4", "        if x > 2:    [true: 2, false: 2]")
    assert rows[9][1].endswith("[next: 4, exhausted: 1]") and rows[9][0] == "1"
    assert rows[7][0] == ""          # the def line belongs to the module, not to total
    assert text.endswith(f"== unused  ({profiles[0]}:27-30)  never ran, 4 lines")   # one line, no source
    assert "[true: -" not in text    # its lines are never annotated
    # each line is listed once: the module's section folds the bodies of its functions
    module = next(sec for sec in text.split("\n\n") if sec.startswith("== <module> "))
    listed = [(ln[:10].strip(), ln[11:17].strip(), ln[19:]) for ln in module.splitlines()[1:]]
    assert [src for _c, num, src in listed if not num] == [
        "    ... lines 2-4: classify", "    ... lines 8-12: total", "    ... lines 16-19: risky",
        "    ... lines 23-24: gen", "    ... lines 28-30: unused never ran"]     # at the body's indent
    assert [int(num) for _c, num, _src in listed if num] == [1, 5, 6, 7, 13, 14, 15, 20, 21, 22, 25, 26, 27,
                                                            31, 32, 33, 34, 35, 36]
    assert {int(num) for c, num, _src in listed if c == "1"} == {1, 7, 15, 22, 27, 33, 34, 35, 36}


LCOV_LINE = re.compile(r"^(TN:.*|SF:/.+|FN:\d+,[^,\s]+|FNDA:\d+,[^,\s]+|FNF:\d+|FNH:\d+|DA:\d+,\d+|"
                       r"BRDA:\d+,\d+,\d+,(\d+|-)|BRF:\d+|BRH:\d+|LF:\d+|LH:\d+|end_of_record)$")
ORDER = ["TN", "SF", "FN", "FNDA", "FNF", "FNH", "DA", "BRDA", "BRF", "BRH", "LF", "LH", "end_of_record"]


def validate_lcov(text: str) -> list[dict[str, list[str]]]:
    """Check the tracefile grammar, record order and summary counts; return the records."""
    assert text.endswith("end_of_record\n")
    records: list[dict[str, list[str]]] = []
    cur: dict[str, list[str]] = {}
    last = -1
    for line in text.splitlines():
        assert LCOV_LINE.match(line), line
        key, _, val = line.partition(":")
        pos = ORDER.index(key)
        assert pos >= last or key == "TN", f"{key} after {ORDER[last]}"
        last = pos
        cur.setdefault(key, []).append(val)
        if key == "end_of_record":
            records.append(cur)
            cur, last = {}, -1
    for rec in records:
        fn = [v.split(",", 1)[1] for v in rec.get("FN", [])]
        fnda = {v.split(",", 1)[1]: int(v.split(",")[0]) for v in rec.get("FNDA", [])}
        assert len(set(fn)) == len(fn) and set(fnda) == set(fn)
        assert int(rec["FNF"][0]) == len(fn) and int(rec["FNH"][0]) == sum(1 for c in fnda.values() if c)
        da = [tuple(map(int, v.split(","))) for v in rec.get("DA", [])]
        assert [d[0] for d in da] == sorted({d[0] for d in da})
        assert int(rec["LF"][0]) == len(da) and int(rec["LH"][0]) == sum(1 for d in da if d[1])
        brda = [v.split(",") for v in rec.get("BRDA", [])]
        assert len({tuple(b[:3]) for b in brda}) == len(brda)
        assert int(rec["BRF"][0]) == len(brda)
        assert int(rec["BRH"][0]) == sum(1 for b in brda if b[3] not in ("-", "0"))
    return records


def test_lcov_exact(profiles: tuple[Path, list[FunctionProfile]], tmp_path: Path) -> None:
    script, ps = profiles
    text = report_lcov(ps, test_name="prog")
    (rec,) = validate_lcov(text)
    assert rec["SF"] == [str(script)] and rec["TN"] == ["prog"]
    assert rec["DA"] == [f"{k},{v}" for k, v in LINES.items()]
    assert rec["BRDA"] == ["2,0,0,2", "2,0,1,1", "9,1,0,4", "9,1,1,1", "10,2,0,2", "10,2,1,2",
                           "23,3,0,3", "23,3,1,1", "28,4,0,-", "28,4,1,-"]
    assert (rec["BRF"], rec["BRH"], rec["LF"], rec["LH"]) == (["10"], ["8"], ["24"], ["21"])
    assert "27,unused" in rec["FN"] and "0,unused" in rec["FNDA"]
    assert {v.split(",")[1]: int(v.split(",")[0]) for v in rec["FNDA"]} == CALLS
    assert (rec["FNF"], rec["FNH"]) == (["6"], ["5"])
    genhtml = shutil.which("genhtml")
    if genhtml is None:
        pytest.skip("genhtml not installed (format checked above)")
    info = tmp_path / "prog.info"
    info.write_text(text)
    done = subprocess.run([genhtml, "--branch-coverage", "-q", "-o", str(tmp_path / "html"), str(info)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_propagated_counts_give_the_same_report(profiles: tuple[Path, list[FunctionProfile]]) -> None:
    """Edge counts from chord counters (count mode) instead of the trace: identical reports."""
    _, ps = profiles
    redone = []
    for p in ps:
        graph = from_cfg(p.cfg)
        placement = place_counters(graph, static_weights(graph))
        extra = []
        if p.qualname == "risky":                                   # 10 // 0 -> the handler, once
            first = p.cfg.firstline
            raising = next(st.block for st in p.cfg.stmts if st.line == first + 2)
            handler = next(st.block for st in p.cfg.stmts if st.line == first + 4)
            assert p.cfg.blocks[handler].dynamic_entry and raising != handler
            extra = [(raising, handler, 1)]
        flow = propagate_counts(graph, placement, [int(p.edges[e]) for e in placement.chords], extra)
        assert list(flow.edges) == [int(c) for c in p.edges], p.qualname
        redone.append(FunctionProfile(p.shape, p.blocks, p.stmts, np.array(flow.edges), p.source,
                                      p.activations))
    assert report_lcov(redone) == report_lcov(ps)
    assert report_json(redone) == report_json(ps)


IDLE_PROG = textwrap.dedent('''\
    def used(n):
        total = 0
        for i in range(n):
            if i % 3 == 0:
                total += i
        return total


    def never(x):
        y = x * 2
        return y


    class Box:
        def __init__(self, v):
            self.v = v

        def get(self):
            return self.v

        def unused_method(self):
            if self.v:
                return 1
            return 0


    def outer():
        def inner():
            return 5
        return 1


    def lazy():
        yield 1
        yield 2


    g = lazy()
    b = Box(3)
    print(used(10), b.get(), outer())
''')


@pytest.mark.parametrize("mode", ["blocks", "count", "witness"])
def test_functions_that_never_ran_against_the_line_tracer(mode: str, tmp_path: Path) -> None:
    """Which functions ran, the one-line summaries of the others, and the counts of the lines
    reported, all against the settrace line tracer run on the same program (a generator
    created but never iterated, a method and a nested function never ran)."""
    from oracles.settrace_lines import line_counts, single_simple_statement_lines

    from wholetrace.profile import counted
    from wholetrace.profile.model import Idle

    script = tmp_path / "idle.py"
    script.write_text(IDLE_PROG)
    r = run_recorded(script, tmp_path / "idle.wt", mode=mode)
    assert r.returncode == 0, r.stderr
    oracle = {ln: n for (_f, ln), n in line_counts(script, [], {str(script)}).items()}
    with Trace.open(tmp_path / "idle.wt") as trace:
        entries = counted(trace)
        doc, text, lcov = report_json(entries), report_text(entries), report_lcov(entries)
        full = profiles_of(trace)
    path = str(script)
    funcs = doc["functions"]
    assert len(funcs) == len(entries) == len(full) == 10          # module, 8 functions, class body
    never_by_oracle = set()
    for f in funcs:
        body = [oracle.get(ln, 0) for ln in range(f["firstline"] + 1, f["lastline"] + 1)]
        if f["kind"] != "module" and not any(body):
            never_by_oracle.add(f["name"])
    assert never_by_oracle == {"never", "Box.unused_method", "outer.<locals>.inner", "lazy"}
    assert {f["name"] for f in funcs if f["blocks"] == 0 and f["calls"] == 0} == never_by_oracle
    assert {e.qualname for e in entries if isinstance(e, Idle)} == never_by_oracle
    for f in funcs:                                                 # one summary line each, no source
        head = [ln for ln in text.splitlines() if ln.startswith(f"== {f['name']}  (")]
        n = f["lastline"] - f["firstline"] + 1
        if f["name"] in never_by_oracle:
            assert head == [f"== {f['name']}  ({path}:{f['firstline']}-{f['lastline']})  never ran, "
                            f"{n} line{'s' if n != 1 else ''}"]
        else:
            assert len(head) == 1 and head[0].endswith(f"calls {f['calls']}, blocks {f['blocks']}")
    assert text.splitlines()[-len(never_by_oracle):] == [ln for ln in text.splitlines()
                                                         if ln.startswith("== ") and "never ran" in ln]
    lines = {int(k): v for k, v in doc["lines"][path].items()}
    idle_body = {ln for f in funcs if f["name"] in never_by_oracle for ln in range(f["firstline"] + 1, f["lastline"] + 1)}
    assert all(lines[ln] == 0 for ln in set(lines) & idle_body)     # never-run bodies listed, at zero
    simple = single_simple_statement_lines(IDLE_PROG)
    assert simple & idle_body and simple & idle_body <= set(lines)  # ... every statement line of them
    checked = [ln for ln in lines if ln in simple]
    assert len(checked) >= 8 and all(lines[ln] == oracle.get(ln, 0) for ln in checked), (lines, oracle)
    assert set(lines) >= {ln for ln in simple if oracle.get(ln, 0) > 0}
    (rec,) = validate_lcov(lcov)
    assert rec["DA"] == [f"{ln},{n}" for ln, n in sorted(lines.items())]
    fnda = {v.split(",", 1)[1]: int(v.split(",")[0]) for v in rec["FNDA"]}
    assert len(fnda) == 10 and {k for k, v in fnda.items() if v == 0} == {
        n.replace(" ", "_") for n in never_by_oracle}
    for p in full:                                                  # profiles(): every function, zero if idle
        if p.qualname in never_by_oracle:
            assert p.weight == 0 and p.shape.nblocks >= 3 and not np.asarray(p.stmts).any(), p.qualname
        else:
            assert p.weight > 0, p.qualname
