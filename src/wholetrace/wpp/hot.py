"""Minimal hot subpaths of any grammar (Larus 1999 §4.2, spec wpp.md §3.2), found without expanding it.

Reference: J. R. Larus, "Whole Program Paths", PLDI 1999 (``../shared/seeds/``), §4 and
Figure 7, in the cleaned-up reading of ``../shared/specs/wpp.md`` §3.2 with its fixes (i)
and (ii), plus fixes (iii) and (iv) below.

A *subpath* is a run of consecutive terminals of the grammar's expansion; its cost is its
frequency times the sum of its terminals' costs.  Each rule R is visited once, children
first, and scans its right-hand side with a window of its last ≤ L symbols (see
``kernels.hot.hot_scan``): its own terminals, and of each child C only C's *prefix* (the
symbols of C before any subpath reported inside C, at most L).  When the window holds at
least ``min_length`` symbols and costs at least ``min_cost`` at frequency f(R), it is a
minimal hot subpath: reported, then the window restarts.  After a child whose prefix does
not cover it, the window continues from C's *suffix* (the symbols after the last subpath
reported inside C, at most L).

Invariant (the reference semantics of spec §6.8.4, checked by ``tests/wpp/naive_hot.py``
on full expansions): R's reports are exactly those of a scan over E(R) whose window restarts
after every subpath reported at R or inside a child occurrence, and which tests windows
ending at R's own terminals and in each child's prefix.  Fix (iii): when the window jumps to
a child's suffix it never takes back symbols R reported already inside that child's prefix.
Fix (iv): a report at R cuts R's prefix back to the report's start even when a non-covering
child froze the prefix already (fix (ii) alone only cuts an unfrozen prefix).  A child C of
L < |E(C)| < 2L symbols has a suffix that overlaps its prefix, so a report in the window after C
can start inside R's prefix; otherwise parents would scan those reported symbols again.
Work is O(E·L) for E right-hand-side symbols; prefixes and suffixes are kept only until the
last use of their rule.

Each distinct string is reported once (``HotSubpath``): its frequency is the sum of f(R) over
the places it was found.  A place is the string's least common ancestor, so every occurrence
of the expansion is counted at most once: the frequency is a lower bound of the true count
(``wpp.queries.occurrences`` gives the exact count of any one string).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from wholetrace.errors import UsageError
from wholetrace.grammar import Grammar
from wholetrace.kernels import hot as HK
from wholetrace.wpp.queries import RuleTables, rule_tables

#: Longest window accepted (the kernel keeps two windows of L symbols per live rule).
MAX_LENGTH_LIMIT = 1 << 16


@dataclass(frozen=True)
class HotParams:
    """Subpaths of ``min_length`` to ``max_length`` (L) symbols costing at least ``min_cost`` (C)."""

    min_cost: int
    max_length: int = 100
    min_length: int = 1


@dataclass(frozen=True)
class HotSubpath:
    """One minimal hot subpath: its terminals, how often it was found, its cost.

    ``frequency`` sums f(R) over the rules ``rules`` where it was found (with repeats when
    found at several places of one rule); ``unit_cost`` is the sum of its terminals' costs and
    ``cost = frequency × unit_cost``.
    """

    symbols: tuple[int, ...]
    frequency: int
    unit_cost: int
    cost: int
    rules: tuple[int, ...]

    @property
    def length(self) -> int:
        return len(self.symbols)


@dataclass(frozen=True)
class HotReports:
    """Every report of the scan, as arrays: report i was found in rule ``rule[i]`` at offset
    ``start[i]`` of its expansion, ``length[i]`` symbols ``syms[soff[i]:soff[i+1]]``, with cost
    ``cost[i]`` (window cost × f(rule))."""

    rule: np.ndarray
    start: np.ndarray
    length: np.ndarray
    cost: np.ndarray
    soff: np.ndarray
    syms: np.ndarray

    def __len__(self) -> int:
        return len(self.rule)

    def symbols(self, i: int) -> np.ndarray:
        return self.syms[self.soff[i]:self.soff[i + 1]]


@dataclass(frozen=True)
class HotResult:
    """Result of :func:`hot_subpaths`: distinct subpaths by decreasing cost, the raw reports,
    each rule's prefix length and suffix start (for tests), and measurements."""

    params: HotParams
    subpaths: list[HotSubpath]
    reports: HotReports
    prefix_length: np.ndarray = field(repr=False)
    suffix_start: np.ndarray = field(repr=False)
    rules_visited: int = 0
    peak_live_rules: int = 0
    seconds: float = 0.0

    def __len__(self) -> int:
        return len(self.subpaths)


