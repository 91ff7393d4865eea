"""The value probes and the flusher (``ValueLog.probes`` then ``ValueLog.split``: records in the
event list, markers found with numpy, values sorted by type) against a plain per-record branch
(the tokenizer's former form): positions, slots, tags, payloads and the table of distinct contents."""

from __future__ import annotations

import struct

import numpy as np
from hypothesis import given, settings, strategies as st

from wholetrace.runtime.values import (BIGINT, BOOL, BYTES, COMPLEX, FLOAT, INT, NONE, OBJ, STR, ValueLog, address,
                                       content_hash)
from wholetrace.runtime.wetlayout import unpack_chunk

_I64 = 1 << 63


def naive(items: list) -> tuple[list[int], list[int], list[int], dict[int, tuple[int, bytes]]]:
    """(slot, x, serial or None) per record -> slots, tags, payloads, contents."""
    slots, tags, vals, contents = [], [], [], {}
    for slot, x, serial in items:
        slots.append(slot)
        if serial is not None:
            tags.append(OBJ), vals.append(serial)
            continue
        t = type(x)
        if t is int and -_I64 <= x < _I64:
            tags.append(INT), vals.append(x)
            continue
        if t is float:
            tags.append(FLOAT), vals.append(struct.unpack("<q", struct.pack("<d", x))[0])
            continue
        if t is bool:
            tags.append(BOOL), vals.append(int(x))
            continue
        if x is None:
            tags.append(NONE), vals.append(0)
            continue
        tg, data = ((BIGINT, str(x).encode()) if t is int else (STR, x.encode("utf-8", "surrogatepass"))
                    if t is str else (BYTES, x) if t is bytes else (COMPLEX, repr(x).encode()))
        h = content_hash(bytes([tg]) + data)
        contents.setdefault(h, (tg, data))
        tags.append(tg), vals.append(h)
    return slots, tags, vals, contents


class Writer:
    def __init__(self) -> None:
        self.arrays: dict[tuple[str, str], np.ndarray] = {}

    def set_meta(self, **items: object) -> None:
        pass

    def put_array(self, name: str, data: np.ndarray, *, key: str = "") -> None:
        self.arrays[(name.removeprefix("wet."), key)] = np.asarray(data).copy()

    def put_compressed_array(self, name: str, blob: bytes, dtype: str, shape: tuple, *, key: str = "") -> None:
        from wholetrace.store.schema import decompress   # the split's arrays come compressed
        self.put_array(name, np.frombuffer(decompress(blob, None, name), dtype).reshape(shape), key=key)


values = st.one_of(st.integers(), st.integers(-(1 << 70), 1 << 70), st.integers(-(1 << 64), -(1 << 40)),
                   st.sampled_from([(1 << 63) - 1, 1 << 63, -(1 << 63), -(1 << 63) - 1, (1 << 63) - 512,
                                    (1 << 63) + 512, 1 << 1100, -(1 << 1100)]),
                   st.floats(allow_nan=False), st.booleans(), st.none(), st.text(max_size=5), st.binary(max_size=5),
                   st.complex_numbers(allow_nan=False))
# per probe call: events before it (int32), then one record (value) or several (values)
calls = st.lists(st.tuples(st.lists(st.integers(-(1 << 31), (1 << 31) - 1), max_size=3),
                           st.lists(st.tuples(st.booleans(), values), min_size=1, max_size=3),
                           st.integers(0, 1000), st.booleans()), max_size=25)


@settings(max_examples=200, deadline=None)
@given(calls, st.lists(st.integers(-5, 5), max_size=3), st.integers(1, 4), st.booleans(), st.booleans(),
       st.sampled_from([1 << 16, 1, 2, 5]))
def test_probes_then_split_equal_naive(cs: list, tail: list[int], chunks: int, anywhere: bool, in_function: bool,
                                       piece: int) -> None:
    """``in_function``: the probes of a function (handed the stream's append); ``piece``: how
    many items the flusher converts at a time (big ints in any piece, or across pieces)."""
    import wholetrace.runtime.valueflush as V

    w = Writer()
    log = ValueLog(w, lambda: None)  # type: ignore[arg-type,return-value]
    buf: list = []
    log.on_new(0, buf.append)
    probes = log.probes()
    value, many = probes["value"], probes["values"]
    if in_function:
        a = log.by_buffer[address(buf)][0]
        value = lambda k, x: probes["value-in"](k, x, a)  # noqa: E731
        many = lambda k, *xs: probes["values-in"](k, a, *xs)  # noqa: E731
    saved, V._PIECE = V._PIECE, piece
    try:
        _run(log, w, buf, value, many, cs, tail, chunks, anywhere)
    finally:
        V._PIECE = saved


