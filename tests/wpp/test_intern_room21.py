"""``intern_chunk``'s room test at its two bounds (wave 21: one test an event against the smaller
bound): with the table's key count at half its slots less one, or the key list two short, it stops
before the event with the table's status first, and one key below both bounds it interns the event;
the oracle is the kernel's contract (``count + 1 < 2**bits / 2`` and ``count + 2 <= len(sym_keys)``)."""

from __future__ import annotations

import numpy as np
import pytest

from wholetrace.kernels import wpp_intern as K

BITS = 4    # a table of 16 slots: at most 7 keys, room for two while the count is below 7


def run(count: int, nsyms: int) -> tuple[int, int, int, int]:
    """(pos, m, status, keys after) of interning the one value event 5 of function -1 (plain, no
    fusing or groups) with ``count`` keys already interned (distinct values 100...) and a key list of
    ``nsyms`` entries."""
    keys = np.full(1 << BITS, K.EMPTY, np.int64)
    ids = np.zeros(1 << BITS, np.int64)
    syms = np.zeros(nsyms, np.int64)
    tstate = np.zeros(K.T_SIZE, np.int64)
    tstate[K.T_BITS] = BITS
    old = np.array([K.pack(K.K_BLOCK, -1, 100 + i) for i in range(count)], np.int64)
    K.rehash(old, np.arange(count, dtype=np.int64), keys, ids, BITS)
    syms[:count] = old
    tstate[K.T_COUNT] = count
    out = np.zeros(4, np.int32)
    pos, m, why = K.intern_chunk(np.array([5], np.int32), 0, K.K_BLOCK, 0, np.zeros(0, np.int8), 0, 0, 0,
                                 np.zeros(8, np.int64), np.zeros(K.S_SIZE, np.int64), keys, ids, tstate, syms, out, 0)
    return int(pos), int(m), int(why), int(tstate[K.T_COUNT])


def statuses() -> None:
    limit = (1 << BITS) >> 1
    for count in range(limit):
        for nsyms in range(count + 1, count + 5):
            table_full = count + 1 >= limit
            list_full = count + 2 > nsyms
            want = K.ST_NEED_TABLE if table_full else K.ST_NEED_SYMBOLS if list_full else K.ST_DONE
            pos, m, why, after = run(count, nsyms)
            assert why == want, (count, nsyms)
            if want == K.ST_DONE:
                assert (pos, m, after) == (1, 1, count + 1)
            else:   # nothing of the stopped event consumed
                assert (pos, m, after) == (0, 0, count)


def test_room_statuses() -> None:
    statuses()


@pytest.mark.nojit
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")   # the hash wraps on purpose
def test_room_statuses_nojit() -> None:
    statuses()
