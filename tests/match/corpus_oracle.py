"""A vectorised brute-force matcher for large traces (corpus recordings): every block event is
tagged with its invocation, blocks of one function are regrouped per invocation, and a path
is searched by comparing shifted arrays.  Shares no code with wholetrace.match."""

from __future__ import annotations

import numpy as np


class OwnBlocks:
    """The blocks of every invocation of every function of one F/B/E symbol stream."""

    def __init__(self, symbols: np.ndarray) -> None:
        sym = np.asarray(symbols)
        isb = (sym > 0) & (sym % 2 == 0)
        inv = np.full(len(sym), -1, np.int64)
        func = np.full(len(sym), -1, np.int64)
        stack: list[tuple[int, int]] = []
        nxt = 0
        codes = sym.tolist()
        inv_l, func_l = inv.tolist(), func.tolist()
        for i, s in enumerate(codes):
            if s == 0:
                if stack:
                    stack.pop()
            elif s % 2 == 1:
                stack.append((nxt, (s - 1) // 2))
                nxt += 1
            elif stack:
                inv_l[i], func_l[i] = stack[-1]
        inv, func = np.array(inv_l, np.int64), np.array(func_l, np.int64)
        pos = np.flatnonzero(isb & (inv >= 0))
        self.by_func: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        fsel = func[pos]
        for f in np.unique(fsel).tolist():
            p = pos[fsel == f]
            order = np.lexsort((p, inv[p]))          # by invocation, then position
            p = p[order]
            self.by_func[f] = ((sym[p] - 2) // 2, inv[p], p)

    def ends(self, fid: int, path: tuple[int, ...]) -> np.ndarray:
        """Sorted end positions of every occurrence of ``path`` in invocations of ``fid``."""
        if fid not in self.by_func:
            return np.zeros(0, np.int64)
        blocks, inv, pos = self.by_func[fid]
        m = len(path)
        n = len(blocks) - m + 1
        if n <= 0:
            return np.zeros(0, np.int64)
        ok = np.ones(n, bool)
        for k, b in enumerate(path):
            ok &= blocks[k:k + n] == b
            ok &= inv[k:k + n] == inv[:n]
        return np.sort(pos[np.flatnonzero(ok) + m - 1])

    def sample_paths(self, rng: np.random.Generator, count: int, rare: bool) -> list[tuple[int, tuple[int, ...]]]:
        """Paths cut from real invocations: weighted by block events (common paths) or with the
        function drawn uniformly (rare ones more often)."""
        funcs = sorted(self.by_func)
        weights = np.array([len(self.by_func[f][0]) for f in funcs], float)
        out = []
        for _ in range(count):
            f = funcs[rng.choice(len(funcs), p=None if rare else weights / weights.sum())]
            blocks, inv, _ = self.by_func[f]
            m = int(rng.integers(1, 6))
            i = int(rng.integers(0, len(blocks)))
            j = i
            while j < len(blocks) and j - i < m and inv[j] == inv[i]:
                j += 1
            out.append((f, tuple(int(b) for b in blocks[i:j])))
        return out
