"""The WPP built online: interning against a pure-Python twin, the seed grammars through the online path,
exact expansion against the raw stream (``--keep-raw`` and an independent `blocks` recording), spilling
under a tiny queue bound, and the ``wholetrace wpp`` command."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from array import array
from pathlib import Path

import numpy as np
import pytest

from corpus import PROGRAMS
from wholetrace.events import EXC, LEAVE, enter_code
from wholetrace.grammar import sequitur
from wholetrace.store import Recording, RecordingWriter
from wholetrace.wpp.intern import PATH_LEAVE_AT, EventInterner, events_of, interner_for
from wholetrace.wpp.online import OnlineWpp
from wholetrace.wpp.stored import StoredWpp
from wholetrace.wpp.symbols import BLOCK, ENTER, ENTER_CHAIN, ENTER_PATH, EXC as K_EXC, LEAVE as K_LEAVE, PATH, recording_block_symbols, split_entered
from wtutil import ENV, run_recorded

# Larus 1999 §3 (spec wpp.md §2.1-2.2), rules renumbered by first appearance from S.  Figure 4's
# grammar of 121213121214 (S->B3B4, B->AA1, A->12) is what SEQUITUR(1) builds; plain SEQUITUR
# builds S->A B 3 B 2 1 4 (checked by hand and by the naive twin, tests/grammar/naive_sequitur.py),
# and the body text's 1212131214 gives S->A B 3 B 4.
SEEDS = {
    ("abcab", False): [["R1", "c", "R1"], ["a", "b"]],
    ("abcab", True): [["R1", "c", "R1"], ["a", "b"]],
    ("121213121214", True): [["R1", "3", "R1", "4"], ["R2", "R2", "1"], ["1", "2"]],
    ("121213121214", False): [["R1", "R2", "3", "R2", "2", "1", "4"], ["1", "2"], ["R1", "1"]],
    ("1212131214", False): [["R1", "R2", "3", "R2", "4"], ["1", "2"], ["R1", "1"]],
    ("11111211111", False): [["R1", "R2", "2", "R2", "R1"], ["1", "1"], ["R1", "1"]],
    ("11111211111", True): [["R1", "2", "R1"], ["R2", "R2", "1"], ["1", "1"]],
}


def naive_intern(streams: dict[int, list[int]], value_kind: int = BLOCK, leave_at: int = 0,
                 path_fns: frozenset[int] = frozenset(), fuse: bool = False) -> tuple[dict[int, list[int]], list[tuple[int, int, int]]]:
    """Pure-Python twin of the interner: (kind, fid, value) tuples numbered by first appearance,
    streams taken in the order the chunks are given (here: whole streams one after the other).
    Exception records' operands (the register of ``path_fns``, RERAISE's statements) are taken
    by position whatever their value.  ``fuse``: ENTER f directly followed by a value v is the
    one tuple (ENTER_PATH, f, v); ENTER e right before such a fused tuple t is (ENTER_CHAIN, e, id of t)."""
    table: dict[tuple[int, int, int], int] = {}
    out: dict[int, list[int]] = {}
    for sid, ev in streams.items():
        stack: list[int] = []
        ops: list[int] = []
        codes: list[int] = []
        i = 0
        while i < len(ev):
            v = ev[i]
            f = stack[-1] if stack else -1
            if v >= 0:
                key = (value_kind, f, v)
                if leave_at and v >= leave_at and stack:
                    stack.pop()
            elif v == LEAVE:
                if stack:
                    stack.pop()
                key = (K_LEAVE, -1, 0)
            elif v == EXC:
                i += 1
                key = (K_EXC, f, ev[i])
                ops = [ev[i + 1]] if f in path_fns else []
            elif v == -4:   # RERAISE s x [r]
                key = (value_kind, -1, v)
                ops = ev[i + 1:i + 3 + (f in path_fns)]
            elif v <= -8 and fuse:   # ENTERs in a row, then a value: ENTER_PATH wrapped in ENTER_CHAINs
                j = i
                while j < len(ev) and ev[j] <= -8:
                    j += 1
                fns = [-x - 8 for x in ev[i:j]]
                stack += fns
                if j < len(ev) and ev[j] >= 0:
                    t = table.setdefault((ENTER_PATH, fns[-1], ev[j]), len(table))
                    for f_out in reversed(fns[:-1]):
                        t = table.setdefault((ENTER_CHAIN, f_out, t), len(table))
                    codes.append(t)
                    if leave_at and ev[j] >= leave_at:
                        stack.pop()
                    i = j + 1
                else:
                    codes += [table.setdefault((ENTER, f_in, 0), len(table)) for f_in in fns]
                    i = j
                continue
            elif v <= -8:
                stack.append(-v - 8)
                key = (ENTER, -v - 8, 0)
            else:   # path mode's START (-5)
                key = (value_kind, -1, v)
            codes.append(table.setdefault(key, len(table)))
            i += 1
            if v in (EXC, -4):
                for o in ops:
                    codes.append(table.setdefault((value_kind, f, o), len(table)))
                    i += 1
                ops = []
        out[sid] = codes
    return out, list(table)


def random_stream(rng: np.random.Generator, n: int) -> list[int]:
    out: list[int] = []
    depth = 0
    for _ in range(n):
        r = rng.random()
        if r < 0.15 or depth == 0:
            out.append(enter_code(int(rng.integers(0, 300))))
            depth += 1
        elif r < 0.3:
            out.append(LEAVE)
            depth -= 1
        elif r < 0.35:
            out += [EXC, int(rng.integers(-1, 4))]
        else:
            out.append(int(rng.integers(0, 40)))
    return out


def path_stream(rng: np.random.Generator, n: int) -> list[int]:
    """Path-mode stream format (events.py of path mode): ids, LEAVE_PATH + id, START, EXC s r [H]."""
    out: list[int] = []
    depth = 0
    for _ in range(n):
        r = rng.random()
        if r < 0.2 or depth == 0:
            out.append(enter_code(int(rng.integers(0, 50))))
            depth += 1
            if rng.random() < 0.2:
                out.append(-5)   # START
        elif r < 0.35:
            out.append(PATH_LEAVE_AT + int(rng.integers(0, 9)))
            depth -= 1
        elif r < 0.4:
            if rng.random() < 0.3:   # RERAISE s x r: statements may be -1 (unknown)
                out += [-4, int(rng.integers(-1, 5)), int(rng.integers(-1, 5))]
            else:
                out += [EXC, int(rng.integers(-1, 5))]
            out.append(int(rng.integers(-2, 9)))   # the register: negative when no path was open
            if rng.random() < 0.5:
                out.append(int(rng.integers(0, 6)))
            else:
                out.append(LEAVE)
                depth -= 1
        else:
            out.append(int(rng.integers(0, 30)))
    return out


@pytest.mark.nojit
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")   # the hash wraps on purpose
@pytest.mark.parametrize("fuse", [True, False])
@pytest.mark.parametrize("step", [97, 1, 2])
def test_path_mode_streams_intern_and_come_back_exactly(fuse: bool, step: int) -> None:
    """Chunks of 1 and 2 events put a fused ENTER's two halves in different chunks."""
    rng = np.random.default_rng(3)
    streams = {0: path_stream(rng, 4000), 1: path_stream(rng, 2500), 2: path_stream(rng, 300) + [enter_code(4)]}
    want, table = naive_intern(streams, PATH, PATH_LEAVE_AT, frozenset(range(50)), fuse=fuse)
    it = EventInterner(PATH, PATH_LEAVE_AT, fuse=fuse)
    it.set_path_functions(np.arange(50))
    for sid, ev in streams.items():
        got = np.concatenate([it.codes(sid, np.array(ev[i:i + step], np.int32)) for i in range(0, len(ev), step)]
                             + [it.finish(sid)])
        assert got.tolist() == want[sid]
        assert events_of(got, it.terminals()).tolist() == ev
    t = it.terminals()
    assert list(zip(t.kind.tolist(), t.fid.tolist(), t.value.tolist())) == table
    assert (ENTER_PATH in t.kind.tolist()) == fuse


