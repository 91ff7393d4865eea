"""Cheaper path-mode record forms a plan picks (docs/design.md "Path mode", waves 13 and 16)."""

from __future__ import annotations

from wholetrace.events import LEAVE, LEAVE_PATH
from wholetrace.ids import EXIT

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:
    from typing import Sequence

    from wholetrace.instrument.cfg import CFG
    from wholetrace.instrument.pathnum import EdgeProbe, PathNumbering

#: Functions with at most this many paths close with ``wt.a(T[wt.p])``, ``T`` = ``leave_table(n)``
#: (a constant tuple): the record is an existing int object, where ``wt.p + LEAVE_PATH`` made a
#: new one per activation (an allocation, and an object the buffer holds until the flush).
LEAVE_TABLE_MAX = 256


def _exit_probes(cfg: CFG, probes: Sequence["EdgeProbe"]) -> list["EdgeProbe"]:
    """The probes of the edges into EXIT."""
    return [p for e, p in zip(cfg.edges, probes) if e.dst == EXIT]


def single_exit_record(cfg: CFG, probes: Sequence["EdgeProbe"]) -> int | None:
    """The closing record (``LEAVE_PATH + id``) when every edge into EXIT makes the same constant
    one (``leave-const``, one value), else None (docs/design.md, "Path mode, wave 13").  Then the
    epilogue appends that constant (as witness mode appends LEAVE) and the edges into EXIT set
    nothing: no ``wt.o`` store and load per activation; the handler of an exception leaving the
    activation appends its plain LEAVE itself and turns ``wt.a`` into ``skip``."""
    exits = _exit_probes(cfg, probes)
    values = {p.value for p in exits}
    if not exits or len(values) != 1 or any(p.kind != "leave-const" for p in exits):
        return None
    return values.pop()


def table_exits(cfg: CFG, probes: Sequence["EdgeProbe"]) -> bool:
    """Does every edge into EXIT record ``T[wt.p]`` (``leave``, nothing added: the register is the
    id there)?  Then the epilogue appends ``T[wt.p]`` itself (wave 9's form) and the edges set no
    ``wt.o``: one store and one load fewer per activation (docs/design.md "Path mode, wave 13")."""
    exits = _exit_probes(cfg, probes)
    return bool(exits) and all(p.kind == "leave" and p.value == 0 for p in exits)


#: A record ``wt.p + K`` reads ``T[wt.p]`` from a constant table when the register there lies in
#: 0 .. ``RECORD_TABLE_MAX`` - 1 (:func:`register_forms`).
RECORD_TABLE_MAX = 64
#: The entries of those tables that no register reaches (below its lowest, and a cut table's last,
#: read by -1): no path id (``pathnum.MAX_PATHS`` = LEAVE_PATH - 1 is none), so a decoder fails
#: with "path ... does not exist" (``kernels.decode``, BAD_PATH) if a wrong range ever reads one.
UNREAD_ID = LEAVE_PATH - 1


