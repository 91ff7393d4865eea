"""Statement-level control-flow graphs of Python functions, built from the AST (DESIGN.md "Program model").

A *function* is a code body: the module top level, a ``def``/``async def``, or a class body.
Statements are simple statements and the headers of compound statements; blocks are maximal
runs of statements entered only at the first and left only at the last, and every
call-capable statement starts a block.  ENTRY and EXIT are named pseudo-blocks.  Exceptions
are not static edges: handler and ``finally`` entries are *dynamic entries*, reached at run
time through recorded exception edges.

Modelling details:

* A literal test (``while True``, ``if 0``) has only the edge CPython compiles; the branch it
  never takes is dead code, as is everything after a ``while True`` without ``break``.
* Dead code (unreachable statements) keeps its statement ids but is in no block; handlers,
  ``finally`` bodies and ``__exit__`` calls of dead regions are dead too.
* A ``return``/``break``/``continue`` leaving a ``try``/``with`` enters the ``finally`` body
  or ``__exit__`` with an edge of its own kind; the ``finally-end`` statement then resumes it
  along a ``finally-dispatch`` edge, a ``with-exit`` along an edge of the original kind.
* The ends of an ``except*``'s handlers join at its ``star-end`` statement (the next handler's
  test, or the re-raise of what no handler took: a re-raise site, like ``finally-end``).
* Edges are unique per (source, destination) block; when several statement-level edges join
  the same two blocks, the first one linked gives the kind.
* List/set/dict comprehensions are call-capable (they run and iterate at once); a generator
  expression only evaluates its first iterable where it is written; a lambda body not at all.
"""

from __future__ import annotations

import ast

from wholetrace.errors import InstrumentError
from wholetrace.plain import Record
from wholetrace.ids import BlockId, StmtId
# cutting the statement graph into blocks (and its statement-graph stand-ins for ENTRY and EXIT)
from wholetrace.instrument.cfgblocks import _ENTRY_NODE, _EXIT_NODE, _cut_blocks, _live_statements, _renumber
# the model, re-exported: ``instrument.cfg`` is where readers and the instrumenter import it from
from wholetrace.instrument.cfgmodel import (EDGE_KINDS, STMT_KINDS, CFG, Block, Edge, FunctionNode, Stmt,
                                            fingerprint)

__all__ = ["EDGE_KINDS", "STMT_KINDS", "CFG", "Block", "Edge", "FunctionNode", "Stmt", "fingerprint",
           "build_cfg", "build_module", "build_tree", "iter_functions"]

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from typing import Iterator, Sequence


# --------------------------------------------------------------------------- expression facts