def test_path_mode_interns_fused_enter() -> None:
    """Path mode's interner fuses; ENTER then START, then EXC, then ENTER stay apart; a trailing
    ENTER comes out at the end, also when the stream's last chunk says so."""
    ev = [enter_code(0), 3, enter_code(1), -5, enter_code(2), PATH_LEAVE_AT + 2, enter_code(1), EXC, 4, -1, LEAVE,
          enter_code(5), enter_code(6), enter_code(2), PATH_LEAVE_AT + 2, 7, enter_code(5), enter_code(6), LEAVE,
          enter_code(3)]
    it = EventInterner(PATH, PATH_LEAVE_AT, fuse=True)   # wave 10's fusion (path mode also groups: test_seq_terminals)
    it.set_path_functions([0, 1, 2, 3])
    codes = it.codes(0, np.array(ev, np.int32), final=True)
    t = it.terminals()
    got = [(int(t.kind[c]), int(t.fid[c]), int(t.value[c])) for c in codes]
    fp = int(codes[3])      # (ENTER_PATH, 2, LEAVE_PATH + 2)
    assert got == [(ENTER_PATH, 0, 3), (ENTER, 1, 0), (PATH, -1, -5), (ENTER_PATH, 2, PATH_LEAVE_AT + 2),
                   (ENTER, 1, 0), (K_EXC, 1, 4), (PATH, 1, -1), (K_LEAVE, -1, 0),
                   (ENTER_CHAIN, 5, got[8][2]), (PATH, 6, 7), (ENTER, 5, 0), (ENTER, 6, 0), (K_LEAVE, -1, 0),
                   (ENTER, 3, 0)]
    assert got[8][2] != fp and (int(t.kind[got[8][2]]), int(t.fid[got[8][2]]), int(t.value[got[8][2]])) == (ENTER_CHAIN, 6, fp)
    assert it.finish(0).tolist() == []
    assert t.label(int(codes[0])) == "F0P3" and t.label(int(codes[8])) == f"F5>F6>F2P{PATH_LEAVE_AT + 2}"
    assert events_of(codes, t).tolist() == ev
    assert t.parts(int(codes[8])) == [(ENTER, 5, 0), (ENTER, 6, 0), (ENTER, 2, 0), (PATH, 2, PATH_LEAVE_AT + 2)]


