"""Flat tables the decoding kernel reads, compiled once per recording from its stored CFGs and plans.

Layouts are those of ``kernels.decode`` (``FN_*``, ``BK_*``, ...): one row per function in
``fn``, per block of every function in ``blk`` (row ``bbase + b``), per edge in ``edg``, the
successors of each block in edge-id order in ``succ``, and for functions recorded with
witnesses the edge of each witness in ``wit`` and the witness choices of each branching
block in ``chs`` (witness, or EOF, -> out-edge: Ball & Larus's witness sets).

Functions are loaded on demand (the kernel asks with ``ST_NEED_FUNC``), so reading a
stream of a recording with thousands of registered functions parses only those it enters.
Witness placements are read from the recording (``plan["witnessed"]``), never recomputed:
a placement heuristic changed since the recording was made cannot change what it decodes
to.  Path numberings likewise (``plan["paths"]``: the DAG with its Val and Inc per edge) go
into ``pdg`` (each node's out-edges by increasing Val) and the blocks' ``BK_PD``/``BK_COMP``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from wholetrace.errors import InternalError, StoreError
from wholetrace.events import ENTER_BASE, LEAVE_PATH
from wholetrace.instrument.modes import check_leave_base
from wholetrace.ids import ENTRY, EXIT
from wholetrace.kernels import decode as K
from wholetrace.store.schema import WITNESS_STREAMS_SINCE
from wholetrace.trace.shape import FunctionShape

#: Recording modes whose streams hold witness ids (``instrument.witnesses.PLAN_KINDS``).
WITNESS_MODES = ("witness", "branches")
#: Recording modes whose streams the kernel decodes.
TRACE_MODES = ("blocks",) + WITNESS_MODES + ("path",)
#: Largest |Inc sum| of a block's Val-0 completion a stored numbering may hold (a sanity bound;
#: ``events.LEAVE_PATH`` until it became 2^29 in wave 14, kept so no numbering read before is refused).
_COMP_BOUND = 1 << 30


class _Grow:
    """A numpy array of rows with spare capacity (appends amortised O(1))."""

    def __init__(self, width: int, dtype: type, fill: int = 0) -> None:
        self.width, self.dtype, self.fill = width, dtype, fill
        self.a = np.full((64, width) if width else 64, fill, dtype)
        self.n = 0

    def add(self, rows: np.ndarray) -> int:
        start, need = self.n, self.n + len(rows)
        if need > len(self.a):
            cap = max(need, 2 * len(self.a))
            grown = np.full((cap, self.width) if self.width else cap, self.fill, self.dtype)
            grown[:start] = self.a[:start]
            self.a = grown
        self.a[start:need] = rows
        self.n = need
        return start


class Tables:
    """The decoding tables of one recording (see module doc); ``shape(fid)`` gives a
    function's validated description, ``mode`` is the recording's mode."""

    def __init__(self, fids: Iterable[int], shape: Callable[[int], FunctionShape], mode: str,
                 schema_version: int | None = None,
                 prefetch: Callable[[list[int]], object] | None = None) -> None:
        self.schema_version = schema_version
        self._prefetch = prefetch
        self._asked: set[int] = set()          # functions handed to ``prefetch`` already
        registered = sorted(set(fids))
        if registered and registered[0] < 0:
            raise StoreError(f"the recording registers a negative function id {registered[0]}")
        self.mode = mode
        self._shape = shape
        nf = registered[-1] + 1 if registered else 0
        self.fn = np.zeros((nf, K.FN_W), np.int64)
        self.fn[:, K.FN_READY] = -1
        self.fn[registered, K.FN_READY] = 0
        self.blk = _Grow(K.BK_W, np.int32)
        self.succ = _Grow(2, np.int32)
        self.stm = _Grow(0, np.int32, -1)
        self.edg = _Grow(K.ED_W, np.int32, -1)
        self.wit = _Grow(0, np.int32)
        self.chs = _Grow(2, np.int32)
        self.ysl = _Grow(0, np.int32)
        self.pdg = _Grow(K.PD_W, np.int64)
        self.pool = np.zeros(64, np.int64)
        self.scratch = np.zeros(4 * 64 + 1, np.int64)
        self.max_blocks = 2
        self.shapes: dict[int, FunctionShape] = {}

    # -- loading
    @property
    def margin(self) -> int:
        """Rows one event can produce at most (a witness path and an exception path)."""
        return 2 * self.max_blocks + 8

    def registered(self, fid: int) -> bool:
        return 0 <= fid < len(self.fn) and self.fn[fid, K.FN_READY] >= 0

    def load(self, fid: int) -> FunctionShape:
        """Parse, check and append the tables of function ``fid`` (once)."""
        hit = self.shapes.get(fid)
        if hit is not None:
            return hit
        if not self.registered(fid):
            raise StoreError(f"the recording has no function {fid}")
        sh = self._shape(fid)
        mode, witnessed = self._plan(sh)
        paths = self._paths(sh) if mode == K.MODE_PATH else None
        nb, ne = sh.nblocks, sh.nedges
        order = np.lexsort((np.arange(ne), sh.edge_src)) if ne else np.zeros(0, np.int64)
        succ_n = np.bincount(sh.edge_src, minlength=nb) if ne else np.zeros(nb, np.int64)
        blk = np.zeros((nb, K.BK_W), np.int32)
        blk[:, K.BK_FLAGS] = (sh.dynamic_entry * K.F_DYN | sh.suspend_blocks * K.F_SUSPEND
                              | sh.call_blocks * K.F_CALL)
        s0 = self.succ.add(np.stack([sh.edge_dst[order], order.astype(np.int32)], axis=1))
        blk[:, K.BK_SUCC] = s0 + np.concatenate([[0], np.cumsum(succ_n)[:-1]])
        blk[:, K.BK_NSUCC] = succ_n
        edg = np.full((ne, K.ED_W), -1, np.int32)
        edg[:, K.ED_SRC], edg[:, K.ED_DST] = sh.edge_src, sh.edge_dst
        wb = self.wit.n
        if witnessed is not None:
            edg[witnessed, K.ED_WIT] = np.arange(len(witnessed))
            self.wit.add(np.asarray(witnessed, np.int32))
            self._witness_tables(sh, witnessed, blk)
        ysl = np.flatnonzero(sh.suspend_blocks).astype(np.int32)
        row = self.fn[fid]
        if paths is not None:
            self._path_tables(sh, paths, blk, row)
        row[K.FN_BBASE] = self.blk.add(blk)
        row[K.FN_NB], row[K.FN_NS], row[K.FN_NE] = nb, sh.nstmts, ne
        row[K.FN_SBASE] = self.stm.add(sh.stmt_block)
        row[K.FN_EBASE] = self.edg.add(edg)
        row[K.FN_WBASE], row[K.FN_NW] = wb, 0 if witnessed is None else len(witnessed)
        row[K.FN_GEN], row[K.FN_MODE] = int(sh.is_generator), mode
        row[K.FN_YBASE], row[K.FN_NY] = self.ysl.add(ysl), len(ysl)
        row[K.FN_READY] = 1
        if len(self.pool) < self.blk.n:
            self.pool = np.concatenate([self.pool, np.zeros(max(self.blk.n, 2 * len(self.pool)) - len(self.pool), np.int64)])
        if nb > self.max_blocks:
            self.max_blocks = nb
            self.scratch = np.zeros(4 * (nb + 1) + 1, np.int64)
        self.shapes[fid] = sh
        return sh

    def need(self, fid: int, ahead: np.ndarray) -> FunctionShape:
        """Load function ``fid``, which the kernel asks for at the start of ``ahead`` (the rest
        of the chunk).  With a ``prefetch`` callable, first hand it every function not loaded
        yet that ``ahead`` enters, so that their shapes are parsed in one batch (one call per
        chunk or so rather than one per function).  Only what the streams enter is parsed."""
        if self._prefetch is not None and fid not in self._asked:
            codes = ahead[ahead <= -ENTER_BASE]
            fids = np.unique(-codes.astype(np.int64) - ENTER_BASE) if len(codes) else np.zeros(0, np.int64)
            fids = fids[fids < len(self.fn)]
            fids = [f for f in fids[self.fn[fids, K.FN_READY] == 0].tolist() if f not in self._asked]
            if self.registered(fid) and fid not in fids:
                fids.append(fid)
            self._asked.update(fids)
            self._prefetch(sorted(fids))
            if self.mode not in WITNESS_MODES and self.mode != "path":
                self.load_blocks([self._shape(f) for f in sorted(fids) if f not in self.shapes])
        return self.load(fid)

    def load_blocks(self, shapes: list[FunctionShape]) -> None:
        """:meth:`load` of many functions decoded as block ids (``MODE_BLOCKS``: no witness or
        path tables) at once: the same rows, built with one numpy pass over all of them."""
        if not shapes:
            return
        nb = np.array([sh.nblocks for sh in shapes], np.int64)
        ne = np.array([sh.nedges for sh in shapes], np.int64)
        ns = np.array([sh.nstmts for sh in shapes], np.int64)
        k = np.arange(len(shapes))
        bstart = np.cumsum(nb) - nb                    # first block of each function in the batch
        src = np.concatenate([sh.edge_src for sh in shapes]).astype(np.int64)
        dst = np.concatenate([sh.edge_dst for sh in shapes]).astype(np.int64)
        stmt_block = np.concatenate([sh.stmt_block for sh in shapes]).astype(np.int32)
        suspends = np.concatenate([sh.stmt_suspends for sh in shapes])
        calls = np.concatenate([sh.stmt_calls for sh in shapes])
        dyn = np.concatenate([sh.dynamic_entry for sh in shapes])
        e_owner, s_owner = np.repeat(k, ne), np.repeat(k, ns)
        eid = np.arange(len(src)) - np.repeat(np.cumsum(ne) - ne, ne)
        gsrc = bstart[e_owner] + src                   # the edge's source block, numbered in the batch
        order = np.lexsort((eid, gsrc))
        succ_n = np.bincount(gsrc, minlength=int(nb.sum()))
        s0 = self.succ.add(np.stack([dst[order], eid[order]], axis=1).astype(np.int32))
        live = stmt_block >= 0
        gblock = bstart[s_owner] + np.where(live, stmt_block, 0)
        suspend = np.zeros(int(nb.sum()), bool)
        suspend[gblock[live & suspends]] = True
        sstart = np.cumsum(ns) - ns
        b_owner = np.repeat(k, nb)
        block_first = np.concatenate([sh.block_first for sh in shapes]).astype(np.int64)
        has = block_first >= 0                         # a block's first statement is call-capable
        call = suspend.copy()
        call[has] |= calls[sstart[b_owner[has]] + block_first[has]]
        blk = np.zeros((int(nb.sum()), K.BK_W), np.int32)
        blk[:, K.BK_FLAGS] = dyn * K.F_DYN | suspend * K.F_SUSPEND | call * K.F_CALL
        blk[:, K.BK_SUCC] = s0 + np.cumsum(succ_n) - succ_n
        blk[:, K.BK_NSUCC] = succ_n
        edg = np.full((len(src), K.ED_W), -1, np.int32)
        edg[:, K.ED_SRC], edg[:, K.ED_DST] = src, dst
        ysl_blocks = np.flatnonzero(suspend)
        ny = np.bincount(b_owner[ysl_blocks], minlength=len(shapes))
        fids = np.array([sh.fid for sh in shapes], np.int64)
        rows = self.fn[fids]
        rows[:, K.FN_BBASE] = self.blk.add(blk) + bstart
        rows[:, K.FN_NB], rows[:, K.FN_NS], rows[:, K.FN_NE] = nb, ns, ne
        rows[:, K.FN_SBASE] = self.stm.add(stmt_block) + sstart
        rows[:, K.FN_EBASE] = self.edg.add(edg) + np.cumsum(ne) - ne
        rows[:, K.FN_WBASE], rows[:, K.FN_NW] = self.wit.n, 0
        rows[:, K.FN_GEN] = [int(sh.is_generator) for sh in shapes]
        rows[:, K.FN_MODE] = K.MODE_BLOCKS
        rows[:, K.FN_YBASE] = self.ysl.add((ysl_blocks - bstart[b_owner[ysl_blocks]]).astype(np.int32)) \
            + np.cumsum(ny) - ny
        rows[:, K.FN_NY] = ny
        rows[:, K.FN_READY] = 1
        self.fn[fids] = rows
        if len(self.pool) < self.blk.n:
            self.pool = np.concatenate([self.pool, np.zeros(max(self.blk.n, 2 * len(self.pool)) - len(self.pool), np.int64)])
        if int(nb.max()) > self.max_blocks:
            self.max_blocks = int(nb.max())
            self.scratch = np.zeros(4 * (self.max_blocks + 1) + 1, np.int64)
        for sh in shapes:
            self.shapes[sh.fid] = sh

    def load_all(self) -> dict[int, FunctionShape]:
        for fid in np.flatnonzero(self.fn[:, K.FN_READY] >= 0).tolist():
            self.load(fid)
        return self.shapes

    def arrays(self) -> tuple[np.ndarray, ...]:
        """(fn, blk, succ, stm, edg, wit, chs, ysl, pool, pdg) as the kernel takes them."""
        return (self.fn, self.blk.a, self.succ.a, self.stm.a, self.edg.a, self.wit.a, self.chs.a,
                self.ysl.a, self.pool, self.pdg.a)

    def reset(self) -> None:
        """Forget the generator suspensions seen (before decoding a recording again)."""
        self.pool[:] = 0

    # -- plans
    def _plan(self, sh: FunctionShape) -> tuple[int, list[int] | None]:
        """The function's decoding mode and, for witness ids, its stored witnessed edges."""
        if self.mode not in WITNESS_MODES and self.mode != "path":
            return K.MODE_BLOCKS, None
        plan = sh.plan
        where = f"function {sh.fid} ({sh.qualname})"
        if plan.get("mode") != self.mode:
            raise StoreError(f"{where} was not planned for {self.mode} mode (plan {plan.get('mode')!r})")
        if plan.get("strategy") == "trace":
            return K.MODE_BLOCKS, None
        if self.mode == "path":
            if plan.get("strategy") != "paths":
                raise StoreError(f"{where}: unknown plan strategy {plan.get('strategy')!r}")
            return K.MODE_PATH, None
        if plan.get("strategy") != "witness":
            raise StoreError(f"{where}: unknown plan strategy {plan.get('strategy')!r}")
        w = plan.get("witnessed")
        if w is None:
            raise StoreError(f"{where}: the recording does not store its witness placement (made by an "
                             "older wholetrace); record it again")
        if self.schema_version is not None and self.schema_version < WITNESS_STREAMS_SINCE:
            raise StoreError(f"the recording (schema {self.schema_version}) was made by an older wholetrace "
                             "whose witness streams do not mark re-raises; record it again")
        if (not isinstance(w, list) or not all(type(e) is int for e in w) or w != sorted(set(w))
                or (w and (w[0] < 0 or w[-1] >= sh.nedges))):
            raise StoreError(f"{where}: the stored witness placement is corrupt")
        return K.MODE_WITNESS, w

    def _witness_tables(self, sh: FunctionShape, witnessed: list[int], blk: np.ndarray) -> None:
        """Witness choices at branching blocks, and which blocks reach a call block by a
        branch-free, witness-free chain (``F_REACH``)."""
        from wholetrace.instrument.flowgraph import FlowGraph
        from wholetrace.instrument.placement import WitnessPlacement, witness_sets

        edges = tuple(zip(sh.edge_src.tolist(), sh.edge_dst.tolist()))
        graph = FlowGraph(sh.nblocks, ENTRY, EXIT, edges)
        try:
            sets = witness_sets(graph, WitnessPlacement(tuple(witnessed)))
        except InternalError:
            raise StoreError(f"function {sh.fid} ({sh.qualname}): the stored witness placement leaves "
                             "a cycle without witnesses") from None
        per_block: dict[int, dict[int, int]] = {}
        for e, ws in sets.items():
            table = per_block.setdefault(edges[e][0], {})
            for w in ws:
                if w in table:
                    raise StoreError(f"function {sh.fid} ({sh.qualname}): the stored witness placement "
                                     f"is ambiguous at block {edges[e][0]}")
                table[w] = e
        for b, table in sorted(per_block.items()):
            rows = np.array(sorted(table.items()), np.int32).reshape(-1, 2)
            blk[b, K.BK_CH] = self.chs.add(rows)
            blk[b, K.BK_NCH] = len(rows)
        free = set(range(sh.nedges)) - set(witnessed)
        outs = sh.out_edges
        calls = sh.call_blocks
        for b in range(sh.nblocks):
            v, seen = b, {b}
            while not calls[v]:
                if len(outs[v]) != 1 or outs[v][0] not in free:
                    break
                v = edges[outs[v][0]][1]
                if v in seen:
                    break
                seen.add(v)
            if calls[v]:
                blk[b, K.BK_FLAGS] |= K.F_REACH

    # -- path numberings
    def _paths(self, sh: FunctionShape) -> tuple[int, np.ndarray, np.ndarray]:
        """The stored numbering, checked: (number of paths, DAG edges (k, 5), Inc per edge)."""
        where = f"function {sh.fid} ({sh.qualname})"
        p = sh.plan.get("paths")
        if not isinstance(p, dict):
            raise StoreError(f"{where}: the recording does not store its path numbering")
        check_leave_base(sh.plan, where)
        n, dag, inc = p.get("num_paths"), p.get("dag"), p.get("inc")
        if (type(n) is not int or not isinstance(dag, list) or not isinstance(inc, list)
                or not all(type(x) is int for x in dag) or not all(type(x) is int for x in inc)
                or len(dag) % 5 or len(dag) // 5 != len(inc) or not 0 < n < LEAVE_PATH):
            raise StoreError(f"{where}: the stored path numbering is corrupt")
        a = np.array(dag, np.int64).reshape(-1, 5)
        src, dst, kind, ref, val = a.T
        nb, ne = sh.nblocks, sh.nedges
        real = (kind == K.K_REAL) | (kind == K.K_DOUT)
        if (((src < 0) | (src >= nb) | (dst < 0) | (dst >= nb) | (kind < 0) | (kind > K.K_DEAD)
             | (val < 0) | (val >= n)).any()
                or (real & ((ref < 0) | (ref >= ne))).any()
                or (real & (sh.edge_src[np.clip(ref, 0, max(ne - 1, 0))] != src)).any()
                or ((kind == K.K_REAL) & (sh.edge_dst[np.clip(ref, 0, max(ne - 1, 0))] != dst)).any()
                or ((kind == K.K_DOUT) & (dst != EXIT)).any() or ((kind == K.K_DIN) & (src != ENTRY)).any()
                or (src == EXIT).any()):
            raise StoreError(f"{where}: the stored path numbering is corrupt")
        return n, a, np.array(inc, np.int64)

    def _path_tables(self, sh: FunctionShape, paths: tuple[int, np.ndarray, np.ndarray], blk: np.ndarray,
                     row: np.ndarray) -> None:
        """``pdg`` rows (each node's out-edges by Val), ``BK_PD``/``BK_NPD``/``BK_COMP``, and the
        function's path count and edge out of ENTRY."""
        n, a, inc = paths
        src, val = a[:, 0], a[:, 4]
        order = np.lexsort((val, src))
        base = self.pdg.add(np.stack([a[order, 1], a[order, 2], a[order, 3], val[order]], axis=1))
        counts = np.bincount(src, minlength=sh.nblocks)
        blk[:, K.BK_PD] = base + np.concatenate([[0], np.cumsum(counts)[:-1]])
        blk[:, K.BK_NPD] = counts
        # the Inc sum of the Val-0 way from each node to EXIT (nodes in reverse topological order)
        first: dict[int, int] = {}
        for i in order[::-1].tolist():       # each node's Val-0 out-edge
            first[int(src[i])] = int(i)
        comp = np.zeros(sh.nblocks, np.int64)
        done = np.zeros(sh.nblocks, bool)
        done[EXIT] = True
        for v in range(sh.nblocks):
            chain = []
            u = v
            while not done[u]:
                if u not in first or len(chain) > sh.nblocks:
                    raise StoreError(f"function {sh.fid} ({sh.qualname}): the stored path numbering is corrupt")
                chain.append(u)
                u = int(a[first[u], 1])
            for w in reversed(chain):
                comp[w] = inc[first[w]] + comp[int(a[first[w], 1])]
                done[w] = True
        if (np.abs(comp) >= _COMP_BOUND).any():
            raise StoreError(f"function {sh.fid} ({sh.qualname}): the stored path numbering is corrupt")
        blk[:, K.BK_COMP] = comp
        entry = np.flatnonzero(sh.edge_src == ENTRY)
        if len(entry) != 1:
            raise StoreError(f"function {sh.fid} ({sh.qualname}): a path function with {len(entry)} edges out of ENTRY")
        row[K.FN_NPATHS] = n
        row[K.FN_ENTRY_E], row[K.FN_ENTRY_B] = int(entry[0]), int(sh.edge_dst[entry[0]])


def check_path_base(functions: Iterable[object]) -> None:
    """Refuse a path recording of another closing-record base before anything is printed: one
    recorder writes one base for every function, so the first path-numbered function's stored
    plan (``check_leave_base``) speaks for all (``functions``: ``store`` FunctionInfo rows)."""
    for f in functions:
        cfg = getattr(f, "cfg", None)
        plan = cfg.get("plan") if isinstance(cfg, dict) else None
        if isinstance(plan, dict) and plan.get("strategy") == "paths":
            check_leave_base(plan, f"function {getattr(f, 'fid', '?')} ({getattr(f, 'qualname', '?')})")
            return
