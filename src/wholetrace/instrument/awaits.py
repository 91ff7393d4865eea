"""Awaits as generator suspensions, recorded (LEAVE before, ENTER after) only in coroutines driven by hand."""

from __future__ import annotations

import ast
import sys

from wholetrace.events import LEAVE, enter_code
from wholetrace.ids import EXIT
from wholetrace.instrument.cfg import CFG, _walk_expr
from wholetrace.instrument.emit import (A, D, DRIVEN_GET, DRIVEN_SET, F, FRAME, ID, K, WRAP_LEFT, ROOT, SKIP, Emitter, artificial,
                                       ast_call, ast_const, ast_name, locate, place, rt)

TYPE_CHECKING = False
if TYPE_CHECKING:   # pragma: no cover
    from typing import Iterable

_SEND = 123 if sys.version_info < (3, 13) else 104   # dis.opmap["SEND"] (dis is not imported here)
assert sys.version_info < (3, 14), "check SEND's opcode and f_lasti at a SEND_GEN on this version"


def leave(em: Emitter) -> list[ast.expr]:
    """What runs just before the activation may suspend, without a branch:
    ``(skip, wt.a)[wt.d is True](LEAVE), wt.a := (wt.a, None)[wt.d is True]`` (a branch's
    location-less join would start the line again for a program's tracer, and in the exit
    probe's ``finally`` of an ``async with`` make CPython 3.13's compiler fail: "Invalid CFG,
    inconsistent stackdepth")."""
    hand = ast.Compare(ast_name(D), [ast.Is()], [ast_const(True)])
    pick = ast.Subscript(ast.Tuple([rt(SKIP), ast_name(A)], ast.Load()), hand, ast.Load())
    keep = ast.Subscript(ast.Tuple([ast_name(A), ast_const(None)], ast.Load()), hand, ast.Load())
    return [ast.Call(pick, [ast_const(LEAVE)], []), ast.NamedExpr(ast_name(A, True), keep)]


def leave_stmts(em: Emitter) -> list[ast.stmt]:
    """:func:`leave` as artificial statements (before an ``async for``'s next step, in an
    ``async with``'s exit probe)."""
    return [artificial(ast.Expr(e)) for e in leave(em)]  # type: ignore[misc]


def resume_exprs(em: Emitter, exits: bool = False, marked: bool = False) -> list[ast.expr]:
    """``wt.d and (wt.a := stream, wt.a(ENTER))``: what runs once it is resumed.  ``exits``:
    the suspending block may be followed by EXIT, where readers would take the activation's
    last LEAVE for a suspension: driven by a task, it records LEAVE and ENTER here (``or
    (wt.a(LEAVE) or wt.a(ENTER))``), a suspension that takes no time.  ``marked``: after a
    wrapped ``async for``'s step, which set ``wt.v`` (cleared here: ``instrument.loopwrap``)."""
    enter = ast.Call(ast_name(A), [ast_const(enter_code(em.fid))], [])
    parts = [ast.NamedExpr(ast_name(A, True), em.stream()), enter]
    if marked:
        parts.append(ast.Call(ast.Attribute(ast_name(WRAP_LEFT), "clear", ast.Load()), [], []))
    out: ast.expr = ast.BoolOp(ast.And(), [ast_name(D), ast.Tuple(parts, ast.Load())])
    if exits:
        pair = ast.BoolOp(ast.Or(), [ast.Call(ast_name(A), [ast_const(LEAVE)], []),
                                     ast.Call(ast_name(A), [ast_const(enter_code(em.fid))], [])])
        out = ast.BoolOp(ast.Or(), [out, pair])
    return [out]


def resume(em: Emitter, exits: bool = False, like: ast.AST | None = None, marked: bool = False) -> list[ast.stmt]:
    """:func:`resume_exprs` as statements at the start of ``like`` (the statement they open:
    their branch's join must not start a line for a program's tracer: the join is the ``None``
    of ``(resume, None)``, not the statement's ``POP_TOP``, which the compiler leaves
    location-less), else artificial."""
    return [place(ast.Expr(ast.Tuple([e, ast_const(None)], ast.Load())), like)  # type: ignore[misc]
            for e in resume_exprs(em, exits, marked)]