def register_forms(num: "PathNumbering", probes: Sequence["EdgeProbe"]) -> tuple[frozenset[int], dict[int, tuple[int, ...]]]:
    """Cheaper forms of the same register operations (docs/design.md "Path mode, wave 16"); the
    recorded values do not change.

    * ``same``: cut edges whose register is known where they run (``cut-const``) and equal to
      the reset: ``wt.a(K); wt.p = R`` stores the value ``wt.p`` already holds, so the store goes.
    * ``tables``: edges whose record adds a constant to an unknown register (a ``cut``
      ``wt.a(wt.p + K)``, a way out ``wt.o = T[wt.p + K]``) and whose register, on entering the
      edge's source (``pathregs.register_range``: every register the probes can leave there), lies
      in 0 .. ``RECORD_TABLE_MAX`` - 1: the record is read from a constant tuple indexed by the
      register (``(K, K + 1, ...)[wt.p]``, ``(LEAVE_PATH + K, ..., LEAVE)[wt.p]``): one specialised
      subscript of an existing int instead of an addition (~80 instructions measured on 3.11).

    Invariant: both rest on static facts holding on every run (``fold_known_registers``'s known
    registers, ``register_range``'s bounds).  Were one ever wrong, the recording would no longer
    repair itself at the next reset as ``wt.p + K`` did: a left-out reset carries a wrong register
    on; a register above the table raises IndexError in the program; one below its lowest (or -1 in
    a cut table) reads ``UNREAD_ID`` (+ LEAVE_PATH on a way out), which the decoder rejects as a path
    that does not exist (a StoreError), rather than a plausible id."""
    from wholetrace.instrument.pathregs import register_range

    same: set[int] = set()
    tables: dict[int, tuple[int, ...]] = {}
    rng: list[tuple[int, int] | None] | None = None
    for e, (p, q) in enumerate(zip(num.probes, probes)):
        if p.kind == "cut" and q.kind == "cut-const":
            if q.value - p.value == q.reset:   # the register known at the cut's source is the reset
                same.add(e)
            continue
        # (the bound on "leave" is load-bearing: past LEAVE_TABLE_MAX paths an exception leaves
        # ``wt.p = NO_PATH`` (``emit.Emitter.no_path``), not -1, so an epilogue ``T'[wt.p]``
        # (``exit_table``) would raise; ``exit_table`` checks it again)
        if not (q.kind == "cut" or q.kind == "leave" and num.num_paths <= LEAVE_TABLE_MAX) or not q.value:
            continue
        if rng is None:
            rng = register_range(num.graph, num.dag, num.inc)
        r = rng[num.graph.edges[e][0]]
        if r is None or r[0] < 0 or r[1] >= RECORD_TABLE_MAX:
            continue
        if q.kind == "cut":   # (entries below the lowest register, and index -1, are never read)
            tables[e] = tuple(q.value + i if i >= r[0] else UNREAD_ID for i in range(r[1] + 1)) + (UNREAD_ID,)
        else:   # (LEAVE last, as in ``leave_table``: -1 is an exception's register, ``exit_table``)
            tables[e] = tuple(LEAVE_PATH + (q.value + i if i >= r[0] else UNREAD_ID) for i in range(r[1] + 1)) + (LEAVE,)
    return frozenset(same), tables


def exit_table(cfg: CFG, probes: Sequence["EdgeProbe"], tables: dict[int, tuple[int, ...]],
               num_paths: int) -> tuple[int, ...] | None:
    """When every edge into EXIT records ``T[wt.p + K]`` with one ``K`` and reads it from a
    shifted table (:func:`register_forms`), the table the epilogue indexes by the register itself
    (``wt.a(T'[wt.p])``, as :func:`table_exits` does for ``K`` = 0): the edges then set no ``wt.o``.
    ``K`` != 0 is implied (:func:`register_forms` gives no table to an edge adding 0; the
    ``K`` = 0 case is :func:`table_exits`'s), and one ``K`` makes every exit's table the same
    entries, so the longest one serves all.  The table ends with LEAVE, so the register -1 an
    exception leaves (``emit.Emitter.no_path``) closes with a plain LEAVE; that register is -1
    only up to ``LEAVE_TABLE_MAX`` paths (past it, NO_PATH), so past it: None, as otherwise."""
    exits = [(e, p) for e, (edge, p) in enumerate(zip(cfg.edges, probes)) if edge.dst == EXIT]
    if (num_paths > LEAVE_TABLE_MAX or not exits or any(p.kind != "leave" or e not in tables for e, p in exits)
            or len({p.value for _e, p in exits}) != 1):
        return None
    # one K: every exit's table has the same entries where it is read; an entry is read if any
    # exit's register reaches it (the lowest of them: a real id is below ``UNREAD_ID``'s record)
    shifted = [tables[e] for e, _p in exits]
    top = max(len(t) for t in shifted) - 1
    return tuple(min(t[i] for t in shifted if i < len(t) - 1) for i in range(top)) + (LEAVE,)
