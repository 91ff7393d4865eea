"""`wholetrace hot` end to end on recordings: the JSON against the brute-force reference semantics
(``naive_hot`` over every rule's expansion, merged per distinct string), sanity against the
expanded trace, the same answer from a stored WPP and from grammars built out of `blocks` and
`witness` traces, the readable text, instruction costs against ``dis``, and one-line errors."""

from __future__ import annotations

import dis
import json
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from corpus import PROGRAMS
from grammars import PARSE_FUNCTIONS, grammar_rules
from naive_hot import frequencies, naive_hot
from test_hot_recordings import naive_count
from test_online import naive_intern
from wholetrace.cli import main
from wholetrace.instrument.cfg import build_module
from wholetrace.render.hot import collapse, line_ranges
from wholetrace.store import Recording
from wholetrace.wpp.instructions import statement_instructions
from wholetrace.wpp.meaning import terminal_costs
from wholetrace.wpp.stored import StoredWpp
from wholetrace.wpp.intern import PATH_LEAVE_AT
from wholetrace.wpp.symbols import BLOCK, ENTER_CHAIN, ENTER_PATH, FUSED, PATH, SEQ
from wholetrace.wpp.view import open_view, split_view, ungrouped_view
from wtutil import ENV, run_recorded

PROGRAM = PARSE_FUNCTIONS + textwrap.dedent('''
    lines = ["1 2 x 3.5", "10 yy 7", "a b c"] * 20 + ["4 4 4 4"] * 15
    print(sum(total(l) for l in lines))
''')

PARAMS = [("5", "2", "30"), ("12", "4", "200"), ("40", "10", "400"), ("100", "3", "50")]

#: Entry blocks that call at once: ENTER top ENTER mid ENTER leaf LEAVE_PATH+p is one ENTER_CHAIN terminal.
CHAIN_PROGRAM = textwrap.dedent('''
    def leaf(x):
        return x + 1
    def mid(x):
        return leaf(x) * 2
    def top(x):
        return mid(x) - 1
    total = 0
    for i in range(300):
        if i % 3:
            total += top(i)
        else:
            total += mid(i) + leaf(i)
    print(total)
''')


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("hotcli")
    script = tmp / "prog.py"
    script.write_text(PROGRAM)
    (tmp / "chain.py").write_text(CHAIN_PROGRAM)
    out = {}
    for name, mode, extra in [("wpp", "blocks", ("--wpp",)), ("raw", "blocks", ()), ("witness", "witness", ()),
                              ("path", "path", ("--wpp",)), ("chain", "path", ("--wpp",))]:
        path = tmp / f"{name}.wt"
        script = tmp / ("chain.py" if name == "chain" else "prog.py")
        cmd = [sys.executable, "-m", "wholetrace.cli", "record", "--mode", mode, *extra, "-q", "-o", str(path), str(script)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=tmp, timeout=300)
        assert proc.returncode == 0, proc.stderr
        out[name] = path
    return out