def first_located(body: list[ast.stmt]) -> ast.stmt | None:
    """The first statement of ``body`` with a source position (a program's, not a probe)."""
    return next((s for s in body if getattr(s, "lineno", -1) > 0), None)


def resume_if_left(em: Emitter, exits: bool = False, marked: bool = False) -> list[ast.stmt]:
    """After a statement some of whose ways out follow a suspension and some do not (by hand:
    LEAVE always precedes ``__aexit__``; ``exits``: see :func:`resume_exprs`; ``marked``: left
    by a wrapped ``async for``'s step, ``wt.v`` set)."""
    test = ast_name(WRAP_LEFT) if marked else ast.Compare(ast_name(A), [ast.Is()], [ast_const(None)])
    return [artificial(ast.If(test, resume(em, marked=marked), resume(em, True) if exits else []))]  # type: ignore[list-item]


def exits_after(cfg: CFG, block: int) -> bool:
    """Block ``block`` has an edge to EXIT."""
    return any(e.src == block and e.dst == EXIT for e in cfg.edges)


_BODIES = frozenset(("body", "orelse", "finalbody", "handlers", "cases"))


def exit_awaits(cfg: CFG) -> set[int]:
    """The ids of the ``await`` nodes and async comprehensions of statements whose block has
    an edge to EXIT (a statement's own expressions: not its nested bodies)."""
    out: set[int] = set()
    for st in cfg.stmts:
        if not st.suspends or st.block < 0 or st.node is None or not exits_after(cfg, st.block):
            continue
        stack: list[ast.AST] = [st.node]
        while stack:
            n = stack.pop()
            if isinstance(n, ast.Await) or async_comprehension(n) or suspending_genexp(n):
                out.add(id(n))
            for name, value in ast.iter_fields(n):
                if name in _BODIES and isinstance(n, (ast.stmt, ast.excepthandler, ast.match_case)):
                    continue
                stack.extend(v for v in (value if isinstance(value, list) else [value]) if isinstance(v, ast.AST))
    return out


def around(em: Emitter, node: ast.expr, leaves: bool = True, exits: bool = False) -> ast.expr:
    """``(leave, node, resume)[len(leave)]`` (leaves) or ``(node, leave)[0]``: ``node``'s value."""
    if not leaves:
        # at the expression's position: a location-less item of a second ``async with`` item
        # makes CPython 3.13's compiler fail ("Invalid CFG, inconsistent stackdepth")
        out = ast.Subscript(ast.Tuple([node] + leave(em), ast.Load()), ast_const(0), ast.Load())
        return ast.copy_location(artificial(out), node)  # type: ignore[return-value]
    before = [artificial(e) for e in leave(em)]
    parts = before + [node] + [locate(e, node) for e in resume_exprs(em, exits)]
    out = ast.Subscript(ast.Tuple(parts, ast.Load()), ast_const(len(before)), ast.Load())
    return ast.copy_location(locate(out, node), node)


def wrap_await(em: Emitter, node: ast.Await, exits: bool = False) -> ast.expr:
    """``((await (v, leave)[0]), resume)[0]``, at the await's position."""
    node.value = artificial(ast.Subscript(ast.Tuple([node.value] + leave(em), ast.Load()), ast_const(0), ast.Load()))  # type: ignore[assignment]
    # the resume at the await's position (as the yield wrapper's): its branch's join keeps the line
    out = ast.Subscript(ast.Tuple([node] + [locate(e, node) for e in resume_exprs(em, exits)], ast.Load()), ast_const(0), ast.Load())
    return ast.copy_location(locate(out, node), node)


def yields(fn: ast.AsyncFunctionDef) -> bool:
    """``fn`` is an async generator (a ``yield`` in its own scope)."""
    stack: list[ast.AST] = list(fn.body)
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Yield):
            return True
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(n))
    return False


