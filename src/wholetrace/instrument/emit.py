"""Probe code for one function under one probe plan: the statements and expressions a mode inserts."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Sequence

from wholetrace.ids import EXIT
from wholetrace.instrument.modes import ProbePlan
from wholetrace.events import LEAVE, enter_code

A = "_wt_a"          # local: append method of the current stream
R = "_wt_r"          # local (count and witness modes): statement id of the last re-raise site passed
E = "_wt_e"          # local (the same modes): traceback of the last exception the frame caught, or None
# Run-time names live in ``builtins`` during a recording (runtime.probes.install), so that
# instrumented modules carry no extra globals.
GET = "_wt_get"      # ContextVar.get of the current stream
NEW = "_wt_new"      # create a stream for this thread/task
XEDGE = "_wt_x"      # record a dynamic exception edge, returns the append method
XCOUNT = "_wt_xc"    # the same for count modes (carries function, source and target)
RERAISE = "_wt_rr"   # module/class bodies (count and witness modes): note a re-raise site (-1: forget)
RERAISE_LOOKUP = -2  # ... and tell _wt_x/_wt_xc to look it up
FOR = "_wt_for"      # wrapping iterator that records the for-next block before __next__
COUNTERS = "_wt_C"   # count modes: the recording's counter list (index = global counter id)
INC = "_wt_inc"      # count modes: increment a counter inside an expression
HOLD = "_wt_t"       # local: a return value held while the return edge's probe runs
LOCAL = "_wt_n"      # count modes: ``_wt_n<j>`` counts the function's j-th counter in the activation
AFOR = "_wt_afor"    # the same for async for


def ast_name(n: str, store: bool = False) -> ast.Name:
    return ast.Name(n, ast.Store() if store else ast.Load())


def ast_call(fn: str, *args: ast.expr) -> ast.Call:
    return ast.Call(ast_name(fn), list(args), [])


def ast_const(v: object) -> ast.Constant:
    return ast.Constant(v)


def locate(new: ast.AST, like: ast.AST) -> ast.AST:
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
    """Builds probe code for one function under one probe plan.

    Module and class bodies (``in_class``) never bind ``_wt_a``: their namespace is the
    program's own, so their probes fetch the stream each time instead.
    """

    fid: int
    in_class: bool
    plan: ProbePlan
    reraises: bool = True     # the body has re-raise sites (bare raise, finally, with)

    @property
    def counts(self) -> bool:
        """Count modes: probes increment counters; no stream, ENTER or LEAVE."""
        return not self.plan.traces

    @property
    def knows_reraise(self) -> bool:
        """Count and witness modes say which statement raised an exception caught again in the
        same frame (a re-raise site, not the traceback's statement); blocks mode needs not.
        Only bodies with re-raise sites (bare ``raise``, ``finally``, ``with``) can re-raise."""
        return (self.counts or self.plan.records_handler) and self.reraises

    @property
    def tracks_reraise(self) -> bool:
        """Functions keep the last re-raise site passed (``_wt_r``) and the traceback of the last
        exception caught (``_wt_e``) in locals; module and class bodies in the runtime."""
        return self.knows_reraise and not self.in_class

    def stream(self) -> ast.expr:
        return ast.BoolOp(ast.Or(), [ast_call(GET, ast_const(None)), ast_call(NEW)])

    def append(self, value: int) -> ast.expr:
        """The probe as an expression."""
        if self.counts:
            return ast_call(INC, ast_const(value))
        target: ast.expr = self.stream() if self.in_class else ast_name(A)
        return ast.Call(target, [ast_const(value)], [])

    def stmt(self, value: int, like: ast.AST) -> ast.stmt:
        """The probe as a statement (count modes: ``_wt_C[value] += 1.0``, or ``_wt_n<value> += 1.0``).

        Counts are floats (exact up to 2**53): a float add takes its result from CPython's
        float free list, where an int above 256 is a fresh allocation — a fifth of the
        probe's cost (docs/design.md).
        """
        if value in self.plan.local_counters:
            return locate(ast.AugAssign(ast_name(self.local(value), True), ast.Add(), ast_const(1.0)), like)  # type: ignore[return-value]
        if self.counts:
            slot = ast.Subscript(ast_name(COUNTERS), ast_const(value), ast.Store())
            return locate(ast.AugAssign(slot, ast.Add(), ast_const(1.0)), like)  # type: ignore[return-value]
        return locate(ast.Expr(self.append(value)), like)  # type: ignore[return-value]

    def stmts(self, values: Sequence[int], like: ast.AST) -> list[ast.stmt]:
        return [self.stmt(v, like) for v in values]

    def exprs(self, values: Sequence[int], like: ast.AST) -> list[ast.expr]:
        return [locate(self.append(v), like) for v in values]  # type: ignore[misc]

    def set_reraise(self, sid: int, like: ast.AST) -> list[ast.stmt]:
        """Count and witness modes: remember a re-raise site (a local; module/class bodies ask the runtime)."""
        if not self.knows_reraise:
            return []
        if self.in_class:
            return [locate(ast.Expr(ast_call(RERAISE, ast_const(self.fid), ast_const(sid))), like)]  # type: ignore[list-item]
        return [locate(ast.Assign([ast_name(R, True)], ast_const(sid)), like)]  # type: ignore[list-item]

    def prologue(self, like: ast.AST) -> list[ast.stmt]:
        if self.counts:
            zero = [locate(ast.Assign([ast_name(self.local(k), True)], ast_const(0.0)), like)
                    for k in sorted(self.plan.local_counters)]
            return self.forget_reraise(like) + zero  # type: ignore[operator]
        out: list[ast.stmt] = []
        if not self.in_class:
            out.append(locate(ast.Assign([ast_name(A, True)], self.stream()), like))  # type: ignore[arg-type]
        return out + self.forget_reraise(like) + [self.stmt(enter_code(self.fid), like)]

    def forget_reraise(self, like: ast.AST) -> list[ast.stmt]:
        """At entry and exit: no re-raise site passed, no exception held (the held traceback
        refers to the frame: kept past the exit it would keep the frame alive)."""
        if not self.knows_reraise:
            return []
        if self.in_class:
            return self.set_reraise(-1, like)
        return self.set_reraise(-1, like) + [locate(ast.Assign([ast_name(E, True)], ast_const(None)), like)]  # type: ignore[list-item]

    def drop_held(self, like: ast.AST) -> list[ast.stmt]:
        """At the end of an ``except`` body: the exception it handled can no longer be re-raised."""
        if not self.tracks_reraise:
            return []
        return [locate(ast.Assign([ast_name(E, True)], ast_const(None)), like)]  # type: ignore[list-item]

    def local(self, counter: int) -> str:
        """The local that holds ``counter`` during an activation (named by its index in the
        function, so the name does not depend on ids handed out at run time)."""
        return f"{LOCAL}{counter - self.plan.base}"

    def epilogue(self, like: ast.AST) -> list[ast.stmt]:
        """What the activation's final ``finally`` runs: LEAVE (trace modes), or adding the
        local counts to the counter list (count modes)."""
        if not self.counts:
            return self.forget_reraise(like) + [self.stmt(LEAVE, like)]
        return self.forget_reraise(like) + [
            locate(ast.AugAssign(ast.Subscript(ast_name(COUNTERS), ast_const(k), ast.Store()), ast.Add(),
                                 ast_name(self.local(k))), like)  # type: ignore[misc]
            for k in sorted(self.plan.local_counters)]

    def xedge(self, like: ast.AST, dst: int) -> ast.stmt:
        """Record the exception edge at a handler entry (and re-fetch the stream).

        Count and witness modes pass the last re-raise site and the held traceback, and keep
        the traceback the runtime returns (see ``runtime.probes.exception_edge``)."""
        held: list[ast.expr] = []
        if self.tracks_reraise:
            held = [ast_name(R), ast_name(E)]
        elif self.knows_reraise:
            held = [ast_const(RERAISE_LOOKUP)]
        if self.counts:
            call = ast_call(XCOUNT, ast_const(self.fid), ast_const(dst), *(held or [ast_const(-1)]))
            if self.tracks_reraise:
                return locate(ast.Assign([ast_name(E, True)], call), like)  # type: ignore[return-value]
            return locate(ast.Expr(call), like)  # type: ignore[return-value]
        a: ast.expr = ast_const(False) if self.in_class else ast_name(A)
        # witness modes also name the handler block (blocks mode records it by its own probe)
        extra = [ast_const(-1 if dst == EXIT else dst)] + held if self.plan.records_handler else []
        call = ast_call(XEDGE, ast_const(self.fid), a, *extra)
        if self.in_class:
            return locate(ast.Expr(call), like)  # type: ignore[return-value]
        targets: ast.expr = ast_name(A, True)
        if self.tracks_reraise and self.plan.records_handler:
            targets = ast.Tuple([ast_name(A, True), ast_name(E, True)], ast.Store())
        return locate(ast.Assign([targets], call), like)  # type: ignore[return-value]

    def guard(self, body: list[ast.stmt], like: ast.AST, final: list[ast.stmt] | None, dst: int) -> ast.Try:
        """``try: body / except BaseException: record edge; raise / finally: final``."""
        handler = ast.ExceptHandler(ast_name("BaseException"), None, [self.xedge(like, dst), ast.Raise()])
        node = ast.Try(body, [handler], [], final or [])
        return locate(node, like)  # type: ignore[return-value]
