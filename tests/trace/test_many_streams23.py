"""Recordings with many small streams (explore22 MED-6): read in runs, decoded exactly.

A program of 300 asyncio tasks (a stream each) and 200 fresh ``contextvars`` contexts (a
stream each) is recorded in every trace mode.  Oracles: the pure-Python count walk over the
raw `blocks` streams (``tests/naive_decode.py``) and the pure-Python regenerators of witness,
branches and path streams (``regen.driver``, ``tests/naive_paths.py``), each stream read on
its own through ``Recording.events``; the read-ahead (``Trace.stream_chunks``) is also checked
chunk for chunk against ``Recording.iter_chunks``, with streams asked in order, backwards and
with gaps, and with a threshold that makes some streams "large" (read alone) between runs.
"""

from __future__ import annotations

import shutil
import sqlite3
import textwrap
from pathlib import Path

import numpy as np
import pytest

from naive_decode import count_events
from naive_paths import path_plans, regenerate_path_stream
from wholetrace.errors import StoreError
from wholetrace.instrument.cfg import CFG
from wholetrace.regen.driver import recording_plans, regenerate_stream
from wholetrace.store import Recording
from wholetrace.trace import session
from wholetrace.trace.decode import Rows, StreamDecoder
from wholetrace.trace.session import Trace
from wtutil import run_plain, run_recorded

PROGRAM = '''
    import asyncio
    import contextvars

    def gen(n):
        for i in range(n):
            yield i

    async def task(i):
        t = 0
        try:
            if i % 5 == 0:
                raise KeyError(i)
            for v in gen(i % 4):
                t += v
        except KeyError:
            t = -1
        finally:
            t += 1
        await asyncio.sleep(0)
        return t

    async def main():
        print(sum(await asyncio.gather(*(task(i) for i in range(300)))))

    def step(i):
        return sum(gen(i % 3)) if i % 2 else -i

    asyncio.run(main())
    print(sum(contextvars.Context().run(step, i) for i in range(200)))
'''
MODES = ("blocks", "witness", "branches", "path")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("many")
    script = root / "many.py"
    script.write_text(textwrap.dedent(PROGRAM))
    plain = run_plain(script)
    out = {}
    for mode in MODES:
        wt = root / f"many.{mode}.wt"
        r = run_recorded(script, wt, mode=mode, options=("--no-wpp",) if mode == "path" else ())
        assert (r.returncode, r.stdout) == (plain.returncode, plain.stdout), r.stderr[-2000:]
        out[mode] = wt
    return out


def _raw(rec: Recording) -> list[np.ndarray]:
    return [rec.events(s.sid) for s in rec.streams()]


def test_the_program_makes_hundreds_of_streams(recorded: dict[str, Path]) -> None:
    with Recording(recorded["blocks"]) as rec:
        assert len(rec.streams()) > 500


@pytest.mark.parametrize("small", [session.SMALL_STREAM, 4])
def test_counts_equal_the_reference_walk(recorded: dict[str, Path], small: int,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "SMALL_STREAM", small)   # 4: most task streams are "large"
    with Recording(recorded["blocks"]) as rec:
        cfgs = {f.fid: CFG.from_json(f.cfg) for f in rec.functions()}
        want = count_events(_raw(rec), cfgs)
        trace = Trace(rec)
        tally = trace.counts()
        for sh in trace.shapes():
            blocks, stmts, edges, enters = want[sh.fid]
            assert np.array_equal(tally.blocks_of(sh), blocks), sh.qualname
            assert np.array_equal(tally.stmts_of(sh), stmts), sh.qualname
            assert np.array_equal(tally.edges_of(sh), edges), sh.qualname
            assert tally.activations_of(sh.fid) == enters, sh.qualname


@pytest.mark.parametrize("mode", ("witness", "branches", "path"))
def test_reduced_modes_count_and_decode_like_the_twins(recorded: dict[str, Path], mode: str) -> None:
    with Recording(recorded["blocks"]) as rec:
        cfgs = {f.fid: CFG.from_json(f.cfg) for f in rec.functions()}
        want = count_events(_raw(rec), cfgs)
    with Trace.open(recorded[mode]) as trace:
        rec = trace.recording
        raws = _raw(rec)
        if mode == "path":
            twins = [np.concatenate(list(regenerate_path_stream([r], path_plans(rec)))) for r in raws]
        else:
            twins = [np.concatenate(list(regenerate_stream([r], recording_plans(rec)))) for r in raws]
        sids = [s.sid for s in trace.streams()]
        for sid, twin in zip(sids, twins):
            assert np.array_equal(trace.events(sid), twin), sid
        tally = trace.counts()
        for sh in trace.shapes():
            assert np.array_equal(tally.blocks_of(sh), want[sh.fid][0]), sh.qualname
            assert tally.activations_of(sh.fid) == want[sh.fid][3], sh.qualname
        for sid, twin in reversed(list(zip(sids, twins))[::7]):     # backwards, with gaps
            assert np.array_equal(trace.events(sid), twin), sid


