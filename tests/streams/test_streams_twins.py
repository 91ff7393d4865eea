"""Kernels against their pure-Python twins (naive_codecs.py): bits, tables, states, values."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wholetrace import streams
from wholetrace.kernels import predict as K
from wholetrace.streams.codecs import BY_NAME, table_bits

import naive_codecs as N
from streamgen import PREDICTIVE, make_stream, moves, streams as gen_streams

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")


def _twin(cs: streams.CompressedStream, ref: np.ndarray) -> N.Stream:
    tbits = table_bits(BY_NAME[cs.codec], len(ref), cs.segment)
    return N.Stream([int(x) for x in ref], cs.codec, cs.segment, tbits)


def _same(kernel: dict[str, object], twin: dict[str, object]) -> None:
    for key in ("segment", "i", "p", "fbits", "bbits"):
        assert kernel[key] == twin[key], key
    for key in ("context", "ftable", "btable"):
        assert [int(x) for x in kernel[key]] == twin[key], key  # type: ignore[attr-defined]


@pytest.mark.parametrize("codec", PREDICTIVE)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_cursor_walks_match_the_twin(codec: str, data: st.DataObject) -> None:
    """The stored park of every segment, and the state after every move of a random walk,
    equal the twin's (whose bits come from regrouping the whole prediction list)."""
    ref = data.draw(gen_streams(min_size=1, max_size=120))
    cs = streams.encode(ref, codec, segment=data.draw(st.sampled_from([16, 50])))
    twin = _twin(cs, ref)
    m = len(ref)
    cur = cs.cursor(0, step=True)
    for s in range(twin.nseg):  # every park, reached without a step
        q = s * twin.segment + twin.mid(s)
        cur.seek(q)
        twin.seek(q)
        _same(cur.state(), twin.state())
    for op, arg in data.draw(moves(m, max_moves=25)):
        if op == "seek":
            cur.seek(arg)
            twin.seek(arg)
        else:
            forward = op.startswith("next")
            for _ in range(arg):
                want = twin.next() if forward else twin.prev()
                got = cur.next_many(1) if forward else cur.prev_many(1)
                assert got.tolist() == ([] if want is None else [want])
        assert cur.pos == twin.pos
        _same(cur.state(), twin.state())


@pytest.mark.nojit
def test_one_small_walk_matches_the_twin() -> None:
    ref = make_stream("periodic", 40, seed=3)
    for codec in ("bfcm-2", "bdfcm-1", "blast-4", "blaststride-2"):
        cs = streams.encode(ref, codec, segment=16)
        twin = _twin(cs, ref)
        cur = cs.cursor(0, step=True)
        twin.seek(0)
        for forward in [True] * 30 + [False] * 25 + [True] * 7:
            want = twin.next() if forward else twin.prev()
            assert (cur.next() if forward else cur.prev()) == want
            _same(cur.state(), twin.state())


@pytest.mark.nojit
@pytest.mark.parametrize("z", [0, 1, 2, 3, 77, 2**31, 2**63 - 1, 2**64 - 1])
@pytest.mark.parametrize("ib", [0, 2])
def test_bitstack_records_match_the_twin_layout(z: int, ib: int) -> None:
    """Push a miss, hit runs of several lengths and indices; the canonical bits equal the
    twin's and popping returns everything in reverse."""
    preds = [("M", z)] + [("H", 1 if ib else 0)] * 3 + [("H", 0)] * 9 + [("M", z // 3)] + [("H", 0)]
    cap = 4096
    bits = np.zeros(cap // 64 + 1, np.uint64)
    st_ = np.zeros(4, np.int64)
    pay = np.zeros(1, np.uint64)
    for kind, x in preds:
        rec = (K.HIT, x, np.uint64(0)) if kind == "H" else (K.MISS, 0, np.uint64(x))
        assert K.push(bits, cap, st_, 0, pay, 0, ib, N.RUN_MIN, *rec) == 0
    dst = np.zeros_like(bits)
    height = K.canonical(bits, st_, 0, pay, 0, ib, N.RUN_MIN, dst, cap)
    want = N.canonical_bits(preds, ib)
    got = "".join(str(int(dst[p >> 6] >> np.uint64(p & 63)) & 1) for p in range(height))
    assert got == want
    for kind, x in reversed(preds):
        k, idx, payload = K.pop(bits, st_, 0, pay, 0, ib, N.RUN_MIN)
        assert (k, idx if k == K.HIT else int(payload)) == ((K.HIT, x) if kind == "H" else (K.MISS, x))
    assert st_[K.KIND] == K.EMPTY and st_[K.TOP] == 0


@pytest.mark.parametrize("signed", [False, True])
def test_varint_and_packed_bodies_match_the_twin(signed: bool) -> None:
    ref = make_stream("walk", 500, seed=11)
    vals = ref.view(np.int64) if signed else ref
    cs = streams.encode(vals, "varint", segment=64)
    body = cs.to_bytes()[-len(N.varint_bytes([int(x) for x in ref], 64)):]
    assert body == N.varint_bytes([int(x) for x in ref], 64)
    packed = streams.encode(vals, "packed")
    width = N.packed_width([int(x) for x in ref], signed)
    assert packed.nbytes == 28 + 9 + (width * 500 + 7) // 8
    np.testing.assert_array_equal(packed.decode(), vals)


def test_kernel_statuses_for_a_damaged_stack() -> None:
    """Popping garbage reports a status instead of reading outside the stack."""
    bits = np.zeros(2, np.uint64)
    st_ = np.zeros(4, np.int64)
    st_[K.TOP] = 5  # five zero bits: a miss tag and then a gamma prefix that never ends
    pay = np.zeros(1, np.uint64)
    assert K.unpack(bits, st_, 0, pay, 0, 0, N.RUN_MIN) == K.ERR_CORRUPT
    st_[:] = 0
    assert K.pop(bits, st_, 0, pay, 0, 0, N.RUN_MIN)[0] == K.ERR_CORRUPT  # empty stack
    st_[K.KIND] = K.MISS
    pay[0] = np.uint64(2**64 - 1)
    assert K.flush(bits, 40, st_, 0, pay, 0, 0, N.RUN_MIN) == K.ERR_FULL  # 78 bits do not fit in 40
    assert K.ERR_RANGE < 0
