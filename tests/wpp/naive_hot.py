"""Reference semantics of minimal hot subpaths (spec wpp.md §6.8.4), by brute force on full expansions.

For each rule R, scan its full expansion E(R) position by position with a window that holds
at most the last L symbols and restarts after every subpath reported at R or inside any child
occurrence.  Only positions R can see are tested: R's own terminals, and in each child
occurrence the child's prefix (the symbols before the first subpath reported anywhere inside
it, at most L).  A tested window of at least ``min_len`` symbols whose cost (summed terminal
costs, recomputed from scratch) times f(R) reaches ``min_cost`` is reported.  Frequencies
f(R) are counted on the derivation tree.  No prefix or suffix strings are kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache


@dataclass
class RuleScan:
    reports: list[tuple[int, int]] = field(default_factory=list)   # (start, length) in E(R)
    hot: list[tuple[int, int]] = field(default_factory=list)       # [start, end] of everything reported inside E(R)
    prefix: int = 0        # positions of E(R) its parents see
    suffix_start: int = 0  # where a parent's window continues after E(R)


def frequencies(rules: list[list[int]]) -> list[int]:
    """Occurrences of every rule in the derivation tree of rule 0."""
    freq = [0] * len(rules)

    def walk(r: int) -> None:
        freq[r] += 1
        for x in rules[r]:
            if x < 0:
                walk(-x)

    walk(0)
    return freq


def naive_hot(rules: list[list[int]], costs: list[int], min_len: int, L: int, min_cost: int
              ) -> dict[int, RuleScan]:
    """Scan of every rule reachable from rule 0 (rules[i]: terminals >= 0, rule r as -r)."""
    freq = frequencies(rules)

    @lru_cache(maxsize=None)
    def expansion(r: int) -> tuple[int, ...]:
        out: list[int] = []
        for x in rules[r]:
            out.extend([x] if x >= 0 else expansion(-x))
        return tuple(out)

    scans: dict[int, RuleScan] = {}

    def scan(r: int) -> RuleScan:
        if r in scans:
            return scans[r]
        E = expansion(r)
        res = RuleScan()
        s = 0

        def test(p: int) -> None:
            nonlocal s
            s = max(s, p - L + 1)
            n = p - s + 1
            if n >= min_len and sum(costs[E[q]] for q in range(s, p + 1)) * freq[r] >= min_cost:
                res.reports.append((s, n))
                res.hot.append((s, p))
                s = p + 1

        pos = 0
        for x in rules[r]:
            if x >= 0:
                test(pos)
                pos += 1
                continue
            child = scan(-x)
            n_child = len(expansion(-x))
            for o in range(child.prefix):
                test(pos + o)
            inside = [(a + pos, b + pos) for a, b in child.hot]
            res.hot += inside
            s = max([s, pos + n_child - L] + [b + 1 for _a, b in inside])
            pos += n_child
        res.prefix = min([L, len(E)] + [a for a, _b in res.hot])
        res.suffix_start = max([0, len(E) - L] + [b + 1 for _a, b in res.hot])
        scans[r] = res
        return res

    scan(0)
    return scans
