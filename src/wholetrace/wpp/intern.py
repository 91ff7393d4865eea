"""Interning of trace event chunks as WPP terminals, online and per mode (the interface path mode plugs into)."""

from __future__ import annotations

TYPE_CHECKING = False   # typing is not imported by the builder (~11 M instructions of its start-up)
if TYPE_CHECKING:   # pragma: no cover
    from typing import Callable

import numpy as np

from wholetrace.errors import InternalError, UsageError
from wholetrace.events import LEAVE_PATH
from wholetrace.kernels import wpp_intern as K
from wholetrace.wpp.symbols import BLOCK, PATH, Terminals


#: The table holds at most half its slots: 2**31 slots keep every id within int32.
MAX_TABLE_BITS = 32


class EventInterner:
    """Turns the event chunks of any number of streams into dense terminal ids, one table for all.

    ``value_kind`` is the terminal kind of a non-negative event: BLOCK for `blocks`, `witness`
    and `branches` streams (block or witness ids), PATH for `path` streams (Ball-Larus path
    ids; the register and handler block after EXC s, and the block ids of functions recorded
    with blocks, are PATH terminals too: what counts is that every event comes back exactly).
    ``leave_at``: a value at or above it also ends the activation (path mode's ``LEAVE_PATH``).
    ``fuse``: ENTER f and the value right after it (its activation's first path record) become one
    ENTER_PATH terminal, and ENTERs right before that one ENTER_CHAIN terminal each wrapping it
    (path mode; ``kernels.wpp_intern``); then a stream's last chunk goes through
    ``codes(..., final=True)`` or :meth:`finish`, or ENTERs ending it are left out.  ``group``
    (>= 2, path mode; needs ``fuse``): up to ``group`` of those terminals in a row, joined at calls
    and returns, are one SEQ terminal (docs/design.md, "The WPP's terminals, wave 12");
    ``seq_budget`` (floor, k): once the table holds max(floor, k x its other terminals) SEQ keys,
    a group only grows by a SEQ key it already holds (the table grows with the program, not the trace).
    ``codes`` is called from one thread at a time (the WPP builder's); the kernel it runs
    releases the GIL.  :meth:`set_path_functions` names the functions recorded with path ids
    (their exception records carry a register, ``kernels.wpp_intern``); unnamed ones record none.
    """

    def __init__(self, value_kind: int = BLOCK, leave_at: int = 0, fuse: bool = False, group: int = 0,
                 seq_budget: tuple[int, int] = (K.SEQ_BUDGET_MIN, K.SEQ_BUDGET_K)) -> None:
        if group >= 2 and not fuse:
            raise UsageError("EventInterner: group needs fuse (groups join fused terminals at calls and returns)")
        self.value_kind = int(value_kind)
        self.leave_at = int(leave_at)
        self.fuse = int(bool(fuse))
        self.group = int(group)
        bits = 12
        self._keys = _filled(1 << bits, K.EMPTY)
        self._ids = np.zeros(1 << bits, np.int64)
        self._tstate = np.array([0, bits, 0, int(seq_budget[0]), int(seq_budget[1])], np.int64)
        self._syms = np.empty(1 << (bits - 1), np.int64)
        self._streams: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._fpath = np.zeros(0, np.int8)
        self._scratch = np.empty(0, np.int32)

    def set_path_functions(self, fids: "np.ndarray | list[int]", n_functions: int = 0) -> None:
        """Functions ``fids`` record path ids (plan strategy ``paths``); the table covers at
        least ``n_functions`` functions (the others recorded so far record block ids)."""
        fids = np.asarray(fids, np.int64)
        n = max(int(n_functions), int(np.maximum.reduce(fids, axis=None)) + 1 if len(fids) else 0, len(self._fpath))
        if n > len(self._fpath):
            self._fpath = _extended(self._fpath, n - len(self._fpath), 0)
        self._fpath[fids] = 1

    def seed(self, terms: Terminals) -> None:
        """Start from the table ``terms`` (this interner still empty): its keys keep their ids, new
        ones follow (``wpp.view.ungrouped_view`` re-interns a recording's events with its ids)."""
        if len(self):
            raise InternalError("EventInterner.seed: the table is not empty")
        kind = np.asarray(terms.kind, np.int64)
        keys = np.array([K.pack(k, f, v) for k, f, v in zip(kind.tolist(), terms.fid.tolist(), terms.value.tolist())],
                        np.int64)   # a table of at most the SEQ budget and the program's terminals
        n = len(keys)
        bits = 12
        while n + 2 >= 1 << (bits - 1):
            bits += 1
        if bits > MAX_TABLE_BITS:
            raise UsageError(f"more than {1 << (MAX_TABLE_BITS - 1)} distinct WPP terminals")
        self._keys = _filled(1 << bits, K.EMPTY)
        self._ids = np.zeros(1 << bits, np.int64)
        K.rehash(keys, np.arange(n, dtype=np.int64), self._keys, self._ids, bits)
        self._syms = _extended(keys, max(n, 1 << 11))
        self._tstate[K.T_COUNT], self._tstate[K.T_BITS] = n, bits
        self._tstate[K.T_SEQ] = int(np.count_nonzero(kind == K.K_SEQ))

    def __len__(self) -> int:
        return int(self._tstate[K.T_COUNT])

    def codes(self, sid: int, chunk: np.ndarray, final: bool = False, scratch: bool = False) -> np.ndarray:
        """The terminal ids (int32) of ``chunk``, the next events of stream ``sid`` (``final``:
        its last ones).  With ``fuse`` ENTERs ending a chunk are held until the next one.
        ``scratch``: the ids are written to a buffer this interner reuses, valid until its next
        call (the builder's loop: no new pages to fault in for every chunk)."""
        events = np.ascontiguousarray(chunk, dtype=np.int32)
        stack, sstate = self._streams.get(sid) or self._streams.setdefault(
            sid, (np.empty(64, np.int64), np.zeros(K.S_SIZE, np.int64)))
        need = len(events) + int(sstate[K.S_PEND]) + 2   # + ENTERs and a group held from the last chunk
        if not scratch:
            out = np.empty(need, np.int32)
        else:
            if len(self._scratch) < need:
                self._scratch = np.empty(max(need, 2 * len(self._scratch)), np.int32)
            out = self._scratch
        pos = m = 0
        while True:
            pos, m, why = K.intern_chunk(events, pos, self.value_kind, self.leave_at, self._fpath, self.fuse,
                                         self.group, int(final), stack, sstate, self._keys, self._ids, self._tstate,
                                         self._syms, out, m)
            if why == K.ST_DONE:
                return out[:m]
            if why == K.ST_NEED_TABLE:
                self._grow_table()
            elif why == K.ST_NEED_SYMBOLS:
                self._syms = _extended(self._syms, len(self._syms))
            elif why == K.ST_NEED_STACK:
                stack = _extended(stack, len(stack))
                self._streams[sid] = (stack, sstate)
            else:  # pragma: no cover - defensive
                raise InternalError(f"interning: unknown status {why}")

    def finish(self, sid: int) -> np.ndarray:
        """The terminal ids stream ``sid`` still holds back (ENTERs waiting for their next event, a group)."""
        return self.codes(sid, np.zeros(0, np.int32), final=True)

    def _grow_table(self) -> None:
        bits = int(self._tstate[K.T_BITS]) + 1
        if bits > MAX_TABLE_BITS:   # ids are int32 (the builder's codes): refuse, never wrap
            raise UsageError(f"more than {1 << (MAX_TABLE_BITS - 1)} distinct WPP terminals")
        keys = _filled(1 << bits, K.EMPTY)
        ids = np.zeros(1 << bits, np.int64)
        K.rehash(self._keys, self._ids, keys, ids, bits)
        self._keys, self._ids = keys, ids
        self._tstate[K.T_BITS] = bits

    def terminals(self) -> Terminals:
        """The symbol table so far: terminal t is (kind[t], fid[t], value[t])."""
        kind, fid, value = K.unpack(self._syms[: len(self)])
        return Terminals(kind, fid, value)