def test_a_chain_as_deep_as_the_recursion() -> None:
    """ENTERs 5,000 deep before the first value (an entry block that recurses at once) are one
    terminal; it expands, labels and splits without recursion, in chunks of 7."""
    ev = [enter_code(1)] * 5000 + [enter_code(2), PATH_LEAVE_AT + 1] + [PATH_LEAVE_AT] * 5000
    it = EventInterner(PATH, PATH_LEAVE_AT, fuse=True)   # wave 10's fusion (path mode also groups: test_seq_terminals)
    it.set_path_functions([1, 2])
    codes = np.concatenate([it.codes(0, np.array(ev[i:i + 7], np.int32)) for i in range(0, len(ev), 7)] + [it.finish(0)])
    t = it.terminals()
    assert len(codes) == 5001 and int(t.kind[codes[0]]) == ENTER_CHAIN
    assert events_of(codes, t).tolist() == ev
    assert t.label(int(codes[0])) == "F1>" * 5000 + f"F2P{PATH_LEAVE_AT + 1}"
    (g,), terms = split_entered([sequitur(codes)], t)
    assert events_of(g.expand(), terms).tolist() == ev


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_split_grammars_expand_to_the_unfused_terminals() -> None:
    """``split_entered`` on grammars built from fused codes gives grammars whose expansions are the
    terminals the unfused twin interns (compared by key), rule numbers of the originals kept."""
    rng = np.random.default_rng(11)
    streams = {0: path_stream(rng, 3000), 1: path_stream(rng, 1500)}
    fns = frozenset(range(50))
    want, table = naive_intern(streams, PATH, PATH_LEAVE_AT, fns)
    it = EventInterner(PATH, PATH_LEAVE_AT, fuse=True)   # wave 10's fusion (path mode also groups: test_seq_terminals)
    it.set_path_functions(np.arange(50))
    grammars = [sequitur(np.concatenate([it.codes(sid, np.array(ev, np.int32)), it.finish(sid)]), lookahead=True)
                for sid, ev in streams.items()]
    split, terms = split_entered(grammars, it.terminals())
    assert not np.any(np.isin(terms.kind[np.unique(np.concatenate([g.rhs[g.rhs >= 0] for g in split]))],
                              (ENTER_PATH, ENTER_CHAIN)))
    assert np.any(terms.kind == ENTER_CHAIN)
    for g, s, sid in zip(grammars, split, streams):
        fused, todo = set(), [int(x) for x in np.unique(g.rhs[g.rhs >= 0])]
        while todo:        # the fused terminals used, and those inside them
            x = todo.pop()
            if int(terms.kind[x]) in (ENTER_PATH, ENTER_CHAIN) and x not in fused:
                fused.add(x)
                if int(terms.kind[x]) == ENTER_CHAIN:
                    todo.append(int(terms.value[x]))
        assert s.num_rules == g.num_rules + len(fused) > g.num_rules
        assert np.array_equal(s.off[: len(g.off)], g.off)
        keys = [(int(terms.kind[c]), int(terms.fid[c]), int(terms.value[c])) for c in s.expand()]
        assert keys == [table[c] for c in want[sid]]
    plain = EventInterner(PATH, PATH_LEAVE_AT)
    plain.set_path_functions(np.arange(50))
    g0 = sequitur(plain.codes(0, np.array(streams[0], np.int32)))
    (same,), t0 = split_entered([g0], plain.terminals())   # no ENTER_PATH (recordings before wave 10)
    assert same is g0 and t0 is not None and len(t0) == len(plain.terminals())