def _own_exprs(node: ast.AST) -> Iterator[ast.AST]:
    """Child nodes evaluated by ``node`` itself, skipping nested statements and deferred bodies."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        yield from node.decorator_list
        yield from node.args.defaults
        yield from (d for d in node.args.kw_defaults if d is not None)
        # annotations are evaluated when the ``def`` runs (unless postponed by
        # ``from __future__ import annotations``; counting them then only over-approximates)
        a = node.args
        for arg in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]:
            if arg is not None and arg.annotation is not None:
                yield arg.annotation
        if node.returns is not None:
            yield node.returns
        return
    if isinstance(node, ast.ClassDef):
        yield from node.decorator_list
        yield from node.bases
        yield from node.keywords
        return
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
            yield child


def _walk_expr(nodes: Sequence[ast.AST] | Iterator[ast.AST]) -> Iterator[ast.AST]:
    stack = list(nodes)
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, ast.Lambda):
            stack.extend(n.args.defaults)
            stack.extend(d for d in n.args.kw_defaults if d is not None)
            continue
        if isinstance(n, ast.GeneratorExp):
            # only the outermost iterable is evaluated when a generator expression is created;
            # the rest runs later, when (and where) the generator is consumed
            stack.append(n.generators[0].iter)
            continue
        stack.extend(ast.iter_child_nodes(n))


def _facts(exprs: Sequence[ast.AST]) -> tuple[bool, bool]:
    """(call-capable, suspends) for the given expressions."""
    calls = suspends = False
    for n in _walk_expr(exprs):
        if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) or (
                isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp)) and any(g.is_async for g in n.generators)):
            # an ``await`` (and an async comprehension, awaited) may suspend the coroutine: it is
            # a generator suspension, so a coroutine driven by hand is recorded exactly (wave 20)
            calls = suspends = True
        elif isinstance(n, (ast.Call, ast.Await, ast.ListComp, ast.SetComp, ast.DictComp)):
            # a list/set/dict comprehension runs at once and iterates (``__next__``), like a
            # ``for`` step: it resumes instrumented generators, so it is call-capable
            calls = True
    return calls, suspends


def _const_truth(test: ast.expr) -> bool | None:
    """Truth of a literal test (``while True``, ``if 0``); the compiler drops the branch it
    never takes, so the CFG has no edge for it.  ``None`` for any other test."""
    if isinstance(test, ast.Constant):
        return bool(test.value)
    return None


def _irrefutable(p: ast.pattern) -> bool:
    if isinstance(p, ast.MatchAs):
        return p.pattern is None or _irrefutable(p.pattern)
    if isinstance(p, ast.MatchOr):
        return any(_irrefutable(a) for a in p.patterns)
    return False


# --------------------------------------------------------------------------- statement graph

class _Ctx(Record):
    """``kind``: "loop" | "finally" | "with"; ``header``: a loop's header stmt; ``entries``:
    abrupt inflow of a finally/with; ``passing``: abrupt kinds routed through."""

    __slots__ = ("kind", "header", "breaks", "entries", "passing", "loop_of")

    def __init__(self, kind: str, header: int = -1) -> None:
        self.kind = kind
        self.header = header
        self.breaks: list[tuple[int, str]] = []
        self.entries: list[tuple[int, str]] = []
        self.passing: set[str] = set()
        self.loop_of: dict[str, _Ctx] = {}


Flow = list[tuple[int, str]]   # dangling edges: (source stmt or ENTRY, edge kind)


class _Builder:
    """Builds the statement graph of one function body, then cuts it into blocks."""

    def __init__(self) -> None:
        self.stmts: list[Stmt] = []
        self.succ: dict[int, list[tuple[int, str]]] = {_ENTRY_NODE: []}
        self.ctx: list[_Ctx] = []
        # dynamic entries -> the statements whose exceptions reach them (the entry is live
        # only if one of those is reachable: handlers in dead code are dead)
        self.dynamic_roots: dict[int, list[int]] = {}
        self.loop_headers: set[int] = set()
        self.back: set[tuple[int, int]] = set()
        self.anchors: dict[tuple[int, str], int] = {}
        self.with_items: dict[int, tuple[ast.withitem, int]] = {}
        self.is_generator = False
        self._pending_dyn: list[int] | None = None
        self.keys: list[tuple[int, int, int]] = []   # source-order sort key per statement

    # -- primitives
    def new(self, kind: str, node: ast.AST, anchor: ast.AST, exprs: Sequence[ast.AST],
            span: tuple[int, int, int, int], label: str | None = None, calls: bool = False,
            key: tuple[int, int, int] | None = None, suspends: bool = False) -> int:
        c, s = _facts(exprs)
        s = s or suspends
        sid = len(self.stmts)
        self.keys.append(key or (span[0], span[1], 0))
        self.stmts.append(Stmt(StmtId(sid), kind, label or type(node).__name__, *span,
                               calls=calls or c, suspends=s, node=node))
        self.succ[sid] = []
        self.anchors[(id(anchor), kind)] = sid
        if s:
            self.is_generator = True
        if self._pending_dyn is not None:
            self.dynamic_roots[sid] = self._pending_dyn
            self._pending_dyn = None
        return sid

    def link(self, flow: Flow, dst: int) -> None:
        for src, kind in flow:
            self.succ[src].append((dst, kind))

    def live(self, flow: Flow) -> Flow:
        """The entries of ``flow`` whose source is reachable in the graph built so far (from
        ENTRY, or from a dynamic entry one of whose roots is): a ``finally`` reached only
        through dead code's fall-through must not get a normal exit (wave 15: the finally-end's
        edge was labelled ``fall`` where only a ``return`` runs it)."""
        if not flow:
            return flow
        seen = _live_statements(self)
        return [(src, kind) for src, kind in flow if src in seen or src == _ENTRY_NODE]

    def abrupt(self, src: int, kind: str, label: str | None = None) -> None:
        """Route a return/break/continue from ``src`` through enclosing finally/with contexts.

        ``label`` is the kind of the edge leaving ``src`` (default: ``kind``)."""
        label = label or kind
        for ctx in reversed(self.ctx):
            if ctx.kind == "loop" and kind in ("break", "continue"):
                if kind == "break":
                    ctx.breaks.append((src, label))
                else:
                    self.succ[src].append((ctx.header, label))
                    self.back.add((src, ctx.header))
                return
            if ctx.kind in ("finally", "with"):
                ctx.entries.append((src, label))
                ctx.passing.add(kind)
                return
        if kind == "return":
            self.succ[src].append((_EXIT_NODE, label))
        # break/continue outside a loop cannot compile; nothing to link

    def route_on(self, ctx: _Ctx, src: int, label: str | None = None) -> None:
        """After a finally/with region, send the abrupt kinds that entered it onward."""
        for kind in sorted(ctx.passing):
            self.abrupt(src, kind, label)

    # -- bodies
    def body(self, stmts: Sequence[ast.stmt], flow: Flow) -> Flow:
        for s in stmts:
            if isinstance(s, (ast.Global, ast.Nonlocal)):
                continue
            flow = self.stmt(s, flow)
        return flow

    def stmt(self, s: ast.stmt, flow: Flow) -> Flow:  # noqa: C901 - one arm per construct
        sp = (s.lineno, s.col_offset, s.end_lineno or s.lineno, s.end_col_offset or 0)
        if isinstance(s, ast.If):
            t = self.new("if", s, s, [s.test], _hdr(s, s.test))
            self.link(flow, t)
            truth = _const_truth(s.test)
            return (self.body(s.body, [(t, "true")] if truth is not False else [])
                    + self.body(s.orelse, [(t, "false")] if truth is not True else []))
        if isinstance(s, ast.While):
            t = self.new("while", s, s, [s.test], _hdr(s, s.test))
            truth = _const_truth(s.test)
            return self._loop(s, t, flow, [(t, "true")] if truth is not False else [],
                              [(t, "false")] if truth is not True else [])
        if isinstance(s, (ast.For, ast.AsyncFor)):
            it = self.new("for-iter", s, s, [s.iter], _span(s.iter), key=(s.lineno, s.col_offset, 0))
            self.link(flow, it)
            nxt = self.new("for-next", s, s, [s.target], _hdr(s, s.iter), calls=True,
                           key=(s.lineno, s.col_offset, 1), suspends=isinstance(s, ast.AsyncFor))
            self.succ[it].append((nxt, "fall"))
            return self._loop(s, nxt, [], [(nxt, "next")], [(nxt, "exhausted")])
        if isinstance(s, (ast.With, ast.AsyncWith)):
            return self._with(s, 0, flow)
        if isinstance(s, ast.Match):
            return self._match(s, flow)
        if isinstance(s, (ast.Try, ast.TryStar)):
            return self._try(s, flow)
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            sid = self.new("simple", s, s, list(_own_exprs(s)), _def_span(s),
                           calls=isinstance(s, ast.ClassDef) or bool(s.decorator_list))
            self.link(flow, sid)
            return [(sid, "fall")]
        sid = self.new("simple", s, s, list(_own_exprs(s)), sp,
                       calls=isinstance(s, (ast.Import, ast.ImportFrom)))
        self.link(flow, sid)
        if isinstance(s, ast.Return):
            self.abrupt(sid, "return")
            return []
        if isinstance(s, ast.Break):
            self.abrupt(sid, "break")
            return []
        if isinstance(s, ast.Continue):
            self.abrupt(sid, "continue")
            return []
        if isinstance(s, ast.Raise):
            return []
        return [(sid, "fall")]

    def _loop(self, s: ast.While | ast.For | ast.AsyncFor, header: int, flow: Flow,
              into: Flow, out: Flow) -> Flow:
        self.link(flow, header)
        self.loop_headers.add(header)
        ctx = _Ctx("loop", header=header)
        self.ctx.append(ctx)
        end = self.body(s.body, into)
        self.ctx.pop()
        for src, kind in end:
            self.succ[src].append((header, "back" if kind == "fall" else kind))
            self.back.add((src, header))
        return self.body(s.orelse, out) + ctx.breaks

    def _with(self, s: ast.With | ast.AsyncWith, i: int, flow: Flow) -> Flow:
        item = s.items[i]
        parts: list[ast.AST] = [item.context_expr] + ([item.optional_vars] if item.optional_vars else [])
        first = item.context_expr if i else s
        last = item.optional_vars or item.context_expr
        span = (first.lineno, first.col_offset, last.end_lineno or last.lineno, last.end_col_offset or 0)
        awaits = isinstance(s, ast.AsyncWith)   # ``__aenter__``/``__aexit__`` are awaited: they suspend
        enter = self.new("with-enter", s, item, parts, span, calls=True, suspends=awaits)
        self.with_items[id(item)] = (item, i)
        self.link(flow, enter)
        ctx = _Ctx("with")
        self.ctx.append(ctx)
        inner: Flow = [(enter, "fall")]
        end = self._with(s, i + 1, inner) if i + 1 < len(s.items) else self.body(s.body, inner)
        self.ctx.pop()
        el, ec = s.end_lineno or s.lineno, s.end_col_offset or 0
        ex = self.new("with-exit", s, item, [], (el, ec, el, ec), calls=True, suspends=awaits)
        # An exception in the body also reaches __exit__ (a dynamic edge); the exit block is
        # therefore a dynamic entry as well as a static join.
        self.dynamic_roots[ex] = [enter]
        # abrupt entries first: an edge both a return/break and the fall-through take (an inner
        # with-exit or finally-end straight into this exit) gets the abrupt kind, so it has no
        # "after" probe site, which only the fall-through would run (wave 17, docs/design.md)
        self.link(ctx.entries + end, ex)
        self.route_on(ctx, ex)
        return [(ex, "fall")]

    def _match(self, s: ast.Match, flow: Flow) -> Flow:
        m = self.new("match", s, s, [s.subject], _hdr(s, s.subject))
        self.link(flow, m)
        out: Flow = []
        test_in: Flow = [(m, "fall")]
        for case in s.cases:
            exprs: list[ast.AST] = [case.pattern] + ([case.guard] if case.guard else [])
            last = case.guard or case.pattern
            span = (case.pattern.lineno, case.pattern.col_offset,
                    last.end_lineno or last.lineno, last.end_col_offset or 0)
            c = self.new("case", s, case, exprs, span, label="match_case")
            self.link(test_in, c)
            out += self.body(case.body, [(c, "true")])
            if _irrefutable(case.pattern) and case.guard is None:
                test_in = []
                break
            test_in = [(c, "false")]
        return out + test_in

    def _try(self, s: ast.Try | ast.TryStar, flow: Flow) -> Flow:
        fin = _Ctx("finally") if s.finalbody else None
        if fin:
            self.ctx.append(fin)
        start = len(self.stmts)
        end = self.body(s.body, flow)
        guarded = list(range(start, len(self.stmts)))      # exceptions from here reach handlers
        end = self.body(s.orelse, end)
        handled: Flow = []
        first_handler = len(self.stmts)
        for h in s.handlers:
            self._pending_dyn = guarded
            handled += self.body(h.body, [])
            self._pending_dyn = None
        if isinstance(s, ast.TryStar) and len(self.stmts) > first_handler:
            # the end of an except* handler: the next handler's test, or the end of them all,
            # which re-raises what no handler took (a re-raise site, like finally-end).  What
            # escapes a handler's body is taken there too (a dynamic entry: the star-end is
            # reached from the handlers' statements by an exception as well)
            last = s.handlers[-1]
            hl, hc = last.end_lineno or last.lineno, last.end_col_offset or 0
            self._pending_dyn = list(range(first_handler, len(self.stmts)))
            x = self.new("star-end", s, s, [], (hl, hc, hl, hc), label="except*")
            self.link(handled, x)
            handled = [(x, "fall")] if handled else []
        end += handled
        if not fin:
            return end
        end = self.live(end)
        self.ctx.pop()
        self._pending_dyn = list(range(start, len(self.stmts)))   # body, else and handlers
        fin_end = self.body(s.finalbody, fin.entries + end)   # abrupt kinds first, as in _with
        self._pending_dyn = None
        if not fin_end:
            return []
        el, ec = s.end_lineno or s.lineno, s.end_col_offset or 0
        d = self.new("finally-end", s, s, [], (el, ec, el, ec), label="finally")
        self.link(fin_end, d)
        self.route_on(fin, d, "finally-dispatch")
        return [(d, "fall")] if end else []


def _span(n: ast.AST) -> tuple[int, int, int, int]:
    return (n.lineno, n.col_offset, n.end_lineno or n.lineno, n.end_col_offset or 0)  # type: ignore[attr-defined]


def _hdr(s: ast.stmt, last: ast.AST) -> tuple[int, int, int, int]:
    return (s.lineno, s.col_offset, last.end_lineno or last.lineno, last.end_col_offset or 0)  # type: ignore[attr-defined]


def _def_span(s: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> tuple[int, int, int, int]:
    first = s.decorator_list[0] if s.decorator_list else s
    return (first.lineno, first.col_offset, s.end_lineno or s.lineno, s.end_col_offset or 0)


def build_cfg(fn: FunctionNode, qualname: str) -> CFG:
    """Build the CFG of one function body (module, def, async def or class body)."""
    b = _Builder()
    body = fn.body
    flow = b.body(body, [(_ENTRY_NODE, "fall")])
    b.link(flow, _EXIT_NODE)
    _renumber(b)
    blocks, edges, block_of = _cut_blocks(b)
    stmts = b.stmts
    for i, st in enumerate(stmts):
        st.block = BlockId(block_of.get(i, -1))
    kind = "module" if isinstance(fn, ast.Module) else "class" if isinstance(fn, ast.ClassDef) else "function"
    first = 1 if isinstance(fn, ast.Module) else fn.lineno
    last = max([getattr(fn, "end_lineno", None) or 0] + [s.end_line for s in stmts] + [first])
    is_gen = b.is_generator and kind == "function"
    cfg = CFG(qualname, kind, first, last, is_gen, blocks, edges, stmts,
              frozenset(BlockId(block_of[h]) for h in b.loop_headers if h in block_of),
              node=fn, anchors=dict(b.anchors))
    cfg.with_items = b.with_items
    cfg.fingerprint = fingerprint(cfg)
    return cfg


# --------------------------------------------------------------------------- whole modules

def iter_functions(tree: ast.Module) -> Iterator[tuple[FunctionNode, str]]:
    """Every code body of a module with its qualified name, module first, in source order."""
    yield tree, "<module>"

    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[FunctionNode, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                q = prefix + child.name
                yield child, q
                inner = q + "." if isinstance(child, ast.ClassDef) else q + ".<locals>."
                yield from walk(child, inner)
            elif isinstance(child, (ast.Lambda, ast.expr)):
                continue  # lambdas and comprehensions are atomic parts of statements
            else:
                yield from walk(child, prefix)

    yield from walk(tree, "")


def build_module(source: str, filename: str = "<string>") -> list[CFG]:
    """Parse ``source`` and build the CFG of every code body in it."""
    try:
        tree = ast.parse(source, filename)
    except SyntaxError as exc:
        raise InstrumentError(f"{filename}:{exc.lineno}: cannot parse: {exc.msg}") from None
    return build_tree(tree)


def build_tree(tree: ast.Module) -> list[CFG]:
    return [build_cfg(fn, q) for fn, q in iter_functions(tree)]