def _filled(n: int, value: int) -> np.ndarray:
    """``np.full(n, value, np.int64)`` without numpy's ``numeric`` (the builder's numpy: docs/design.md,
    "The builder's numpy, wave 18")."""
    a = np.empty(n, np.int64)
    a.fill(value)
    return a


def _extended(a: np.ndarray, extra: int, fill: int | None = None) -> np.ndarray:
    """``a`` (1-D) followed by ``extra`` uninitialised items (``fill``: set to it), as
    ``np.concatenate([a, np.empty(extra, a.dtype)])`` makes it, without numpy's Python layer."""
    out = np.empty(len(a) + extra, a.dtype)
    out[: len(a)] = a
    if fill is not None:
        out[len(a):] = fill
    return out


def terminals_to_array(terms: Terminals) -> np.ndarray:
    """The (n, 3) int64 array (kind, fid, value) stored as ``wpp.symbols`` (filled column by
    column, not ``np.stack``: the builder's numpy has no ``shape_base``; docs/design.md, wave 18)."""
    out = np.empty((len(terms.kind), 3), np.int64)
    out[:, 0], out[:, 1], out[:, 2] = terms.kind, terms.fid, terms.value
    return out


def terminals_from_array(a: np.ndarray) -> Terminals:
    """Inverse of :func:`terminals_to_array`."""
    a = np.asarray(a, np.int64).reshape(-1, 3)
    return Terminals(a[:, 0].astype(np.int8), a[:, 1].astype(np.int32), a[:, 2].copy())