@pytest.mark.nojit
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_interner_matches_python_twin_across_chunk_boundaries() -> None:
    rng = np.random.default_rng(7)
    streams = {0: random_stream(rng, 5000), 3: random_stream(rng, 3000)}
    want, table = naive_intern(streams)
    it = EventInterner()
    for sid, ev in streams.items():
        cuts = sorted(set(rng.integers(0, len(ev), 60).tolist()) | {0, len(ev)})
        got = np.concatenate([it.codes(sid, np.array(ev[a:b], np.int32)) for a, b in zip(cuts, cuts[1:])])
        assert got.tolist() == want[sid]
    t = it.terminals()
    assert list(zip(t.kind.tolist(), t.fid.tolist(), t.value.tolist())) == table
    assert len(table) > 4096   # the hash table and the key list were grown


def _online(tmp_path: Path, streams: dict[int, list[int]], chunk: int, *, lookahead: bool = False,
            queue: int = 1 << 22, keep_raw: bool = True) -> Recording:
    w = RecordingWriter(tmp_path / "o.wt")
    for sid in streams:
        w.add_stream(sid, kind="thread", name=f"t{sid}")
    ow = OnlineWpp(w, "blocks", lookahead=lookahead, keep_raw=keep_raw, queue_events=queue)
    longest = max(len(ev) for ev in streams.values())
    for i in range(0, longest, chunk):   # interleaved, as the flusher hands them over
        for sid, ev in streams.items():
            ow.append_events(sid, array("i", ev[i:i + chunk]))
    ow.close(ended="exit", exit_code=0)
    return Recording(tmp_path / "o.wt")