def check_params(params: HotParams, costs: np.ndarray, tables: RuleTables) -> np.ndarray:
    """Validate parameters and costs (integers ≥ 0, one per terminal); returns the cost array."""
    p = params
    if not 1 <= p.min_length <= p.max_length:
        raise UsageError(f"need 1 <= min length ({p.min_length}) <= max length ({p.max_length})")
    if p.max_length > MAX_LENGTH_LIMIT:
        raise UsageError(f"max length {p.max_length} is above the limit {MAX_LENGTH_LIMIT}")
    if p.min_cost < 1:
        raise UsageError(f"min cost must be at least 1, got {p.min_cost}")
    c = np.asarray(costs)
    if c.ndim != 1 or c.dtype.kind not in "iu":
        raise UsageError("costs must be a 1-D integer array (one cost per terminal)")
    if len(c) < tables.num_terminals:
        raise UsageError(f"{len(c)} costs for {tables.num_terminals} terminals")
    c = np.ascontiguousarray(c, dtype=np.int64)
    if len(c) and c.min() < 0:
        raise UsageError("costs must not be negative")
    top = (int(c.max()) if len(c) else 0) * p.max_length * (int(tables.freq.max()) if len(tables.freq) else 0)
    if top >= 1 << 62:
        raise UsageError("costs x length x frequency overflow 64-bit integers")
    return c


def scan(grammar: Grammar, costs: np.ndarray, params: HotParams) -> HotResult:
    """Run the O(E·L) scan and return the raw reports (``subpaths`` left empty)."""
    tables = rule_tables(grammar)
    c = check_params(params, costs, tables)
    t0 = time.perf_counter()
    off, rhs, L = tables.off, tables.rhs, params.max_length
    refs, peak = HK.peak_live(off, rhs, tables.order)
    nr = len(off) - 1
    rows = max(int(peak), 1)
    pre, suf = np.empty((rows, L), np.int32), np.empty((rows, L), np.int32)
    work = [np.empty(rows, np.int64)] + [np.empty(nr, np.int64) for _ in range(4)] + [np.empty(L, np.int32)]
    cap = max(1024, len(rhs) // 8)
    while True:
        reps = np.empty((cap, 4), np.int64)
        soff = np.empty(cap + 1, np.int64)
        syms = np.empty(cap * min(L, 16), np.int32)
        n, status = HK.hot_scan(off, rhs, tables.lens, tables.freq, c, tables.order, refs,
                                params.min_length, L, params.min_cost, pre, suf, *work, reps, soff, syms)
        if status == HK.ST_OK:
            break
        cap *= 4
    secs = time.perf_counter() - t0
    plen, sstart = work[2], work[3]
    reports = HotReports(reps[:n, 0].copy(), reps[:n, 1].copy(), reps[:n, 2].copy(), reps[:n, 3].copy(),
                         soff[:n + 1].copy(), syms[:soff[n]].copy())
    return HotResult(params, [], reports, plen, sstart, len(tables.order), int(peak), secs)


def merge(reports: HotReports, costs: np.ndarray, freq: np.ndarray) -> list[HotSubpath]:
    """One ``HotSubpath`` per distinct string, by decreasing cost (then by symbols)."""
    found: dict[bytes, list[int]] = {}
    syms = reports.syms
    soff = reports.soff
    for i in range(len(reports)):
        key = syms[soff[i]:soff[i + 1]].tobytes()
        found.setdefault(key, []).append(i)
    out: list[HotSubpath] = []
    for key, idx in found.items():
        s = np.frombuffer(key, dtype=syms.dtype)
        unit = int(costs[s].sum())
        rules = tuple(sorted(int(reports.rule[i]) for i in idx))
        f = int(sum(int(freq[r]) for r in rules))
        out.append(HotSubpath(tuple(int(x) for x in s), f, unit, f * unit, rules))
    out.sort(key=lambda h: (-h.cost, h.symbols))
    return out


def hot_subpaths(grammar: Grammar, costs: np.ndarray | list[int], *, min_cost: int, max_length: int = 100,
                 min_length: int = 1) -> HotResult:
    """The minimal hot subpaths of ``grammar``'s expansion (see the module doc).

    ``costs[t]`` is the cost of terminal ``t`` (e.g. the statements on a path or in a block;
    0 for ENTER/LEAVE markers).  Subpaths have ``min_length`` to ``max_length`` terminals and
    cost (frequency × summed terminal costs) at least ``min_cost``.
    """
    params = HotParams(int(min_cost), int(max_length), int(min_length))
    res = scan(grammar, np.asarray(costs), params)
    c = np.ascontiguousarray(np.asarray(costs), dtype=np.int64)
    subs = merge(res.reports, c, grammar.frequencies())
    return HotResult(params, subs, res.reports, res.prefix_length, res.suffix_start, res.rules_visited,
                     res.peak_live_rules, res.seconds)
