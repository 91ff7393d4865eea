"""Round trips under random walks for every codec: the oracle is the array that was encoded."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wholetrace import streams
from wholetrace.streams import CODEC_NAMES

from streamgen import KINDS, PREDICTIVE, make_stream, moves, streams as gen_streams

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")


def walk(cs: streams.CompressedStream, ref: np.ndarray, ops: list[tuple[str, int]], start: int = 0,
         step: bool | None = None) -> None:
    """Apply ``ops`` to a cursor and check every value and position against ``ref``."""
    m = ref.shape[0]
    cur = cs.cursor(start, step=step)
    pos = start
    for op, arg in ops:
        if op == "seek":
            cur.seek(arg)
            pos = arg
        elif op == "next":
            if pos == m:
                with pytest.raises(StopIteration):
                    cur.next()
            else:
                assert cur.next() == ref[pos], (op, pos)
                pos += 1
        elif op == "prev":
            if pos == 0:
                with pytest.raises(StopIteration):
                    cur.prev()
            else:
                pos -= 1
                assert cur.prev() == ref[pos], (op, pos)
        elif op == "next_many":
            got = cur.next_many(arg)
            want = ref[pos:pos + arg]
            np.testing.assert_array_equal(got, want)
            pos += want.shape[0]
        else:
            got = cur.prev_many(arg)
            want = ref[max(0, pos - arg):pos][::-1]
            np.testing.assert_array_equal(got, want)
            pos -= want.shape[0]
        assert cur.pos == pos


@pytest.mark.parametrize("codec", CODEC_NAMES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_walks_decode_every_value(codec: str, data: st.DataObject) -> None:
    ref = data.draw(gen_streams(min_size=0 if not codec.startswith("b") else 1))
    segment = data.draw(st.sampled_from([16, 23, 64, 1 << 16]))
    cs = streams.encode(ref, codec, segment=segment)
    assert cs.codec == codec and len(cs) == ref.shape[0]
    np.testing.assert_array_equal(cs.decode(), ref)
    # predictor codecs: the cursor stepping the predictor, or the buffered one (short streams' default)
    step = data.draw(st.sampled_from([None, True, False]))
    walk(cs, ref, data.draw(moves(ref.shape[0])), start=data.draw(st.integers(0, ref.shape[0])), step=step)
    i = data.draw(st.integers(0, ref.shape[0]))
    j = data.draw(st.integers(i, ref.shape[0]))
    np.testing.assert_array_equal(cs.decode_range(i, j), ref[i:j])


@pytest.mark.parametrize("step", [True, False])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("codec", PREDICTIVE)
def test_full_sweeps_both_ways(codec: str, kind: str, step: bool) -> None:
    """Every value forward then backward across many segments, then the same through a
    round trip of the bytes; with the stepping and the buffered cursor."""
    ref = make_stream(kind, 3000, seed=len(codec) * 31 + len(kind))
    cs = streams.CompressedStream.from_bytes(streams.encode(ref, codec, segment=257).to_bytes())
    cur = cs.cursor(step=step)
    np.testing.assert_array_equal(cur.next_many(5000), ref)
    np.testing.assert_array_equal(cur.prev_many(5000), ref[::-1])
    assert [cur.next() for _ in range(300)] == ref[:300].tolist()


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_state_is_the_same_whichever_way_the_cursor_arrived(data: st.DataObject) -> None:
    """At one position, the predictor state (canonical stack bits, both tables, context) is
    equal after: a fresh seek, a forward sweep from 0, a backward sweep from the end, and a
    random walk followed by a seek."""
    codec = data.draw(st.sampled_from(PREDICTIVE))
    ref = data.draw(gen_streams(min_size=1, max_size=300))
    segment = data.draw(st.sampled_from([16, 40, 1 << 16]))
    cs = streams.encode(ref, codec, segment=segment)
    m = ref.shape[0]
    q = data.draw(st.integers(0, m))
    fresh = cs.cursor(q, step=True).state()
    fwd = cs.cursor(0, step=True)
    fwd.next_many(q)
    back = cs.cursor(m, step=True)
    back.prev_many(m - q)
    wander = cs.cursor(data.draw(st.integers(0, m)), step=True)
    for op, arg in data.draw(moves(m, max_moves=10)):
        if op == "seek" or op.endswith("_many"):
            getattr(wander, op)(arg)
        else:
            try:
                getattr(wander, op)()
            except StopIteration:
                pass
    wander.seek(q)
    for other in (fwd, back, wander):
        _same_state(fresh, other.state())


def _same_state(a: dict[str, object], b: dict[str, object]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], np.ndarray):
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
        else:
            assert a[k] == b[k], k


@pytest.mark.nojit
@pytest.mark.parametrize("codec", CODEC_NAMES)
def test_small_round_trip_every_codec(codec: str) -> None:
    """Small enough to run without the JIT: both sweeps, seeks and a range, across segments."""
    ref = make_stream("mixed", 45, seed=7)
    cs = streams.encode(ref, codec, segment=16)
    for step in (True, False):
        _sweep(cs, ref, step)


def _sweep(cs: streams.CompressedStream, ref: np.ndarray, step: bool) -> None:
    cur = cs.cursor(step=step)
    np.testing.assert_array_equal(cur.next_many(100), ref)
    np.testing.assert_array_equal(cur.prev_many(100), ref[::-1])
    cur.seek(33)
    assert cur.next() == ref[33] and cur.prev() == ref[33] and cur.prev() == ref[32]
    np.testing.assert_array_equal(cs.decode_range(5, 40), ref[5:40])