@pytest.mark.parametrize("text,lookahead", sorted(SEEDS))
def test_seed_grammars_through_the_online_builder(tmp_path: Path, text: str, lookahead: bool) -> None:
    # a block stream outside any activation interns each character as one terminal
    with _online(tmp_path, {0: [int(c) if c.isdigit() else ord(c) for c in text]}, 1,
                 lookahead=lookahead) as rec:
        wpp = StoredWpp(rec)
        g = wpp.stream(0).grammar
        name = {t: chr(int(v)) if v > 9 else str(int(v)) for t, v in enumerate(wpp.terminals.value)}
        got = [[name[x] if x >= 0 else f"R{-x}" for x in g.rule(i).tolist()] for i in range(g.num_rules + 1)]
        assert got == SEEDS[(text, lookahead)]
        assert rec.meta["wpp"]["lookahead"] is lookahead


@pytest.mark.parametrize("queue", [0, 700, 1 << 22])
def test_never_drops_under_any_queue_bound(tmp_path: Path, queue: int) -> None:
    rng = np.random.default_rng(queue)
    streams = {0: random_stream(rng, 20000), 1: random_stream(rng, 9000), 2: random_stream(rng, 50)}
    with _online(tmp_path, streams, 333, queue=queue, keep_raw=False) as rec:
        wpp = StoredWpp(rec)
        for sid, ev in streams.items():
            assert wpp.events(sid).tolist() == ev
            assert len(rec.events(sid)) == 0                                     # no raw stream
        meta = rec.meta["wpp"]
        total = sum(len(ev) for ev in streams.values())
        assert meta["events"] == total
        assert meta["max_backlog_events"] <= queue
        if queue == 0:
            assert meta["spilled_events"] == total


THREADS = textwrap.dedent('''
    import asyncio, threading

    class Odd:
        @property
        def v(self):
            raise KeyError("v")

    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    def work(k):
        s = 0
        for i in range(k):
            if i % 3:
                s += fib(7)
            else:
                try:
                    Odd().v
                except KeyError:
                    s -= 1
        return s

    def gen(n):
        for i in range(n):
            yield work(i)

    ts = [threading.Thread(target=work, args=(150,)) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()

    async def co(i):
        await asyncio.sleep(0)
        return sum(gen(10 + i))

    async def main():
        return await asyncio.gather(*(co(i) for i in range(3)))

    print(work(200), asyncio.run(main()))
''')


def _record(tmp: Path, script: Path, out: Path, *opts: str, mode: str = "blocks", include: tuple[str, ...] = ()) -> None:
    cmd = [sys.executable, "-m", "wholetrace.cli", "record", "--mode", mode, "-q", "-o", str(out), *opts]
    cmd += [a for inc in include for a in ("--include", inc)] + [str(script)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=script.parent, env=ENV, timeout=600,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-2000:]


def _check_keep_raw(out: Path) -> int:
    """Every stream's grammar expands to exactly the raw stream stored beside it; returns #events."""
    n = 0
    with Recording(out) as rec:
        wpp = StoredWpp(rec)
        for st in rec.streams():
            raw = rec.events(st.sid)
            got = wpp.events(st.sid) if any(s.sid == st.sid for s in wpp.streams) else np.zeros(0, np.int32)
            assert np.array_equal(got, raw), f"stream {st.sid}"
            n += len(raw)
        assert rec.meta["wpp"]["events"] == n
    return n


@pytest.mark.parametrize("mode", ["blocks", "witness"])
def test_threads_and_asyncio_keep_raw(tmp_path: Path, mode: str) -> None:
    script = tmp_path / "threads.py"
    script.write_text(THREADS)
    out = tmp_path / "t.wt"
    _record(tmp_path, script, out, "--wpp", "--keep-raw", "--wpp-queue", "500", mode=mode)
    assert _check_keep_raw(out) > 1000
    with Recording(out) as rec:
        assert len(rec.streams()) >= 5      # main, three threads, tasks


