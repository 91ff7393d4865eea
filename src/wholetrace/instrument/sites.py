"""Where an edge probe can go in the source: at its target's start, after its source, or in a branch arm.

A probe on edge u -> v must run exactly when that edge is taken.  Three kinds of place do:
the start of v when the edge is v's only static way in (and v is not entered by
exceptions); the end of u when the edge is u's only way out; and, for branch edges, the
arm the branch enters (the top of an ``if`` body or ``else``, a loop body or ``else``, a
``case`` body or the test of the next case); and the prologue for the edge ENTRY -> EXIT
of a body with no block (its statements are all ``global``/``nonlocal``).  Edges that leave a ``finally`` dispatch or a
``with`` exit towards several targets, or the end of ``except*`` handlers, have no such place: they are *uninstrumentable* and
placements must keep them off the chords.
"""

from __future__ import annotations

import ast

from wholetrace.ids import EXIT
from wholetrace.instrument.cfg import CFG
from wholetrace.plain import FrozenRecord


class Site(FrozenRecord):
    """``kind``: "dst" (start of block ``ref``), "after"/"before"/"return" (statement ``ref``),
    "arm" (statement ``ref``, arm ``arm``: body, orelse, next (case), iter (for-iter)),
    "entry" (the prologue)."""

    __slots__ = ("kind", "ref", "arm")

    def __init__(self, kind: str, ref: int = -1, arm: str = "") -> None:
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "ref", ref)
        object.__setattr__(self, "arm", arm)


_ARMS = {("if", "true"): "body", ("if", "false"): "orelse", ("while", "true"): "body",
         ("while", "false"): "orelse", ("for-next", "next"): "body",
         ("for-next", "exhausted"): "orelse", ("case", "true"): "body", ("case", "false"): "next"}


def edge_sites(cfg: CFG, falls: bool = False) -> list[Site | None]:
    """The probe site of every edge of ``cfg`` (same order as ``cfg.edges``), None where there is none.

    ``falls`` (count modes): the ``fall`` edge out of a ``finally`` dispatch or ``with`` exit
    that has other out-edges gets the site after its statement too, and so does its ``back``
    edge (the fall-through at the end of a loop body).  Code after a ``try`` or
    ``with`` runs exactly when it completes normally (or its exit swallows), never on a
    ``return``/``break``/``continue`` routed through it; and an edge that also carries such a
    route has that route's kind (``instrument.cfg`` links routes first).  Without it those edges
    can form a cycle of site-less edges, which no counter placement can measure (design.md,
    "Exact counts and readable recordings, wave 19").  Witness and path placements, which
    readers recompute from the CFG, keep the sites they were recorded with.
    """
    preds: dict[int, int] = {}
    outs: dict[int, int] = {}
    for e in cfg.edges:
        preds[e.dst] = preds.get(e.dst, 0) + 1
        outs[e.src] = outs.get(e.src, 0) + 1
    sites: list[Site | None] = []
    for e in cfg.edges:
        sites.append(_site(cfg, e.src, e.dst, e.kind, preds, outs, falls))
    return sites


def probe_rank(cfg: CFG, site: Site | None) -> int:
    """How dear the probe at ``site`` is (count modes): 0 a statement; 1 a statement that
    first holds a return value in a local; 2 an expression (a call)."""
    if site is None:
        return 0
    if site.kind == "arm" and site.arm == "iter":
        return 2
    if site.kind == "dst":
        first = cfg.stmts[cfg.blocks[site.ref].stmts[0]]
        return 2 if first.kind == "while" else 0
    if site.kind == "return":
        node = cfg.stmts[site.ref].node
        value = node.value if isinstance(node, ast.Return) else None
        return 0 if value is None or isinstance(value, ast.Constant) else 1
    return 0


def _site(cfg: CFG, u: int, v: int, kind: str, preds: dict[int, int], outs: dict[int, int],
          falls: bool = False) -> Site | None:
    if v != EXIT and preds.get(v, 0) == 1 and not cfg.blocks[v].dynamic_entry:
        return Site("dst", v)
    if u < 2:  # ENTRY: its only edge goes to the first block (handled above), or to EXIT
        return Site("entry") if v == EXIT else None   # a body of global/nonlocal only: the prologue
    last = cfg.stmts[cfg.blocks[u].stmts[-1]]
    node = last.node
    if last.kind == "star-end":   # the code after an except* runs after its body too: no place of its own
        return None
    if last.kind in ("finally-end", "with-exit"):
        if v != EXIT and (kind == "fall" and outs.get(u, 0) == 1 or falls and kind in ("fall", "back")):
            return Site("after", last.id)
        return None
    if last.kind in ("if", "while", "for-next", "case"):
        arm = _ARMS.get((last.kind, kind))
        return Site("arm", last.id, arm) if arm else None
    if outs.get(u, 0) != 1:
        return None
    if last.kind == "for-iter":
        return Site("arm", last.id, "iter")
    if last.kind in ("with-enter", "match"):
        return None   # their single successor always has a single predecessor ("dst")
    if isinstance(node, ast.Return):
        return Site("return", last.id)
    if isinstance(node, (ast.Break, ast.Continue)):
        return Site("before", last.id)
    if isinstance(node, ast.Raise):
        return None
    return Site("after", last.id)
