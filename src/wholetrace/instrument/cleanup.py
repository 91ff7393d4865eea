"""Cleanup regions' probes: ``with`` exits, ``try`` handlers and ``finally`` ends (the methods of the function rewriter)."""

from __future__ import annotations

import ast
import sys

from wholetrace.instrument.cfg import CFG, Stmt
from wholetrace.instrument.emit import A, EXC_CAUGHT, Emitter, ast_const, ast_name

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from wholetrace.instrument.modes import ProbePlan


class CleanupRewriter:
    """``with``/``try`` statements of ``instrument.rewrite._FunctionRewriter`` (a mixin: the
    rewriter's CFG, plan, emitter and block helpers are its own)."""

    cfg: CFG
    plan: ProbePlan
    em: Emitter

    if TYPE_CHECKING:   # pragma: no cover - the rewriter's own helpers
        def starts_block(self, st: Stmt | None) -> bool: ...
        def block_values(self, b: int) -> list[int]: ...
        def site_values(self, kind: str, sid: int, arm: str = "") -> list[int]: ...
        def probe_for(self, st: Stmt | None, like: ast.AST) -> list[ast.stmt]: ...
        def first_block(self, stmts: list[ast.stmt]) -> int: ...
        def body(self, stmts: list[ast.stmt]) -> list[ast.stmt]: ...
        def expr(self, e: ast.expr) -> ast.expr: ...

    # --- with
    def _with(self, s: ast.With | ast.AsyncWith) -> list[ast.stmt]:
        items = s.items
        first = items[0]
        enter = self.cfg.stmt_at(first, "with-enter")
        exit_ = self.cfg.stmt_at(first, "with-exit")
        pre = self.probe_for(enter, s)
        first.context_expr = self.expr(first.context_expr)
        if len(items) > 1:
            inner_node = type(s)(items[1:], s.body, getattr(s, "type_comment", None))
            ast.copy_location(inner_node, items[1].context_expr)
            inner_node.end_lineno, inner_node.end_col_offset = s.end_lineno, s.end_col_offset
            body = self._with(inner_node)  # type: ignore[arg-type]
            inner_exit = self.cfg.stmt_at(items[1], "with-exit")
            if inner_exit is not None:
                after = self.em.stmts(self.site_values("after", inner_exit.id), None)
                body += callless(after)
        else:
            body = self.body(s.body)
        assert exit_ is not None
        final = self.em.set_reraise(exit_.id, None)
        if self.starts_block(exit_):
            final += self.em.stmts(self.block_values(exit_.block), None)
        s.items = [first]
        s.body = [self.em.guard(body, final, exit_.block, own_final=True)]
        return pre + [s]

    # --- try
    def _try(self, s: ast.Try | ast.TryStar) -> list[ast.stmt]:
        if isinstance(s, ast.TryStar):   # the guards built from here on (those around it) read groups' entries
            self.em.star = True
        s.body = self.body(s.body)
        s.orelse = self.body(s.orelse)
        star_end = self.cfg.stmt_at(s, "star-end") if isinstance(s, ast.TryStar) else None
        for h in s.handlers:
            if h.type is not None:
                h.type = self.expr(h.type)
            if h.name is None and not self.em.in_class:
                h.name = EXC_CAUGHT     # the handler's probe reads the exception without a call
            entry = self.em.xedge(self.first_block(h.body), h.name, h, star=isinstance(s, ast.TryStar))
            if star_end is not None and star_end.block >= 0:
                entry += self.em.save_held(star_end.id)
            h.body = entry + self.body(h.body) + self._handler_end(star_end)
        if not s.finalbody:
            return [s]
        end = self.cfg.stmt_at(s, "finally-end")
        entry = self.first_block(s.finalbody)
        final = self.body(s.finalbody)
        # at the last statement's position: the finally's own re-raise takes the position of
        # the code before it, and a tracer sees it (return event after an exception)
        last: ast.AST | None = s.finalbody[-1]
        if isinstance(last, _COMPOUND):   # its line is not the one the finally ends on: no line
            last = None
        if end is not None:
            final += self.em.set_reraise(end.id, last)
        if self.starts_block(end):
            assert end is not None
            probes = self.em.stmts(self.block_values(end.block), last)
            final += callless(probes) if last is None else probes
        inner: list[ast.stmt] = s.body
        if s.handlers or s.orelse:
            inner_try = type(s)(s.body, s.handlers, s.orelse, [])
            ast.copy_location(inner_try, s)
            inner = [inner_try]
        return [self.em.guard(inner, final, entry, own_final=False, like=None if s.handlers or s.orelse else s)]

    def _handler_end(self, star_end: Stmt | None) -> list[ast.stmt]:
        """What ends an except handler's body: its traceback is no longer held.  An ``except*``
        handler ends at the ``star-end`` statement instead (the next handler's test, or the
        re-raise of what no handler took): a re-raise site, so the traceback stays held (again
        the handler's, which a handler nested in it may have replaced) and its block's probe runs."""
        if star_end is None or star_end.block < 0:
            return self.em.drop_held()
        out = self.em.set_reraise(star_end.id, None) + self.em.hold(star_end.id)
        if self.starts_block(star_end):
            probes = self.em.stmts(self.block_values(star_end.block), None)
            out += callless(probes)   # (as after a with)
        return out


