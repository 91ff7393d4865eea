"""Incremental SEQUITUR / SEQUITUR(1) grammar builder: feed chunks, then finish."""

from __future__ import annotations

TYPE_CHECKING = False   # typing is not imported by the builder (~11 M instructions of its start-up)
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any

import numpy as np

from wholetrace.errors import InternalError, UsageError
from wholetrace.grammar.grammar import Grammar
from wholetrace.kernels import sequitur as K

#: largest terminal accepted (digram keys pack two 32-bit symbol values)
MAX_SYMBOL = K.MAX_SYMBOL
_SLICE = 1 << 18  # symbols converted to int32 per kernel call (bounds temporary memory: 1 MiB; a feeding
# thread gives the GIL back between calls, and taking it back from a busy program costs a switch interval)


def _filled(n: int, value: int) -> np.ndarray:
    """``np.full(n, value, np.int32)`` through the compiled module's own calls: the WPP builder's
    numpy has no ``numpy._core.numeric`` (docs/design.md, "The builder's numpy, wave 18")."""
    a = np.empty(n, np.int32)
    a.fill(value)
    return a


def _new_state(lookahead: bool, nodes: int, rules: int, bits: int) -> tuple[np.ndarray, ...]:
    nd = _filled(4 * nodes, K.NIL)
    rguard = _filled(rules, K.NIL)
    rcount = np.zeros(rules, np.int32)
    rkey = np.zeros(rules, np.int32)  # check word of a rule body's tagged entry (kernels/sequitur.py)
    tab = _filled(2 << bits, K.T_EMPTY)
    stack = np.empty(3 << 16, np.int64)
    meta = np.zeros(K.META_SIZE, np.int64)
    # rule 0 is S, whose guard is node 0
    nd[K.NX] = nd[K.PV] = 0
    nd[K.VL] = -1
    nd[K.SL] = K.GUARD
    rguard[0] = 0
    meta[K.M_FREE_HEAD] = K.NIL
    meta[K.M_RFREE_HEAD] = K.NIL
    meta[K.M_FRESH] = 1
    meta[K.M_RFRESH] = 1
    meta[K.M_LIVE_RULES] = 1
    meta[K.M_LIVE_NODES] = 1
    meta[K.M_TBITS] = bits
    meta[K.M_LOOKAHEAD] = int(lookahead)
    _set_phase(nd, meta)
    return (nd, rguard, rcount, rkey, tab, stack, meta)


def _set_phase(nd: np.ndarray, meta: np.ndarray) -> None:
    """Tell the kernels which node ids start a 64-byte line (new rules are laid out in lines)."""
    addr = nd.__array_interface__["data"][0]   # not ``nd.ctypes``: it imports ctypes (2-3 ms of the WPP builder's start-up)
    meta[K.M_NODE_PHASE] = ((-addr) % 64) // 16 if addr % 16 == 0 else 0


def _grown(a: np.ndarray, size: int) -> np.ndarray:
    """``a`` enlarged to ``size`` items in place (realloc: large blocks are remapped, not
    copied, so growing does not hold the old and the new array at once).  The new items
    are zero; the kernels initialise nodes and rules when they hand them out."""
    a.resize(size, refcheck=False)
    return a


