"""AST rewriter: places a mode's probes at block starts of every function, without changing behaviour.

Trace modes: probes are plain statements on a local (``wt.a(k)`` appends value ``k`` to the
stream of the running thread or task); each function gets a prologue that fetches its stream
and records ENTER, and a guard (``try``/``except``/``finally``) that records the dynamic
exception edge and LEAVE.  Count modes: a probe is ``counts.c<j> += 1.0``, a slot of the file's
counter object (a local counter where an expression is needed); functions fetch nothing.
Headers that have no statement of their own get expression probes: ``while wt.a(k) or test``,
``for x in (it, wt.a(k))[0]`` plus a probe at the end of the body and before ``continue``.
``with`` exits and ``finally`` entries are probed from an inserted ``try/finally`` so they run
in exactly the order Python runs the cleanup.  Generators (trace modes) record LEAVE before
each ``yield`` and ENTER after resumption.  The probe code itself is built by ``instrument.emit``
and finished by ``instrument.bytecode``; docs/design.md ("Probe contract") states the contract.
"""

from __future__ import annotations

import ast
from types import CodeType

from wholetrace.ids import EXIT
from wholetrace.instrument import awaits, loopwrap
from wholetrace.instrument.cfg import CFG, Stmt
from wholetrace.instrument.cleanup import (NO_LOCATION_ARMS_MISCOMPILE, CleanupRewriter, callless,
                                          continue_crosses_cleanup, has_reraise_sites, with_exit_spans)
from wholetrace.instrument.emit import (A, COUNTS, HOLD, WRAP_LEFT, Emitter, artificial, ast_const, ast_name,
                                       counter_slot, locate, place, rt, start_line)
from wholetrace.instrument.matchsplit import MatchRewriter
from wholetrace.instrument.modes import ProbePlan, blocks_plan
from wholetrace.events import LEAVE, enter_code
from wholetrace.plain import Record

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from typing import Sequence


# the kind of the statement a compound statement runs first (its CFG anchor)
_ENTRY_KINDS = {ast.If: "if", ast.While: "while", ast.For: "for-iter", ast.AsyncFor: "for-iter",
                ast.Match: "match", ast.With: "with-enter", ast.AsyncWith: "with-enter"}


class _LoopInfo(Record):
    __slots__ = ("header", "node", "wrapped")

    def __init__(self, header: Stmt, node: ast.For | ast.AsyncFor | ast.While, wrapped: bool = False) -> None:
        self.header = header
        self.node = node
        self.wrapped = wrapped


