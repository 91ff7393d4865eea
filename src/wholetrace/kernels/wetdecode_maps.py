"""Open-addressing hash maps and growable row buffers of the WET decoding kernel (int64 arrays)."""

# Split from ``kernels.wetdecode`` (wave 18), whose header describes the pass, its tables and its
# buffers; ``kernels.wetdecode`` re-exports every public name and keys the numba cache of all
# its parts on all of them (``_jit.cache_depends``).

from __future__ import annotations

import numpy as np

from wholetrace.kernels._jit import kernel


@kernel(nrt=False)
def _hash3(a: int, b: int, c: int) -> int:
    h = np.uint64(np.int64(a)) * np.uint64(0x9E3779B97F4A7C15)      # wraps (int64 casts keep
    h ^= np.uint64(np.int64(b)) * np.uint64(0xC2B2AE3D27D4EB4F)    # negative keys valid when
    h ^= np.uint64(np.int64(c)) * np.uint64(0x165667B19E3779F9)    # run as Python)
    h ^= h >> np.uint64(31)
    return np.int64(h & np.uint64(0x7FFFFFFFFFFFFFFF))


@kernel
def _grow(a: np.ndarray, need: int) -> np.ndarray:
    """``a`` with at least ``need`` rows (doubling), old rows copied."""
    cap = a.shape[0]
    if need <= cap:
        return a
    while cap < need:
        cap *= 2
    b = np.empty((cap, a.shape[1]), np.int64)
    b[:a.shape[0]] = a
    return b



# ---------------------------------------------------------------------------- hash maps

@kernel(nrt=False)
def _table_find(tab: np.ndarray, keys: np.ndarray, k0: int, k1: int, k2: int) -> int:
    """Slot of ``tab`` (ids into ``keys`` rows, -1 empty) holding key (k0, k1, k2), or the empty slot."""
    mask = tab.shape[0] - 1
    j = _hash3(k0, k1, k2) & mask
    while True:
        r = tab[j]
        if r < 0 or (keys[r, 0] == k0 and keys[r, 1] == k1 and keys[r, 2] == k2):
            return j
        j = (j + 1) & mask


@kernel
def _table_rehash(keys: np.ndarray, n: int, cap: int) -> np.ndarray:
    tab = np.full(cap, -1, np.int64)
    mask = cap - 1
    for r in range(n):
        j = _hash3(keys[r, 0], keys[r, 1], keys[r, 2]) & mask
        while tab[j] >= 0:
            j = (j + 1) & mask
        tab[j] = r
    return tab


@kernel(nrt=False)
def _map_find(tab: np.ndarray, k0: int, k1: int) -> int:
    """Slot of a (k0 >= 0, k1) -> value map (rows k0, k1, value; k0 = -1 empty)."""
    mask = tab.shape[0] - 1
    j = _hash3(k0, k1, 0) & mask
    while True:
        if tab[j, 0] < 0 or (tab[j, 0] == k0 and tab[j, 1] == k1):
            return j
        j = (j + 1) & mask


@kernel(nrt=False)
def _map_get(tab: np.ndarray, k0: int, k1: int, default: int) -> int:
    j = _map_find(tab, k0, k1)
    return tab[j, 2] if tab[j, 0] >= 0 else default


@kernel(nrt=False)
def _map_put(tab: np.ndarray, cnt: np.ndarray, which: int, k0: int, k1: int, v: int) -> None:
    j = _map_find(tab, k0, k1)
    if tab[j, 0] < 0:
        tab[j, 0] = k0
        tab[j, 1] = k1
        cnt[which] += 1
    tab[j, 2] = v


@kernel
def _map_rehash(tab: np.ndarray, cap: int) -> np.ndarray:
    out = np.full((cap, 3), -1, np.int64)
    mask = cap - 1
    for r in range(tab.shape[0]):
        if tab[r, 0] >= 0:
            j = _hash3(tab[r, 0], tab[r, 1], 0) & mask
            while out[j, 0] >= 0:
                j = (j + 1) & mask
            out[j] = tab[r]
    return out

