"""The stored layout of the WET value log (runtime/wetlayout.py) gives back the plain columns."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wholetrace.runtime.wetlayout import (back_refs, buckets, pack_chunk, pack_objects, planes, unpack_chunk,
                                         unpack_objects, unplanes)

_I64 = st.integers(-(1 << 63), (1 << 63) - 1)


@st.composite
def chunks(draw: st.DrawFn) -> tuple[np.ndarray, ...]:
    n = draw(st.integers(0, 60))
    pool = draw(st.lists(st.tuples(st.integers(0, 8), _I64), min_size=1, max_size=6))
    toks = draw(st.lists(st.one_of(st.sampled_from(pool), st.tuples(st.integers(0, 8), _I64)), min_size=n,
                         max_size=n))
    steps = draw(st.lists(st.integers(0, 1 << 40), min_size=n, max_size=n))
    pos = np.cumsum(np.array(steps, np.int64)) + draw(st.integers(0, 1 << 40))
    slot = np.array(draw(st.lists(st.integers(0, 1 << 31), min_size=n, max_size=n)), np.int64)
    tag = np.array([t for t, _ in toks], np.uint8)
    val = np.array([v for _, v in toks], np.int64)
    return pos, slot, tag, val


@settings(max_examples=300, deadline=None)
@given(chunks())
def test_round_trip(chunk: tuple[np.ndarray, ...]) -> None:
    pos, slot, tag, val = chunk
    got = unpack_chunk(pack_chunk(pos, slot, tag, val))
    for name, want in zip(("pos", "slot", "tag", "val"), chunk):
        assert got[name].dtype == want.dtype and np.array_equal(got[name], want), name


@settings(max_examples=200, deadline=None)
@given(chunks())
def test_back_refs_follow_the_naive_rule(chunk: tuple[np.ndarray, ...]) -> None:
    """Naive twin: per record, the latest earlier record of its bucket, if it has the same token."""
    _pos, _slot, tag, val = chunk
    b = buckets(tag, val).tolist()
    toks = list(zip(tag.tolist(), val.tolist()))
    last: dict[int, int] = {}
    want = []
    for i, (bk, tok) in enumerate(zip(b, toks)):
        j = last.get(bk)
        want.append(i - j if j is not None and toks[j] == tok else 0)
        last[bk] = i
    assert back_refs(tag, val).tolist() == want


def test_back_refs_find_recurring_tokens() -> None:
    """With few distinct tokens (no bucket shared), every recurrence is a reference to the latest."""
    tag = np.array([3, 2, 3, 8, 2, 3, 0, 0], np.uint8)
    val = np.array([7, 7, 7, 5, 7, 9, 0, 0], np.int64)
    assert len(set(buckets(tag, val).tolist())) == 5
    assert back_refs(tag, val).tolist() == [0, 0, 2, 0, 3, 0, 0, 1]


def test_planes_round_trip_extremes() -> None:
    a = np.array([0, -1, 1, -(1 << 63), (1 << 63) - 1, 255, 256], np.int64)
    assert planes(a).shape == (8, a.size)
    assert np.array_equal(unplanes(planes(a)), a)


def test_a_damaged_chunk_is_refused() -> None:
    arrays = pack_chunk(np.arange(4, dtype=np.int64), np.zeros(4, np.int64), np.full(4, 2, np.uint8),
                        np.array([5, 5, 6, 5], np.int64))
    bad = dict(arrays, ref=planes(np.array([0, 9, 0, 0], np.int64)))
    with pytest.raises(ValueError):
        unpack_chunk(bad)
    short = dict(arrays, val=planes(np.array([5], np.int64)))
    with pytest.raises(ValueError):
        unpack_chunk(short)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 1 << 40), st.integers(0, 1000)), max_size=40))
def test_object_table_round_trip(rows: list[tuple[int, int]]) -> None:
    table = np.array(sorted(rows), np.int64).reshape(-1, 2)
    got = unpack_objects(pack_objects(table))
    assert got.dtype == np.int64 and np.array_equal(got, table)


def test_the_flusher_stores_layout_2() -> None:
    """``ValueLog.split`` marks the layout and stores arrays that unpack to its own tokens."""
    from wholetrace.runtime.values import FLOAT, NONE, OBJ, STR, ValueLog, address
    from wholetrace.runtime.wetlayout import LAYOUT

    class Writer:
        def __init__(self) -> None:
            self.meta: dict[str, object] = {}
            self.arrays: dict[str, np.ndarray] = {}

        def set_meta(self, **items: object) -> None:
            self.meta.update(items)

        def put_array(self, name: str, data: np.ndarray, *, key: str = "") -> None:
            assert key == "0.0"
            self.arrays[name.removeprefix("wet.")] = np.asarray(data).copy()

        def put_compressed_array(self, name: str, blob: bytes, dtype: str, shape: tuple, *, key: str = "") -> None:
            from wholetrace.store.schema import decompress   # the split's arrays come compressed
            self.put_array(name, np.frombuffer(decompress(blob, None, name), dtype).reshape(shape), key=key)

    w = Writer()
    log = ValueLog(w, lambda: None)  # type: ignore[arg-type,return-value]
    buf: list = []
    log.on_new(0, buf.append)
    value = log.probes()["value"]
    obj = object()
    buf.append(7)
    value(3, 1.5)
    value(4, obj)
    buf.append(8)
    value(3, 1.5)
    buf.append(9)
    value(5, "s")
    value(6, None)
    assert log.split(0, list(buf)).tolist() == [7, 8, 9]
    assert w.meta["wet_layout"] == LAYOUT
    got = unpack_chunk(w.arrays)
    assert got["pos"].tolist() == [1, 1, 2, 3, 3]
    assert got["slot"].tolist() == [3, 4, 3, 5, 6]
    assert got["tag"].tolist() == [FLOAT, OBJ, FLOAT, STR, NONE]
    assert got["val"].tolist()[1] == log.serials[address(obj)]
    assert got["val"][0] == got["val"][2] == np.float64(1.5).view(np.int64)   # a back-reference:
    assert unplanes(w.arrays["ref"]).tolist()[2] == 2
