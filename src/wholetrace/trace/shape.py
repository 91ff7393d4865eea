"""One function's stored CFG and probe plan, checked before anything indexes with it.

A recording stores each function's CFG as the JSON of ``instrument.cfg.CFG.to_json`` plus
the probe plan the recorder used (``"plan"``).  Everything read from a file is data to
check: :func:`parse_shape` turns the JSON into columns (numpy arrays for the numbers) and
raises a one-line :class:`~wholetrace.errors.StoreError` for anything malformed or out of
range, so the tables and kernels built from a shape can index without checks.
"""

from __future__ import annotations

from functools import cached_property
from itertools import chain
from operator import itemgetter
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
              "match", "case", "finally-end", "star-end")
_KIND_ID = {k: i for i, k in enumerate(STMT_KINDS)}


class _Flat:
    """Columns of many functions, converted and checked at once (see :func:`parse_shapes`)."""

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
    dynamic_entry: np.ndarray        # bool per block
    block_first: np.ndarray          # int32 per block: its first statement, -1 if none
    line_first: np.ndarray           # (3, n): line, first statement starting on it, its column
    branch_rows: np.ndarray          # (4, n): block, index among its out-edges, line, edge id
    branch_names: list[str]


class _Part:
    """A column of ``_Flat`` sliced to one function's span (named by the span's slot)."""

    def __init__(self, span: str) -> None:
        self.span = span

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: FunctionShape | None, owner: type) -> Any:
        lo, hi = getattr(obj, self.span)
        value = getattr(obj._flat, self.name)
        return value[..., lo:hi] if isinstance(value, np.ndarray) else value[lo:hi]


class FunctionShape:
    """The validated static description of one function (one code body).

    Blocks are ``0 .. nblocks-1`` (ENTRY, EXIT, then real blocks); ``block_stmts[b]`` lists
    block ``b``'s statements in order; edge ``e`` runs ``edge_src[e] -> edge_dst[e]``.
    Statement columns are indexed by statement id.  For reports: ``line_first`` (rows line,
    statement, column: the first statement starting on each line) and the predicate blocks'
    out-edges ``branch_rows`` (rows block, index among the block's out-edges, line, edge
    id) with their ``branch_names``.  Columns are views of arrays shared by many functions.
    """

    edge_src, edge_dst, edge_kind = _Part("_e"), _Part("_e"), _Part("_e")
    stmt_kind, stmt_label, stmt_line, stmt_col = _Part("_s"), _Part("_s"), _Part("_s"), _Part("_s")
    stmt_calls, stmt_suspends, stmt_block = _Part("_s"), _Part("_s"), _Part("_s")
    dynamic_entry, block_first = _Part("_b"), _Part("_b")
    line_first = _Part("_lf")
    branch_rows, branch_names = _Part("_br"), _Part("_br")

    def __init__(self, fid: int, file: str, qualname: str, head: tuple[Any, ...], block_stmts: list[list[int]],
                 plan: dict[str, Any], desc: dict[str, Any], flat: _Flat,
                 spans: tuple[tuple[int, int], ...]) -> None:
        self.fid, self.file, self.qualname = fid, file, qualname or head[0]
        self.kind, self.firstline, self.lastline, self.is_generator = head[1], head[2], head[3], head[4]
        self.block_stmts = block_stmts
        self.plan = plan
        self.desc = desc
        self._flat = flat
        self._s, self._e, self._b, self._lf, self._br = spans

    def __repr__(self) -> str:
        return f"FunctionShape({self.fid}, {self.qualname!r}, {self.nblocks} blocks)"

    @property
    def nblocks(self) -> int:
        return len(self.block_stmts)

    @property
    def nstmts(self) -> int:
        return self._s[1] - self._s[0]

    @property
    def nedges(self) -> int:
        return self._e[1] - self._e[0]

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
        first = self.block_first
        has = first >= 0
        calls = self.suspend_blocks.copy()
        calls[has] |= self.stmt_calls[first[has]]
        return calls

    @cached_property
    def suspend_blocks(self) -> np.ndarray:
        """Per block: it holds a ``yield`` (a suspending statement ends its block)."""
        out = np.zeros(self.nblocks, bool)
        live = self.stmt_block >= 0
        out[self.stmt_block[live & self.stmt_suspends]] = True
        return out


def _bad(fid: int, what: str) -> StoreError:
    return StoreError(f"function {fid} of the recording has a corrupt CFG ({what})")