class GrammarBuilder:
    """Builds a SEQUITUR grammar incrementally; ``feed`` releases the GIL while it runs.

    Feeding a sequence in any number of chunks gives exactly the grammar of feeding it
    at once.  With ``lookahead=True`` the builder runs SEQUITUR(1) (Larus 1999, 3.2),
    which holds the last symbol back until the next one (or ``finish``) arrives.
    """

    def __init__(self, lookahead: bool = False, expected_symbols: int = 0) -> None:
        self.lookahead = bool(lookahead)
        nodes = max(1 << 14, int(expected_symbols) // 16)
        bits = max(15, (nodes * 2).bit_length())
        self._st: tuple[np.ndarray, ...] | None = _new_state(self.lookahead, nodes, 1 << 12, bits)
        self._n = 0

    @property
    def symbols_fed(self) -> int:
        """How many symbols were given to ``feed`` so far."""
        return self._n

    def feed(self, chunk: Any) -> None:
        """Append the integer symbols of ``chunk`` (each in 0 .. 2**31-1) to the input."""
        st = self._state()
        arr = np.asarray(chunk)
        if arr.ndim != 1:
            arr = arr.reshape(-1)
        if arr.size == 0:
            return
        if arr.dtype.kind not in "iu":
            raise UsageError(f"symbols must be integers, got dtype {arr.dtype}")
        if arr.dtype == np.int32:   # one pass: an int32 is at most MAX_SYMBOL (the WPP builder's ids)
            if (lo := int(np.minimum.reduce(arr, axis=None))) < 0:
                raise UsageError(f"symbols must lie in 0..2**31-1, got {lo}")
        else:
            lo, hi = int(np.minimum.reduce(arr, axis=None)), int(np.maximum.reduce(arr, axis=None))
            if lo < 0 or hi > MAX_SYMBOL:
                raise UsageError(f"symbols must lie in 0..2**31-1, got {lo if lo < 0 else hi}")
        for s in range(0, arr.size, _SLICE):
            part = arr[s : s + _SLICE]  # int32: symbols fit (checked above), half the bytes of int64
            if part.dtype != np.int32 or not (part.flags.c_contiguous and part.flags.writeable):
                part = part.astype(np.int32)
            pos = 0
            while True:
                pos, why = K.feed(*st, part, pos)
                self._check_overflow(st)
                if why == K.ST_DONE:
                    break
                st = self._grow(int(why))
        self._n += int(arr.size)

    def finish(self) -> Grammar:
        """End the input and return its grammar; the builder cannot be fed afterwards."""
        st = self._state()
        while (why := int(K.room(st[0], st[1], st[4], st[6]))) != K.ST_DONE:
            st = self._grow(why)
        K.flush(*st)
        self._check_overflow(st)
        nd, rguard, meta = st[0], st[1], st[6]
        self._st = None
        del st  # free the digram table before flattening
        nrules = int(meta[K.M_LIVE_RULES])
        off, rhs, ok = K.extract(nd, rguard, nrules, int(meta[K.M_LIVE_NODES]) - nrules)
        if not ok:  # pragma: no cover - the live counts disagree with the lists
            raise InternalError("SEQUITUR grammar extraction found inconsistent rule lists")
        return Grammar(off, rhs, lookahead=self.lookahead, built=True)

    def stats(self) -> dict[str, int]:
        """Sizes of the working structures (for benchmarks and diagnostics)."""
        st = self._state()
        meta = st[6]
        return {
            "node_capacity": len(st[0]) // 4,
            "live_nodes": int(meta[K.M_LIVE_NODES]),
            "live_rules": int(meta[K.M_LIVE_RULES]),
            "table_slots": len(st[4]) // 2,
            "table_used": int(meta[K.M_TUSED]),
            "max_stack": int(meta[K.M_MAX_SP]) // 3,
            "bytes": int(sum(a.nbytes for a in st)),
        }

    # -- internals ---------------------------------------------------------
    def _state(self) -> tuple[np.ndarray, ...]:
        if self._st is None:
            raise UsageError("GrammarBuilder.finish() was already called")
        return self._st

    @staticmethod
    def _check_overflow(st: tuple[np.ndarray, ...]) -> None:
        if st[6][K.M_OVERFLOW]:
            raise InternalError("SEQUITUR working arrays overflowed inside one step")

    def _grow(self, why: int) -> tuple[np.ndarray, ...]:
        nd, rguard, rcount, rkey, tab, stack, meta = self._state()
        if why == K.ST_NEED_NODES:
            nodes = len(nd) // 4
            nd = _grown(nd, 4 * (nodes + max(nodes // 4, 2 * K.MARGIN_NODES)))
            _set_phase(nd, meta)
        elif why == K.ST_NEED_RULES:
            size = len(rguard) + max(len(rguard) // 4, 2 * K.MARGIN_RULES)
            rguard = _grown(rguard, size)
            rcount = _grown(rcount, size)
            rkey = _grown(rkey, size)
        elif why == K.ST_NEED_TABLE:
            bits = int(meta[K.M_TBITS])
            while (int(meta[K.M_TUSED]) + K.MARGIN_TABLE) * 2 > (1 << bits):
                bits += 1  # keep the live load at most 1/2 after a rebuild
            new_tab = _filled(2 << bits, K.T_EMPTY)
            used = K.rehash(nd, rguard, tab, new_tab, bits)
            del tab
            tab = new_tab
            meta[K.M_TUSED] = used
            meta[K.M_TBITS] = bits
        else:  # pragma: no cover - defensive
            raise InternalError(f"unknown growth request {why}")
        self._st = (nd, rguard, rcount, rkey, tab, stack, meta)
        return self._st


def sequitur(symbols: Any, lookahead: bool = False) -> Grammar:
    """The SEQUITUR (or, with ``lookahead=True``, SEQUITUR(1)) grammar of ``symbols``."""
    arr = np.asarray(symbols)
    b = GrammarBuilder(lookahead=lookahead, expected_symbols=int(arr.size))
    b.feed(arr)
    return b.finish()