@pytest.mark.parametrize(("small", "run"), [(session.SMALL_STREAM, session.RUN_STREAMS), (4, 7)])
def test_read_ahead_gives_each_stream_its_chunks(recorded: dict[str, Path], small: int, run: int,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "SMALL_STREAM", small)
    monkeypatch.setattr(session, "RUN_STREAMS", run)
    with Trace.open(recorded["witness"]) as trace:
        rec = trace.recording
        sids = [s.sid for s in trace.streams()]
        for order in (sids, sids[::3], sids[::-1], sids[5:40] + sids[:5]):
            for sid in order:
                got = list(trace.stream_chunks(sid))
                want = list(rec.iter_chunks(sid))
                assert len(got) == len(want) and all(np.array_equal(a, b) for a, b in zip(got, want)), sid
        asked = sids[1::4]
        got = dict(rec.streams_chunks(asked))
        assert list(got) == asked
        for sid in asked:
            assert [c.tolist() for c in got[sid]] == [c.tolist() for c in rec.iter_chunks(sid)]


def test_counting_reads_the_chunks_in_a_few_queries(recorded: dict[str, Path]) -> None:
    """Not two queries per stream (20,000 task streams cost 24 s of SQLite in explore22)."""
    with Trace.open(recorded["witness"]) as trace:
        n_streams = len(trace.streams())
        statements: list[str] = []
        trace.recording._conn.set_trace_callback(statements.append)   # type: ignore[union-attr]
        trace.counts()
        for sid in range(n_streams):
            trace.events(sid)
        chunk_reads = [s for s in statements if "FROM chunks" in s]
        assert len(chunk_reads) < 20, (n_streams, chunk_reads[:5])


def test_a_decoder_starts_small_and_hands_out_the_same_batches(recorded: dict[str, Path],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    with Trace.open(recorded["witness"]) as trace:
        assert StreamDecoder(trace.tables).out.nbytes < 100_000     # not 6 x 65,536 rows per stream
        sids = [s.sid for s in trace.streams()]

        def batches(capacity: int) -> list[list[int]]:
            out = []
            for sid in sids[:40]:
                dec = StreamDecoder(trace.tables, capacity=capacity)
                got = list(dec.decode(trace.recording.iter_chunks(sid)))
                out.append([len(r) for r in got])
                out.append(Rows.concat(got).data.tolist())
            return out

        for capacity in (8, 64, 1 << 16):
            monkeypatch.setattr("wholetrace.trace.decode.FIRST_ROWS", 1)
            small = batches(capacity)
            monkeypatch.setattr("wholetrace.trace.decode.FIRST_ROWS", 1 << 20)
            assert small == batches(capacity), capacity


def test_a_corrupt_chunk_is_reported_as_before(recorded: dict[str, Path], tmp_path: Path) -> None:
    bad = tmp_path / "bad.wt"
    shutil.copy(recorded["witness"], bad)
    with Recording(bad) as rec:
        sid = rec.streams()[100].sid
    conn = sqlite3.connect(bad)
    conn.execute("UPDATE chunks SET blob = x'00' WHERE sid = ? AND seq = 0", (sid,))
    conn.commit()
    conn.close()
    with Trace.open(bad) as trace:
        with pytest.raises(StoreError) as alone:
            list(trace.recording.iter_chunks(sid))
        for s in range(sid):                      # the streams before it read as usual
            trace.events(s)
        with pytest.raises(StoreError) as ahead:
            trace.events(sid)
        assert str(ahead.value) == str(alone.value)
        trace.events(sid + 1)                     # and those after it
        trace.events(sid - 1)
        trace.events(sid + 1)                     # a stream skipped is not read
    with Trace.open(bad) as trace, pytest.raises(StoreError) as counting:
        trace.counts()
    assert str(counting.value) == str(alone.value)
