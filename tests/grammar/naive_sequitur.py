"""Slow plain-Python SEQUITUR / SEQUITUR(1) with objects and a dict, the tests' reference twin."""

from __future__ import annotations

from typing import Iterable


class Rule:
    """A rule: a circular list closed by its guard symbol, plus a reference count."""

    def __init__(self) -> None:
        self.refs = 0
        self.guard = Sym(self, None)
        self.guard.is_guard = True
        self.guard.next = self.guard.prev = self.guard

    def body(self) -> list["Sym"]:
        out, s = [], self.guard.next
        while s is not self.guard:
            out.append(s)
            s = s.next
        return out


class Sym:
    """One symbol occurrence; ``value`` is an int terminal or a Rule."""

    __slots__ = ("value", "next", "prev", "is_guard")

    def __init__(self, value: object, owner: "Grammar | None") -> None:
        self.value = value
        self.next: Sym | None = None
        self.prev: Sym | None = None
        self.is_guard = False
        if owner is not None and isinstance(value, Rule):
            value.refs += 1


class Grammar:
    """The mutable grammar under construction, with the digram index as a dict."""

    def __init__(self, lookahead: bool) -> None:
        self.index: dict[tuple[object, object], Sym] = {}
        self.start = Rule()
        self.lookahead = lookahead
        self.la: object = None  # next input symbol, or None at the end of input

    # digram index --------------------------------------------------------
    @staticmethod
    def _key(s: Sym) -> tuple[object, object]:
        return (s.value, s.next.value)  # type: ignore[union-attr]

    def _touches_guard(self, s: Sym) -> bool:
        return s.is_guard or s.next.is_guard  # type: ignore[union-attr]

    def forget(self, s: Sym) -> None:
        if self._touches_guard(s):
            return
        k = self._key(s)
        if self.index.get(k) is s:
            del self.index[k]

    def remember(self, s: Sym) -> None:
        if not self._touches_guard(s):
            self.index[self._key(s)] = s

    # list surgery --------------------------------------------------------
    def link(self, left: Sym, right: Sym) -> None:
        if left.next is not None:
            self.forget(left)
            p, n = right.prev, right.next
            if p is not None and n is not None and right.value == p.value == n.value:
                self.remember(right)
            p, n = left.prev, left.next
            if p is not None and n is not None and left.value == n.value == p.value:
                self.remember(p)
        left.next = right
        right.prev = left

    def remove(self, s: Sym) -> None:
        self.link(s.prev, s.next)  # type: ignore[arg-type]
        if not s.is_guard:
            self.forget(s)
            if isinstance(s.value, Rule):
                s.value.refs -= 1

    def put_after(self, at: Sym, new: Sym) -> None:
        self.link(new, at.next)  # type: ignore[arg-type]
        self.link(at, new)

    # the algorithm -------------------------------------------------------
    def append(self, x: int) -> None:
        self.put_after(self.start.guard.prev, Sym(x, self))  # type: ignore[arg-type]
        self.check(self.start.guard.prev.prev)  # type: ignore[union-attr]

    def check(self, s: Sym) -> bool:
        if self._touches_guard(s):
            return False
        k = self._key(s)
        other = self.index.get(k)
        if other is None:
            self.index[k] = s
            return False
        if other.next is s or s.next is other:
            return False
        if other.prev.is_guard and other.next.next.is_guard:  # type: ignore[union-attr]
            rule = other.prev.value  # type: ignore[union-attr]
            self.replace(s, rule)
        else:
            if self.lookahead and self.la is not None and s.next.next is self.start.guard:  # type: ignore[union-attr]
                hit = self.index.get((s.next.value, self.la))  # type: ignore[union-attr]
                if hit is not None and hit.prev.is_guard and hit.next.next.is_guard:  # type: ignore[union-attr]
                    return False
            rule = Rule()
            first = Sym(s.value, self)
            self.put_after(rule.guard, first)
            self.put_after(first, Sym(s.next.value, self))  # type: ignore[union-attr]
            self.replace(other, rule)
            self.remember(rule.guard.next)  # type: ignore[arg-type]
            self.replace(s, rule)
        head = rule.guard.next
        if isinstance(head.value, Rule) and head.value.refs == 1:  # type: ignore[union-attr]
            self.inline(head)  # type: ignore[arg-type]
        return True

    def replace(self, s: Sym, rule: Rule) -> None:
        q = s.prev
        self.remove(q.next)  # type: ignore[union-attr, arg-type]
        self.remove(q.next)  # type: ignore[union-attr, arg-type]
        self.put_after(q, Sym(rule, self))  # type: ignore[arg-type]
        if not self.check(q):  # type: ignore[arg-type]
            self.check(q.next)  # type: ignore[union-attr, arg-type]

    def inline(self, s: Sym) -> None:
        rule: Rule = s.value  # type: ignore[assignment]
        left, right = s.prev, s.next
        first, last = rule.guard.next, rule.guard.prev
        self.link(last, first)  # type: ignore[arg-type]
        self.forget(s)
        s.value = 0  # the reference unlinks the symbol with value 0
        self.link(left, right)  # type: ignore[arg-type]
        self.link(left, first)  # type: ignore[arg-type]
        self.link(last, right)  # type: ignore[arg-type]
        self.index[self._key(last)] = last  # type: ignore[arg-type]


def naive_sequitur(seq: Iterable[int], lookahead: bool = False) -> list[list[int]]:
    """Rules of the grammar of ``seq``: S first, others numbered by first appearance in a
    depth-first walk from S; terminals as ints, rule i as -i."""
    g = Grammar(lookahead)
    items = [int(x) for x in seq]
    for i, x in enumerate(items):
        g.la = items[i + 1] if i + 1 < len(items) else None
        g.append(x)
    number: dict[int, int] = {id(g.start): 0}
    order = [g.start]
    stack = [iter(g.start.body())]
    while stack:
        for s in stack[-1]:
            if isinstance(s.value, Rule) and id(s.value) not in number:
                number[id(s.value)] = len(order)
                order.append(s.value)
                stack.append(iter(s.value.body()))
                break
        else:
            stack.pop()
    return [[s.value if not isinstance(s.value, Rule) else -number[id(s.value)] for s in r.body()]
            for r in order]


def expand_rules(rules: list[list[int]]) -> list[int]:
    """Expansion of S for rules in the naive_sequitur format."""
    out: list[int] = []

    def walk(i: int) -> None:
        for x in rules[i]:
            if x >= 0:
                out.append(x)
            else:
                walk(-x)

    walk(0)
    return out
