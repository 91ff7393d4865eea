"""Probe plans: what each recording mode appends at block starts and on edges of one function.

``blocks``      the block id at every block start, ENTER/LEAVE, exception edges (the trace).
``count-naive`` one counter per block (a counter increment is an append of a global counter
                id; the recorder sums them with ``bincount`` as it flushes).
``count``       counters on the chords of a maximum spanning tree (Ball-Larus), weights from
                the heuristic or from an earlier recording; edges with no probe site are kept
                in the tree.  Generators, module and class bodies, and functions whose chords
                would need a site that does not exist, get a counter on every block and on
                every instrumentable edge instead ("full"): their counts need no propagation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from wholetrace.instrument.cfg import CFG
from wholetrace.instrument.sites import Site, edge_sites

MODES = ("blocks", "count", "count-naive")
FORCED_TREE_WEIGHT = 1e15


@dataclass
class ProbePlan:
    """Values a function appends: at block starts, on edges (by edge index), and how."""

    mode: str
    strategy: str                                   # "trace" | "chords" | "full" | "blocks"
    block_values: dict[int, list[int]] = field(default_factory=dict)
    edge_values: dict[int, list[int]] = field(default_factory=dict)
    sites: list[Site | None] = field(default_factory=list)
    counters: int = 0                               # local counters (count modes)
    chords: tuple[int, ...] = ()                    # edge ids with a counter ("chords")
    counted_edges: tuple[int, ...] = ()             # edge ids with a counter ("full")

    @property
    def traces(self) -> bool:
        """Blocks mode: ENTER/LEAVE and block ids go to the stream."""
        return self.mode == "blocks"

    def to_json(self) -> dict[str, object]:
        return {"mode": self.mode, "strategy": self.strategy, "counters": self.counters,
                "chords": list(self.chords), "counted_edges": list(self.counted_edges),
                "block_counters": sorted(self.block_values) if self.strategy != "chords" else []}


def blocks_plan(cfg: CFG) -> ProbePlan:
    return ProbePlan("blocks", "trace", {b.id: [b.id] for b in cfg.blocks[2:] if b.stmts})


def count_naive_plan(cfg: CFG, base: int) -> ProbePlan:
    """A counter per block; counter ``b - 2`` of the function is block ``b``."""
    real = [b.id for b in cfg.blocks[2:]]
    return ProbePlan("count-naive", "blocks", {b: [base + i] for i, b in enumerate(real)},
                     counters=len(real))


def _full_plan(cfg: CFG, base: int, sites: list[Site | None]) -> ProbePlan:
    real = [b.id for b in cfg.blocks[2:]]
    plan = ProbePlan("count", "full", {b: [base + i] for i, b in enumerate(real)}, sites=sites)
    counted = [i for i, s in enumerate(sites) if s is not None]
    plan.edge_values = {e: [base + len(real) + k] for k, e in enumerate(counted)}
    plan.counted_edges = tuple(counted)
    plan.counters = len(real) + len(counted)
    return plan


def count_plan(cfg: CFG, base: int, weights: Sequence[float] | None = None) -> ProbePlan:
    """Optimal counters on chords; ``weights``: edge counts of an earlier run, else the heuristic."""
    # imported here: blocks mode should not pay for numpy at start-up
    from wholetrace.instrument.flowgraph import from_cfg
    from wholetrace.instrument.placement import place_counters
    from wholetrace.instrument.weighting import EdgeWeights, feedback_weights, static_weights

    sites = edge_sites(cfg)
    if cfg.kind != "function" or cfg.is_generator:
        return _full_plan(cfg, base, sites)
    graph = from_cfg(cfg)
    w = feedback_weights(graph, list(weights)) if weights is not None else static_weights(graph)
    forced = tuple(FORCED_TREE_WEIGHT if s is None else x for s, x in zip(sites, w.edges))
    placement = place_counters(graph, EdgeWeights(forced, w.virtual))
    if any(sites[e] is None for e in placement.chords):
        return _full_plan(cfg, base, sites)
    plan = ProbePlan("count", "chords", sites=sites, chords=placement.chords,
                     counters=len(placement.chords))
    plan.edge_values = {e: [base + k] for k, e in enumerate(placement.chords)}
    return plan


def make_plan(mode: str, cfg: CFG, base: int, weights: Sequence[float] | None = None) -> ProbePlan:
    if mode == "blocks":
        return blocks_plan(cfg)
    if mode == "count-naive":
        return count_naive_plan(cfg, base)
    if mode == "count":
        return count_plan(cfg, base, weights)
    raise ValueError(f"unknown mode {mode!r}")
