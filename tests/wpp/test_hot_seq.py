"""``hot`` on recordings with SEQ terminals (wave 12) answers as on wave 10's grammar of the same
events: the oracle is a grammar built here from the ``--keep-raw`` events with
``EventInterner(fuse=True)`` (no groups) and SEQUITUR, read by the same ``hot_report``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from corpus import PROGRAMS
from wholetrace.grammar import GrammarBuilder
from wholetrace.store import Recording
from wholetrace.wpp.hotreport import HotOptions, hot_json, hot_report
from wholetrace.wpp.intern import PATH_LEAVE_AT, EventInterner
from wholetrace.wpp.stored import StoredWpp
from wholetrace.wpp.symbols import PATH, SEQ
from wholetrace.wpp.view import StreamGrammar, WppView, open_view, split_view
from wtutil import run_recorded

PROGRAM = """
def leaf(x):
    return x + 1

def odd(x):
    if x % 3:
        return leaf(x) * 2
    return x

def work(n):
    s = 0
    for i in range(n):
        s += odd(i) + leaf(i)
        if i % 7 == 0:
            s -= odd(s & 15)
    return s

print(sum(work(200) for _ in range(30)))
"""


def keyed(report) -> list[str]:  # type: ignore[no-untyped-def]
    """``hot --json``'s subpaths with terminal ids as (kind, function, value) keys, sorted."""
    t = report.view.terminals
    out = []
    for e in hot_json(report)["subpaths"]:
        e["symbols"] = [(int(t.kind[s]), int(t.fid[s]), int(t.value[s])) for s in e["symbols"]]
        out.append(json.dumps(e, sort_keys=True))
    return sorted(out)


def wave10_view(path: Path) -> WppView:
    """The recording's streams as wave 10 interned them, from the raw events it kept."""
    view = open_view(str(path), progress=False)
    it = EventInterner(PATH, PATH_LEAVE_AT, fuse=True)
    it.set_path_functions(sorted(view.path_fids), max(view.cfgs) + 1)
    streams = []
    with Recording(path) as rec:
        for s in view.streams:
            b = GrammarBuilder(lookahead=view.lookahead)
            b.feed(it.codes(s.sid, rec.events(s.sid)))
            b.feed(it.finish(s.sid))
            streams.append(StreamGrammar(s.sid, s.name, b.finish()))
    return WppView(view.path, view.mode, "stored", it.terminals(), streams, view.cfgs, view.files,
                   quiet=view.quiet, lookahead=view.lookahead, path_fids=view.path_fids)


def check(script: Path, out: Path, include: tuple[str, ...] = ()) -> None:
    proc = run_recorded(script, out, mode="path", include=include, options=("--wpp", "--keep-raw"))
    assert proc.returncode == 0, proc.stderr
    view = open_view(str(out), progress=False)     # (split already: what ``hot`` reads)
    with Recording(out) as rec:
        assert rec.meta["wpp"]["terminals"] == 3
        stored = StoredWpp(rec)
    used = np.concatenate([s.grammar.rhs[s.grammar.rhs >= 0] for s in stored.streams])
    assert np.any(stored.terminals.kind[used] == SEQ)        # the stored grammars do group
    opts = HotOptions(limit=0)
    got, want = keyed(hot_report(view, opts)), keyed(hot_report(wave10_view(out), opts))
    assert got and got == want
    # the grouped grammar, read as it is, answers otherwise (what the test guards against)
    from wholetrace.wpp import hotreport

    grouped = hotreport.ungrouped_view
    try:
        hotreport.ungrouped_view = lambda v: v  # type: ignore[assignment]
        assert keyed(hot_report(view, opts)) != want
    finally:
        hotreport.ungrouped_view = grouped


def test_hot_on_seq_terminals_equals_wave10_on_an_inline_program(tmp_path: Path) -> None:
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    check(script, tmp_path / "p.wt")


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_hot_on_seq_terminals_equals_wave10_on_deltablue(tmp_path: Path) -> None:
    """deltablue: the review's worst case (a subpath with 36% of the cost lost to SEQ groups)."""
    prog = PROGRAMS["deltablue"]
    check(prog.write(tmp_path, "small"), tmp_path / "d.wt", tuple(prog.include))


def test_ungrouped_view_keeps_the_stored_ids() -> None:
    """Re-interning seeds the table with the stored one: a terminal keeps its id (``hot --json``'s
    symbols are ``wpp.symbols`` ids), and split views of both expand to the same events."""
    from wholetrace.events import enter_code
    from wholetrace.wpp.intern import events_of, interner_for
    from wholetrace.wpp.view import ungrouped_view

    L = PATH_LEAVE_AT
    ev = [enter_code(0), 3, enter_code(1), L + 2, 5, enter_code(2), L + 1, L + 6] * 20
    it = interner_for("path")
    it.set_path_functions([0, 1, 2])
    b = GrammarBuilder(lookahead=True)
    b.feed(it.codes(0, np.array(ev, np.int32), final=True))
    t = it.terminals()
    view = WppView("x", "path", "stored", t, [StreamGrammar(0, "main", b.finish())], {}, {},
                   path_fids=frozenset({0, 1, 2}))
    flat = ungrouped_view(view)
    n = len(t)
    assert np.array_equal(flat.terminals.kind[:n], t.kind) and np.array_equal(flat.terminals.value[:n], t.value)
    g = flat.streams[0].grammar
    assert not np.any(flat.terminals.kind[g.rhs[g.rhs >= 0]] == SEQ)
    assert events_of(g.expand(), flat.terminals).tolist() == ev
    s = split_view(flat)
    assert events_of(s.streams[0].grammar.expand(), s.terminals).tolist() == ev