#: CPython 3.13 miscompiles location-less arms reached by several jumps (``_FunctionRewriter.arm``).
NO_LOCATION_ARMS_MISCOMPILE = sys.version_info[:2] == (3, 13)

_BIG = 0x7FFFFFFFFFFFFFFF


def callless(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """Location-less probes after a compound statement (a ``finally``'s end, the probes after a
    ``with`` or ``finally``, an ``except*`` handler's end) without a call:
    CPython 3.13.0 copies a location-less block that holds a call (an "eval check") into the
    jump that reaches it and lets the copy of another predecessor fall through into the
    original, so ``wt.a(v)`` there ran twice (exstar16: ``except*`` seed 4, a cut recorded
    twice).  ``wt.a(v)`` becomes ``wt.a.__self__[BIG:] = (v,)`` (the same append to the
    stream's list, a ``STORE_SLICE``: no call, no eval check, so no copy).  Other versions: the
    probes as they are."""
    if not NO_LOCATION_ARMS_MISCOMPILE:
        return stmts
    out: list[ast.stmt] = []
    for st in stmts:
        call = st.value if isinstance(st, ast.Expr) else None
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == A
                and len(call.args) == 1 and not call.keywords):
            target = ast.Subscript(ast.Attribute(ast_name(A), "__self__", ast.Load()),
                                   ast.Slice(ast_const(_BIG), None, None), ast.Store())
            new = ast.Assign([target], ast.Tuple([call.args[0]], ast.Load()))
            out.append(ast.copy_location(new, st))
            for n in ast.walk(new):
                if isinstance(n, (ast.expr, ast.stmt)) and not hasattr(n, "lineno"):
                    ast.copy_location(n, st)
        else:
            out.append(st)
    return out


_COMPOUND = (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.Try, ast.TryStar, ast.Match)


def has_reraise_sites(cfg: CFG) -> bool:
    """Does the body re-raise (bare ``raise``, end of ``finally`` or ``except*``, ``with`` exit)?"""
    return any(st.kind in ("finally-end", "with-exit", "star-end")
               or (isinstance(st.node, ast.Raise) and st.node.exc is None) for st in cfg.stmts)


def continue_crosses_cleanup(body: list[ast.stmt]) -> bool:
    """Does a ``continue`` of this loop leave a ``with`` body or a ``try`` that has ``finally``?"""
    def walk(stmts: list[ast.stmt], inside: bool) -> bool:
        for s in stmts:
            if isinstance(s, ast.Continue):
                if inside:
                    return True
            elif isinstance(s, (ast.For, ast.AsyncFor, ast.While)):
                if walk(s.orelse, inside):   # a nested loop's body has its own continue target
                    return True
            elif isinstance(s, (ast.With, ast.AsyncWith)):
                if walk(s.body, True):
                    return True
            elif isinstance(s, (ast.Try, ast.TryStar)):
                guarded = inside or bool(s.finalbody)
                parts = [s.body, s.orelse] + [h.body for h in s.handlers]
                if any(walk(p, guarded) for p in parts) or walk(s.finalbody, inside):
                    return True
            elif isinstance(s, ast.If):
                if walk(s.body, inside) or walk(s.orelse, inside):
                    return True
            elif isinstance(s, ast.Match):
                if any(walk(c.body, inside) for c in s.cases):
                    return True
        return False
    return walk(body, False)


