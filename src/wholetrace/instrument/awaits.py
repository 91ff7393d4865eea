"""Implicit awaits (``async with``, ``async for``, async comprehensions) as generator suspensions."""

from __future__ import annotations

import ast

from wholetrace.events import LEAVE, enter_code
from wholetrace.instrument.emit import A, Emitter, artificial, ast_const, ast_name

TYPE_CHECKING = False
if TYPE_CHECKING:   # pragma: no cover
    from typing import Iterable


def leave(em: Emitter) -> list[ast.expr]:
    """``wt.a(LEAVE), wt.a := None``: what runs just before the activation may suspend."""
    return [ast.Call(ast_name(A), [ast_const(LEAVE)], []), ast.NamedExpr(ast_name(A, True), ast_const(None))]


def resume_exprs(em: Emitter) -> list[ast.expr]:
    """``wt.a := stream, wt.a(ENTER)``: what runs once it is resumed."""
    return [ast.NamedExpr(ast_name(A, True), em.stream()), ast.Call(ast_name(A), [ast_const(enter_code(em.fid))], [])]


def resume(em: Emitter) -> list[ast.stmt]:
    return [artificial(ast.Expr(e)) for e in resume_exprs(em)]  # type: ignore[misc]


def resume_if_left(em: Emitter) -> list[ast.stmt]:
    """After a statement some of whose ways out follow a suspension and some do not."""
    test = ast.Compare(ast_name(A), [ast.Is()], [ast_const(None)])
    return [artificial(ast.If(test, resume(em), []))]  # type: ignore[list-item]


def around(em: Emitter, node: ast.expr, leaves: bool = True) -> ast.expr:
    """``(leave, node, resume)[k]`` (leaves) or ``(node, leave)[0]``: ``node``'s value."""
    if not leaves:
        return artificial(ast.Subscript(ast.Tuple([node] + leave(em), ast.Load()), ast_const(0), ast.Load()))  # type: ignore[return-value]
    parts = leave(em) + [node] + resume_exprs(em)
    out = ast.Subscript(ast.Tuple(parts, ast.Load()), ast_const(2), ast.Load())
    return ast.copy_location(artificial(out), node)  # type: ignore[return-value]


def async_comprehension(node: ast.AST) -> bool:
    """A list/set/dict comprehension the enclosing coroutine awaits (``async for`` or ``await`` in it)."""
    if not isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp)):
        return False
    return any(g.is_async for g in node.generators) or any(isinstance(n, ast.Await) for n in _inside(node))


def _inside(node: ast.AST) -> Iterable[ast.AST]:
    stack = list(ast.iter_child_nodes(node))
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, (ast.Lambda, ast.GeneratorExp)):
            stack.extend(ast.iter_child_nodes(n))