def _run(log: ValueLog, w: Writer, buf: list, value: object, many: object, cs: list, tail: list[int], chunks: int,
         anywhere: bool) -> None:
    keep = []                         # the objects stay alive: their serials stay theirs
    want_items, want_pos, events = [], [], []
    for evs, recs, slot, together in cs:
        buf += evs
        events += evs
        xs = []
        for is_obj, x in recs:
            if is_obj:
                x = [x]
                keep.append(x)
            xs.append(x)
        if together or len(xs) == 1:
            (value(slot, xs[0]) if len(xs) == 1 else many(slot, *xs))  # type: ignore[operator]
            ks = range(slot, slot + len(xs))
        else:
            for j, x in enumerate(xs):
                value(slot + j, x)  # type: ignore[operator]
            ks = range(slot, slot + len(xs))
        for k, x in zip(ks, xs):
            want_items.append((k, x, log.serials[address(x)] if type(x) is list else None))
            want_pos.append(len(events))
    buf += tail
    events += tail
    # flush in up to ``chunks`` pieces, cut between records or anywhere (a thread switch between
    # a marker and its payload: the flusher carries the marker over)
    raw = list(buf)
    ok = list(range(len(raw) + 1)) if anywhere else _cuts(raw)
    cuts = sorted({0, len(raw)} | {ok[int(f * (len(ok) - 1))] for f in np.linspace(0, 1, chunks + 1)[1:-1]})
    got_events: list[int] = []
    for j, (c0, c1) in enumerate(zip(cuts, cuts[1:])):
        if j % 2:                   # the flusher's way: the live list, its first items taken off it
            live = raw[c0:] + [99]
            got_events += log.split(0, live, c1 - c0).tolist()
            assert live == raw[c1:] + [99]
        else:
            got_events += log.split(0, raw[c0:c1]).tolist()
    assert got_events == events
    cols = {"pos": [], "slot": [], "tag": [], "val": []}
    for key in sorted({k for _n, k in w.arrays}, key=lambda k: int(k.split(".")[1])):
        got = unpack_chunk({n: a for (n, k), a in w.arrays.items() if k == key})
        for name in cols:
            cols[name] += got[name].tolist()
    want = naive(want_items)
    assert (cols["slot"], cols["tag"], cols["val"]) == tuple(want[:3])
    assert cols["pos"] == want_pos
    assert log.contents == want[3]
    assert log.records == len(want_items)


def _cuts(raw: list) -> list[int]:
    """Where a whole event list may be cut (never between a marker and its payload): a
    left-to-right parse, independent of the flusher's."""
    out, j = [0], 0
    while j < len(raw):
        j += 2 if type(raw[j]) is int and raw[j] <= -(1 << 40) else 1
        out.append(j)
    return out


def test_sweep_releases_what_only_the_recording_holds() -> None:
    """Objects without weak references are held by the recording until a sweep finds nothing
    else holds them: then they and their serials go (their id may be reused by a new object,
    which gets a new serial); objects the program still holds keep theirs."""
    log = ValueLog(Writer(), lambda: None)  # type: ignore[arg-type,return-value]
    kept, kept_serials = [], []
    for j in range(5000):
        x = [j]
        s = log.serial(x)
        if j % 3 == 0:
            kept.append(x)
            kept_serials.append(s)
        del x
    assert len(log.pins) < 5000 - 1000          # the sweep at 4096 released the other two thirds
    assert [log.serials[address(x)] for x in kept] == kept_serials
    log._sweep()
    assert len(log.pins) == len(kept)
    assert set(log.serials) == {address(x) for x in kept}
    fresh = [-1]
    assert log.serial(fresh) > max(kept_serials)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_content_hash_is_hashlib_s_blake2b(data):
    """The stored content hashes keep their values without hashlib (not imported at start-up)."""
    import hashlib

    want = int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little", signed=True)
    assert content_hash(data) == want
