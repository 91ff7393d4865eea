"""Hot subpaths on grammars of real `blocks` traces: the reference semantics on a small recording,
and sanity on corpus recordings (every subpath occurs in the trace, lengths and costs hold)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from corpus import PROGRAMS
from grammars import grammar_rules
from naive_hot import naive_hot
from wholetrace.errors import StoreError
from wholetrace.events import EXC, LEAVE, enter_code
from wholetrace.grammar import Grammar, sequitur
from wholetrace.instrument.cfg import build_module
from wholetrace.store import Recording
from wholetrace.wpp.hot import hot_subpaths
from wholetrace.wpp.queries import occurrences, terminal_counts
from wholetrace.wpp.symbols import BLOCK, ENTER, EXC as K_EXC, LEAVE as K_LEAVE, intern_block_streams, \
    recording_block_symbols
from wtutil import record_program

SMALL = textwrap.dedent('''
    def parse(tok):
        if tok.isdigit():
            return int(tok)
        try:
            return float(tok)
        except ValueError:
            return len(tok)

    def total(line):
        s = 0
        for tok in line.split():
            s += parse(tok)
        return s

    lines = ["1 2 x 3.5", "10 yy 7", "a b c"] * 6 + ["4 4 4 4"] * 5
    print(sum(total(l) for l in lines))
''')


def events_of(symbols: np.ndarray, kind: np.ndarray, fid: np.ndarray, value: np.ndarray) -> list[int]:
    """Rebuild the int32 events from terminal ids (the interning must lose nothing)."""
    out: list[int] = []
    for t in symbols.tolist():
        k = int(kind[t])
        if k == BLOCK:
            out.append(int(value[t]))
        elif k == ENTER:
            out.append(enter_code(int(fid[t])))
        elif k == K_LEAVE:
            out.append(LEAVE)
        else:
            assert k == K_EXC
            out += [EXC, int(value[t])]
    return out


def test_interning_round_trip_and_errors(tmp_path: Path) -> None:
    out = record_program(tmp_path, "small", SMALL)
    with Recording(out) as rec:
        syms, cfgs = recording_block_symbols(rec)
        raw = [rec.events(s.sid) for s in rec.streams()]
    t = syms.terminals
    for ev, s in zip(raw, syms.streams):
        assert events_of(s, t.kind, t.fid, t.value) == ev.tolist()
    assert (t.kind == K_EXC).any() and (t.kind == ENTER).any()
    costs = t.statement_costs(cfgs)
    assert costs[t.kind != BLOCK].sum() == 0 and (costs[t.kind == BLOCK] >= 1).all()
    assert [t.label(i) for i in range(len(t)) if t.kind[i] == K_LEAVE] == ["E"]
    with Recording(out) as rec:
        files = {f.fid: f.file for f in rec.functions()}
    src = SMALL.splitlines()
    for i in range(len(t)):
        d = t.describe(i, cfgs, files)
        if t.kind[i] == BLOCK:  # the block's lines hold its statements' text
            first, last = d["lines"]  # type: ignore[misc]
            assert d["function"] == cfgs[int(t.fid[i])].qualname and d["file"] == str(out.with_suffix(".py"))
            assert first <= last and src[first - 1].strip()
        elif t.kind[i] == K_EXC:
            assert "raise" in src[d["lines"][0] - 1] or "float(tok)" in src[d["lines"][0] - 1]  # type: ignore[index]
    (cfg,) = build_module("def f():\n    return 1\n")[1:]
    with pytest.raises(StoreError, match="outside any activation"):
        intern_block_streams([np.array([2], np.int32)], {0: cfg})
    with pytest.raises(StoreError, match="unknown function"):
        intern_block_streams([np.array([enter_code(5)], np.int32)], {0: cfg})
    with pytest.raises(StoreError, match="block outside"):
        intern_block_streams([np.array([enter_code(0), 99], np.int32)], {0: cfg})
    with pytest.raises(StoreError, match="unknown event"):
        intern_block_streams([np.array([enter_code(0), -4], np.int32)], {0: cfg})


def test_reference_semantics_on_a_small_recording(tmp_path: Path) -> None:
    out = record_program(tmp_path, "small", SMALL)
    with Recording(out) as rec:
        syms, cfgs = recording_block_symbols(rec)
    stream = syms.streams[0]
    g = sequitur(stream)
    assert np.array_equal(g.expand(), stream)
    costs = syms.terminals.statement_costs(cfgs)
    rules = grammar_rules(g)
    found = 0
    for L, min_len, C in [(4, 1, 5), (12, 3, 20), (30, 10, 60), (8, 2, 200)]:
        res = hot_subpaths(g, costs, min_cost=C, max_length=L, min_length=min_len)
        ref = naive_hot(rules, costs.tolist(), min_len, L, C)
        got = sorted(zip(res.reports.rule.tolist(), res.reports.start.tolist(), res.reports.length.tolist()))
        assert got == sorted((r, s, n) for r, sc in ref.items() for s, n in sc.reports)
        found += len(got)
    assert found > 10


def check_sanity(g: Grammar, stream: np.ndarray, costs: np.ndarray, L: int, min_len: int, C: int) -> int:
    res = hot_subpaths(g, costs, min_cost=C, max_length=L, min_length=min_len)
    for h in res.subpaths:
        assert min_len <= h.length <= L and h.cost >= C
        assert h.cost == h.frequency * h.unit_cost
        true = naive_count(stream, h.symbols)  # a scan of the trace itself
        assert true >= h.frequency >= 1 and true * h.unit_cost >= h.cost
        assert occurrences(g, h.symbols) == true
    return len(res.subpaths)


def naive_count(stream: np.ndarray, pat: tuple[int, ...]) -> int:
    m = len(pat)
    first = np.flatnonzero(stream[: len(stream) - m + 1] == pat[0])
    ok = np.ones(len(first), bool)
    for j in range(1, m):
        ok &= stream[first + j] == pat[j]
    return int(ok.sum())


SANITY_PARAMS = [(10, 1, 10**4), (100, 10, 10**4), (100, 10, 10**5), (1000, 10, 10**5)]


@pytest.mark.parametrize("name", ["richards", "pyflate", "json"])
def test_sanity_on_corpus_recordings(name: str, tmp_path: Path) -> None:
    _sanity(name, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(PROGRAMS) - {"richards", "pyflate", "json"}))
def test_sanity_on_all_corpus_recordings(name: str, tmp_path: Path) -> None:
    _sanity(name, tmp_path)


def _sanity(name: str, tmp_path: Path) -> None:
    out = record_program(tmp_path, name)
    with Recording(out) as rec:
        syms, cfgs = recording_block_symbols(rec)
    costs = syms.terminals.statement_costs(cfgs)
    stream = max(syms.streams, key=len)
    g = sequitur(stream)
    assert np.array_equal(terminal_counts(g, len(costs)), np.bincount(stream, minlength=len(costs)))
    found = sum(check_sanity(g, stream, costs, L, m, C) for L, m, C in SANITY_PARAMS)
    assert found > 0
