"""Forced chains of path mode: where a cut into a call block carries no information.

A path record at a cut into a call block C tells the regenerator that the path so far ran and
that C starts (Larus: the children that follow belong to C).  Where the frame stands at a block
u that cannot call at all (no explicit call, and no implicit one: no attribute, operator,
subscript, iteration or hash: :func:`quiet_statement`), with one successor, and every way into
u is a path start or another such block, the path from where the frame stands to C is unique
and no child can start before C: the regenerator emits the chain when the first child starts
(``kernels.decode._path_to_call``), and the cut is left out (``pathnum.choose_cuts``).
docs/design.md, "Path cuts, wave 10".
"""

from __future__ import annotations

import ast

from wholetrace.instrument.flowgraph import FlowGraph

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")

if TYPE_CHECKING:
    from wholetrace.instrument.cfg import CFG


def forced_chain_edges(graph: FlowGraph, cuts: frozenset[int], quiet: frozenset[int]) -> frozenset[int]:
    """The edges u→C into a call block C that end a forced chain under ``cuts``: u is quiet
    (it cannot call, so no child starts before C), has one successor, and every uncut way into
    u is ENTRY or another such block — so a frame standing where the path began (the entry
    block after ENTER, a cut's target after its record, a handler) goes to C, and the
    regenerator can emit the chain when a child starts instead of reading a cut record.
    Cutting u→C would carry no information but the position of the children."""
    g = graph
    memo: dict[int, bool] = {}

    def forced(u: int) -> bool:
        if u in memo:
            return memo[u]
        memo[u] = False      # (a cycle of such blocks never reaches a call block)
        ok = (u in quiet and len(g.out_edges[u]) == 1
              and all(e in cuts or g.edges[e][0] == g.entry or forced(g.edges[e][0]) for e in g.in_edges[u]))
        memo[u] = ok
        return ok

    out = set()
    for e, (s, d) in enumerate(g.edges):
        if d in g.call_nodes and s != g.entry and forced(s):
            out.add(e)
    return frozenset(out)


def _quiet_expr(node: object) -> bool:
    """A constant, a name, ``{}``, or a tuple/list display of such: evaluating it calls nothing
    (no attribute, operator, subscript, hash or iteration that could reach Python code)."""
    if isinstance(node, (ast.Constant, ast.Name)):
        return True
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_quiet_expr(x) for x in node.elts)
    return isinstance(node, ast.Dict) and not node.keys


def quiet_statement(node: object) -> bool:
    """Can this simple statement run without calling anything, even implicitly?  ``pass``, a
    constant (a docstring), and assignments of quiet expressions to plain names (or of a display
    to as many names)."""
    if isinstance(node, ast.Pass):
        return True
    if isinstance(node, ast.Expr):
        return isinstance(node.value, ast.Constant)
    if isinstance(node, ast.Assign):
        if all(isinstance(t, ast.Name) for t in node.targets):
            return _quiet_expr(node.value)
        # ``a, b = c, d``: the compiler swaps, nothing is iterated
        return (len(node.targets) == 1 and isinstance(node.targets[0], (ast.Tuple, ast.List))
                and isinstance(node.value, (ast.Tuple, ast.List)) and _quiet_expr(node.value)
                and len(node.targets[0].elts) == len(node.value.elts)
                and all(isinstance(t, ast.Name) for t in node.targets[0].elts))
    if isinstance(node, ast.AnnAssign):
        return isinstance(node.target, ast.Name) and node.value is not None and _quiet_expr(node.value)
    return False


def quiet_blocks(cfg: CFG) -> frozenset[int]:
    """Blocks of ``cfg`` all of whose statements are quiet (:func:`quiet_statement`; it needs
    the statements' AST, which a CFG read back from a recording has not: its plan stores the
    set, ``plan["paths"]["quiet"]``).  No explicit and no implicit call (property, dunder,
    ``__iter__``) can start a child there, so a child that follows cannot belong to them.
    Finalizers and signal handlers, which may run anywhere, are implicit calls and get the
    activation form only.  A block with an edge into a ``yield`` block is left out: a chain
    must not end at a suspension (a resumed generator's next path starts at its ``yield``
    block, so the path that reaches it must end there)."""
    yields = {b.id for b in cfg.blocks if any(cfg.stmts[s].suspends for s in b.stmts)}
    into_yield = {e.src for e in cfg.edges if e.dst in yields}
    return frozenset(b.id for b in cfg.blocks[2:]
                     if b.stmts and b.id not in into_yield
                     and all(cfg.stmts[s].kind == "simple" and not cfg.stmts[s].calls
                             and quiet_statement(cfg.stmts[s].node) for s in b.stmts))