def _header(fid: int, desc: object) -> tuple[tuple[Any, ...], dict[str, Any], list[Any], list[Any], list[Any]]:
    """The per-function structure checks: (header, plan, blocks, edges, statement rows)."""
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
    return head, plan, blocks, edges, stmts


_STMTS, _DYN, _ID = itemgetter("stmts"), itemgetter("dynamic_entry"), itemgetter("id")
_LISTS, _TEXT, _FOUR, _NINE, _EIGHT = frozenset({list}), frozenset({str}), frozenset({4}), frozenset({9}), frozenset({8})


class _Columns:
    """Lists gathered from many functions, converted to arrays at once."""

    def __init__(self) -> None:
        self.stmts: list[Any] = []
        self.edges: list[Any] = []
        self.members: list[Any] = []          # statement ids of every block, block after block
        self.dyn: list[Any] = []
        self.sizes: list[int] = []            # statements of every block


def _ints(values: list[Any], what: str, owner: np.ndarray, fids: list[int]) -> np.ndarray:
    """``values`` as int64; a non-integer names the function owning it."""
    try:
        arr = np.array(values) if values else np.zeros(0, np.int64)
    except (TypeError, ValueError, OverflowError):
        arr = np.zeros(0, object)
    if arr.ndim != 1 or arr.dtype.kind not in "ib":
        for i, v in enumerate(values):
            if type(v) not in (int, bool) or not -2**63 <= v < 2**63:
                raise _bad(fids[int(owner[i])], f"{what} are not integers")
        raise _bad(fids[0], f"{what} are not integers")  # pragma: no cover - found above
    return arr.astype(np.int64)


def _within(arr: np.ndarray, lo: np.ndarray | int, hi: np.ndarray, what: str, owner: np.ndarray,
            fids: list[int]) -> None:
    bad = np.flatnonzero((arr < lo) | (arr >= hi))
    if bad.size:
        raise _bad(fids[int(owner[bad[0]])], f"{what} out of range")


def _gather(items: list[tuple[int, object, str, str]], fids: list[int], strict: bool) -> tuple[Any, ...]:
    """The per-function checks and the lists gathered from every function.  Edge and
    statement rows are checked per function only when ``strict`` (the bulk check of
    :func:`parse_shapes` failed: find the function, or pad statements of older writers)."""
    heads, cols = [], _Columns()
    nb, ne, ns, nm = [], [], [], []
    for fid, desc, _file, _q in items:
        head, plan, blocks, edges, stmts = _header(fid, desc)
        try:
            members = list(map(_STMTS, blocks))
            dyn = list(map(_DYN, blocks))
            ids_ok = list(map(_ID, blocks)) == list(range(len(blocks)))
        except (KeyError, TypeError):
            raise _bad(fid, "blocks of the wrong shape") from None
        if not ids_ok or not _LISTS.issuperset(map(type, members)) or members[ENTRY] or members[EXIT]:
            raise _bad(fid, "block ids or statements")
        if strict:
            if not (_LISTS.issuperset(map(type, edges)) and _FOUR.issuperset(map(len, edges))):
                raise _bad(fid, "edges of the wrong shape")
            if not (_LISTS.issuperset(map(type, stmts)) and _NINE.issuperset(map(len, stmts))):
                if not (_LISTS.issuperset(map(type, stmts)) and _EIGHT.issuperset(map(len, stmts))):
                    raise _bad(fid, "statements of the wrong shape")
                stmts = [r + [False] for r in stmts]          # written before statements had "suspends"
        heads.append((head, plan, members))
        cols.stmts += stmts
        cols.edges += edges
        cols.dyn += dyn
        cols.members.extend(chain.from_iterable(members))
        sizes = list(map(len, members))
        cols.sizes += sizes
        nb.append(len(blocks))
        ne.append(len(edges))
        ns.append(len(stmts))
        nm.append(sum(sizes))
    return heads, cols, nb, ne, ns, nm


