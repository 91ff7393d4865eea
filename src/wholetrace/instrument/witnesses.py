"""Per-function witness plans shared by the rewriter (`witness`/`branches` modes) and the regenerator.

Both sides must compute the same placement from the same CFG, so the only entry points are
:func:`witness_placement` and :func:`branch_placement`: deterministic functions of the CFG.

Python adds three needs to the paper's placement (``instrument.placement.place_witnesses``):

* *Generators.*  ENTER is recorded both when a generator starts and when it resumes after a
  ``yield``, and several activations of one generator function may be suspended at once.
  Every out-edge of ENTRY and of every block holding a ``yield`` is witnessed, so the first
  witness after an ENTER says whether the activation starts (an ENTRY edge) or resumes, and
  at which ``yield`` (the edge's source).
* *Dead ends.*  A block without successors (it can only be left by an exception: ``raise``)
  is a target of blocking like EXIT, so that two branches leading to different dead
  ends never share the empty witness set.
* *Branches mode* (the AE baseline, issue 5 item 4): every out-edge of every block with two or
  more successors, plus the call separators and generator edges above, plus edges closing
  a cycle of single-successor blocks (``while True`` without ``break``).

Probe sites.  An edge without a probe site (``instrument.sites``: the out-edges of a ``finally``
dispatch or ``with`` exit with several successors) cannot record a witness.  The spanning
tree is built with such edges forced in (as ``count`` does), and the out-edge of ENTRY gets
the site ``entry`` (the function prologue).  A function whose placement still needs a
witness on an edge without a site is recorded with block ids instead (the plan's strategy
``trace``): :func:`probe_sites` and :func:`needs_block_fallback` decide it, and the
regenerator passes its block events through unchanged.

Witness ids are positions in ``WitnessPlacement.witnessed`` (sorted edge ids).
"""

from __future__ import annotations

from wholetrace.ids import ENTRY, EXIT
from wholetrace.instrument.cfg import CFG
from wholetrace.instrument.flowgraph import FlowGraph, from_cfg, retreating_edges
from wholetrace.instrument.placement import (
    WitnessPlacement,
    call_separators,
    place_witnesses,
    verify_witnesses,
)
from wholetrace.instrument.sites import Site, edge_sites
from wholetrace.instrument.weighting import EdgeWeights, static_weights
from wholetrace.plain import replace

#: Placements the regenerator understands (``--mode`` of the recording).
PLAN_KINDS = ("witness", "branches")
#: Weight that keeps an edge without a probe site in the spanning tree.
FORCED_TREE_WEIGHT = 1e15


def probe_sites(cfg: CFG) -> list[Site | None]:
    """``instrument.sites.edge_sites`` plus the prologue (``Site("entry")``) for edges out of ENTRY."""
    sites = edge_sites(cfg)
    for i, e in enumerate(cfg.edges):
        if sites[i] is None and e.src == ENTRY:
            sites[i] = Site("entry")
    return sites


def drop_edges(cfg: CFG) -> frozenset[int]:
    """Edges whose probe would run before the exception being handled is dropped (from the
    source's AST; empty for a CFG read back from a recording, which has none).

    Leaving an ``except`` body (falling out of it, or ``break``/``continue``/``if`` arms that
    jump out) drops the exception after the body's last statement: that can run finalisers
    (``__del__``, weakref callbacks), which blocks mode records before the next block.  So do
    ``break``/``continue`` in a ``finally`` body.  A probe placed at such an edge's source
    (``after``, ``before``, an arm) runs before them, so regeneration would put those
    activations after the next block: the placements avoid these edges where they can."""
    import ast

    fn = cfg.node
    if fn is None or not any(b.dynamic_entry for b in cfg.blocks):
        return frozenset()
    handlers: list[tuple[tuple[int, int], tuple[int, int]]] = []
    finals: list[tuple[tuple[int, int], tuple[int, int]]] = []
    nested = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    todo = list(fn.body)
    while todo:     # this body's statements only: a nested def or class is a body of its own
        st = todo.pop()
        if isinstance(st, nested):
            continue
        for name in ("body", "orelse", "finalbody"):
            todo.extend(getattr(st, name, ()))
        for h in getattr(st, "handlers", ()):
            handlers.append(_span(h.body))
            todo.extend(h.body)
        for c in getattr(st, "cases", ()):
            todo.extend(c.body)
        if getattr(st, "finalbody", None):
            finals.append(_span(st.finalbody))
    if not handlers and not finals:
        return frozenset()
    first = {b.id: (cfg.stmts[b.stmts[0]].line, cfg.stmts[b.stmts[0]].col) for b in cfg.blocks if b.stmts}
    out = set()
    for i, e in enumerate(cfg.edges):
        if e.src < 2 or e.dst == EXIT or e.src not in first:
            continue
        last = cfg.stmts[cfg.blocks[e.src].stmts[-1]]
        at, to = (last.line, last.col), first.get(e.dst)
        if to is None:      # a block without statements: not known to be outside (review21c LOW-2)
            continue
        spans = handlers + (finals if last.label in ("Break", "Continue") else [])
        if any(lo <= at <= hi and not lo <= to <= hi for lo, hi in spans):
            out.add(i)
    return frozenset(out)