def hand_flag(like: ast.AST, agen: bool = False) -> list[ast.stmt]:
    """The prologue of a coroutine or async generator (trace modes): ``wt.d``, is this
    activation driven by hand?  False for a coroutine whose caller is an instrumented
    coroutine driven by a task and stopped at ``SEND`` (awaiting it), and for the asyncio
    task's own coroutine at its first step (its frame id is in the one-item list the runtime
    puts in a context variable in ``Task.__init__``; emptied once matched, so no later frame
    at the same address matches); else true, which is always exact (a task-driven activation
    flagged by hand records its suspensions, at a cost).  C calls only, no loop
    (docs/design.md, wave 21).  An async generator (``agen``) is always flagged by hand: each
    ``asend``/``athrow`` step may have another driver (a task, then code by hand), and what it
    awaits reads its flag (no entry in ``driven``: children flag themselves by hand)::

        wt.f = getframe()
        wt.d = ((wt.k := wt.f.f_back) is None or driven_get(id(wt.k)) is not wt.k.f_code
                or <wt.k not at SEND>) and (root()[0] != id(wt.f) or root().__setitem__(0, None))
        driven_set(id(wt.f), None if wt.d else wt.f.f_code); wt.f = wt.k = None
    """
    if agen:
        return [place(ast.Assign([ast_name(D, True)], ast_const(True)), like)]  # type: ignore[list-item]
    back = ast_name(K)
    code = ast.Attribute(ast.Attribute(back, "f_code", ast.Load()), "co_code", ast.Load())
    lasti = ast.Attribute(back, "f_lasti", ast.Load())
    at = ast.Subscript(code, lasti, ast.Load())
    not_send: ast.expr = ast.Compare(at, [ast.NotEq()], [ast_const(_SEND)])
    if sys.version_info >= (3, 12):   # SEND_GEN leaves f_lasti at SEND's cache entry (0)
        pair = ast.Subscript(code, ast.Slice(ast.BinOp(lasti, ast.Sub(), ast_const(2)),
                                             ast.BinOp(lasti, ast.Add(), ast_const(1)), ast_const(2)), ast.Load())
        not_send = ast.BoolOp(ast.And(), [not_send, ast.Compare(pair, [ast.NotEq()], [ast_const(bytes((_SEND, 0)))])])
    parent = ast.BoolOp(ast.Or(), [
        ast.Compare(ast.NamedExpr(ast_name(K, True), ast.Attribute(ast_name(F), "f_back", ast.Load())),
                    [ast.Is()], [ast_const(None)]),
        ast.Compare(ast_call(rt(DRIVEN_GET), ast_call(rt(ID), back)), [ast.IsNot()],
                    [ast.Attribute(back, "f_code", ast.Load())]),
        not_send])
    own = ast_call(rt(ID), ast_name(F))
    cell = ast_call(rt(ROOT))
    clear = ast.Call(ast.Attribute(ast_call(rt(ROOT)), "__setitem__", ast.Load()), [ast_const(0), ast_const(None)], [])
    root = ast.BoolOp(ast.Or(), [ast.Compare(ast.Subscript(cell, ast_const(0), ast.Load()), [ast.NotEq()], [own]), clear])
    flag = ast.BoolOp(ast.And(), [parent, root])
    value = ast.IfExp(ast_name(D), ast_const(None), ast.Attribute(ast_name(F), "f_code", ast.Load()))
    stmts = [ast.Assign([ast_name(F, True)], ast_call(rt(FRAME))),
             ast.Assign([ast_name(D, True)], flag),
             ast.Expr(ast_call(rt(DRIVEN_SET), ast_call(rt(ID), ast_name(F)), value)),
             ast.Assign([ast_name(F, True), ast_name(K, True)], ast_const(None))]
    return [place(s, like) for s in stmts]  # type: ignore[misc]


def async_comprehension(node: ast.AST) -> bool:
    """A list/set/dict comprehension the enclosing coroutine awaits (``async for`` or ``await`` in it)."""
    if not isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp)):
        return False
    return any(g.is_async for g in node.generators) or any(isinstance(n, ast.Await) for n in _inside(node))


def suspending_genexp(node: ast.AST) -> bool:
    """A generator expression whose first iterable (evaluated by the enclosing coroutine, as
    the CFG says) awaits: wrapped as a whole, as an async comprehension is (the compiler
    rejects an assignment expression in a comprehension's iterable, and the rest of it runs
    in the generator's own frame)."""
    return isinstance(node, ast.GeneratorExp) and any(isinstance(n, ast.Await) for n in _walk_expr([node.generators[0].iter]))


def _inside(node: ast.AST) -> Iterable[ast.AST]:
    stack = list(ast.iter_child_nodes(node))
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, (ast.Lambda, ast.GeneratorExp)):
            stack.extend(ast.iter_child_nodes(n))
