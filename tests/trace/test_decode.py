"""The decoding kernel against its slow twins (``tests/naive_decode.py``, ``regen.driver``, ``tests/naive_paths.py``).

Oracles: `blocks` streams as recorded (the ground truth: decoding them must give them back
event for event), the pure-Python count walk and activation form over the raw events, and
the pure-Python witness regenerator.  Recordings: the inline programs (generators, nested
exceptions, loops, finally/with, match) plus a deep recursion, in blocks, witness,
branches and path modes.  A subset runs again with ``NUMBA_DISABLE_JIT=1`` (``-m nojit``).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from inline_programs import INLINE
from naive_decode import activation_form, count_events
from naive_paths import path_plans, regenerate_path_stream
from wholetrace.instrument.cfg import CFG
from wholetrace.regen.driver import recording_plans, regenerate_stream
from wholetrace.store import Recording
from wholetrace.trace.counts import Tally
from wholetrace.trace.decode import EID_ENTER, EID_LEAVE, Rows, StreamDecoder
from wholetrace.trace.session import Trace, block_events
from wtutil import run_plain, run_recorded

MODES = ("blocks", "witness", "branches", "path")
DEEP = '''
    def down(n):
        if n == 0:
            raise ValueError("bottom")
        try:
            return down(n - 1)
        finally:
            pass
    def walk(n):
        for i in range(n):
            yield i
    try:
        down(150)
    except ValueError as e:
        print("caught", e)
    print(sum(walk(300)))
'''
PROGRAMS = {**INLINE, "deep": DEEP}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path]]:
    root = tmp_path_factory.mktemp("decode")
    out: dict[str, dict[str, Path]] = {}
    for name, src in PROGRAMS.items():
        script = root / f"{name}.py"
        script.write_text(textwrap.dedent(src))
        plain = run_plain(script)
        out[name] = {}
        for mode in MODES:
            wt = root / f"{name}.{mode}.wt"
            r = run_recorded(script, wt, mode=mode, options=("--no-wpp",) if mode == "path" else ())
            assert (r.returncode, r.stdout) == (plain.returncode, plain.stdout), r.stderr[-2000:]
            out[name][mode] = wt
    return out


def _rows(trace: Trace, sid: int, **kw: object) -> Rows:
    return Rows.concat(trace.rows(sid, **kw))  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_blocks_streams_decode_to_themselves(recorded: dict[str, dict[str, Path]], name: str) -> None:
    with Trace.open(recorded[name]["blocks"]) as trace:
        for st in trace.streams():
            raw = trace.recording.events(st.sid)
            assert np.array_equal(trace.events(st.sid), raw)
            assert trace.activation_form(st.sid) == activation_form(raw)


def _twin(trace: Trace, mode: str, raw: np.ndarray) -> np.ndarray:
    """The slow twin's blocks stream of one raw stream."""
    if mode == "path":
        return np.concatenate(list(regenerate_path_stream([raw], path_plans(trace.recording))))
    return np.concatenate(list(regenerate_stream([raw], recording_plans(trace.recording))))


@pytest.mark.parametrize("mode", ("witness", "branches", "path"))
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_reduced_streams_decode_like_the_reference_regenerator(recorded: dict[str, dict[str, Path]],
                                                             name: str, mode: str) -> None:
    with Trace.open(recorded[name][mode]) as trace:
        for st in trace.streams():
            raw = trace.recording.events(st.sid)
            want = _twin(trace, mode, raw)
            assert np.array_equal(trace.events(st.sid), want)
            assert trace.activation_form(st.sid) == activation_form(want)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_counts_equal_the_reference_walk(recorded: dict[str, dict[str, Path]], name: str) -> None:
    with Recording(recorded[name]["blocks"]) as rec:
        cfgs = {f.fid: CFG.from_json(f.cfg) for f in rec.functions()}
        want = count_events((rec.events(s.sid) for s in rec.streams()), cfgs)
        trace = Trace(rec)
        tally = trace.counts()
        for sh in trace.shapes():
            blocks, stmts, edges, enters = want[sh.fid]
            assert np.array_equal(tally.blocks_of(sh), blocks), sh.qualname
            assert np.array_equal(tally.stmts_of(sh), stmts), sh.qualname
            assert np.array_equal(tally.edges_of(sh), edges), sh.qualname
            assert tally.activations_of(sh.fid) == enters, sh.qualname


@pytest.mark.parametrize("name", ["generators", "exceptions", "deep"])
def test_reduced_modes_count_what_blocks_count(recorded: dict[str, dict[str, Path]], name: str) -> None:
    from wholetrace.profile import profiles

    with Trace.open(recorded[name]["blocks"]) as t:
        base = {p.qualname: p for p in profiles(t)}
    for mode in ("witness", "branches", "path"):
        with Trace.open(recorded[name][mode]) as t:
            for p in profiles(t):
                q = base[p.qualname]
                assert np.array_equal(p.blocks, q.blocks) and np.array_equal(p.stmts, q.stmts), (mode, p.qualname)
                if not p.shape.is_generator:   # blocks mode guesses which suspension resumes
                    assert np.array_equal(p.edges, q.edges), (mode, p.qualname)


