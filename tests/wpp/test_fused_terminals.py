"""Fused ENTER_PATH terminals (wave 10) on real path recordings: the grammar built online expands to
exactly the raw stream (``--keep-raw``) on corpus, inline and generated programs; the fused table
is what an independent twin interns from that raw stream; readers see one terminal an event."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from corpus import PROGRAMS
from genprogs import structured_programs, write_program
from inline_programs import INLINE
from naive_groups import canonical, group_codes
from test_online import naive_intern
from wholetrace.store import Recording
from wholetrace.wpp.intern import PATH_GROUP, PATH_LEAVE_AT
from wholetrace.wpp.online import TERMINALS_VERSION
from wholetrace.wpp.stored import ExpandedRecording, StoredWpp
from wholetrace.wpp.symbols import ENTER, ENTER_CHAIN, ENTER_PATH, EXC as K_EXC, LEAVE as K_LEAVE, PATH, SEQ, Terminals
from wtutil import run_recorded


def check_fused(out: Path) -> dict[str, int]:
    """Every stream's grammar expands to exactly its raw events; the stored table and codes are the
    fused and grouped twin's (by structure); returns events, symbols and fused terminal occurrences
    (inside groups too)."""
    n = {"events": 0, "symbols": 0, "fused": 0, "chain": 0, "exc": 0, "seq": 0}
    with Recording(out) as rec:
        assert rec.meta["wpp"]["terminals"] == TERMINALS_VERSION == 3
        fns = frozenset(f.fid for f in rec.functions() if f.cfg.get("plan", {}).get("strategy") == "paths")
        wpp = StoredWpp(rec)
        t = wpp.terminals
        keys = list(zip(t.kind.tolist(), t.fid.tolist(), t.value.tolist()))
        for st in rec.streams():
            raw = rec.events(st.sid)
            if not len(raw):
                continue
            g = wpp.stream(st.sid).grammar
            assert np.array_equal(wpp.events(st.sid), raw), f"stream {st.sid}"
            codes, table = naive_intern({0: raw.tolist()}, PATH, PATH_LEAVE_AT, fns, fuse=True)
            grouped, twin = group_codes(codes[0], table, PATH_GROUP, PATH_LEAVE_AT)
            cons: dict[tuple[int, int, int], int] = {}
            mine, theirs = canonical(keys, cons), canonical(twin, cons)
            assert [mine[c] for c in g.expand()] == [theirs[c] for c in grouped], f"stream {st.sid}"
            n["events"] += len(raw)
            n["symbols"] += len(g)
            n["seq"] += int(np.count_nonzero(t.kind[g.expand()] == SEQ))
            kinds = t.kind[[c for x in g.expand().tolist() for c in t.components(x)]]
            n["fused"] += int(np.count_nonzero(kinds == ENTER_PATH))
            n["chain"] += int(np.count_nonzero(kinds == ENTER_CHAIN))
            n["exc"] += int(np.count_nonzero(kinds == K_EXC))
            # one event per terminal, plus EXC's statement, a fused terminal's path and its chain's ENTERs
            assert len(raw) == len(g) + n_more(t, g.expand())
        assert rec.meta["wpp"]["events"] == n["events"]
    return n


def n_more(t: Terminals, codes: np.ndarray) -> int:
    """Events beyond one a terminal, walked through the table by hand (not ``terminal_widths``)."""
    more = 0
    for x in [c for y in codes.tolist() for c in t.components(y)]:   # (a SEQ's terminals: more events)
        more += 1
        while int(t.kind[x]) == ENTER_CHAIN:
            more += 1
            x = int(t.value[x])
        more += int(t.kind[x]) in (ENTER_PATH, K_EXC)
    return more - len(codes)


def record(script: Path, out: Path, include: tuple[str, ...] = ()) -> None:
    proc = run_recorded(script, out, mode="path", include=include, options=("--wpp", "--keep-raw"), timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.parametrize("name", sorted(INLINE))
def test_inline_programs(tmp_path: Path, name: str) -> None:
    script = tmp_path / f"prog_{name}.py"
    script.write_text(textwrap.dedent(INLINE[name]))
    record(script, tmp_path / "p.wt")
    n = check_fused(tmp_path / "p.wt")
    assert n["events"] >= n["symbols"] + n["fused"] + n["chain"] + n["exc"]


@pytest.mark.parametrize("name", ["richards", "float", pytest.param("go", marks=pytest.mark.slow)])
def test_corpus_programs(tmp_path: Path, name: str) -> None:
    prog = PROGRAMS[name]
    script = prog.write(tmp_path, "small")
    record(script, tmp_path / "p.wt", tuple(prog.include))
    n = check_fused(tmp_path / "p.wt")
    assert n["events"] >= n["symbols"] + n["fused"] + n["chain"] + n["exc"] + n["seq"] and n["fused"] > n["events"] // 10
    assert n["seq"] > n["events"] // 10
    if name == "richards":   # entry blocks that call at once: ENTERs in a row are chained
        assert n["chain"] > 1000


@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(src=structured_programs())
def test_generated_programs(tmp_path: Path, src: str) -> None:
    d = tmp_path / f"g{abs(hash(src)) % 10**8}"
    driver = write_program(src, d)
    out = d / "p.wt"
    proc = run_recorded(driver, out, mode="path", options=("--wpp", "--keep-raw"), timeout=120)
    if proc.returncode != 0 and not out.exists():
        pytest.skip("the generated program did not record")   # not this test's business
    n = check_fused(out)
    assert n["events"] >= n["symbols"] + n["fused"] + n["chain"] + n["exc"]


_TABLE_PROGRAMS = {
    "loop": "def leaf(i):\n    return i + 1\ndef f(n):\n    s = 0\n    for i in range(n):\n"
            "        s += leaf(i)\n    return s\nprint(f(300))\n",
    # exceptions (EXC s r: one event of the table, three raw words), calls from entry blocks
    # (ENTER_CHAIN) and a deep recursion
    "raises": textwrap.dedent("""\
        def leaf(i):
            if i % 7 == 3:
                raise ValueError(i)
            return i + 1
        def deep(n):
            return deep(n - 1) if n else leaf(n)
        def chain(n):
            return chain2(n) + 1
        def chain2(n):
            return leaf(n)
        def f(n):
            s = 0
            for i in range(n):
                try:
                    s += leaf(i) + chain(i)
                except ValueError:
                    s -= 1
                try:
                    try:
                        leaf(3)
                    finally:
                        s += 1
                except ValueError:
                    pass
            return s + deep(200)
        print(f(300))
        """),
}


@pytest.mark.parametrize("name", sorted(_TABLE_PROGRAMS))
def test_wpp_table_counts_the_raw_events(tmp_path: Path, name: str) -> None:
    """``wholetrace wpp``'s events are the raw stream's (``--keep-raw``), as ``info`` counts them:
    an EXC record with its operands, a fused or SEQ terminal its events (wave 13; wave 12 counted
    EXC s as one); distinct paths and symbols count one terminal an event (what the unfused twin
    interns from the raw stream), ``grammar_symbols`` the grammar's length."""
    script = tmp_path / "prog.py"
    script.write_text(_TABLE_PROGRAMS[name])
    record(script, tmp_path / "p.wt")
    with Recording(tmp_path / "p.wt") as rec:
        wpp = StoredWpp(rec)
        (s,) = wpp.streams
        row = s.table1(wpp.terminals)
        raw = rec.events(0)
        (kept,) = rec.streams()
        # read as a grammar-only recording (info, trace): the stream's event count is the raw one
        (st,) = ExpandedRecording(rec).streams()
        assert st.n_events == len(raw) == kept.n_events
        fns = frozenset(f.fid for f in rec.functions() if f.cfg.get("plan", {}).get("strategy") == "paths")
        used = s.grammar.expand().tolist()
        seqs = int(np.count_nonzero(wpp.terminals.kind[used] == SEQ))
        kinds = wpp.terminals.kind[[c for x in used for c in wpp.terminals.components(x)]]   # inside SEQs too
    exc = int(np.count_nonzero(raw == -2))
    assert row["events"] == len(raw) and row["grammar_symbols"] < row["events"] - 250
    assert row["raw_bytes"] == 4 * len(raw)
    codes, table = naive_intern({0: raw.tolist()}, PATH, PATH_LEAVE_AT, fns)   # one terminal an event
    assert len(codes[0]) == len(raw) - exc
    assert row["distinct_symbols"] == len(table)
    assert row["distinct_paths"] == sum(1 for k, _f, _v in table if k not in (ENTER, K_LEAVE, K_EXC))
    assert row["path_kind"] == "path"
    if name == "raises":   # EXC records, chains and groups in the stream
        assert exc > 100 and np.count_nonzero(kinds == ENTER_CHAIN) > 100 and seqs > 100


def test_a_newer_terminal_table_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader that knows terminal tables up to version 2 (before SEQ) refuses a version-3
    recording with a clear message instead of failing on an unknown terminal."""
    import wholetrace.wpp.stored as stored
    from wholetrace.errors import UsageError

    script = tmp_path / "prog.py"
    script.write_text("def f(i):\n    return i\nprint(sum(f(i) for i in range(50)))\n")
    record(script, tmp_path / "p.wt")
    monkeypatch.setattr(stored, "TERMINALS_VERSION", 2)
    with Recording(tmp_path / "p.wt") as rec, pytest.raises(UsageError, match="terminals are of version 3") as exc:
        stored.StoredWpp(rec)
    assert "\n" not in str(exc.value)
