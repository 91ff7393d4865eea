"""The flusher's tokenizer (``ValueLog._tokens``, numpy by type) against a plain per-record
branch (its former form): slots, tags, payloads and the table of distinct contents."""

from __future__ import annotations

import struct

from hypothesis import given, settings, strategies as st

from wholetrace.runtime.values import (BIGINT, BOOL, BYTES, COMPLEX, FLOAT, INT, NONE, OBJ, STR, ValueLog,
                                       content_hash)

_I64 = 1 << 63


def naive(recs: list) -> tuple[list[int], list[int], list[int], dict[int, tuple[int, bytes]]]:
    slots, tags, vals, contents = [], [], [], {}
    for code, x in zip(recs[0::2], recs[1::2]):
        if code < 0:
            slots.append(~code), tags.append(OBJ), vals.append(x)
            continue
        slots.append(code)
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


values = st.one_of(st.integers(), st.integers(-(1 << 70), 1 << 70), st.floats(allow_nan=False), st.booleans(),
                   st.none(), st.text(max_size=5), st.binary(max_size=5), st.complex_numbers(allow_nan=False))
records = st.lists(st.tuples(st.integers(0, 1000), st.booleans(), values), max_size=40)


@settings(max_examples=200, deadline=None)
@given(records)
def test_tokens_equal_naive(rs: list) -> None:
    recs: list = []
    for slot, is_obj, x in rs:
        recs += [~slot, slot * 7 + 1] if is_obj else [slot, x]
    log = ValueLog(None, lambda: None)
    slot, tag, val = log._tokens(recs)
    want = naive(recs)
    assert (slot.tolist(), tag.tolist(), val.tolist()) == want[:3]
    assert log.contents == want[3]