@pytest.mark.parametrize("mode", MODES)
def test_rows_do_not_depend_on_chunking_or_buffer_sizes(recorded: dict[str, dict[str, Path]], mode: str) -> None:
    for name in ("generators", "deep"):
        with Trace.open(recorded[name][mode]) as trace:
            for st in trace.streams():
                raw = trace.recording.events(st.sid)
                whole = _rows(trace, st.sid).data
                for size, cap in ((1, 64), (3, 200), (997, 1 << 16)):
                    dec = StreamDecoder(trace.tables, capacity=cap)
                    dec.stack = dec.stack[:1]                  # grows by status
                    pieces = [raw[i:i + size] for i in range(0, len(raw), size)]
                    got = Rows.concat(dec.decode(pieces)).data
                    assert np.array_equal(got, whole), (name, size)


def test_rows_name_activations_and_parents(recorded: dict[str, dict[str, Path]]) -> None:
    with Trace.open(recorded["deep"]["blocks"]) as trace:
        rows = _rows(trace, 0)
        enter, leave = rows.eid == EID_ENTER, rows.eid == EID_LEAVE
        assert np.array_equal(np.sort(rows.act[enter]), np.arange(enter.sum()))
        assert np.array_equal(np.sort(rows.act[leave]), np.arange(leave.sum()))   # every activation left
        parent = dict(zip(rows.act[enter].tolist(), rows.aux[enter].tolist()))
        names = {sh.fid: sh.qualname for sh in trace.shapes()}
        fid = dict(zip(rows.act[enter].tolist(), rows.fid[enter].tolist()))
        downs = [a for a, f in fid.items() if names[f] == "down"]
        assert len(downs) == 151
        assert all(names[fid[parent[a]]] in ("down", "<module>") for a in downs)
        assert max(a for a in downs) == downs[0] + 150                 # nested: consecutive ids


@pytest.mark.nojit
@pytest.mark.parametrize("mode", MODES)
def test_pure_python_kernel_agrees(recorded: dict[str, dict[str, Path]], mode: str) -> None:
    """Under NUMBA_DISABLE_JIT=1 this runs the kernel as Python (the nojit run of make test)."""
    with Trace.open(recorded["exceptions"][mode]) as trace:
        for st in trace.streams():
            raw = trace.recording.events(st.sid)
            want = raw if mode == "blocks" else _twin(trace, mode, raw)
            got = np.concatenate([block_events(r) for r in trace.rows(st.sid)])
            assert np.array_equal(got, want)


def _tally_of_rows(trace: Trace) -> Tally:
    """The reference twin of ``StreamDecoder.count``: every row handed out, then tallied."""
    trace.tables.reset()
    tally = Tally(trace.tables)
    for st in trace.streams():
        for rows in trace.rows(st.sid):
            tally.add(rows)
    return tally


def _same_tally(a: Tally, b: Tally) -> bool:
    n = (len(a.tables.fn), a.tables.blk.n, a.tables.edg.n, a.tables.stm.n)
    return all(np.array_equal(x[:k], y[:k]) for x, y, k in
               ((a.enters, b.enters, n[0]), (a.block, b.block, n[1]), (a.edge, b.edge, n[2]), (a.cut, b.cut, n[3])))


@pytest.mark.parametrize("mode", MODES)
def test_fused_count_equals_rows_then_tally(recorded: dict[str, dict[str, Path]], mode: str) -> None:
    """``kernels.decode.count`` (decode and tally in one call) against decode, rows handed out,
    then ``kernels.decode.tally``; whatever the chunking, the buffer and the stack sizes."""
    for name in ("generators", "deep", "exceptions"):
        with Trace.open(recorded[name][mode]) as trace:
            want = _tally_of_rows(trace)
            assert want.block.sum() > 0
            for size, cap in ((1, 1), (3, 7), (997, 4096)):
                trace.tables.reset()
                got = Tally(trace.tables)
                for st in trace.streams():
                    raw = trace.recording.events(st.sid)
                    dec = StreamDecoder(trace.tables)
                    dec.stack = dec.stack[:1]                  # grows by status
                    dec.count([raw[i:i + size] for i in range(0, len(raw), size)], got, rows=cap)
                assert _same_tally(got, want), (name, size, cap)


@pytest.mark.nojit
@pytest.mark.parametrize("mode", ("blocks", "witness"))
def test_fused_count_pure_python(recorded: dict[str, dict[str, Path]], mode: str) -> None:
    """Under NUMBA_DISABLE_JIT=1: the counting kernel as Python, against rows then tally."""
    with Trace.open(recorded["exceptions"][mode]) as trace:
        want = _tally_of_rows(trace)
        assert _same_tally(trace.tally(), want)