def _span(body: list) -> tuple[tuple[int, int], tuple[int, int]]:
    return (body[0].lineno, body[0].col_offset), (body[-1].end_lineno or 0, body[-1].end_col_offset or 0)


def needs_block_fallback(placement: WitnessPlacement, sites: list[Site | None]) -> bool:
    """Does a witnessed edge lack a probe site (so the function must record block ids)?"""
    return any(sites[e] is None for e in placement.witnessed)


def suspend_blocks(cfg: CFG) -> frozenset[int]:
    """Blocks holding a ``yield`` (a suspending statement always ends its block)."""
    return frozenset(b.id for b in cfg.blocks if any(cfg.stmts[s].suspends for s in b.stmts))


def generator_edges(cfg: CFG, graph: FlowGraph) -> frozenset[int]:
    """Edges that must carry a witness in a generator: out of ENTRY and out of every yield block."""
    if not cfg.is_generator:
        return frozenset()
    srcs = suspend_blocks(cfg) | {graph.entry}
    return frozenset(e for v in srcs for e in graph.out_edges[v])


def dead_ends(graph: FlowGraph) -> frozenset[int]:
    """Real blocks without successors: left only by an exception (``raise``)."""
    return frozenset(v for v in range(graph.num_nodes)
                     if not graph.out_edges[v] and v not in (graph.entry, graph.exit))


def _targets_graph(graph: FlowGraph) -> FlowGraph:
    """``graph`` with dead ends counted as blocking targets (as call blocks are)."""
    extra = dead_ends(graph)
    return replace(graph, call_nodes=graph.call_nodes | extra) if extra else graph


def _with_edges(placement: WitnessPlacement, graph: FlowGraph, extra: frozenset[int]) -> WitnessPlacement:
    """``placement`` with ``extra`` edges witnessed too (more witnesses never break a solution)."""
    if extra <= set(placement.witnessed):
        return placement
    return replace(placement, witnessed=tuple(sorted(set(placement.witnessed) | extra)),
                   blocking=placement.blocking | extra)


def witness_placement(cfg: CFG) -> WitnessPlacement:
    """The `witness` mode placement of one function (far blocking, call separation, generators)."""
    graph = from_cfg(cfg)
    w = static_weights(graph)
    sites = probe_sites(cfg)
    drops = drop_edges(cfg)
    forced = tuple(FORCED_TREE_WEIGHT if s is None else x for s, x in zip(sites, w.edges))
    placement = place_witnesses(_targets_graph(graph), EdgeWeights(forced, w.virtual), avoid=drops)
    placement = _with_edges(placement, graph, generator_edges(cfg, graph))
    verify_witnesses(graph, placement)
    return placement


def branch_placement(cfg: CFG) -> WitnessPlacement:
    """The `branches` mode placement: every out-edge of every predicate block (see module doc)."""
    graph = from_cfg(cfg)
    chosen = {e for v in range(graph.num_nodes) if graph.is_branching(v) for e in graph.out_edges[v]}
    chosen |= generator_edges(cfg, graph)
    chosen |= call_separators(graph, chosen, drop_edges(cfg))
    chosen |= retreating_edges(graph, frozenset(chosen))
    placement = WitnessPlacement(tuple(sorted(chosen)), blocking=frozenset(chosen),
                                 has_blocking_property=True, separates_calls=True)
    verify_witnesses(graph, placement)
    return placement


def placement_for(cfg: CFG, kind: str) -> WitnessPlacement:
    if kind not in PLAN_KINDS:
        raise ValueError(f"unknown placement kind {kind!r}")
    return witness_placement(cfg) if kind == "witness" else branch_placement(cfg)


def make_plans(cfgs: dict[int, CFG], kind: str = "witness", *,
               fallback: frozenset[int] | set[int] = frozenset()) -> dict[int, tuple[CFG, WitnessPlacement | None]]:
    """The plan of every function for the regenerator: fid -> (cfg, placement); the functions
    of ``fallback`` recorded block ids ("trace" strategy) and get ``None``."""
    return {fid: (cfg, None if fid in fallback else placement_for(cfg, kind)) for fid, cfg in cfgs.items()}