class _FunctionRewriter(MatchRewriter, CleanupRewriter):
    """Rewrites one function body in place, given its CFG and probe plan."""

    def __init__(self, cfg: CFG, fid: int, in_class: bool, plan: ProbePlan, table: int = 0) -> None:
        self.cfg = cfg
        self.plan = plan
        self.gen = cfg.is_generator
        self.em = Emitter(fid, in_class, plan, has_reraise_sites(cfg), table, self.gen and plan.traces)
        self.em.bare_raises = any(isinstance(st.node, ast.Raise) and st.node.exc is None for st in cfg.stmts)
        self.em.marked = self.gen and plan.traces and any(   # (``loopwrap.hand_recorders``)
            st.kind == "for-next" and isinstance(st.node, ast.AsyncFor) and continue_crosses_cleanup(st.node.body)
            for st in cfg.stmts)
        self.loops: list[_LoopInfo] = []
        self.exit_awaits: set[int] | None = None   # (awaits.exit_awaits, when first needed)
        self.dst_edges: dict[int, list[int]] = {}
        self.site_edges: dict[tuple[str, int, str], list[int]] = {}
        for i, site in enumerate(plan.sites):
            if site is None or i not in plan.edge_values:
                continue
            if site.kind == "dst":
                self.dst_edges.setdefault(site.ref, []).append(i)
            else:
                self.site_edges.setdefault((site.kind, site.ref, site.arm), []).append(i)

    # --- helpers
    def starts_block(self, st: Stmt | None) -> bool:
        return st is not None and st.block >= 0 and self.cfg.blocks[st.block].stmts[0] == st.id

    def block_values(self, b: int) -> list[int]:
        """What runs at the start of block ``b``: probes of edges whose only way in is here, then b's own."""
        out = [v for e in self.dst_edges.get(b, ()) for v in self.plan.edge_values[e]]
        return out + self.plan.block_values.get(b, [])

    def site_values(self, kind: str, sid: int, arm: str = "") -> list[int]:
        return [v for e in self.site_edges.get((kind, sid, arm), ()) for v in self.plan.edge_values[e]]

    def probe_for(self, st: Stmt | None, like: ast.AST) -> list[ast.stmt]:
        """The probes at the start of ``st``'s block (artificial: ``st`` starts its line)."""
        if st is None or not self.starts_block(st):
            return []
        return self.em.stmts(self.block_values(st.block), None)

    def arm(self, st: Stmt | None, arm: str, body: list[ast.stmt], like: ast.AST) -> list[ast.stmt]:
        """Prefix ``body`` (a branch arm) with the probes of the edge that enters it (at the
        position of the arm's first statement; an arm created for the probe has none)."""
        if st is None:
            return body
        probes = self.em.stmts(self.site_values("arm", st.id, arm), None)
        if probes and not body and NO_LOCATION_ARMS_MISCOMPILE:
            # CPython 3.13 copies a location-less block reached by several jumps into its
            # predecessors and lets a copy fall through into the original, running the probe
            # twice (`if a == b == c: ... else: <no location>`; docs/design.md, Python versions).
            # The jumps come from the test, so its position starts no new line.
            for p in probes:
                start_line(p, like.test if isinstance(like, (ast.If, ast.While)) else like)  # type: ignore[attr-defined]
        return probes + body

    def first_block(self, stmts: list[ast.stmt]) -> int:
        """The block of the first statement a body executes (a handler's or finally's entry)."""
        for s in stmts:
            if isinstance(s, (ast.Global, ast.Nonlocal)) or getattr(s, "_wt_probe", False):
                continue
            if isinstance(s, (ast.Try, ast.TryStar)):
                return self.first_block(s.body)
            kind, anchor = {ast.If: ("if", s), ast.While: ("while", s), ast.For: ("for-iter", s),
                            ast.AsyncFor: ("for-iter", s), ast.Match: ("match", s)}.get(type(s), ("simple", s))
            if isinstance(s, (ast.With, ast.AsyncWith)):
                kind, anchor = "with-enter", s.items[0]
            st = self.cfg.stmt_at(anchor, kind)
            return st.block if st is not None and st.block >= 0 else EXIT
        return EXIT

    # --- bodies
    def dead(self, s: ast.stmt) -> bool:
        """``s`` is dead code: the statement it runs first is in no block (nothing inside a
        compound statement is reachable but through its first statement).  Dead code is left
        as written: it never runs, and its CFG edges lead to no block (path mode has no path
        start for them: ``KeyError: -1`` before wave 15, docs/design.md "Path mode, wave 15")."""
        while isinstance(s, (ast.Try, ast.TryStar)):
            live = [b for b in s.body if not isinstance(b, (ast.Global, ast.Nonlocal))]
            if not live:
                return False
            s = live[0]
        kind, anchor = _ENTRY_KINDS.get(type(s), "simple"), s
        if isinstance(s, (ast.With, ast.AsyncWith)):
            anchor = s.items[0]
        st = self.cfg.stmt_at(anchor, kind)
        return st is not None and st.block < 0

    def body(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            if self.dead(s):
                out.append(s)
                continue
            out.extend(self.stmt(s))
            last = None
            if isinstance(s, (ast.Try, ast.TryStar)) and s.finalbody:
                last = self.cfg.stmt_at(s, "finally-end")
            elif isinstance(s, (ast.With, ast.AsyncWith)):
                last = self.cfg.stmt_at(s.items[0], "with-exit")
            elif not isinstance(s, (ast.If, ast.While, ast.For, ast.AsyncFor, ast.Match, ast.Try, ast.TryStar)):
                last = self.cfg.stmt_at(s, "simple")
            if last is not None:
                after = self.em.stmts(self.site_values("after", last.id), None)
                if last.kind in ("finally-end", "with-exit"):
                    # location-less, after a compound statement: at the end of an arm, 3.13.0
                    # copies it into one predecessor and falls through into the original
                    # (a with body or a finally ending in any compound statement; wave 17)
                    after = callless(after)
                out.extend(after)
        return out

    def stmt(self, s: ast.stmt) -> list[ast.stmt]:  # noqa: C901 - one arm per construct
        cfg = self.cfg
        if isinstance(s, ast.If):
            st = cfg.stmt_at(s, "if")
            pre = self.probe_for(st, s)
            s.test = self.expr(s.test)
            s.body = _one_line_arm(s.test, self.arm(st, "body", self.body(s.body), s))
            s.orelse = self.arm(st, "orelse", self.body(s.orelse), s)
            return pre + [s]
        if isinstance(s, ast.While):
            st = cfg.stmt_at(s, "while")
            test = self.expr(s.test)
            if self.starts_block(st):
                assert st is not None
                probes = self.em.exprs(self.block_values(st.block))
                if probes:
                    # built artificial, then given the position of the test's first instruction
                    # (start_line): CPython 3.13.0 evaluates a location-less first operand of a
                    # `while` test twice on entry (the loop-inversion copy of the test); the line
                    # events do not change
                    test = artificial(ast.BoolOp(ast.Or(), probes + [test]))  # type: ignore[assignment]
                    start_line(test, s.test)  # type: ignore[arg-type]
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
        if st is None:
            return pre + [s]
        if isinstance(s, (ast.Break, ast.Continue)):
            pre += self.exit_release(s) + self.em.stmts(self.site_values("before", st.id), None)
        if isinstance(s, ast.Continue) and self.loops:
            pre += self._continue_probe(s)
        if isinstance(s, ast.Raise) and s.exc is None:
            pre += self.bare_raise() + self.em.set_reraise(st.id, None) + self.em.raising_again(st.id)
        if isinstance(s, ast.Return):
            values = self.site_values("return", st.id)
            constant = s.value is None or isinstance(s.value, ast.Constant)
            release = self.exit_release(s)   # once the value is computed, as plain Python drops it
            if (values or release) and (constant or (not release and self.em.sets_exit_record(values))):
                pre += release + self.em.stmts(values, None)
            elif values or release:
                # the probe runs once the value is computed: ``wt.t = v; probe; return wt.t``
                assert s.value is not None
                hold = artificial(ast.Assign([ast_name(HOLD, True)], s.value))
                s.value = artificial(ast_name(HOLD))  # type: ignore[assignment]
                return pre + [hold] + release + self.em.stmts(values, None) + [s]  # type: ignore[list-item]
        return pre + [s]

    # --- loops
    def _loop_body(self, s: ast.For | ast.AsyncFor | ast.While, header: Stmt | None) -> _LoopInfo:
        assert header is not None
        info = _LoopInfo(header, s, wrapped=isinstance(s, (ast.For, ast.AsyncFor)) and continue_crosses_cleanup(s.body))
        self.loops.append(info)
        s.body = self.arm(header, "body", self.body(s.body), s)
        self.loops.pop()
        s.orelse = self.arm(header, "orelse", self.body(s.orelse), s)
        return info

    def _continue_probe(self, s: ast.Continue) -> list[ast.stmt]:
        loop = self.loops[-1]
        if not isinstance(loop.node, (ast.For, ast.AsyncFor)) or loop.wrapped:
            return []          # the while test / the iterator wrapper records the header
        leave = awaits.leave_stmts(self.em) if self.anext_suspends(loop.node) else []
        return self.em.stmts(self.block_values(loop.header.block), None) + leave

    def _for(self, s: ast.For | ast.AsyncFor) -> list[ast.stmt]:
        """for-next probes go *before* each ``__next__``: after the iterable, at the end of the
        body and before ``continue``; loops whose ``continue`` crosses cleanup code use a wrapper."""
        it_st = self.cfg.stmt_at(s, "for-iter")
        pre = self.probe_for(it_st, s)
        s.iter = self.expr(s.iter)
        info = self._loop_body(s, self.cfg.stmt_at(s, "for-next"))
        h = self.block_values(info.header.block)
        first = self.site_values("arm", it_st.id, "iter") if it_st is not None else []
        iterable = s.iter
        after: list[ast.stmt] = []
        if info.wrapped:
            if first:
                s.iter = ast.Subscript(ast.Tuple([s.iter] + self.em.exprs(first), ast.Load()), ast_const(0), ast.Load())
            recorders = (loopwrap.count_recorders(rt(COUNTS), [counter_slot(v) for v in h]) if self.em.counts
                         else loopwrap.hand_recorders(h) if self.anext_suspends(s)
                         else [loopwrap.trace_recorder(h, not self.gen and not self.em.in_class)] if h else [])
            s.iter = loopwrap.wrap(s.iter, recorders, s, iterable)
            if self.anext_suspends(s):   # each step left by hand (``wt.v`` set): resumed as the unwrapped loop is
                s.body = awaits.resume(self.em, like=awaits.first_located(s.body), marked=True) + s.body
                exits = awaits.exits_after(self.cfg, info.header.block)
                if s.orelse or exits:
                    like = awaits.first_located(s.orelse) or iterable
                    s.orelse = awaits.resume(self.em, exits, like, marked=True) + s.orelse
                else:
                    after = awaits.resume_if_left(self.em, marked=True)
        elif self.anext_suspends(s):   # __anext__ awaited: a generator suspension (instrument.awaits)
            leave = awaits.leave(self.em)
            s.iter = ast.Subscript(ast.Tuple([s.iter] + self.em.exprs(first + h) + leave, ast.Load()), ast_const(0), ast.Load())
            s.body = (awaits.resume(self.em, like=awaits.first_located(s.body)) + s.body + self.em.stmts(h, None)
                      + awaits.leave_stmts(self.em))
            exits = awaits.exits_after(self.cfg, info.header.block)   # exhausted, then EXIT
            # (no else: at the iterable, END_ASYNC_FOR's position, so the branch's join starts no line)
            s.orelse = awaits.resume(self.em, exits, awaits.first_located(s.orelse) or iterable) + s.orelse if s.orelse or exits else []
            after = awaits.resume_if_left(self.em)   # exhausted (left) or a break (not left)
        elif first or h:
            s.iter = ast.Subscript(ast.Tuple([s.iter] + self.em.exprs(first + h), ast.Load()), ast_const(0), ast.Load())
            s.body.extend(self.em.stmts(h, None))
        if s.iter is not iterable:
            # the new outermost node keeps the iterable's position (3.13 gives it to
            # GET_ITER and FOR_ITER, the loop's line); the rest is artificial
            ast.copy_location(s.iter, iterable)
            artificial(s.iter)
        return pre + [s] + after

    def anext_suspends(self, s: ast.For | ast.AsyncFor) -> bool:
        """Trace modes, an ``async for`` in a coroutine or async generator (behind a wrapper only
        the exhausted edge's suspension is recorded: ``loopwrap.exhausted_to_exit``)."""
        return isinstance(s, ast.AsyncFor) and self.gen and not self.em.counts

    # --- expressions: generators (trace modes) record LEAVE before each yield and ENTER after it
    def expr(self, e: ast.expr) -> ast.expr:
        if not self.gen or self.em.counts:
            return e
        if self.exit_awaits is None:
            self.exit_awaits = awaits.exit_awaits(self.cfg)
        return _YieldRewriter(self.em, self.exit_awaits).visit(e)  # type: ignore[no-any-return]


class _YieldRewriter(ast.NodeTransformer):
    """``(yield v)`` -> ``((yield (v, wt.a(LEAVE), wt.a := None)[0]), wt.a := stream, wt.a(ENTER))[0]``."""

    def __init__(self, em: Emitter, exits: set[int]) -> None:
        self.em = em
        self.exits = exits   # awaits whose block may be followed by EXIT (awaits.resume_exprs)

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        return node

    def _wrap(self, node: ast.Yield | ast.YieldFrom) -> ast.expr:
        self.generic_visit(node)
        # a bare yield's None at the yield's position: a location-less first instruction takes the
        # line of the one before it (the prologue's, the def line): a line event plain has not
        value = node.value if node.value is not None else ast.copy_location(ast_const(None), node)
        leave = ast.Tuple([value, ast.Call(ast_name(A), [ast_const(LEAVE)], []),
                           ast.NamedExpr(ast_name(A, True), ast_const(None))], ast.Load())
        node.value = artificial(ast.Subscript(leave, ast_const(0), ast.Load()))  # type: ignore[assignment]
        enter = ast.Call(ast_name(A), [ast_const(enter_code(self.em.fid))], [])
        resume = ast.Tuple([node, ast.NamedExpr(ast_name(A, True), self.em.stream()), enter], ast.Load())
        # at the yield's position: the stream fetch branches, and what follows must keep its line
        return locate(ast.Subscript(resume, ast_const(0), ast.Load()), node)  # type: ignore[return-value]

    def visit_Yield(self, node: ast.Yield) -> ast.AST:
        return self._wrap(node)

    def visit_YieldFrom(self, node: ast.YieldFrom) -> ast.AST:
        return self._wrap(node)

    def visit_Await(self, node: ast.Await) -> ast.AST:
        self.generic_visit(node)
        return awaits.wrap_await(self.em, node, id(node) in self.exits)

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> ast.AST:
        if awaits.suspending_genexp(node):   # no assignment expression in a comprehension's iterable
            return awaits.around(self.em, node, exits=id(node) in self.exits)
        first = node.generators[0]   # the rest runs in the generator's own frame
        first.iter = self.visit(first.iter)
        return node

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.DictComp) -> ast.AST:
        if awaits.async_comprehension(node):   # awaited as a whole: every await inside suspends it
            return awaits.around(self.em, node, exits=id(node) in self.exits)
        return self.generic_visit(node)

    visit_ListComp = visit_SetComp = visit_DictComp = _comprehension