def events_of(codes: np.ndarray, terms: Terminals, widths: np.ndarray | None = None) -> np.ndarray:
    """The int32 events that terminal ids ``codes`` stand for (``widths``: ``terminal_widths(terms)``,
    if the caller has it)."""
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    kind, value = terms.kind.astype(np.int64), terms.value.astype(np.int64)
    if widths is None:
        widths = terminal_widths(terms)
    ok = (codes >= 0) & (codes < len(widths))
    out = np.empty(int(widths[codes[ok]].sum()) + 1, np.int64)
    m = K.terminal_events(codes, kind, terms.fid.astype(np.int64), value, out)
    if m < 0:
        i = -1 - m
        raise UsageError(f"terminal {int(codes[i])} is not in the symbol table")
    return out[:m].astype(np.int32)


def terminal_widths(terms: Terminals) -> np.ndarray:
    """How many events each terminal stands for (2 for EXC and ENTER_PATH, more for ENTER_CHAIN and SEQ)."""
    return K.terminal_widths(terms.kind.astype(np.int64), terms.fid.astype(np.int64),  # type: ignore[no-any-return]
                             terms.value.astype(np.int64))


#: Path mode's ``events.LEAVE_PATH`` (a path id at or above it ends the activation too), read from
#: ``wholetrace.events`` (never restated: the format's owner may move it).
PATH_LEAVE_AT = LEAVE_PATH

#: Terminals a SEQ group of path mode joins at most (docs/design.md, "The WPP's terminals, wave 12").
PATH_GROUP = 4

#: Recording mode -> interner factory.  Path mode registers its own (PATH terminals, ENTER fused
#: with the activation's first path: docs/design.md, "The WPP's terminals, wave 10"; groups of
#: those joined at calls and returns, wave 12) here.
INTERNERS: dict[str, Callable[[], EventInterner]] = {
    "blocks": EventInterner, "witness": EventInterner, "branches": EventInterner,
    "path": lambda: EventInterner(PATH, PATH_LEAVE_AT, fuse=True, group=PATH_GROUP),
}


def interner_for(mode: str) -> EventInterner:
    """A fresh interner for the streams of a ``mode`` recording."""
    try:
        return INTERNERS[mode]()
    except KeyError:
        raise UsageError(f"--wpp needs a trace mode ({', '.join(INTERNERS)}), not {mode!r}") from None
