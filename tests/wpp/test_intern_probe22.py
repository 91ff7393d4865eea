"""``intern_chunk``'s table lookup along long probe chains (wave 22: the lookup hands back what the slot
holds, not read again): keys that share one home slot, interned in every order and repeated, get the
dense ids of their first appearance (the oracle: a dict), each in its own slot, the table keeping all."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from wholetrace.kernels import wpp_intern as K

BITS = 6    # 64 slots: up to 31 keys


def colliding(n: int, home: int) -> list[int]:
    """``n`` values whose keys (value of function -1, plain) all hash to slot ``home``."""
    out = []
    for v in itertools.count():
        if int(K._slot(K.pack(K.K_BLOCK, -1, v), BITS)) == home:
            out.append(v)
            if len(out) == n:
                return out
    raise AssertionError   # pragma: no cover


def intern(values: list[int]) -> tuple[list[int], np.ndarray, np.ndarray]:
    """(ids, table keys, table ids) of interning ``values`` as one chunk from an empty table."""
    keys = np.full(1 << BITS, K.EMPTY, np.int64)
    ids = np.zeros(1 << BITS, np.int64)
    syms = np.zeros(64, np.int64)
    tstate = np.zeros(K.T_SIZE, np.int64)
    tstate[K.T_BITS] = BITS
    out = np.zeros(len(values) + 2, np.int32)
    pos, m, why = K.intern_chunk(np.array(values, np.int32), 0, K.K_BLOCK, 0, np.zeros(0, np.int8), 0, 0, 1,
                                 np.zeros(8, np.int64), np.zeros(K.S_SIZE, np.int64), keys, ids, tstate, syms, out, 0)
    assert (int(pos), int(why)) == (len(values), K.ST_DONE)
    return out[:int(m)].tolist(), keys, ids


def check() -> None:
    rng = np.random.default_rng(22)
    near_end = colliding(6, (1 << BITS) - 2)            # the chain wraps past the table's last slot
    for chain in (colliding(12, 5), near_end, colliding(4, 5) + colliding(4, 6) + colliding(4, 8)):
        for _ in range(20):
            values = [int(v) for v in rng.choice(chain, size=3 * len(chain))] + list(chain)
            first: dict[int, int] = {}
            want = [first.setdefault(v, len(first)) for v in values]
            got, keys, ids = intern(values)
            assert got == want
            held = {int(k): int(i) for k, i in zip(keys, ids) if k != K.EMPTY}
            assert held == {int(K.pack(K.K_BLOCK, -1, v)): i for v, i in first.items()}


def test_probe_chains() -> None:
    check()


@pytest.mark.nojit
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")   # the hash wraps on purpose
def test_probe_chains_nojit() -> None:
    check()