# --------------------------------------------------------------------------- functions and modules

def _one_line_arm(test: ast.expr, body: list[ast.stmt]) -> list[ast.stmt]:
    """``if A or B: return`` on one line: the probes before the arm's first statement at its
    position.  Artificial, they formed a location-less join of the test's jumps, after which the
    statement started its line again: a program's tracer saw a second ``line`` event (review23e).
    On a line of its own the statement starts a line anyway, so its probes stay artificial."""
    first = awaits.first_located(body)
    if first is not None and first.lineno == test.end_lineno:
        for p in body[:body.index(first)]:
            start_line(p, first)
    return body


def _is_head(s: ast.stmt, module: bool) -> bool:
    """Docstrings and ``from __future__`` imports must stay first; they execute no calls."""
    if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
        return True
    return module and isinstance(s, ast.ImportFrom) and s.module == "__future__"


def rewrite_function(fn: ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
                     cfg: CFG, fid: int, plan: ProbePlan | None = None, table: int = 0) -> None:
    """Instrument one code body in place (its nested functions are rewritten separately);
    ``table``: index of its site table in the file (``compile_tree`` fills it in)."""
    module = isinstance(fn, ast.Module)
    plan = plan or blocks_plan(cfg)
    if plan.values is not None:     # full mode: value probes first, on the program's own nodes
        from wholetrace.instrument.wetemit import instrument_values
        instrument_values(fn, plan.values, plan.base)
    fr = _FunctionRewriter(cfg, fid, module or isinstance(fn, ast.ClassDef), plan, table)
    original = list(fn.body)
    n_head = 0
    while n_head < len(original) and _is_head(original[n_head], module) and (n_head == 0 or module):
        n_head += 1
    fr.plan_held(original)
    out = fr.body(original)
    head_ids = {id(s) for s in original[:n_head]}
    head = [s for s in out if id(s) in head_ids]
    rest = [s for s in out if id(s) not in head_ids]
    code_stmts = [s for s in original[n_head:] if not isinstance(s, (ast.Global, ast.Nonlocal))]
    anchor = code_stmts[0] if code_stmts else _entry_line(fn, original[:n_head])
    em = fr.em
    guarded = em.activation_guard(rest or [artificial(ast.Pass())])
    entry = em.stmts(fr.site_values("entry", -1), None)   # witness of the edge out of ENTRY
    hand = awaits.hand_flag(anchor, awaits.yields(fn)) if isinstance(fn, ast.AsyncFunctionDef) and fr.gen and not em.counts else []
    if em.marked:
        hand.append(place(ast.Assign([ast_name(WRAP_LEFT, True)], ast.List([], ast.Load())), anchor))  # type: ignore[arg-type]
    fn.body = head + em.prologue(anchor) + hand + entry + [guarded]  # type: ignore[list-item]
    start_line(fn.body[len(head)], anchor)


