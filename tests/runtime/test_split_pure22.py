"""``runtime.splitpure`` (a fork child's split until it has a server of its own) against its
oracle ``runtime.splitcore`` (numpy): the same reply, stored bytes included, on generated chunks
(records of every tag, switch records, payloads as low as markers, a carried marker, wide ints,
side payloads, events outside int32) and object tables."""

from __future__ import annotations

import random

import pytest

from wholetrace.runtime import splitcore, splitpure
from wholetrace.runtime.values import INT, OBJ, STR, SWITCH_TAG, _MARK_MAX, marker
from wholetrace.store.cmods import ArrayType as array


def _chunk(rng: random.Random, n: int, carry: bool, wide: bool, low: bool) -> tuple:
    items: list[int] = []
    side = 0
    bigs = array("q")
    for _ in range(n):
        r = rng.random()
        if r < 0.55:
            items.append(rng.randrange(0, 1 << 20))                       # an event
            continue
        tag = rng.choice([0, 1, INT, 3, STR, 5, 7, OBJ, SWITCH_TAG, INT, INT, OBJ])
        items.append(marker(tag, rng.randrange(0, 1 << 12)))
        if tag == INT and low and rng.random() < 0.3:
            items.append(_MARK_MAX - rng.randrange(0, 1 << 50))          # a program int as low as a marker
        elif tag == INT and wide and rng.random() < 0.2:
            bigs.extend([len(items), rng.randrange(-(1 << 62), 1 << 62)])
            items.append(0)                                               # (stored as 0, sent apart)
        elif tag in (3, STR, 5, 7):
            side += 1
            items.append(0)
        else:
            items.append(rng.choice([rng.randrange(-5, 5), rng.randrange(1, 1 << 40)]))
    if carry:
        items.append(marker(OBJ, 3))
    side_pay = array("q", [rng.randrange(-(1 << 63), 1 << 63) for _ in range(side + rng.randrange(0, 3))])
    return (array("q", items), rng.randrange(0, 1000), rng.randrange(0, 1000), side_pay, bigs)   # as the flusher sends


@pytest.mark.parametrize("seed", range(40))
def test_split_equals_the_numpy_split(seed: int) -> None:
    rng = random.Random(seed)
    req = ("split", *_chunk(rng, rng.choice([0, 1, 2, 5, 40, 700]), seed % 3 == 0, seed % 2 == 0, seed % 4 < 2))
    want = splitcore.handle(req)
    got = splitpure.handle(req)
    assert want[0] == "ok", want
    assert got[:5] == want[:5]
    assert bytes(got[1]) == bytes(want[1])
    assert got[5] == want[5]


def test_errors_equal_the_numpy_split() -> None:
    outside = ("split", array("q", [1 << 40]).tobytes(), 0, 0, b"", b"")
    no_side = ("split", array("q", [5, marker(STR, 1), 0]).tobytes(), 0, 0, b"", b"")
    for req in (outside, no_side, ("nope",)):
        assert splitpure.handle(req) == splitcore.handle(req)


@pytest.mark.parametrize("n", [0, 1, 9, 300])
def test_objects_equal_the_numpy_table(n: int) -> None:
    rng = random.Random(n)
    serial, rows = 0, []
    for _ in range(n):
        serial += rng.randrange(1, 1 << rng.choice([2, 20, 40]))
        rows += [serial, rng.randrange(0, 500)]
    req = ("objects", array("q", rows).tobytes())
    assert splitpure.handle(req) == splitcore.handle(req)