def _check_offline_grammar(out: Path) -> None:
    """The online grammars equal, up to terminal numbering, SEQUITUR(1) run offline (in one piece)
    on the raw streams interned by ``wpp.symbols.intern_block_streams`` (another interner: dense
    ids by (kind, function, value), checked against the CFGs)."""
    with Recording(out) as rec:
        offline, _cfgs = recording_block_symbols(rec)
        wpp = StoredWpp(rec)
        key = {(int(k), int(f), int(v)): t for t, (k, f, v) in enumerate(zip(
            offline.terminals.kind, offline.terminals.fid, offline.terminals.value))}
        on = wpp.terminals
        to_offline = np.array([key[(int(k), int(f), int(v))] for k, f, v in zip(on.kind, on.fid, on.value)], np.int64)
        sids = [st.sid for st in rec.streams()]
        for s in wpp.streams:
            g = s.grammar
            rhs = np.where(g.rhs >= 0, to_offline[np.maximum(g.rhs, 0)], g.rhs)
            want = sequitur(offline.streams[sids.index(s.sid)], lookahead=True)
            assert np.array_equal(rhs, want.rhs) and np.array_equal(g.off, want.off), f"stream {s.sid}"


@pytest.mark.parametrize("name", ["richards", "nqueens", pytest.param("difflib", marks=pytest.mark.slow)])
def test_corpus_keep_raw_and_independent_blocks_recording(tmp_path: Path, name: str) -> None:
    prog = PROGRAMS[name]
    script = prog.write(tmp_path / name, "small")
    include = tuple(prog.include)
    wpp_out, plain_out = tmp_path / "wpp.wt", tmp_path / "plain.wt"
    _record(tmp_path, script, wpp_out, "--wpp", "--keep-raw", "--lookahead", include=include)
    _check_keep_raw(wpp_out)
    _check_offline_grammar(wpp_out)
    # an independent recording without the builder: the same single-threaded program records
    # the same stream, which the WPP-only recording's grammar must expand to
    only = tmp_path / "only.wt"
    _record(tmp_path, script, only, "--wpp", include=include)
    proc = run_recorded(script, plain_out, include=include)
    assert proc.returncode == 0, proc.stderr[-2000:]
    with Recording(plain_out) as plain, Recording(only) as rec:
        wpp = StoredWpp(rec)
        assert [s.sid for s in wpp.streams] == [s.sid for s in plain.streams() if s.n_events]
        for s in wpp.streams:
            assert np.array_equal(wpp.events(s.sid), plain.events(s.sid))
            assert len(rec.events(s.sid)) == 0
    # the read commands see the grammar-only recording as the independent one
    for cmd in (["trace"], ["counts"], ["info", "--json"]):
        got, want = (subprocess.run([sys.executable, "-m", "wholetrace.cli", *cmd, str(p)], capture_output=True,
                                    text=True, env=ENV, timeout=600) for p in (only, plain_out))
        assert got.returncode == want.returncode == 0, got.stderr
        if cmd[0] == "info":
            g, w = json.loads(got.stdout), json.loads(want.stdout)
            assert [s["events"] for s in g["streams"]] == [s["events"] for s in w["streams"]] and g["events"]
        else:
            assert got.stdout == want.stdout


