"""Ball–Larus acyclic path numbering of a function's CFG, with increments on spanning-tree chords.

References: T. Ball and J. R. Larus, "Efficient Path Profiling", MICRO-29 (1996) — the
numbering, restated in ``../shared/specs/wpp.md`` §1.1 since it is not a seed; J. R. Larus,
"Whole Program Paths", PLDI 1999 (``../shared/seeds/``, §2) — paths also end at edges into
blocks that call; T. Ball and J. R. Larus, "Optimally Profiling and Tracing Programs"
(seed, §3) — the maximum spanning tree whose chords carry the increments.

Invariant.  Removing the *cut* edges leaves a DAG.  Each cut u→v is replaced by two dummy
edges: d_out(u→v) = u→EXIT (one per cut edge, so an id also names the cut taken and hence
where the next path starts) and d_in(v) = ENTRY→v (one per distinct start).  Dynamic entries
(exception handlers), nodes left without a way in, and dead ends (blocks without successors)
get dummies too.  With Val(e_i) = Σ_{j<i} NumPaths(dst e_j) over each node's ordered
out-edges, id(p) = Σ_{e∈p} Val(e) is a bijection from the ENTRY→EXIT paths of the DAG onto
0 .. NumPaths(ENTRY)−1.  Inc(e) = Val(e) + φ(src) − φ(dst), with φ the potential of Val along a
maximum spanning tree seeded with EXIT→ENTRY, is zero on tree edges and has the same sum as
Val along every ENTRY→EXIT path; so only chords need a probe, and a path's recorded value
(register plus the constant folded into its record) is its id.

Forced chains (wave 10): a cut into a call block is left out where the path to it from where
the regenerator's frame stands is unique and cannot start a child (``forced_chain_edges``,
``quiet_blocks``): the regenerator emits it when the first child starts.

Phases (each a function): ``choose_cuts``, ``build_dag``, ``count_paths``, ``limit_paths``
(greedy extra cuts past ``MAX_PATHS``; these four in ``instrument.pathdag``), then below
``chord_increments`` and ``fold_probes``.
``PathNumbering.encode``/``decode`` translate between paths and ids; ``decode_truncated``
recovers the prefix ended by an exception from the register and the block it left from.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import namedtuple
from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property

from wholetrace.errors import InternalError
from wholetrace.events import LEAVE_PATH
from wholetrace.instrument.chains import forced_chain_edges, quiet_blocks, quiet_statement  # noqa: F401 (re-exported)
from wholetrace.instrument.flowgraph import FlowGraph, topological_order, validate
# the DAG phases (1-4) moved to instrument.pathdag in wave 17: imported from here as before (re-exported)
from wholetrace.instrument.pathdag import (D_DEAD, D_IN, D_OUT, REAL, DagEdge, _dag_graph, _reach, build_dag,  # noqa: F401
                                           choose_cuts, count_paths, dag_weights, limit_paths, needed_back_edges,
                                           paths_to)
from wholetrace.instrument.placement import place_counters
from wholetrace.instrument.weighting import EdgeWeights, static_weights
from wholetrace.plain import FrozenRecord

TYPE_CHECKING = False   # typing is not imported by a recording (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:
    from wholetrace.instrument.cfg import CFG
    from wholetrace.instrument.pathdag import CutPolicy

#: Largest number of paths per function: ids and closing records ``LEAVE_PATH + id`` stay below
#: 2^30, one-digit CPython ints (``events.LEAVE_PATH`` = 2^29; 2^30 - 1 until wave 14).
MAX_PATHS = LEAVE_PATH - 1
#: ``Path.end`` when the path leaves by a real edge into EXIT (that edge is ``edges[-1]``).
END_EXIT = -1
#: ``Path.end`` when the path stops at a block without successors (it can only raise).
END_DEAD = -2
#: ``Path.end`` of a truncated path (an exception left the block it ends with).
END_TRUNCATED = -3


# named tuples from collections, not typing.NamedTuple: typing is not imported by a recording
class Path(namedtuple("Path", ("start", "edges", "end"))):
    """One acyclic path, in terms of the original CFG (``start: int, edges: tuple[int, ...], end: int``).

    ``start`` is ENTRY when the path begins with a real edge out of ENTRY (``edges[0]``),
    else the block it starts at (after a cut, or at a dynamic entry).  ``edges`` are the
    uncut real edges it takes, in order.  ``end`` is the cut edge that ends it (the next
    path starts at that edge's target), ``END_EXIT``, ``END_DEAD`` or ``END_TRUNCATED``.
    """

    __slots__ = ()


class EdgeProbe(namedtuple("EdgeProbe", ("kind", "value", "reset"), defaults=(0, 0))):
    """What runs when a real CFG edge is taken, constants folded (``kind: str, value: int = 0,
    reset: int = 0``).

    kinds: ``"none"``; ``"add"`` (r += value); ``"init"`` (edge out of ENTRY: r = value);
    ``"cut"`` (record(r + value); r = reset); ``"exit"`` (record(r + value));
    ``"init-exit"`` (ENTRY straight to EXIT: record(value)).
    """

    __slots__ = ()


class PathNumbering(FrozenRecord):
    """The numbering of one function; ``fallback`` means even greedy cutting could not bring
    the count under ``limit``: the function records block ids instead; ``free_records``: the
    increments were placed with records as free chords (:func:`chord_increments`)."""

    _fields = ('graph', 'cuts', 'starts', 'dag', 'val', 'inc', 'num_paths', 'probes', 'limit', 'fallback',
               'overflow_cuts', 'chords', 'quiet', 'free_records')

    def __init__(self, graph: FlowGraph, cuts: frozenset[int], starts: tuple[int, ...], dag: tuple[DagEdge, ...],
                 val: tuple[int, ...], inc: tuple[int, ...], num_paths: int, probes: tuple[EdgeProbe, ...],
                 limit: int = MAX_PATHS, fallback: bool = False, overflow_cuts: frozenset[int] = frozenset(),
                 chords: tuple[int, ...] = (), quiet: frozenset[int] = frozenset(), free_records: bool = True,
                 _index: dict[tuple[str, int], int] | None = None) -> None:
        object.__setattr__(self, "graph", graph)
        object.__setattr__(self, "cuts", cuts)
        object.__setattr__(self, "starts", starts)
        object.__setattr__(self, "dag", dag)
        object.__setattr__(self, "val", val)
        object.__setattr__(self, "inc", inc)
        object.__setattr__(self, "num_paths", num_paths)
        object.__setattr__(self, "probes", probes)
        object.__setattr__(self, "limit", limit)
        object.__setattr__(self, "fallback", fallback)
        object.__setattr__(self, "overflow_cuts", overflow_cuts)
        object.__setattr__(self, "chords", chords)
        object.__setattr__(self, "quiet", quiet)
        object.__setattr__(self, "_index", {} if _index is None else _index)
        object.__setattr__(self, "free_records", free_records)

    # ------------------------------------------------------------------ derived tables
    @cached_property
    def out_edges(self) -> tuple[tuple[int, ...], ...]:
        """DAG edge ids leaving each node, in increasing Val order (the numbering's order)."""
        out: list[list[int]] = [[] for _ in range(self.graph.num_nodes)]
        for i, e in enumerate(self.dag):
            out[e.src].append(i)
        return tuple(tuple(sorted(x, key=lambda i: self.val[i])) for x in out)

    @cached_property
    def _out_vals(self) -> tuple[tuple[int, ...], ...]:
        return tuple(tuple(self.val[i] for i in outs) for outs in self.out_edges)

    @cached_property
    def start_value(self) -> dict[int, int]:
        """Register value at a path start after a cut or at a dynamic entry: Inc(d_in(v))."""
        return {e.dst: self.inc[i] for i, e in enumerate(self.dag) if e.kind == D_IN}

    @cached_property
    def completion(self) -> tuple[int, ...]:
        """Per node, the chord sum of the Val-0 continuation to EXIT (for truncated decoding)."""
        comp = [0] * self.graph.num_nodes
        order = topological_order(_dag_graph(self.graph.num_nodes, self.graph, self.dag))
        assert order is not None
        for v in reversed(order):
            if v != self.graph.exit and self.out_edges[v]:
                first = self.out_edges[v][0]
                comp[v] = self.inc[first] + comp[self.dag[first].dst]
        return tuple(comp)

    # ------------------------------------------------------------------ encode / decode
    def dag_path(self, path: Path) -> list[int]:
        """The DAG edges of ``path`` (InternalError if it is not a path of this numbering)."""
        g = self.graph
        edges: list[int] = []
        if path.start == g.entry:
            if not path.edges:
                raise InternalError("path: a path from ENTRY starts with a real edge")
            node = g.entry
        else:
            edges.append(self._lookup(D_IN, path.start))
            node = path.start
        for e in path.edges:
            if e in self.cuts or not 0 <= e < len(g.edges) or g.edges[e][0] != node:
                raise InternalError(f"path: edge {e} does not continue from node {node}")
            edges.append(self._lookup(REAL, e))
            node = g.edges[e][1]
        if path.end == END_EXIT:
            if node != g.exit:
                raise InternalError("path: END_EXIT but the last edge does not enter EXIT")
        elif path.end == END_DEAD:
            edges.append(self._lookup(D_DEAD, node))
        elif path.end in self.cuts:
            if g.edges[path.end][0] != node:
                raise InternalError(f"path: cut {path.end} does not leave node {node}")
            edges.append(self._lookup(D_OUT, path.end))
        else:
            raise InternalError(f"path: bad end {path.end}")
        return edges

    def encode(self, path: Path) -> int:
        """The id of a complete path."""
        self._usable()
        return sum(self.val[i] for i in self.dag_path(path))

    def recorded_value(self, path: Path) -> int:
        """What the probes record for ``path``: its chord increments plus folded constants."""
        self._usable()
        return sum(self.inc[i] for i in self.dag_path(path))

    def decode(self, pid: int) -> Path:
        """The path with id ``pid``."""
        self._usable()
        if not 0 <= pid < self.num_paths:
            raise InternalError(f"path id {pid} outside 0..{self.num_paths - 1}")
        return self._to_path(self._walk(pid, None))

    def decode_truncated(self, register: int, block: int) -> Path:
        """The prefix of a path cut short in ``block`` by an exception, from the register as
        the chord probes left it (increments of edges taken so far, start value included)."""
        self._usable()
        if not 0 <= block < self.graph.num_nodes or block in (self.graph.entry, self.graph.exit):
            raise InternalError(f"truncated path: bad block {block}")
        pid = register + self.completion[block]
        if not 0 <= pid < self.num_paths:
            raise InternalError(f"truncated path: register {register} at block {block} is out of range")
        walked = self._walk(pid, block)
        if not walked or self.dag[walked[-1]].dst != block:
            raise InternalError(f"truncated path: register {register} names no path through block {block}")
        p = self._to_path(walked)
        return Path(p.start, p.edges, END_TRUNCATED)

    def iter_paths(self) -> Iterator[tuple[int, Path]]:
        """Every (id, path) in id order (for small functions and tests)."""
        for pid in range(self.num_paths):
            yield pid, self.decode(pid)

    def blocks(self, path: Path) -> list[int]:
        """Real blocks of ``path`` in order."""
        g = self.graph
        out = [] if path.start == g.entry else [path.start]
        out.extend(g.edges[e][1] for e in path.edges if g.edges[e][1] != g.exit)
        return out

    # ------------------------------------------------------------------ internals
    def _usable(self) -> None:
        if self.fallback:
            raise InternalError(f"function has more than {self.limit} paths: it records block ids")

    def _lookup(self, kind: str, ref: int) -> int:
        try:
            return self._index[(kind, ref)]
        except KeyError:
            raise InternalError(f"path: no {kind} edge for {ref}") from None

    def _walk(self, rem: int, stop: int | None) -> list[int]:
        node, out = self.graph.entry, []
        while node != self.graph.exit and node != stop:
            vals = self._out_vals[node]
            k = bisect_right(vals, rem) - 1
            if k < 0:  # pragma: no cover - Val of the first out-edge is 0
                raise InternalError("decode: no out-edge")
            i = self.out_edges[node][k]
            rem -= self.val[i]
            out.append(i)
            node = self.dag[i].dst
        if stop is not None and rem != 0:
            return []
        return out

    def _to_path(self, walked: Sequence[int]) -> Path:
        first = self.dag[walked[0]]
        start = first.dst if first.kind == D_IN else self.graph.entry
        real = tuple(self.dag[i].ref for i in walked if self.dag[i].kind == REAL)
        last = self.dag[walked[-1]]
        end = last.ref if last.kind == D_OUT else END_DEAD if last.kind == D_DEAD else END_EXIT
        return Path(start, real, end)


# ---------------------------------------------------------------- phases

#: Weights at or above this keep an edge in the spanning tree whatever ``free_records`` says
#: (``witnesses.FORCED_TREE_WEIGHT``: an edge without a probe site).
_FORCED = 1e15


def record_edges(graph: FlowGraph, dag: Sequence[DagEdge]) -> list[bool]:
    """Per DAG edge: does its probe record anyway (a cut's d_out, a real edge into EXIT, a
    d_dead), so that an increment on it folds into the record's constant for nothing?"""
    return [e.kind in (D_OUT, D_DEAD) or (e.kind == REAL and e.dst == graph.exit) for e in dag]


def free_record_weights(graph: FlowGraph, dag: Sequence[DagEdge], weights: EdgeWeights) -> EdgeWeights:
    """The spanning tree's weights when records are free chords (docs/design.md "Path mode,
    wave 11"): every record edge below every other edge (an increment there costs nothing, one
    anywhere else a store per traversal), the others in their own order (+1: a weight 0 edge
    still goes before a record), edges forced into the tree left as they are; the edges that
    start a path (out of ENTRY, d_in) between the two.  Where the edges that do not record
    form a tree, every increment lands on a record: the register is 0 wherever the function
    runs and no probe keeps it (``modes.register_free``); where they do not, a join's increment
    goes to a reset or the store at entry before it goes to an edge of its own."""
    rec = record_edges(graph, dag)
    # a path start's edge (out of ENTRY: the store at entry; a d_in: the reset after a cut) stores
    # the register anyway, so an increment there is free too unless the register can go: after
    # the other edges that do not record, before the records
    store = [e.kind == D_IN or e.src == graph.entry for e in dag]
    return EdgeWeights(tuple(w if w >= _FORCED else 0.0 if r else 1.0 if st else w + 2.0
                             for w, r, st in zip(weights.edges, rec, store)), weights.virtual)


def chord_increments(graph: FlowGraph, dag: Sequence[DagEdge], val: Sequence[int],
                     weights: EdgeWeights, free_records: bool = True) -> tuple[list[int], tuple[int, ...]]:
    """Phase 5: Inc per DAG edge — zero on a maximum spanning tree (``placement.place_counters``
    seeded with EXIT→ENTRY), Val(e) + φ(src) − φ(dst) on its chords, φ the tree potential.
    ``free_records``: records are the cheapest chords (:func:`free_record_weights`); False is
    the numbering of recordings made before wave 11 (the same ids, other increments)."""
    n = graph.num_nodes
    dgraph = _dag_graph(n, graph, dag)
    placement = place_counters(dgraph, free_record_weights(graph, dag, weights) if free_records else weights)
    adj: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for i in placement.tree:
        s, d = dag[i].src, dag[i].dst
        adj[s].append((d, val[i]))
        adj[d].append((s, -val[i]))
    adj[graph.exit].append((graph.entry, 0))  # the virtual edge EXIT→ENTRY, Val 0
    adj[graph.entry].append((graph.exit, 0))
    phi: list[int | None] = [None] * n
    phi[graph.entry] = 0
    todo = [graph.entry]
    while todo:
        v = todo.pop()
        for w, dv in adj[v]:
            if phi[w] is None:
                phi[w] = phi[v] + dv  # type: ignore[operator]
                todo.append(w)
    if any(p is None for p in phi):  # pragma: no cover - build_dag makes the DAG connected
        raise InternalError("path numbering: spanning tree does not reach every node")
    inc = [val[i] + phi[e.src] - phi[e.dst] for i, e in enumerate(dag)]  # type: ignore[operator]
    if any(inc[i] for i in placement.tree):  # pragma: no cover - potentials make tree edges 0
        raise InternalError("path numbering: non-zero increment on a tree edge")
    return inc, placement.chords


def fold_probes(graph: FlowGraph, cuts: frozenset[int], dag: Sequence[DagEdge], inc: Sequence[int],
                index: dict[tuple[str, int], int]) -> tuple[EdgeProbe, ...]:
    """Phase 6: one probe per real CFG edge with the constants folded into initialisation
    (edges out of ENTRY), records (cuts and exits) and resets (after a cut)."""
    g = graph
    probes: list[EdgeProbe] = []
    for e, (s, d) in enumerate(g.edges):
        if e in cuts:
            probes.append(EdgeProbe("cut", inc[index[(D_OUT, e)]], inc[index[(D_IN, d)]]))
            continue
        k = inc[index[(REAL, e)]]
        if s == g.entry:
            probes.append(EdgeProbe("init-exit" if d == g.exit else "init", k))
        elif d == g.exit:
            probes.append(EdgeProbe("exit", k))
        else:
            probes.append(EdgeProbe("add", k) if k else EdgeProbe("none"))
    return tuple(probes)


# ---------------------------------------------------------------- entry points

def number_paths(graph: FlowGraph, *, policy: CutPolicy = "calls", cuts: Iterable[int] | None = None,
                 starts: Iterable[int] = (), weights: EdgeWeights | None = None,
                 limit: int = MAX_PATHS, quiet: Iterable[int] = (), free_records: bool = True) -> PathNumbering:
    """Number the acyclic paths of ``graph``.

    ``cuts`` replaces the policy's cut set (it must contain a cut for every cycle);
    ``starts`` are blocks entered dynamically (exception handlers); ``weights`` default to
    the static loop heuristic; ``quiet``: blocks that cannot call (forced chains into call
    blocks are not cut, :func:`choose_cuts`).  Past ``limit`` paths, extra cuts are added greedily; if that
    is not enough the result has ``fallback=True`` and cannot encode or decode.  ``free_records``:
    see :func:`chord_increments` (the path ids do not depend on it, the increments do).
    """
    validate(graph, require_reachable=False)
    quiet = frozenset(quiet)
    if limit < 1:
        raise InternalError("path numbering: limit must be positive")
    base = choose_cuts(graph, policy, quiet) if cuts is None else frozenset(cuts)
    if any(graph.edges[e][0] == graph.entry for e in base):
        raise InternalError("path numbering: edges out of ENTRY cannot be cut")
    if topological_order(graph, base) is None:
        raise InternalError("path numbering: the cut set leaves a cycle")
    starts = tuple(sorted(set(starts)))
    final, ok = limit_paths(graph, base, starts, limit)
    w = weights if weights is not None else static_weights(graph)
    dag, start_blocks = build_dag(graph, final, starts)
    dw = dag_weights(graph, dag, w)
    num, val = count_paths(graph, dag, dw.edges)
    index = {(e.kind, e.ref): i for i, e in enumerate(dag)}
    if not ok:
        return PathNumbering(graph, final, tuple(start_blocks), tuple(dag), tuple(val), (0,) * len(dag),
                             num[graph.entry], (), limit, True, final - base, (), quiet, free_records, index)
    inc, chords = chord_increments(graph, dag, val, dw, free_records)
    from wholetrace.instrument.pathregs import lift_registers, registers_fit

    if free_records:   # (recordings before wave 11 renumber as they were recorded)
        inc = lift_registers(graph, dag, inc)
    if not registers_fit(graph, dag, inc):   # an exception record could not hold it: block ids
        return PathNumbering(graph, final, tuple(start_blocks), tuple(dag), tuple(val), (0,) * len(dag),
                             num[graph.entry], (), limit, True, final - base, (), quiet, free_records, index)
    probes = fold_probes(graph, final, dag, inc, index)
    return PathNumbering(graph, final, tuple(start_blocks), tuple(dag), tuple(val), tuple(inc),
                         num[graph.entry], probes, limit, False, final - base, chords, quiet, free_records, index)


def number_cfg(cfg: CFG, *, policy: CutPolicy = "calls", limit: int = MAX_PATHS,
               weights: EdgeWeights | None = None, quiet: Iterable[int] | None = None,
               free_records: bool = True) -> PathNumbering:
    """``number_paths`` on a statement-level CFG: its dynamic entries start paths, and edges
    without a probe site (``instrument.witnesses.probe_sites``: a ``finally`` dispatch or
    ``with`` exit with several successors) are kept in the spanning tree where possible, so
    they carry no increment; ``unplaced_edges`` lists those that still need a probe.
    ``quiet``: the blocks that cannot call (default :func:`quiet_blocks`; a recording's
    stored set when renumbering a CFG read back from it)."""
    from wholetrace.instrument.flowgraph import from_cfg
    from wholetrace.instrument.witnesses import FORCED_TREE_WEIGHT, probe_sites

    graph = from_cfg(cfg)
    starts = [b.id for b in cfg.blocks if b.dynamic_entry]
    w = weights if weights is not None else static_weights(graph)
    sites = probe_sites(cfg)
    w = EdgeWeights(tuple(FORCED_TREE_WEIGHT if site is None else x for site, x in zip(sites, w.edges)), w.virtual)
    q = quiet_blocks(cfg) if quiet is None else quiet
    return number_paths(graph, policy=policy, starts=starts, limit=limit, weights=w, quiet=q,
                        free_records=free_records)


def unplaced_edges(cfg: CFG, num: PathNumbering) -> list[int]:
    """Edges of ``cfg`` whose probe (an increment, a cut or an exit record) has no probe site."""
    from wholetrace.instrument.witnesses import probe_sites

    sites = probe_sites(cfg)
    return [e for e, p in enumerate(num.probes) if p.kind != "none" and sites[e] is None]


