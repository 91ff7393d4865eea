"""One function's stored CFG and probe plan, checked before anything indexes with it.

A recording stores each function's CFG as the JSON of ``instrument.cfg.CFG.to_json`` plus
the probe plan the recorder used (``"plan"``).  Everything read from a file is data to
check: :func:`parse_shape` turns the JSON into columns (numpy arrays for the numbers) and
raises a one-line :class:`~wholetrace.errors.StoreError` for anything malformed or out of
range, so the tables and kernels built from a shape can index without checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from wholetrace.errors import StoreError
from wholetrace.ids import ENTRY, EXIT

if TYPE_CHECKING:
    from wholetrace.instrument.cfg import CFG

#: Largest function accepted from a file (blocks, statements or edges).
MAX_ITEMS = 1 << 20
#: Statement kinds of ``instrument.cfg.STMT_KINDS`` (kept here so reading needs no instrumenter).
STMT_KINDS = ("simple", "if", "while", "for-iter", "for-next", "with-enter", "with-exit",
              "match", "case", "finally-end")
_KIND_ID = {k: i for i, k in enumerate(STMT_KINDS)}
#: Statements from which an exception can leave again without a new origin (a re-raise).
RERAISE_KINDS = ("finally-end", "with-exit")


@dataclass(frozen=True, eq=False)
class FunctionShape:
    """The validated static description of one function (one code body).

    Blocks are ``0 .. nblocks-1`` (ENTRY, EXIT, then real blocks); ``block_stmts[b]`` lists
    block ``b``'s statements in order; edge ``e`` runs ``edge_src[e] -> edge_dst[e]``.
    Statement columns are indexed by statement id.
    """

    fid: int
    file: str
    qualname: str
    kind: str
    firstline: int
    lastline: int
    is_generator: bool
    block_stmts: list[list[int]]
    dynamic_entry: np.ndarray        # bool per block
    edge_src: np.ndarray             # int32 per edge
    edge_dst: np.ndarray
    edge_kind: list[str]
    stmt_kind: np.ndarray            # int8 index into STMT_KINDS
    stmt_label: list[str]
    stmt_line: np.ndarray            # int64
    stmt_col: np.ndarray
    stmt_calls: np.ndarray           # bool
    stmt_suspends: np.ndarray        # bool
    stmt_block: np.ndarray           # int32, -1 for dead code
    plan: dict[str, Any]
    desc: dict[str, Any] = field(repr=False)

    @property
    def nblocks(self) -> int:
        return len(self.block_stmts)

    @property
    def nstmts(self) -> int:
        return len(self.stmt_label)

    @property
    def nedges(self) -> int:
        return len(self.edge_kind)

    @cached_property
    def cfg(self) -> CFG:
        """The full ``CFG`` object (built on first use; readers mostly need the columns)."""
        from wholetrace.instrument.cfg import CFG

        return CFG.from_json(self.desc)

    @cached_property
    def out_edges(self) -> list[list[int]]:
        """Edge ids leaving each block, in edge-id order."""
        out: list[list[int]] = [[] for _ in range(self.nblocks)]
        for e, s in enumerate(self.edge_src.tolist()):
            out[s].append(e)
        return out

    @cached_property
    def call_blocks(self) -> np.ndarray:
        """Per block: its first statement is call-capable or it holds a ``yield`` (as
        ``instrument.flowgraph.from_cfg`` marks call nodes)."""
        calls = np.zeros(self.nblocks, bool)
        for b, stmts in enumerate(self.block_stmts):
            if stmts and (self.stmt_calls[stmts[0]] or self.stmt_suspends[stmts].any()):
                calls[b] = True
        return calls

    @cached_property
    def suspend_blocks(self) -> np.ndarray:
        """Per block: it holds a ``yield`` (a suspending statement ends its block)."""
        out = np.zeros(self.nblocks, bool)
        live = self.stmt_block >= 0
        out[self.stmt_block[live & self.stmt_suspends]] = True
        return out

    @cached_property
    def reraise_blocks(self) -> np.ndarray:
        """Per block: it holds a bare ``raise``, a ``finally`` end or a ``with`` exit."""
        out = np.zeros(self.nblocks, bool)
        kinds = {_KIND_ID[k] for k in RERAISE_KINDS}
        for s, b in enumerate(self.stmt_block.tolist()):
            if b >= 0 and (int(self.stmt_kind[s]) in kinds or self.stmt_label[s] == "Raise"):
                out[b] = True
        return out


def _bad(fid: int, what: str) -> StoreError:
    return StoreError(f"function {fid} of the recording has a corrupt CFG ({what})")


def _ints(values: Any, fid: int, what: str) -> np.ndarray:
    try:
        arr = np.array(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        raise _bad(fid, f"{what} are not integers") from None
    if arr.ndim != 1:
        raise _bad(fid, f"{what} are not a flat list")
    return arr


def _in_range(arr: np.ndarray, lo: int, hi: int, fid: int, what: str) -> None:
    if arr.size and (int(arr.min()) < lo or int(arr.max()) >= hi):
        raise _bad(fid, f"{what} out of range")


def parse_shape(fid: int, desc: object, *, file: str = "", qualname: str = "") -> FunctionShape:
    """Check the stored JSON of function ``fid`` and return its columns, or StoreError."""
    if not isinstance(desc, dict):
        raise _bad(fid, "not an object")
    try:
        blocks, edges, stmts = desc["blocks"], desc["edges"], desc["stmts"]
        head = (desc["qualname"], desc["kind"], desc["firstline"], desc["lastline"], desc["is_generator"])
    except KeyError as exc:
        raise _bad(fid, f"no {exc.args[0]!r}") from None
    plan = desc.get("plan", {})
    if not (isinstance(blocks, list) and isinstance(edges, list) and isinstance(stmts, list)
            and isinstance(plan, dict)):
        raise _bad(fid, "blocks, edges, statements or plan of the wrong type")
    if not (isinstance(head[0], str) and isinstance(head[1], str) and type(head[2]) is int
            and type(head[3]) is int and isinstance(head[4], bool)):
        raise _bad(fid, "header fields of the wrong type")
    if not 0 <= head[2] <= head[3] <= head[2] + MAX_ITEMS:
        raise _bad(fid, f"lines {head[2]}-{head[3]}")
    nb, ne, ns = len(blocks), len(edges), len(stmts)
    if not 2 <= nb <= MAX_ITEMS or ne > MAX_ITEMS or ns > MAX_ITEMS:
        raise _bad(fid, f"{nb} blocks, {ne} edges, {ns} statements")
    try:
        block_stmts = [b["stmts"] for b in blocks]
        dyn = np.array([bool(b["dynamic_entry"]) for b in blocks], bool)
        ids = [b["id"] for b in blocks]
        cols = list(zip(*stmts)) if stmts else [()] * 9
        ecols = list(zip(*edges)) if edges else [()] * 4
    except (KeyError, TypeError):
        raise _bad(fid, "blocks or statements of the wrong shape") from None
    if ids != list(range(nb)) or any(not isinstance(s, list) for s in block_stmts):
        raise _bad(fid, "block ids")
    if len(ecols) != 4 or any(len(r) != 4 for r in edges):
        raise _bad(fid, "edges of the wrong shape")
    if len(cols) not in (8, 9) or any(len(r) != len(cols) for r in stmts):
        raise _bad(fid, "statements of the wrong shape")
    edge_src, edge_dst = _ints(ecols[0], fid, "edge sources"), _ints(ecols[1], fid, "edge targets")
    _in_range(edge_src, 0, nb, fid, "edge sources")
    _in_range(edge_dst, 0, nb, fid, "edge targets")
    if ne and bool((edge_src == EXIT).any()):
        raise _bad(fid, "an edge leaves EXIT")
    if not all(isinstance(k, str) for k in ecols[2]) or not all(isinstance(k, str) for k in cols[1]):
        raise _bad(fid, "edge kinds or statement labels are not text")
    try:
        kind = np.array([_KIND_ID[k] for k in cols[0]], np.int8)
    except (KeyError, TypeError):
        raise _bad(fid, "unknown statement kind") from None
    line, col = _ints(cols[2], fid, "statement lines"), _ints(cols[3], fid, "statement columns")
    stmt_block = _ints(cols[7], fid, "statement blocks")
    _in_range(stmt_block, -1, nb, fid, "statement blocks")
    flat = _ints([s for b in block_stmts for s in b], fid, "block statements")
    _in_range(flat, 0, ns, fid, "block statements")
    owner = np.repeat(np.arange(nb), [len(b) for b in block_stmts])
    if flat.size and not np.array_equal(stmt_block[flat], owner):
        raise _bad(fid, "blocks and statements disagree")
    if block_stmts[ENTRY] or block_stmts[EXIT]:
        raise _bad(fid, "ENTRY or EXIT holds statements")
    return FunctionShape(
        fid=fid, file=file, qualname=qualname or head[0], kind=head[1], firstline=head[2], lastline=head[3],
        is_generator=head[4], block_stmts=[[int(s) for s in b] for b in block_stmts], dynamic_entry=dyn,
        edge_src=edge_src.astype(np.int32), edge_dst=edge_dst.astype(np.int32), edge_kind=list(ecols[2]),
        stmt_kind=kind, stmt_label=list(cols[1]), stmt_line=line, stmt_col=col,
        stmt_calls=np.array([bool(c) for c in cols[6]], bool),
        stmt_suspends=np.array([bool(c) for c in cols[8]] if len(cols) == 9 else [False] * ns, bool),
        stmt_block=stmt_block.astype(np.int32), plan=plan, desc=desc)