def hot_json(path: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> dict:
    assert main(["hot", str(path), "--json", "--limit", "0", *args]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", ["wpp", "path", "chain"])
def test_json_equals_the_reference_semantics(recordings: dict[str, Path], capsys: pytest.CaptureFixture[str],
                                             name: str) -> None:
    """``path``: a path recording's stored grammar has fused ENTER_PATH terminals; `hot` reads the
    view's grammar, where each is split into a rule of its ENTER and its path (one terminal an
    event, as before wave 10; SEQ groups undone first, wave 12), and answers as the reference does
    on that grammar."""
    with Recording(recordings[name]) as rec:
        wpp = StoredWpp(rec)
    (stream,) = wpp.streams
    view = open_view(str(recordings[name]))
    g = view.streams[0].grammar
    if name != "wpp":
        fused = ENTER_CHAIN if name == "chain" else ENTER_PATH
        t = wpp.terminals       # used directly or inside a SEQ group (wave 12)
        used = [c for x in np.unique(stream.grammar.rhs[stream.grammar.rhs >= 0]).tolist() for c in t.components(x)]
        assert np.any(t.kind[used] == fused)
        assert np.any(t.kind[stream.grammar.rhs[stream.grammar.rhs >= 0]] == SEQ)   # groups at calls (wave 12)
        assert not np.any(np.isin(view.terminals.kind[g.rhs[g.rhs >= 0]], FUSED))
        assert len(g) > len(stream.grammar) and g.num_rules > stream.grammar.num_rules
        # `hot` reads wave 10's grammar of the same events (SEQ groups undone, review12a MED-3)
        view = split_view(ungrouped_view(view))
        g = view.streams[0].grammar
        assert not np.any(view.terminals.kind[g.rhs[g.rhs >= 0]] == SEQ)
    else:
        assert g is stream.grammar or g == stream.grammar
    rules = grammar_rules(g)
    costs = terminal_costs(view).tolist()
    freq = frequencies(rules)
    seen = 0
    for L, n, C in PARAMS:
        doc = hot_json(recordings[name], "--max-length", L, "--min-length", n, "--min-cost", C, capsys=capsys)
        ref = naive_hot(rules, costs, int(n), int(L), int(C))
        want: dict[tuple[int, ...], int] = defaultdict(int)
        for r, scan in ref.items():
            E = _expand(rules, r)
            for s, m in scan.reports:
                want[tuple(E[s:s + m])] += freq[r]
        got = {tuple(s["symbols"]): (s["frequency"], s["cost"]) for s in doc["subpaths"]}
        assert got == {k: (f, f * sum(costs[x] for x in k)) for k, f in want.items()}
        costs_out = [s["cost"] for s in doc["subpaths"]]
        assert costs_out == sorted(costs_out, reverse=True)
        seen += len(got)
    assert seen > 5


def _expand(rules: list[list[int]], r: int) -> list[int]:
    out: list[int] = []
    for x in rules[r]:
        out.extend([x] if x >= 0 else _expand(rules, -x))
    return out


@pytest.mark.parametrize("name", ["wpp", "path", "chain"])
def test_sanity_against_the_expanded_trace(recordings: dict[str, Path], capsys: pytest.CaptureFixture[str],
                                           name: str) -> None:
    """The true count in the recorded events (``path``: the events expanded from the fused
    grammar, interned one terminal an event by an independent twin)."""
    view = open_view(str(recordings[name]))
    t = view.terminals
    if name != "wpp":
        with Recording(recordings[name]) as rec:
            events = StoredWpp(rec).events(0).tolist()
        key = {(int(k), int(f), int(v)): x for x, (k, f, v) in enumerate(zip(t.kind, t.fid, t.value))}
        fns = frozenset(f for f, c in view.cfgs.items() if view.numbering(f) is not None)
        codes, table = naive_intern({0: events}, PATH, PATH_LEAVE_AT, fns)
        text = np.array([key[table[c]] for c in codes[0]])
        assert np.array_equal(text, view.streams[0].grammar.expand())
    else:
        text = view.streams[0].grammar.expand()
    costs = terminal_costs(view)
    for L, n, C in PARAMS:
        for s in hot_json(recordings[name], "--max-length", L, "--min-length", n, "--min-cost", C,
                          capsys=capsys)["subpaths"]:
            sym = np.array(s["symbols"])
            true = sum(1 for i in range(len(text) - len(sym) + 1) if np.array_equal(text[i:i + len(sym)], sym))
            assert int(n) <= s["length"] == len(sym) <= int(L)
            assert true * int(costs[sym].sum()) >= s["cost"] >= int(C) and true >= s["frequency"] >= 1
            # the paths list the blocks of the subpath's block symbols, in order, with their lines
            if name == "wpp":
                blocks = [int(t.value[x]) for x in sym if t.kind[x] == BLOCK]
                assert [b for p in s["paths"] for b in p["blocks"]] == blocks
            for p in s["paths"]:
                cfg = next(c for c in view.cfgs.values() if c.qualname == p["function"])
                assert p["lines"] == [cfg.stmts[x].line for b in p["blocks"] for x in cfg.blocks[b].stmts]
                assert p["file"].endswith("chain.py" if name == "chain" else "prog.py")


def test_built_grammars_give_the_stored_answer(recordings: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """A block grammar built from a raw `blocks` trace or a regenerated `witness` trace is the
    stored one (same terminals by first appearance, SEQUITUR(1)), so `hot` answers the same."""
    for L, n, C in PARAMS[:2]:
        args = ("--max-length", L, "--min-length", n, "--min-cost", C)
        want = hot_json(recordings["wpp"], *args, capsys=capsys)
        assert hot_json(recordings["raw"], *args, capsys=capsys) == want
        assert hot_json(recordings["witness"], *args, capsys=capsys) == want
    assert open_view(str(recordings["witness"])).source == "built"


def test_text_is_readable(recordings: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hot", str(recordings["wpp"]), "--limit", "3", "--min-length", "6", "--max-length", "60"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "minimal hot subpaths of 6-60 blocks" in out[0] and "1% of the stream's total" in out[0]
    assert sum(1 for ln in out if ln.startswith("#")) == 3 and len(out) < 40
    assert any("parse  prog.py:" in ln for ln in out) and any("total  prog.py:" in ln for ln in out)
    nested = [ln for ln in out if "parse  prog.py" in ln]
    callers = [ln for ln in out if "total  prog.py" in ln]
    indent = lambda ln: len(ln) - len(ln.lstrip(" |"))  # noqa: E731
    assert min(map(indent, nested)) > min(map(indent, callers))   # the callee sits deeper


def test_collapse_and_line_ranges() -> None:
    assert collapse(list("abababc")) == [(0, 2, 3), (6, 1, 1)]
    assert collapse(list("aaab")) == [(0, 1, 3), (3, 1, 1)]
    assert collapse(list("abcabd")) == [(0, 1, 1), (1, 1, 1), (2, 1, 1), (3, 1, 1), (4, 1, 1), (5, 1, 1)]
    assert line_ranges([5, 3, 4, 9, 9]) == "3-5,9"


def test_instruction_costs_against_dis(tmp_path: Path) -> None:
    src = "def f(a, b):\n    x = a + b * 2\n    if x > 3:\n        return x\n    return [i for i in range(b)]\n"
    path = tmp_path / "m.py"
    path.write_text(src)
    cfgs = {i: c for i, c in enumerate(build_module(src, str(path)))}
    got = statement_instructions(cfgs, {i: str(path) for i in cfgs})
    code = compile(src, str(path), "exec").co_consts[0]
    by_line: dict[int, int] = defaultdict(int)
    todo = [code]
    while todo:   # every statement of f is on its own line: count instructions per line
        co = todo.pop()
        for ins in dis.get_instructions(co):
            if ins.positions and ins.positions.lineno and ins.positions.lineno > 1:
                by_line[ins.positions.lineno] += 1
        todo += [c for c in co.co_consts if hasattr(c, "co_code")]
    f = next(i for i, c in cfgs.items() if c.qualname == "f")
    assert {cfgs[f].stmts[s].line: n for s, n in enumerate(got[f])} == dict(by_line)


def test_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "p.py"
    script.write_text("print(sum(range(10)))\n")
    count = tmp_path / "c.wt"
    assert run_recorded(script, count, mode="count").returncode == 0
    assert main(["hot", str(count)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds no trace" in err
    blocks = tmp_path / "b.wt"
    assert run_recorded(script, blocks).returncode == 0
    assert main(["paths", str(blocks)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "record --mode path" in err
    assert main(["hot", str(blocks), "--min-length", "5", "--max-length", "2"]) == 2
    assert main(["hot", str(blocks), "--stream", "7"]) == 2
    assert "no stream 7" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["json"])
def test_cli_sanity_on_a_corpus_wpp(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _corpus_sanity(name, tmp_path, capsys)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(PROGRAMS) - {"json"}))
def test_cli_sanity_on_every_corpus_wpp(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _corpus_sanity(name, tmp_path, capsys)


def _corpus_sanity(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`hot --json` on the WPP of a corpus recording: every subpath occurs in the expanded
    stream (a scan), N <= length <= L, true count x unit cost >= cost >= C, sorted by cost."""
    prog = PROGRAMS[name]
    driver = prog.write(tmp_path / name, "small")
    out = tmp_path / f"{name}.wt"
    inc = [a for m in prog.include for a in ("--include", m)]
    proc = subprocess.run([sys.executable, "-m", "wholetrace.cli", "record", "--wpp", "-q", "-o", str(out), *inc,
                           str(driver)], capture_output=True, text=True, env=ENV, cwd=driver.parent, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    view = open_view(str(out))
    costs = terminal_costs(view)
    texts = {s.sid: s.grammar.expand() for s in view.streams}
    found = 0
    for L, n, C in [("10", "4", "1000"), ("100", "10", "10000"), ("1000", "10", "100000")]:
        subs = hot_json(out, "--max-length", L, "--min-length", n, "--min-cost", C, capsys=capsys)["subpaths"]
        assert [s["cost"] for s in subs] == sorted((s["cost"] for s in subs), reverse=True)
        for s in subs:
            true = naive_count(texts[s["stream"]], tuple(s["symbols"]))
            unit = int(costs[s["symbols"]].sum())
            assert int(n) <= s["length"] <= int(L) and s["cost"] == s["frequency"] * unit
            assert true * unit >= s["cost"] >= int(C) and true >= s["frequency"] >= 1
        found += len(subs)
    assert found > 0
