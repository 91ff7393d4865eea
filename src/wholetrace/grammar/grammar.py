"""The Grammar: a flat, immutable SEQUITUR grammar that is queried without expanding it."""

from __future__ import annotations

TYPE_CHECKING = False   # typing is not imported by the builder (~11 M instructions of its start-up)
if TYPE_CHECKING:   # pragma: no cover
    from typing import Iterator

import numpy as np

from wholetrace.errors import GrammarError
from wholetrace.kernels import sequitur_flat as K

DEFAULT_CHUNK = 1 << 16


class Grammar:
    """A straight-line grammar whose start rule S is rule 0.

    Rule ``i``'s right-hand side is ``rhs[off[i]:off[i+1]]``; a symbol ``x >= 0`` is a
    terminal and ``x < 0`` refers to rule ``-x``.  Rules other than S are numbered by
    their first appearance in a depth-first walk from S, so equal grammars compare equal.
    ``built`` says that the SEQUITUR builder made it (the builder's output is a function of
    its input, which the compact encoding relies on); it does not take part in equality.
    """

    __slots__ = ("off", "rhs", "lookahead", "built", "_order", "_lens", "_pos", "_depth", "_freq")

    def __init__(self, off: np.ndarray, rhs: np.ndarray, lookahead: bool = False, built: bool = False) -> None:
        self.off = np.ascontiguousarray(off, dtype=np.int64)
        self.rhs = np.ascontiguousarray(rhs, dtype=np.int64)
        self.off.flags.writeable = False
        self.rhs.flags.writeable = False
        self.lookahead = bool(lookahead)
        self.built = bool(built)
        self._order: np.ndarray | None = None
        self._lens: np.ndarray | None = None
        self._pos: np.ndarray | None = None
        self._depth = -1
        self._freq: np.ndarray | None = None

    # -- sizes ---------------------------------------------------------------
    @property
    def num_rules(self) -> int:
        """Number of rules, not counting S."""
        return len(self.off) - 2

    @property
    def num_symbols(self) -> int:
        """Number of right-hand-side symbols over all rules, S included."""
        return len(self.rhs)

    @property
    def start_length(self) -> int:
        """Length of S's right-hand side."""
        return int(self.off[1] - self.off[0])

    @property
    def max_rule_length(self) -> int:
        """Longest right-hand side among the rules other than S (0 if there are none)."""
        if self.num_rules == 0:
            return 0
        return int(np.diff(self.off[1:]).max())

    def __len__(self) -> int:
        """Length of the expansion (the original sequence)."""
        return int(self.lengths()[0]) if len(self.off) > 1 else 0

    def rule(self, i: int) -> np.ndarray:
        """Right-hand side of rule ``i`` (0 = S): terminals as is, rule ``r`` as ``-r``."""
        if not 0 <= i < len(self.off) - 1:
            raise IndexError(f"rule {i} out of range 0..{len(self.off) - 2}")
        return self.rhs[self.off[i] : self.off[i + 1]]

    # -- derived tables ------------------------------------------------------
    def _topo(self) -> np.ndarray:
        if self._order is None:
            self._order = K.topo_order(self.off, self.rhs)
        return self._order

    def lengths(self) -> np.ndarray:
        """Expansion length of every rule (index = rule number)."""
        if self._lens is None:
            self._lens, self._pos = K.rule_lengths(self.off, self.rhs, self._topo())
        return self._lens

    def depth(self) -> int:
        """Longest chain of nested rule references below S."""
        if self._depth < 0:
            self._depth = int(K.rule_depths(self.off, self.rhs, self._topo()))
        return self._depth

    def frequencies(self) -> np.ndarray:
        """How many times each rule occurs in the expansion (S: 1); = DAG paths from S."""
        if self._freq is None:
            self._freq = K.rule_frequencies(self.off, self.rhs, self._topo())
            self._freq.flags.writeable = False
        return self._freq

    # -- expansion -----------------------------------------------------------
    def expand_range(self, i: int, j: int) -> np.ndarray:
        """Symbols ``i`` to ``j - 1`` of the expansion, found by descending rule lengths."""
        n = len(self)
        if not 0 <= i <= j <= n:
            raise IndexError(f"range {i}:{j} outside 0:{n}")
        lens = self.lengths()
        return K.expand_range(self.off, self.rhs, lens, self._pos, self.depth(), int(i), int(j))

    def expand(self) -> np.ndarray:
        """The whole original sequence (int64)."""
        return self.expand_range(0, len(self))

    def iter_chunks(self, size: int = DEFAULT_CHUNK) -> Iterator[np.ndarray]:
        """The expansion, front to back, in arrays of at most ``size`` symbols."""
        n = len(self)
        for i in range(0, n, max(1, size)):
            yield self.expand_range(i, min(n, i + size))

    def iter_chunks_reversed(self, size: int = DEFAULT_CHUNK) -> Iterator[np.ndarray]:
        """The expansion back to front: each array is reversed, the last symbols first."""
        size = max(1, size)
        j = len(self)
        while j > 0:
            i = max(0, j - size)
            yield self.expand_range(i, j)[::-1].copy()
            j = i

    # -- checks and presentation ---------------------------------------------
    def check(self) -> None:
        """Raise GrammarError unless the grammar is well formed and obeys both SEQUITUR
        invariants: digram uniqueness (up to overlapping runs like ``aaa``) and rule
        utility (every rule but S is referenced at least twice)."""
        off, rhs = self.off, self.rhs
        nr = len(off) - 1
        if nr < 1 or off[0] != 0 or off[-1] != len(rhs) or np.any(np.diff(off) < 0):
            raise GrammarError("grammar offsets are malformed")
        if nr > 1 and np.diff(off[1:]).min() < 2:
            raise GrammarError("a rule other than S has fewer than two symbols")
        nts = -rhs[rhs < 0]
        if len(nts) and (nts.max() >= nr or nts.min() < 1):
            raise GrammarError("a symbol refers to a rule that does not exist")
        refs = np.bincount(nts, minlength=nr)
        if nr > 1 and refs[1:].min() < 2:
            r = int(np.argmin(refs[1:])) + 1
            raise GrammarError(f"rule utility: rule {r} is referenced {refs[r]} time(s)")
        order = self._topo()
        if np.any(order < 0) or order[0] != 0:
            raise GrammarError("rules are cyclic or unreachable from S")
        if len(rhs) < 2:
            return
        # digrams: pairs (rhs[k], rhs[k+1]) inside one rule
        inside = np.ones(len(rhs) - 1, bool)
        ends = off[1:-1] - 1
        inside[ends[(ends >= 0) & (ends < len(inside))]] = False
        ks = np.nonzero(inside)[0]
        a, b = rhs[ks], rhs[ks + 1]
        srt = np.lexsort((ks, b, a))
        a, b, ks = a[srt], b[srt], ks[srt]
        new = np.ones(len(a), bool)
        new[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
        starts = np.nonzero(new)[0]
        sizes = np.diff(np.append(starts, len(a)))
        bad = starts[sizes > 2]
        two = starts[sizes == 2]
        two = two[(ks[two + 1] != ks[two] + 1) | (a[two] != b[two])]
        if len(bad) or len(two):
            k = int(bad[0] if len(bad) else two[0])
            raise GrammarError(f"digram uniqueness: ({a[k]}, {b[k]}) occurs more than once")

    def symbol_name(self, x: int) -> str:
        """Printable name of a symbol: terminals as numbers, rules as R<i>."""
        return str(int(x)) if x >= 0 else f"R{-int(x)}"

    def format_rules(self, names: bool = True) -> str:
        """One line per rule, ``S -> ...`` then ``R1 -> ...``."""
        lines = []
        for i in range(len(self.off) - 1):
            head = "S" if i == 0 else f"R{i}"
            lines.append(f"{head} -> " + " ".join(self.symbol_name(x) for x in self.rule(i)))
        return "\n".join(lines)

    def to_dot(self, max_rules: int = 500) -> str:
        """Graphviz DOT text of the grammar DAG (for small grammars)."""
        if self.num_rules + 1 > max_rules:
            raise GrammarError(f"grammar has {self.num_rules + 1} rules, more than max_rules={max_rules}")
        out = ["digraph grammar {", "  node [shape=box, fontname=monospace];"]
        for i in range(len(self.off) - 1):
            name = "S" if i == 0 else f"R{i}"
            body = " ".join(self.symbol_name(x) for x in self.rule(i))
            out.append(f'  r{i} [label="{name} -> {body}"];')
            for pos, x in enumerate(self.rule(i)):
                if x < 0:
                    out.append(f'  r{i} -> r{-int(x)} [label="{pos}"];')
        out.append("}")
        return "\n".join(out) + "\n"

    def __repr__(self) -> str:
        return (f"Grammar(rules={self.num_rules}, symbols={self.num_symbols}, "
                f"start_length={self.start_length}, lookahead={self.lookahead})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Grammar):
            return NotImplemented
        return (self.lookahead == other.lookahead and np.array_equal(self.off, other.off)
                and np.array_equal(self.rhs, other.rhs))

    __hash__ = None  # type: ignore[assignment]

    # -- storage -------------------------------------------------------------
    def to_bytes(self, compact: bool = False) -> bytes:
        """Versioned binary encoding (see wholetrace.grammar.encoding): the explicit rules,
        which decode without rebuilding (what queries on a stored grammar need); with
        ``compact=True`` and a grammar the builder made, the much smaller archival form whose
        decoding rebuilds the grammar (about one build's time)."""
        from wholetrace.grammar.encoding import encode

        return encode(self, compact=compact)

    @classmethod
    def from_bytes(cls, data: bytes) -> "Grammar":
        """Decode ``to_bytes`` output; raises GrammarError on foreign or corrupt data."""
        from wholetrace.grammar.encoding import decode

        return decode(data)
