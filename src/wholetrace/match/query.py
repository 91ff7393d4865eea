"""A path query (function F, intraprocedural path P) and its KMP automaton as dense tables."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from wholetrace.errors import UsageError


@dataclass(frozen=True)
class Query:
    """Path ``path`` (block ids, local to function ``fid``) of function ``fid``.

    ``delta[q, c]`` is the KMP transition from state ``q`` (0..m: how much of the path the
    blocks seen so far end with) on a block of column ``c``; ``col[b]`` is block ``b``'s
    column (one per distinct block of the path; every other block shares the last column,
    which sends every state to 0).  An occurrence ends at each transition into state m;
    occurrences may overlap.
    """

    fid: int
    path: tuple[int, ...]
    delta: np.ndarray = field(init=False, repr=False, compare=False)
    col: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.path:
            raise UsageError("the path is empty: give at least one block")
        if self.fid < 0 or any(b < 0 for b in self.path):
            raise UsageError("function and block ids are non-negative")
        blocks = sorted(set(self.path))
        col = np.full(max(blocks) + 1, len(blocks), np.int32)
        for c, b in enumerate(blocks):
            col[b] = c
        m = len(self.path)
        pi = _prefix_function(self.path)
        delta = np.zeros((m + 1, len(blocks) + 1), np.int32)
        for q in range(m + 1):
            for c, b in enumerate(blocks):
                if q < m and self.path[q] == b:
                    delta[q, c] = q + 1
                elif q > 0:
                    delta[q, c] = delta[pi[q - 1], c]
        object.__setattr__(self, "delta", delta)
        object.__setattr__(self, "col", col)

    @property
    def m(self) -> int:
        return len(self.path)

    def leaf_transfers(self) -> tuple[np.ndarray, np.ndarray]:
        """Transfer table rows 0 (identity) and 1 + c for each column c: (out, cnt)."""
        m, cols = self.m, self.delta.shape[1]
        out = np.empty((cols + 1, m + 1), np.int32)
        out[0] = np.arange(m + 1)
        out[1:] = self.delta.T
        cnt = (out == m).astype(np.int64)
        cnt[0] = 0
        return out, cnt


def _prefix_function(path: tuple[int, ...]) -> list[int]:
    """KMP: pi[i] is the length of the longest proper border of path[:i + 1]."""
    pi = [0] * len(path)
    k = 0
    for i in range(1, len(path)):
        while k and path[i] != path[k]:
            k = pi[k - 1]
        if path[i] == path[k]:
            k += 1
        pi[i] = k
    return pi
