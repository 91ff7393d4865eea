"""`Tables.load_blocks` (a batch of block-id functions in one numpy pass) against `Tables.load`, its
per-function twin; and decoding with functions prefetched per chunk against decoding them one by one."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from inline_programs import INLINE
from wholetrace.trace.counts import Tally
from wholetrace.trace.session import Trace
from wholetrace.trace.tables import Tables
from wtutil import run_recorded

NAMES = ["generators", "exceptions", "finally_with", "classes_match"]


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("batch")
    out = {}
    for name in NAMES:
        script = root / f"{name}.py"
        script.write_text(textwrap.dedent(INLINE[name]))
        out[name] = root / f"{name}.wt"
        r = run_recorded(script, out[name])
        assert r.returncode == 0, r.stderr
    return out


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("batch", [1, 3, 1000])
def test_load_blocks_builds_the_tables_load_builds(recordings: dict[str, Path], name: str, batch: int) -> None:
    with Trace.open(recordings[name]) as trace:
        shapes = trace.shapes()
        one = Tables(trace.functions, trace.shape, "blocks")
        many = Tables(trace.functions, trace.shape, "blocks")
        for sh in shapes[::-1]:                         # another order than the batches'
            one.load(sh.fid)
        for i in range(0, len(shapes), batch):
            many.load_blocks(shapes[i:i + batch])
    assert len(shapes) >= 3
    by_one = {sh.fid: _rows(one, sh.fid) for sh in shapes}
    assert {sh.fid: _rows(many, sh.fid) for sh in shapes} == by_one
    assert many.max_blocks == one.max_blocks and len(many.pool) >= many.blk.n and len(many.scratch) == len(one.scratch)


def _rows(t: Tables, fid: int) -> tuple[object, ...]:
    """A function's rows of every table, read through its ``fn`` row (independent of load order)."""
    from wholetrace.kernels import decode as K

    f = t.fn[fid]
    bb, nb, sb, ns, eb, ne, yb, ny = (int(f[k]) for k in (K.FN_BBASE, K.FN_NB, K.FN_SBASE, K.FN_NS, K.FN_EBASE,
                                                          K.FN_NE, K.FN_YBASE, K.FN_NY))
    blk = t.blk.a[bb:bb + nb]
    succ = [t.succ.a[s:s + n].tolist() for s, n in zip(blk[:, K.BK_SUCC].tolist(), blk[:, K.BK_NSUCC].tolist())]
    return (int(f[K.FN_READY]), int(f[K.FN_MODE]), int(f[K.FN_GEN]), int(f[K.FN_NW]), nb, ns, ne,
            blk[:, K.BK_FLAGS].tolist(), blk[:, K.BK_NSUCC].tolist(), succ,
            t.stm.a[sb:sb + ns].tolist(), t.edg.a[eb:eb + ne].tolist(), t.ysl.a[yb:yb + ny].tolist())


@pytest.mark.parametrize("name", NAMES)
def test_prefetched_counts_equal_one_by_one(recordings: dict[str, Path], name: str) -> None:
    """The counts with the functions of each chunk loaded in a batch equal those with every
    function loaded when the kernel asks for it (no prefetch); statement counts of all
    functions at once (``Tally.stmt_counts``) equal those of each function on its own."""
    with Trace.open(recordings[name]) as trace:
        fast = trace.tally()
        t2 = Tables(trace.functions, trace.shape, trace.mode)
        slow = Tally(t2)
        for st in trace.streams():
            dec = trace.decoder(st.sid)
            dec.tables = t2
            dec.count(trace.recording.iter_chunks(st.sid), slow)
        every = fast.stmt_counts()                      # all functions at once (exceptions cut blocks short)
        for sh in trace.shapes():
            if sh.fid in t2.shapes:
                assert np.array_equal(fast.piece(every, sh), slow.stmts_of(sh)), sh.qualname
                assert np.array_equal(fast.blocks_of(sh), slow.blocks_of(sh)), sh.qualname
                assert np.array_equal(fast.edges_of(sh), slow.edges_of(sh)), sh.qualname
                assert np.array_equal(fast.stmts_of(sh), slow.stmts_of(sh)), sh.qualname
                assert fast.activations_of(sh.fid) == slow.activations_of(sh.fid)
        assert set(t2.shapes) == set(trace.tables.shapes)


@pytest.mark.parametrize("name", NAMES)
def test_block_columns_against_the_block_lists(recordings: dict[str, Path], name: str) -> None:
    """``block_first`` and ``call_blocks`` (worked out in bulk) against their definitions over
    each block's statement list: its first statement; it starts with a call-capable statement
    or holds a ``yield``."""
    with Trace.open(recordings[name]) as trace:
        for sh in trace.shapes():
            assert sh.block_first.tolist() == [b[0] if b else -1 for b in sh.block_stmts], sh.qualname
            want = [bool(b) and bool(sh.stmt_calls[b[0]] or sh.stmt_suspends[b].any()) for b in sh.block_stmts]
            assert sh.call_blocks.tolist() == want, sh.qualname
