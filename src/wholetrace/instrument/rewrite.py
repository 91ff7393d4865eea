"""AST rewriter: places a mode's probes at block starts of every function, without changing behaviour.

Probes are plain statements on a local (``_wt_a(k)`` appends block ``k`` to the stream of the
running thread or task).  Each function gets a prologue that fetches its stream and records
ENTER, and an ``except``/``finally`` pair that records the dynamic exception edge and LEAVE.
Headers that have no statement of their own get expression probes: ``while _wt_a(k) or test``,
``for x in (it, _wt_a(k))[0]`` plus a probe at the end of the body and before ``continue``.
``with`` exits and ``finally`` entries are probed from an inserted ``try/finally`` so they run
in exactly the order Python runs the cleanup.  Generators record LEAVE before each ``yield``
and ENTER after resumption.  See docs/design.md for the full contract.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Sequence

from wholetrace.instrument.cfg import CFG, Stmt
from wholetrace.runtime.events import LEAVE, enter_code

A = "_wt_a"          # local: append method of the current stream
# Run-time names live in ``builtins`` during a recording (runtime.probes.install), so that
# instrumented modules carry no extra globals.
GET = "_wt_get"      # ContextVar.get of the current stream
NEW = "_wt_new"      # create a stream for this thread/task
XEDGE = "_wt_x"      # record a dynamic exception edge, returns the append method
FOR = "_wt_for"      # wrapping iterator that records the for-next block before __next__
AFOR = "_wt_afor"    # the same for async for
RUNTIME_NAMES = (GET, NEW, XEDGE, FOR, AFOR)


def _name(n: str, store: bool = False) -> ast.Name:
    return ast.Name(n, ast.Store() if store else ast.Load())


def _call(fn: str, *args: ast.expr) -> ast.Call:
    return ast.Call(_name(fn), list(args), [])


def _const(v: object) -> ast.Constant:
    return ast.Constant(v)


def _loc(new: ast.AST, like: ast.AST) -> ast.AST:
    """Give the *new* nodes of ``new`` (those without a position) the start of ``like``.

    Nodes that already have a position (user code moved under a new node) are left alone
    and not descended into, so tracebacks keep pointing at the original source.
    """
    line = getattr(like, "lineno", 1)
    col = getattr(like, "col_offset", 0)
    stack = [new]
    while stack:
        n = stack.pop()
        if "lineno" in n._attributes:
            if hasattr(n, "lineno"):
                continue
            n.lineno, n.col_offset = line, col  # type: ignore[attr-defined]
            n.end_lineno, n.end_col_offset = line, col  # type: ignore[attr-defined]
        stack.extend(ast.iter_child_nodes(n))
    return new


@dataclass
class Emitter:
    """Builds probe code for one function.

    Module and class bodies (``in_class``) never bind ``_wt_a``: their namespace is the
    program's own, so their probes fetch the stream each time instead.
    """

    fid: int
    in_class: bool

    def stream(self) -> ast.expr:
        return ast.BoolOp(ast.Or(), [_call(GET, _const(None)), _call(NEW)])

    def append(self, value: int) -> ast.expr:
        target: ast.expr = self.stream() if self.in_class else _name(A)
        return ast.Call(target, [_const(value)], [])

    def stmt(self, value: int, like: ast.AST) -> ast.stmt:
        return _loc(ast.Expr(self.append(value)), like)  # type: ignore[return-value]

    def prologue(self, like: ast.AST) -> list[ast.stmt]:
        if self.in_class:
            return [self.stmt(enter_code(self.fid), like)]
        return [_loc(ast.Assign([_name(A, True)], self.stream()), like),  # type: ignore[list-item]
                self.stmt(enter_code(self.fid), like)]

    def xedge(self, like: ast.AST) -> ast.stmt:
        """Record the exception edge at a handler entry (and re-fetch the stream)."""
        if self.in_class:
            return _loc(ast.Expr(_call(XEDGE, _const(self.fid), _const(False))), like)  # type: ignore[return-value]
        return _loc(ast.Assign([_name(A, True)], _call(XEDGE, _const(self.fid), _name(A))), like)  # type: ignore[return-value]

    def guard(self, body: list[ast.stmt], like: ast.AST, final: list[ast.stmt] | None) -> ast.Try:
        """``try: body / except BaseException: record edge; raise / finally: final``."""
        handler = ast.ExceptHandler(_name("BaseException"), None, [self.xedge(like), ast.Raise()])
        node = ast.Try(body, [handler], [], final or [])
        return _loc(node, like)  # type: ignore[return-value]


@dataclass
class _LoopInfo:
    header: Stmt
    node: ast.For | ast.AsyncFor | ast.While
    wrapped: bool = False


class _FunctionRewriter:
    """Rewrites one function body in place, given its CFG."""

    def __init__(self, cfg: CFG, fid: int, in_class: bool) -> None:
        self.cfg = cfg
        self.em = Emitter(fid, in_class)
        self.loops: list[_LoopInfo] = []
        self.gen = cfg.is_generator

    # --- helpers
    def starts_block(self, st: Stmt | None) -> bool:
        return st is not None and st.block >= 0 and self.cfg.blocks[st.block].stmts[0] == st.id

    def probe_for(self, st: Stmt | None, like: ast.AST) -> list[ast.stmt]:
        return [self.em.stmt(st.block, like)] if st is not None and self.starts_block(st) else []

    # --- bodies
    def body(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, s: ast.stmt) -> list[ast.stmt]:  # noqa: C901 - one arm per construct
        cfg = self.cfg
        if isinstance(s, ast.If):
            st = cfg.stmt_at(s, "if")
            pre = self.probe_for(st, s)
            s.test = self.expr(s.test)
            s.body = self.body(s.body)
            s.orelse = self.body(s.orelse)
            return pre + [s]
        if isinstance(s, ast.While):
            st = cfg.stmt_at(s, "while")
            test = self.expr(s.test)
            if self.starts_block(st):
                assert st is not None
                test = ast.BoolOp(ast.Or(), [_loc(self.em.append(st.block), s.test), test])  # type: ignore[list-item]
            s.test = test
            self._loop_body(s, st)
            return [s]
        if isinstance(s, (ast.For, ast.AsyncFor)):
            return self._for(s)
        if isinstance(s, (ast.With, ast.AsyncWith)):
            return self._with(s)
        if isinstance(s, ast.Match):
            return self._match(s)
        if isinstance(s, (ast.Try, ast.TryStar)):
            return self._try(s)
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            st = cfg.stmt_at(s, "simple")
            s.decorator_list = [self.expr(d) for d in s.decorator_list]
            return self.probe_for(st, s.decorator_list[0] if s.decorator_list else s) + [s]
        if isinstance(s, (ast.Global, ast.Nonlocal)):
            return [s]
        st = cfg.stmt_at(s, "simple")
        pre = self.probe_for(st, s)
        for fname, value in ast.iter_fields(s):
            if isinstance(value, ast.expr):
                setattr(s, fname, self.expr(value))
            elif isinstance(value, list):
                setattr(s, fname, [self.expr(v) if isinstance(v, ast.expr) else v for v in value])
        if isinstance(s, ast.Continue) and self.loops:
            pre += self._continue_probe(s)
        return pre + [s]

    # --- loops
    def _loop_body(self, s: ast.For | ast.AsyncFor | ast.While, header: Stmt | None) -> _LoopInfo:
        assert header is not None
        info = _LoopInfo(header, s, wrapped=isinstance(s, (ast.For, ast.AsyncFor)) and _continue_crosses_cleanup(s.body))
        self.loops.append(info)
        s.body = self.body(s.body)
        self.loops.pop()
        s.orelse = self.body(s.orelse)
        return info

    def _continue_probe(self, s: ast.Continue) -> list[ast.stmt]:
        loop = self.loops[-1]
        if not isinstance(loop.node, (ast.For, ast.AsyncFor)) or loop.wrapped:
            return []          # the while test / the iterator wrapper records the header
        return [self.em.stmt(loop.header.block, s)]

    def _for(self, s: ast.For | ast.AsyncFor) -> list[ast.stmt]:
        """for-next probes go *before* each ``__next__``: after the iterable, at the end of the
        body and before ``continue``; loops whose ``continue`` crosses cleanup code use a wrapper."""
        pre = self.probe_for(self.cfg.stmt_at(s, "for-iter"), s)
        s.iter = self.expr(s.iter)
        info = self._loop_body(s, self.cfg.stmt_at(s, "for-next"))
        h = info.header.block
        if info.wrapped:
            s.iter = _loc(_call(AFOR if isinstance(s, ast.AsyncFor) else FOR, s.iter, _const(h)), s.iter)  # type: ignore[assignment]
        else:
            probe = _loc(self.em.append(h), s.iter)
            s.iter = ast.Subscript(ast.Tuple([s.iter, probe], ast.Load()), _const(0), ast.Load())
            _loc(s.iter, s.iter.value.elts[0])  # type: ignore[attr-defined]
            last = s.body[-1] if s.body else s
            s.body.append(self.em.stmt(h, last))
        return pre + [s]

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
        else:
            body = self.body(s.body)
        assert exit_ is not None
        final = [self.em.stmt(exit_.block, s)] if self.starts_block(exit_) else []
        s.items = [first]
        s.body = [self.em.guard(body, s.body[0] if s.body else s, final)]
        return pre + [s]

    # --- match
    def _match(self, s: ast.Match) -> list[ast.stmt]:
        m = self.cfg.stmt_at(s, "match")
        pre = self.probe_for(m, s)
        s.subject = self.expr(s.subject)
        groups: list[list[ast.match_case]] = [[]]
        heads: list[Stmt | None] = [None]
        for case in s.cases:
            st = self.cfg.stmt_at(case, "case")
            if self.starts_block(st):
                groups.append([])
                heads.append(st)
            if case.guard is not None:
                case.guard = self.expr(case.guard)
            body_st = case.body
            case.body = self.body(body_st)
            groups[-1].append(case)
        if len(groups) == 1:
            s.cases = groups[0]
            return pre + [s]
        # Split before every case test that starts a block: ``case _:`` + probe + nested match
        # on the saved subject, so the probe runs before that pattern is tried.
        tmp = f"_wt_m{m.id if m else 0}"
        nested: list[ast.stmt] = []
        for cases, head in zip(reversed(groups[1:]), reversed(heads[1:])):
            assert head is not None
            cases = cases + ([self._wildcard(nested, cases[-1])] if nested else [])
            node = ast.copy_location(ast.Match(_loc(_name(tmp), s.subject), cases), cases[0].pattern)
            nested = [self.em.stmt(head.block, cases[0].pattern), node]
        s.cases = groups[0] + [self._wildcard(nested, groups[0][-1] if groups[0] else s.cases[0])]
        s.subject = ast.copy_location(ast.NamedExpr(_name(tmp, True), s.subject), s.subject)
        if not self.em.in_class:
            return pre + [s]
        # module and class namespaces are the program's: drop the saved subject afterwards
        drop = ast.Expr(ast.Call(ast.Attribute(_call("vars"), "pop", ast.Load()),
                                 [_const(tmp), _const(None)], []))
        return pre + [_loc(ast.Try([s], [], [], [drop]), s)]  # type: ignore[list-item]

    @staticmethod
    def _wildcard(body: list[ast.stmt], like: ast.match_case) -> ast.match_case:
        pat = _loc(ast.MatchAs(None, None), like.pattern if isinstance(like, ast.match_case) else like)
        return ast.match_case(pat, None, body)  # type: ignore[arg-type]

    # --- try
    def _try(self, s: ast.Try | ast.TryStar) -> list[ast.stmt]:
        s.body = self.body(s.body)
        s.orelse = self.body(s.orelse)
        for h in s.handlers:
            if h.type is not None:
                h.type = self.expr(h.type)
            h.body = [self.em.xedge(h.body[0])] + self.body(h.body)
        if not s.finalbody:
            return [s]
        end = self.cfg.stmt_at(s, "finally-end")
        final = self.body(s.finalbody)
        if self.starts_block(end):
            assert end is not None
            final.append(self.em.stmt(end.block, s.finalbody[-1]))
        inner: list[ast.stmt] = s.body
        if s.handlers or s.orelse:
            inner_try = type(s)(s.body, s.handlers, s.orelse, [])
            ast.copy_location(inner_try, s)
            inner = [inner_try]
        return [self.em.guard(inner, s, final)]

    # --- expressions: generators record LEAVE before each yield and ENTER after it
    def expr(self, e: ast.expr) -> ast.expr:
        if not self.gen:
            return e
        return _YieldRewriter(self.em).visit(e)  # type: ignore[no-any-return]


class _YieldRewriter(ast.NodeTransformer):
    """``(yield v)`` -> ``((yield (v, _wt_a(LEAVE), _wt_a := None)[0]), _wt_a := stream, _wt_a(ENTER))[0]``."""

    def __init__(self, em: Emitter) -> None:
        self.em = em

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        return node

    def _wrap(self, node: ast.Yield | ast.YieldFrom) -> ast.expr:
        self.generic_visit(node)
        value = node.value if node.value is not None else _const(None)
        leave = ast.Tuple([value, ast.Call(_name(A), [_const(LEAVE)], []),
                           ast.NamedExpr(_name(A, True), _const(None))], ast.Load())
        node.value = ast.Subscript(leave, _const(0), ast.Load())
        resume = ast.Tuple([node, ast.NamedExpr(_name(A, True), self.em.stream()),
                            ast.Call(_name(A), [_const(enter_code(self.em.fid))], [])], ast.Load())
        out = ast.Subscript(resume, _const(0), ast.Load())
        for n in ast.walk(out):
            if "lineno" in n._attributes and not hasattr(n, "lineno"):
                ast.copy_location(n, node)
        ast.fix_missing_locations(out)
        return out

    def visit_Yield(self, node: ast.Yield) -> ast.AST:
        return self._wrap(node)

    def visit_YieldFrom(self, node: ast.YieldFrom) -> ast.AST:
        return self._wrap(node)


def _continue_crosses_cleanup(body: list[ast.stmt]) -> bool:
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


# --------------------------------------------------------------------------- functions and modules

def _is_head(s: ast.stmt, module: bool) -> bool:
    """Docstrings and ``from __future__`` imports must stay first; they execute no calls."""
    if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
        return True
    return module and isinstance(s, ast.ImportFrom) and s.module == "__future__"


def rewrite_function(fn: ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
                     cfg: CFG, fid: int) -> None:
    """Instrument one code body in place (its nested functions are rewritten separately)."""
    module = isinstance(fn, ast.Module)
    fr = _FunctionRewriter(cfg, fid, module or isinstance(fn, ast.ClassDef))
    original = list(fn.body)
    n_head = 0
    while n_head < len(original) and _is_head(original[n_head], module) and (n_head == 0 or module):
        n_head += 1
    out = fr.body(original)
    head_ids = {id(s) for s in original[:n_head]}
    head = [s for s in out if id(s) in head_ids]
    rest = [s for s in out if id(s) not in head_ids]
    anchor = rest[0] if rest else (original[0] if original else fn)
    em = fr.em
    leave = [em.stmt(LEAVE, anchor)]
    fn.body = head + em.prologue(anchor) + [em.guard(rest or [_loc(ast.Pass(), anchor)], anchor, leave)]  # type: ignore[list-item]


def rewrite_tree(tree: ast.Module, functions: Sequence[tuple[ast.AST, CFG, int]]) -> ast.Module:
    """Instrument every (function node, CFG, fid) of ``tree``; the CFGs were built on ``tree``."""
    for fn, cfg, fid in functions:
        rewrite_function(fn, cfg, fid)  # type: ignore[arg-type]
    return ast.fix_missing_locations(tree)
