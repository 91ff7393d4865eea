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

Witness ids are positions in ``WitnessPlacement.witnessed`` (sorted edge ids).
"""

from __future__ import annotations

from dataclasses import replace

from wholetrace.instrument.cfg import CFG
from wholetrace.instrument.flowgraph import FlowGraph, from_cfg, retreating_edges
from wholetrace.instrument.placement import (
    WitnessPlacement,
    call_separators,
    place_witnesses,
    verify_witnesses,
)
from wholetrace.instrument.weighting import static_weights

#: Placements the regenerator understands (``--mode`` of the recording).
PLAN_KINDS = ("witness", "branches")


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
    placement = place_witnesses(_targets_graph(graph), static_weights(graph))
    placement = _with_edges(placement, graph, generator_edges(cfg, graph))
    verify_witnesses(graph, placement)
    return placement


def branch_placement(cfg: CFG) -> WitnessPlacement:
    """The `branches` mode placement: every out-edge of every predicate block (see module doc)."""
    graph = from_cfg(cfg)
    chosen = {e for v in range(graph.num_nodes) if graph.is_branching(v) for e in graph.out_edges[v]}
    chosen |= generator_edges(cfg, graph)
    chosen |= call_separators(graph, chosen)
    chosen |= retreating_edges(graph, frozenset(chosen))
    placement = WitnessPlacement(tuple(sorted(chosen)), blocking=frozenset(chosen),
                                 has_blocking_property=True, separates_calls=True)
    verify_witnesses(graph, placement)
    return placement


def make_plans(cfgs: dict[int, CFG], kind: str = "witness") -> dict[int, tuple[CFG, WitnessPlacement]]:
    """The plan of every function for the regenerator: fid -> (cfg, placement)."""
    place = witness_placement if kind == "witness" else branch_placement
    return {fid: (cfg, place(cfg)) for fid, cfg in cfgs.items()}