def _entry_line(fn: ast.AST, head: list[ast.stmt]) -> ast.stmt:
    """Where the probes of a body with no statement that makes code go: after its docstring
    (module and class bodies store it), else on the line of its ``RESUME`` (0 for a module,
    the first decorator or the ``def``/``class`` line)."""
    if head and not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        line = head[-1].lineno
    elif isinstance(fn, ast.Module):
        line = 0
    else:
        decorators = getattr(fn, "decorator_list", [])
        line = decorators[0].lineno if decorators and not isinstance(fn, ast.ClassDef) else fn.lineno  # type: ignore[attr-defined]
    return ast.Pass(lineno=line, col_offset=0, end_lineno=line, end_col_offset=0)


def rewrite_tree(tree: ast.Module, functions: Sequence[tuple[ast.AST, CFG, int, ProbePlan | None]]) -> ast.Module:
    """Instrument every (function node, CFG, fid, plan) of ``tree``; the CFGs were built on ``tree``.

    Every node the rewriter makes gets a position (a statement's, or none: artificial), so
    the tree compiles as it is (``compile_tree`` still repairs a node that has none).
    """
    for i, (fn, cfg, fid, plan) in enumerate(functions):
        rewrite_function(fn, cfg, fid, plan, i)  # type: ignore[arg-type]
    return tree