def test_wpp_cli_json_print_dot(tmp_path: Path) -> None:
    script = tmp_path / "threads.py"
    script.write_text(THREADS)
    out = tmp_path / "t.wt"
    _record(tmp_path, script, out, "--wpp")
    run = lambda *a: subprocess.run([sys.executable, "-m", "wholetrace.cli", "wpp", str(out), *a],  # noqa: E731
                                    capture_output=True, text=True, env=ENV, timeout=300)
    proc = run("--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    for row in doc["streams"]:
        assert {"stream", "events", "distinct_paths", "rules", "rhs", "len_S", "raw_bytes",
                "encoded_bytes", "ratio"} <= set(row)
        assert row["raw_bytes"] == 4 * row["events"]
        assert row["ratio"] == round(row["raw_bytes"] / row["encoded_bytes"], 2)
    assert {"max_backlog_events", "tail_seconds", "spilled_events"} <= set(doc["builder"])
    import sqlite3   # the totals count the terminal table as stored (review12a MED-2): SQLite's own figure
    conn = sqlite3.connect(out)
    (table_bytes,) = conn.execute("SELECT length(blob) FROM arrays WHERE name = 'wpp.symbols'").fetchone()
    conn.close()
    t = doc["total"]
    assert t["symbols_bytes"] == table_bytes > 0
    assert t["grammar_bytes"] == sum(r["encoded_bytes"] for r in doc["streams"])
    assert t["encoded_bytes"] == t["grammar_bytes"] + table_bytes
    assert t["ratio"] == round(t["raw_bytes"] / t["encoded_bytes"], 2)
    with Recording(out) as rec:   # events as ``info`` counts them: the expanded streams' words
        assert sum(r["events"] for r in doc["streams"]) == sum(
            len(StoredWpp(rec).events(r["stream"])) for r in doc["streams"])
    text = run().stdout
    assert "ratio" in text and "builder lag" in text
    printed = run("--print", "--stream", "0").stdout
    assert "S -> F" in printed
    dot = run("--dot", "--stream", "0").stdout
    assert dot.startswith("digraph stream0") and dot.rstrip().endswith("}")
    bad = run("--stream", "999")
    assert bad.returncode == 2 and "no WPP for stream 999" in bad.stderr


def test_wpp_cli_refuses_a_recording_without_wpp(tmp_path: Path) -> None:
    script = tmp_path / "p.py"
    script.write_text("print(sum(range(10)))\n")
    out = tmp_path / "p.wt"
    _record(tmp_path, script, out)
    proc = subprocess.run([sys.executable, "-m", "wholetrace.cli", "wpp", str(out)], capture_output=True,
                          text=True, env=ENV, timeout=300)
    assert proc.returncode == 2 and "record it with --wpp" in proc.stderr


def test_the_builder_thread_is_invisible_to_the_program(tmp_path: Path) -> None:
    script = tmp_path / "names.py"
    script.write_text("import threading, time\ntime.sleep(0.3)\n"
                      "print(sorted(t.name for t in threading.enumerate()), threading.active_count())\n")
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=ENV, timeout=300)
    out = tmp_path / "n.wt"
    rec = subprocess.run([sys.executable, "-m", "wholetrace.cli", "record", "--wpp", "-o", str(out), str(script)],
                         capture_output=True, text=True, env=ENV, timeout=300)
    assert rec.returncode == 0, rec.stderr
    assert "wholetrace-wpp" not in rec.stdout and "daemon thread" not in rec.stderr
    # the recorder's own flusher thread is a known difference of every mode; the builder adds none
    base = subprocess.run([sys.executable, "-m", "wholetrace.cli", "record", "-o", str(tmp_path / "b.wt"), str(script)],
                          capture_output=True, text=True, env=ENV, timeout=300)
    assert rec.stdout == base.stdout
    assert plain.returncode == 0


def test_the_terminal_table_refuses_ids_past_int32(monkeypatch: pytest.MonkeyPatch) -> None:
    """Terminal ids are int32 (the builder's codes): a table that would need more refuses in one
    line instead of wrapping ids to negative numbers (shown here with the first table's 2**12 slots as the cap)."""
    import wholetrace.wpp.intern as intern
    from wholetrace.errors import UsageError

    monkeypatch.setattr(intern, "MAX_TABLE_BITS", 12)
    it = EventInterner()
    with pytest.raises(UsageError, match="more than 2048 distinct WPP terminals"):
        it.codes(0, np.arange(3000, dtype=np.int32), final=True)
    ok = EventInterner()   # up to the cap it interns as before
    assert ok.codes(0, np.arange(2000, dtype=np.int32), final=True).tolist() == list(range(2000))
