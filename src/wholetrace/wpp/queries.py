"""Grammar queries the WPP analyses need: checked rule tables, terminal counts, LCA counts of a sequence, rule ranges."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wholetrace.errors import GrammarError, UsageError
from wholetrace.grammar import Grammar
from wholetrace.kernels import hot as HK
from wholetrace.kernels import hot_queries as QK


@dataclass(frozen=True)
class RuleTables:
    """A grammar's rules as checked arrays: ``order`` lists the rules reachable from S, each
    after the rules it uses; ``lens`` are expansion lengths, ``freq`` node frequencies (how
    many times each rule occurs in the expansion of S); ``num_terminals`` = largest terminal + 1."""

    off: np.ndarray
    rhs: np.ndarray
    order: np.ndarray
    lens: np.ndarray
    freq: np.ndarray
    num_terminals: int


def rule_tables(grammar: Grammar) -> RuleTables:
    """Validate ``grammar`` as a straight-line grammar (any rule lengths, no cycles) and return
    its tables; raises GrammarError on malformed rules."""
    off, rhs = grammar.off, grammar.rhs
    nr = len(off) - 1
    if nr < 1 or off[0] != 0 or off[-1] != len(rhs) or np.any(np.diff(off) < 0):
        raise GrammarError("grammar offsets are malformed")
    refs = -rhs[rhs < 0]
    if len(refs) and (refs.max() >= nr or refs.min() < 1):
        raise GrammarError("a symbol refers to a rule that does not exist")
    if len(rhs) and rhs.max() > np.iinfo(np.int32).max:
        raise GrammarError("a terminal does not fit 31 bits")
    everything, status = HK.postorder(off, rhs, True)
    if status != HK.ST_OK:
        raise GrammarError("a rule derives itself (the grammar is cyclic)")
    order, _ = HK.postorder(off, rhs, False)
    lens = grammar.lengths()
    freq = grammar.frequencies()
    nt = int(rhs.max()) + 1 if len(rhs) and rhs.max() >= 0 else 0
    return RuleTables(off, rhs, order, lens, freq, nt)


def terminal_counts(grammar: Grammar, minlength: int = 0) -> np.ndarray:
    """How many times each terminal occurs in the expansion (index = terminal), without expanding."""
    t = rule_tables(grammar)
    return QK.terminal_counts(t.off, t.rhs, t.freq, max(minlength, t.num_terminals))


def lca_occurrences(grammar: Grammar, seq: np.ndarray | list[int]) -> np.ndarray:
    """Per rule R: the occurrences of ``seq`` in E(R) whose least common ancestor is R.  Each
    stands for f(R) occurrences in the whole expansion (Larus 1999 §3.3: a sequence with an LCA
    has the LCA's frequency)."""
    t = rule_tables(grammar)
    s = _sequence(seq)
    return QK.lca_counts(t.off, t.rhs, t.lens, t.freq, t.order, s, len(t.off))


def occurrences(grammar: Grammar, seq: np.ndarray | list[int]) -> int:
    """Number of (possibly overlapping) occurrences of ``seq`` in the expansion, in O(E·|seq|) plus the descents into rules."""
    t = rule_tables(grammar)
    s = _sequence(seq)
    local = QK.lca_counts(t.off, t.rhs, t.lens, t.freq, t.order, s, len(t.off))
    return int(np.dot(local, t.freq))


def expand_rule(grammar: Grammar, rule: int, start: int = 0, stop: int | None = None) -> np.ndarray:
    """Symbols ``start .. stop-1`` of rule ``rule``'s expansion (all of it by default)."""
    t = rule_tables(grammar)
    if not 0 <= rule < len(t.off) - 1:
        raise UsageError(f"rule {rule} out of range 0..{len(t.off) - 2}")
    n = int(t.lens[rule])
    stop = n if stop is None else stop
    if not 0 <= start <= stop <= n:
        raise UsageError(f"range {start}:{stop} outside 0:{n} of rule {rule}")
    out = np.empty(stop - start, np.int64)
    scratch = np.empty(len(t.off) + 1, np.int64)
    QK.expand_into(t.off, t.rhs, t.lens, rule, start, stop, out, scratch, scratch.copy())
    return out


def _sequence(seq: np.ndarray | list[int]) -> np.ndarray:
    s = np.ascontiguousarray(np.asarray(seq, dtype=np.int64).reshape(-1))
    if len(s) and s.min() < 0:
        raise UsageError("a sequence of terminals must not hold negative symbols")
    return s