def parse_shapes(items: list[tuple[int, object, str, str]]) -> list[FunctionShape]:
    """Check the stored JSON of many functions ``(fid, desc, file, qualname)`` and return
    their shapes (columns are views of arrays converted and checked once for all)."""
    fids = [it[0] for it in items]
    heads, cols, nb, ne, ns, nm = _gather(items, fids, strict=False)
    if not (_LISTS.issuperset(map(type, cols.edges)) and _FOUR.issuperset(map(len, cols.edges))
            and _LISTS.issuperset(map(type, cols.stmts)) and _NINE.issuperset(map(len, cols.stmts))):
        heads, cols, nb, ne, ns, nm = _gather(items, fids, strict=True)
    k = np.arange(len(items))
    s_owner, e_owner, m_owner = np.repeat(k, ns), np.repeat(k, ne), np.repeat(k, nm)
    flat = list(chain.from_iterable(cols.stmts))      # rows of 9 (and of 4): columns by slicing
    scol = [flat[k::9] for k in range(9)]
    flat = list(chain.from_iterable(cols.edges))
    ecol = [flat[k::4] for k in range(4)]
    nb_a = np.array(nb, np.int64)
    edge_src = _ints(ecol[0], "edge sources", e_owner, fids)
    edge_dst = _ints(ecol[1], "edge targets", e_owner, fids)
    _within(edge_src, 0, nb_a[e_owner], "edge sources", e_owner, fids)
    _within(edge_dst, 0, nb_a[e_owner], "edge targets", e_owner, fids)
    leaving = np.flatnonzero(edge_src == EXIT)
    if leaving.size:
        raise _bad(fids[int(e_owner[leaving[0]])], "an edge leaves EXIT")
    for what, column, owner in (("edge kinds", ecol[2], e_owner), ("statement labels", scol[1], s_owner)):
        if not _TEXT.issuperset(map(type, column)):
            i = next(i for i, x in enumerate(column) if type(x) is not str)
            raise _bad(fids[int(owner[i])], f"{what} are not text")
    try:
        kind = np.array([_KIND_ID[x] for x in scol[0]], np.int8)
    except (KeyError, TypeError):
        i = next(i for i, x in enumerate(scol[0]) if not isinstance(x, str) or x not in _KIND_ID)
        raise _bad(fids[int(s_owner[i])], "unknown statement kind") from None
    line = _ints(scol[2], "statement lines", s_owner, fids)
    col = _ints(scol[3], "statement columns", s_owner, fids)
    calls = _ints(scol[6], "statement flags", s_owner, fids).astype(bool)
    suspends = _ints(scol[8], "statement flags", s_owner, fids).astype(bool)
    stmt_block = _ints(scol[7], "statement blocks", s_owner, fids)
    _within(stmt_block, -1, nb_a[s_owner], "statement blocks", s_owner, fids)
    members = _ints(cols.members, "block statements", m_owner, fids)
    ns_a = np.array(ns, np.int64)
    _within(members, 0, ns_a[m_owner], "block statements", m_owner, fids)
    sbase = np.concatenate([[0], np.cumsum(ns_a)[:-1]]).astype(np.int64)
    bbase = np.concatenate([[0], np.cumsum(nb_a)[:-1]]).astype(np.int64)
    owner_block = np.repeat(np.arange(int(nb_a.sum())), cols.sizes) - bbase[m_owner]
    wrong = np.flatnonzero(stmt_block[sbase[m_owner] + members] != owner_block)
    if wrong.size:
        raise _bad(fids[int(m_owner[wrong[0]])], "blocks and statements disagree")
    dyn = _ints(cols.dyn, "block flags", np.repeat(k, nb), fids).astype(bool)
    edge_kind = ecol[2]
    labels = scol[1]
    lf_owner, line_first = _first_statements(s_owner, line, col, sbase)
    ebase = np.concatenate([[0], np.cumsum(np.array(ne, np.int64))[:-1]]).astype(np.int64)
    br_owner, branch_rows, branch_names = _branches(
        heads, nb_a, bbase, sbase, ebase, e_owner, edge_src, edge_dst, edge_kind, line, members, cols.sizes)
    lf_cut = np.searchsorted(lf_owner, np.arange(len(items) + 1)).tolist()
    br_cut = np.searchsorted(br_owner, np.arange(len(items) + 1)).tolist()
    flat = _Flat()
    flat.edge_src, flat.edge_dst, flat.edge_kind = edge_src.astype(np.int32), edge_dst.astype(np.int32), edge_kind
    flat.stmt_kind, flat.stmt_label, flat.stmt_line, flat.stmt_col = kind, labels, line, col
    flat.stmt_calls, flat.stmt_suspends, flat.stmt_block = calls, suspends, stmt_block.astype(np.int32)
    flat.dynamic_entry, flat.line_first = dyn, line_first
    size_a = np.array(cols.sizes, np.int64)
    flat.block_first = np.full(len(size_a), -1, np.int32)
    some = size_a > 0
    flat.block_first[some] = members[(np.cumsum(size_a) - size_a)[some]]
    flat.branch_rows, flat.branch_names = branch_rows, branch_names
    out = []
    s0 = e0 = b0 = 0
    for i, ((fid, desc, file, qualname), (head, plan, block_stmts), n_b, n_e, n_s) in enumerate(
            zip(items, heads, nb, ne, ns)):
        s1, e1, b1 = s0 + n_s, e0 + n_e, b0 + n_b
        out.append(FunctionShape(fid, file, qualname, head, block_stmts, plan, desc, flat,  # type: ignore[arg-type]
                                 ((s0, s1), (e0, e1), (b0, b1), (lf_cut[i], lf_cut[i + 1]),
                                  (br_cut[i], br_cut[i + 1]))))
        s0, e0, b0 = s1, e1, b1
    return out


