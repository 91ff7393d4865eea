"""Slow reference twins of the matching kernels, written from shared/specs/matching.md in plain
Python (no code shared with wholetrace.match): the KMP step, the scheme-1 automaton, the
stack-transformer summaries of section 3.2 and the unit index of section 3.3.

Symbols use wholetrace's encoding (E = 0, F(f) = 2f + 1, B(b) = 2b + 2), decoded here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence


def kmp_step(path: Sequence[int], q: int, b: int) -> int:
    """The longest prefix of ``path`` that path[:q] + [b] ends with (state -1 stays -1)."""
    if q < 0:
        return -1
    seen = list(path[:q]) + [b]
    for k in range(min(len(path), len(seen)), 0, -1):
        if seen[len(seen) - k:] == list(path[:k]):
            return k
    return 0


def automaton(symbols: Sequence[int], fid: int, path: Sequence[int], start: list[int] | None = None
              ) -> tuple[list[int], list[int]]:
    """Scheme 1 from ``start`` (a stack of states, bottom first): (final stack, end positions).
    An E on an empty stack and a block with an empty stack do nothing."""
    stack = list(start or [])
    ends = []
    for pos, s in enumerate(symbols):
        if s == 0:
            if stack:
                stack.pop()
        elif s % 2 == 1:
            stack.append(0 if (s - 1) // 2 == fid else -1)
        elif stack and stack[-1] >= 0:
            stack[-1] = kmp_step(path, stack[-1], (s - 2) // 2)
            if stack[-1] == len(path):
                ends.append(pos)
    return stack, ends


@dataclass
class Transfer:
    out: list[int]            # index q + 1 for q in -1..m
    cnt: list[int]


@dataclass
class Summary:
    n: int = 0
    d: int = 0
    tails: list[Transfer] = field(default_factory=list)
    push: list[int] = field(default_factory=list)
    cnt_def: int = 0


def identity(m: int) -> Transfer:
    return Transfer(list(range(-1, m + 1)), [0] * (m + 2))


def seq(t1: Transfer, t2: Transfer) -> Transfer:
    out = [t2.out[o + 1] for o in t1.out]
    cnt = [t1.cnt[i] + t2.cnt[o + 1] for i, o in enumerate(t1.out)]
    return Transfer(out, cnt)


def leaf(s: int, fid: int, path: Sequence[int]) -> Summary:
    m = len(path)
    if s == 0:
        return Summary(1, 1, [identity(m), identity(m)], [], 0)
    if s % 2 == 1:
        return Summary(1, 0, [identity(m)], [0 if (s - 1) // 2 == fid else -1], 0)
    b = (s - 2) // 2
    out = [kmp_step(path, q, b) for q in range(-1, m + 1)]
    return Summary(1, 0, [Transfer(out, [int(o == m) for o in out])], [], 0)


def compose(y: Summary, z: Summary) -> Summary:
    """The spec's compose(Y, Z) (shifts of first positions left out: counts only)."""
    p = len(y.push)
    x = Summary(y.n + z.n, cnt_def=y.cnt_def + z.cnt_def)
    for j in range(min(z.d, p - 1) + 1):
        x.cnt_def += z.tails[j].cnt[y.push[p - 1 - j] + 1]
    if z.d < p:
        x.d = y.d
        x.tails = list(y.tails)
        keep = list(y.push[:p - z.d])
        keep[-1] = z.tails[z.d].out[keep[-1] + 1]
        x.push = keep + list(z.push)
    else:
        x.d = y.d + z.d - p
        x.tails = y.tails[:y.d] + [seq(y.tails[y.d], z.tails[p])] + list(z.tails[p + 1:])
        x.push = list(z.push)
    return x


def summary(symbols: Sequence[int], fid: int, path: Sequence[int]) -> Summary:
    """Left fold of the leaves over ``symbols`` (the empty string is the identity)."""
    acc = Summary(0, 0, [identity(len(path))], [], 0)
    for s in symbols:
        acc = compose(acc, leaf(s, fid, path))
    return acc


def apply(x: Summary, stack: list[int]) -> tuple[list[int], int]:
    """The spec's apply: (new stack, occurrences completed), stack padded with -1 below."""
    st = [-1] * max(0, x.d + 1 - len(stack)) + list(stack)
    count = x.cnt_def
    for j in range(x.d + 1):
        count += x.tails[j].cnt[st[-1 - j] + 1]
    keep = st[:len(st) - 1 - x.d] + [x.tails[x.d].out[st[-1 - x.d] + 1]]
    return keep + list(x.push), count


def unit_index(symbols: Sequence[int], bounds: Sequence[int], nfun: int) -> list[tuple[int, int, set[int]]]:
    """Per unit [bounds[i], bounds[i+1]): (minimum depth counting the entry, exit depth, the
    functions whose block at their own level, or whose F, the unit holds)."""
    depth = 0
    funcs: dict[int, int] = {}
    out = []
    for i in range(len(bounds) - 1):
        lo_depth = depth
        marks: set[int] = set()
        for s in symbols[bounds[i]:bounds[i + 1]]:
            if s == 0:
                depth -= 1
                funcs.pop(depth, None)
            elif s % 2 == 1:
                funcs[depth] = (s - 1) // 2
                marks.add((s - 1) // 2)
                depth += 1
            elif depth - 1 in funcs:
                marks.add(funcs[depth - 1])
            lo_depth = min(lo_depth, depth)
        out.append((lo_depth, depth, {f for f in marks if f < nfun}))
    return out
