"""Brute-force path matcher over a plain F/B/E trace: the oracle of tests/match (no automaton,
no code shared with wholetrace.match).

Events are tuples ``("F", f)``, ``("B", b)``, ``("E",)``.  Each invocation keeps the list of
its own blocks with their positions; when it ends (its E, or the end of the trace) every
index i with blocks[i:i+m] == path is an occurrence ending at the position of blocks[i+m-1].
"""

from __future__ import annotations

from typing import Sequence

Event = tuple


def decode(symbols: Sequence[int]) -> list[Event]:
    """Events of wholetrace's symbol encoding (E = 0, F(f) = 2f + 1, B(b) = 2b + 2), decoded here
    independently of wholetrace.match.symbols."""
    out: list[Event] = []
    for s in symbols:
        s = int(s)
        if s == 0:
            out.append(("E",))
        elif s % 2 == 1:
            out.append(("F", (s - 1) // 2))
        else:
            out.append(("B", (s - 2) // 2))
    return out


def encode(events: Sequence[Event]) -> list[int]:
    return [0 if e[0] == "E" else 2 * e[1] + 1 if e[0] == "F" else 2 * e[1] + 2 for e in events]


def brute_ends(events: Sequence[Event], fid: int, path: Sequence[int]) -> list[int]:
    """Sorted end positions of every occurrence of ``path`` in an invocation of ``fid``."""
    path = list(path)
    m = len(path)
    ends: list[int] = []
    stack: list[tuple[int, list[tuple[int, int]]]] = []

    def close(func: int, blocks: list[tuple[int, int]]) -> None:
        if func != fid:
            return
        ids = [b for b, _ in blocks]
        for i in range(len(ids) - m + 1):
            if ids[i:i + m] == path:
                ends.append(blocks[i + m - 1][1])

    for pos, ev in enumerate(events):
        if ev[0] == "F":
            stack.append((ev[1], []))
        elif ev[0] == "E":
            if stack:
                close(*stack.pop())
        elif stack:
            stack[-1][1].append((ev[1], pos))
    while stack:
        close(*stack.pop())
    return sorted(ends)


def naive_literal(events: Sequence[Event], path: Sequence[int]) -> int:
    """Occurrences of the path as a literal run of B events (ignores context): not the answer."""
    seq = [e[1] if e[0] == "B" else None for e in events]
    m = len(path)
    return sum(1 for i in range(len(seq) - m + 1) if seq[i:i + m] == list(path))