def _first_statements(owner: np.ndarray, line: np.ndarray, col: np.ndarray,
                      sbase: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For every (function, line): the lowest statement id starting on it and its column;
    returns (function index per row, rows line / statement / column), by function then line."""
    sid = np.arange(len(line)) - sbase[owner]
    order = np.lexsort((sid, line, owner))
    o, ln = owner[order], line[order]
    first = np.ones(len(order), bool)
    first[1:] = (o[1:] != o[:-1]) | (ln[1:] != ln[:-1])
    pick = order[first]
    return owner[pick], np.stack([line[pick], sid[pick], col[pick]])


def _branches(heads: list[Any], nb: np.ndarray, bbase: np.ndarray, sbase: np.ndarray, ebase: np.ndarray,
              e_owner: np.ndarray,
              src: np.ndarray, dst: np.ndarray, kinds: list[str], line: np.ndarray,
              members: np.ndarray, size: list[int]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Every out-edge of a predicate block (two or more out-edges, not ENTRY, with statements):
    (function index per row, rows block / index / line / edge id, names).  A branch is named
    by its edge kind, or, when kinds repeat at the block, by its target's first line
    (``"exit"`` for EXIT); see ``profile.model``."""
    start = np.concatenate([[0], np.cumsum(size)[:-1]]).astype(np.int64) if size else np.zeros(0, np.int64)
    size_a = np.array(size, np.int64)
    b_owner = np.repeat(np.arange(len(heads)), nb)
    first_line = np.full(len(size), -1, np.int64)
    last_line = np.full(len(size), -1, np.int64)
    full = size_a > 0
    first_line[full] = line[sbase[b_owner[full]] + members[start[full]]]
    last_line[full] = line[sbase[b_owner[full]] + members[start[full] + size_a[full] - 1]]
    gsrc = bbase[e_owner] + src
    nout = np.bincount(gsrc, minlength=len(size))
    keep = (nout[gsrc] >= 2) & (src != ENTRY) & full[gsrc]
    eid = np.arange(len(src)) - ebase[e_owner]
    idx = np.flatnonzero(keep)
    order = idx[np.lexsort((eid[idx], gsrc[idx]))]
    g = gsrc[order]
    new_block = np.ones(len(order), bool)
    new_block[1:] = g[1:] != g[:-1]
    block_start = np.maximum.accumulate(np.where(new_block, np.arange(len(order)), 0))
    index = np.arange(len(order)) - block_start
    names = [kinds[i] for i in order.tolist()]
    kind_id: dict[str, int] = {}
    code = np.array([kind_id.setdefault(x, len(kind_id)) for x in names], np.int64)
    pair = g.astype(np.int64) * max(len(kind_id), 1) + code
    _, inverse, times = np.unique(pair, return_inverse=True, return_counts=True)
    for j in np.flatnonzero(times[inverse] > 1).tolist():   # kinds repeat at the block: name by the target
        i = int(order[j])
        d = int(dst[i])
        gd = int(bbase[e_owner[i]]) + d
        names[j] = "exit" if d == EXIT else str(int(first_line[gd])) if size[gd] else str(d)
    rows = np.stack([g - bbase[e_owner[order]], index, last_line[g], eid[order]])
    return e_owner[order], rows, names


def parse_shape(fid: int, desc: object, *, file: str = "", qualname: str = "") -> FunctionShape:
    """Check the stored JSON of function ``fid`` and return its columns, or StoreError."""
    return parse_shapes([(fid, desc, file, qualname)])[0]