def compile_tree(tree: ast.Module, filename: str,
                 functions: Sequence[tuple[ast.AST, CFG, int, ProbePlan | None]] = ()) -> CodeType:
    """Compile an instrumented tree and finish the code (site tables of ``functions``, the
    same list ``rewrite_tree`` got, and in-place re-raises: ``instrument.bytecode``).

    A walk of the whole tree (``fix_missing_locations``, a third of the rewriting time of a
    large module) happens only if a position is missing.
    """
    from wholetrace.instrument import bytecode   # only when a template is made (not on cache hits)

    with bytecode.quiet_placeholders():
        try:
            code = compile(tree, filename, "exec", dont_inherit=True)
        except TypeError:
            code = compile(ast.fix_missing_locations(tree), filename, "exec", dont_inherit=True)
    code = bytecode.finish(code, [statement_spans(cfg) for _fn, cfg, _fid, _plan in functions])
    if any(plan is not None and plan.paths for _fn, _cfg, _fid, plan in functions):
        from wholetrace.instrument.exitconst import fold_exit_records   # path mode, wave 15

        code = fold_exit_records(code)
    return code


def statement_spans(cfg: CFG) -> list[tuple[int, int, int, int, int]]:
    """(line, col, end line, end col, statement id) of every statement, innermost spans first,
    and where each ``with`` exit's code is (statement id ``-1 - id``: ``with_exit_spans``)."""
    spans = [(s.line, s.col, s.end_line, s.end_col, s.id) for s in cfg.stmts] + with_exit_spans(cfg)
    return sorted(spans, key=lambda s: ((s[2] - s[0]) * 10_000 + s[3] - s[1]))
