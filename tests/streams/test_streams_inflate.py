"""The one-pass segment kernels (kernels/varint.py: inflate, copy_run, unpack_run) against
plain-Python reading of the bytes and values they are given, and the cursor fast paths
(short streams, contiguous backward results) against the encoded array."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wholetrace import streams
from wholetrace.errors import StreamError
from wholetrace.kernels import varint as V
from wholetrace.streams import CODEC_NAMES

import naive_codecs as N
from streamgen import make_stream

MASK = (1 << 64) - 1


def _leb(values: list[int], delta: bool) -> bytes:
    """LEB128 of the zigzag values (or of the zigzag deltas from 0), in plain Python."""
    out, prev = bytearray(), 0
    for v in values:
        z = N.zz(v - prev if delta else v)
        prev = v
        while z >= 0x80:
            out.append((z & 0x7F) | 0x80)
            z >>= 7
        out.append(z)
    return bytes(out)


def _expected(values: list[int], lo: int, hi: int, n_out: int, first: int, step: int) -> list[int]:
    out = [0] * n_out
    for k in range(lo, hi):
        out[first + step * (k - lo)] = values[k]
    return out


def _check_inflate(values: list[int], delta: bool, keep: bool, lo: int, hi: int, step: int) -> None:
    buf = _leb(values, delta)
    n = len(values)
    pad = 3  # the run lands inside a larger array, the rest untouched
    out = np.zeros(hi - lo + 2 * pad, np.uint64)
    first = pad if step == 1 else pad + hi - lo - 1
    seg = np.zeros(n, np.uint64) if keep else np.zeros(0, np.uint64)
    assert V.inflate(buf, 0, len(buf), n, delta, seg, lo, hi, out, first, step) == 0
    assert out.tolist() == _expected(values, lo, hi, hi - lo + 2 * pad, first, step)
    if keep:
        assert seg.tolist() == values


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(st.integers(0, MASK), min_size=1, max_size=80), delta=st.booleans(), keep=st.booleans(),
       backward=st.booleans(), data=st.data())
def test_inflate_matches_plain_python(values: list[int], delta: bool, keep: bool, backward: bool,
                                      data: st.DataObject) -> None:
    lo = data.draw(st.integers(0, len(values)))
    hi = data.draw(st.integers(lo, len(values)))
    _check_inflate(values, delta, keep, lo, hi, -1 if backward else 1)


@pytest.mark.nojit
def test_inflate_small_cases_without_jit() -> None:
    values = [0, 1, MASK, 5, 2**63, 7, 7, 300]
    for delta in (False, True):
        _check_inflate(values, delta, True, 0, 8, 1)
        _check_inflate(values, delta, False, 2, 6, -1)


@pytest.mark.nojit
def test_inflate_reports_bad_bytes() -> None:
    seg = np.zeros(3, np.uint64)
    out = np.zeros(3, np.uint64)
    good = _leb([1, 2, 3], False)
    assert V.inflate(good[:-1], 0, len(good) - 1, 3, False, seg, 0, 3, out, 0, 1) == V.ERR_TRUNCATED
    assert V.inflate(good + b"\x00", 0, len(good) + 1, 3, False, seg, 0, 3, out, 0, 1) == V.ERR_TRAILING
    overlong = bytes([0xFF] * 10 + [0x01])
    assert V.inflate(overlong, 0, len(overlong), 1, False, seg, 0, 1, out, 0, 1) == V.ERR_OVERLONG
    # a partial decode without a buffer stops at hi and does not look further
    assert V.inflate(good + b"\x00", 0, len(good) + 1, 3, False, np.zeros(0, np.uint64), 0, 2, out, 0, 1) == 0


@pytest.mark.nojit
def test_copy_run_and_unpack_run_both_ways() -> None:
    src = np.arange(10, 20, dtype=np.uint64)
    out = np.zeros(6, np.uint64)
    V.copy_run(src, 2, 6, out, 1, 1)
    assert out.tolist() == [0, 12, 13, 14, 15, 0]
    V.copy_run(src, 2, 6, out, 4, -1)
    assert out.tolist() == [0, 15, 14, 13, 12, 0]
    values = [3, 9, 4, 100, 7, 0, 55]
    width = max(values).bit_length()
    words = np.zeros((len(values) * width + 63) // 64 + 1, np.uint64)
    V.pack_fixed(np.array(values, np.uint64), np.uint64(0), width, words)
    for first, step in ((0, 1), (4, -1)):
        got = np.zeros(5, np.uint64)
        V.unpack_run(words, np.uint64(5), width, 1, 6, got, first, step)
        assert got.tolist() == _expected([v + 5 for v in values], 1, 6, 5, first, step)


@pytest.mark.parametrize("codec", CODEC_NAMES)
@pytest.mark.parametrize("m", [1, 89, 300])
def test_short_whole_walks_are_contiguous_and_exact(codec: str, m: int) -> None:
    """A new cursor's whole walk each way, and decode_range, on short streams (the fast
    paths); backward results are contiguous arrays, not reversed views."""
    ref = make_stream("mixed", m, seed=m)
    cs = streams.CompressedStream.from_bytes(streams.encode(ref, codec).to_bytes())
    fwd = cs.cursor(0).next_many(m)
    bwd = cs.cursor(m).prev_many(m)
    np.testing.assert_array_equal(fwd, ref)
    np.testing.assert_array_equal(bwd, ref[::-1])
    assert bwd.flags.c_contiguous and fwd.flags.c_contiguous
    np.testing.assert_array_equal(cs.decode_range(0, m), ref)
    cur = cs.cursor(0)  # a whole walk keeps no buffer on short streams: the moves after it decode again
    cur.next_many(m)
    assert cur.prev() == ref[m - 1]
    np.testing.assert_array_equal(cur.prev_many(5), ref[max(0, m - 6):m - 1][::-1])
    assert cur.next() == ref[max(0, m - 6)]
    signed = streams.encode(ref.view(np.int64), codec)
    assert signed.cursor(m).prev_many(m).dtype == np.int64


def test_default_cursor_steps_the_predictor_on_long_streams_only() -> None:
    ref = make_stream("periodic", streams.SHORT_WALK + 1, seed=5)
    long = streams.encode(ref, "bfcm-2")
    short = streams.encode(ref[:streams.SHORT_WALK], "bfcm-2")
    assert hasattr(long.cursor(), "state") and not hasattr(short.cursor(), "state")
    assert hasattr(short.cursor(step=True), "state") and not hasattr(long.cursor(step=False), "state")
    np.testing.assert_array_equal(long.cursor(step=False).next_many(len(ref)), ref)


def test_a_damaged_varint_segment_is_a_stream_error() -> None:
    ref = np.arange(50, dtype=np.uint64)
    cs = streams.encode(ref, "varint", segment=16)
    body = cs._body  # noqa: SLF001 - damage the decoded form behind the checksum
    body.data[body.offsets[1]:body.offsets[2]] = 0x80  # every byte continues: the segment ends early
    with pytest.raises(StreamError, match="does not hold"):
        cs.cursor(20).next()
    with pytest.raises(StreamError, match="does not hold"):
        cs.decode_range(0, 50)
