"""Probe code for one function under one probe plan (:class:`Emitter`): the statements and expressions a mode inserts.

docs/design.md ("Probe contract") states the contract this module implements (its names:
``instrument.emit``): run-time objects are placeholder constants (``emit.runtime_constant``) relocated at load
into the recording's own objects, never builtins; functions use a few locals whose names
contain a dot (no source can spell them); probe code is artificial (no line of its own)
and branch-free except where it opens an activation or a handler of the program; handler
probes are inline (a site table lookup, :func:`Emitter.site_of`), with no call of any kind
in count modes, so probes work at the recursion limit.  ``instrument.bytecode`` finishes
the compiled code (site tables, guards that re-raise in place).
"""

from __future__ import annotations

from wholetrace.ids import EXIT
from wholetrace.instrument.misspath import LazyModule
from wholetrace.events import EXC, LEAVE, LEAVE_PATH, NO_PATH, RERAISE as RERAISE_CODE, START, enter_code
from wholetrace.instrument.pathforms import LEAVE_TABLE_MAX
from wholetrace.instrument.emit import (A, BARE, COUNTS, C_CALLS_COUNT, EDGES, EXC_CAUGHT, EXC_GUARD, EXC_OWN, GET,
                                        INC, LASTI, LOCAL, NEW, WRAP_LEFT, NO_TB, O, P, R, RECURSION_ERROR,
                                        RERAISE_MARK, RERAISE_MARK_GUARD, SEEN, SKIP, STAR_PENDING, TB,
                                        XCOUNT, XEDGE, XLIST, counter_slot, leave_table, sites_constant)
from wholetrace.instrument.handledtb import star_tb, traceback_of
from wholetrace.instrument.heldcode import HeldCode
from wholetrace.instrument.probeast import (artificial, ast_call, ast_const, ast_name, first_evaluated, place, rt)
from wholetrace.plain import Record

#: ``wt.s`` before a bare ``raise`` (:meth:`Emitter.raising_again`); ``is ...`` compiles without a warning.
RAISING_AGAIN = ...

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    import ast
    from typing import Callable, Sequence

    from wholetrace.instrument.modes import ProbePlan
    from wholetrace.instrument.pathnum import EdgeProbe
else:   # ast only on a cache miss
    ast = LazyModule("ast", globals(), "ast")


def _counter(counter: int, ctx: ast.expr_context) -> ast.expr:
    return ast.Attribute(rt(COUNTS), counter_slot(counter), ctx)


class Emitter(HeldCode, Record):
    """Builds probe code for one function under one probe plan.

    Module and class bodies (``in_class``) bind no local: their namespace is the program's
    own, so their probes fetch the stream each time and their handlers call helpers.
    ``table``: index of the function's site table in its file; ``reraises``: the body has
    re-raise sites (bare raise, finally, with); ``expr_locals``: count modes, counters used in
    expressions.
    """

    _fields = ("fid", "in_class", "plan", "reraises", "table", "generator", "expr_locals")

    def __init__(self, fid: int, in_class: bool, plan: ProbePlan, reraises: bool = True, table: int = 0,
                 generator: bool = False, expr_locals: set[int] | None = None) -> None:
        self.fid = fid
        self.in_class = in_class
        self.plan = plan
        self.reraises = reraises
        self.table = table
        self.generator = generator
        self.expr_locals: set[int] = set() if expr_locals is None else expr_locals
        self.star = False   # the body holds an ``except*`` (set by the rewriter when it meets one)
        self.star_held: list[str] = []   # the ``wt.h<N>`` locals (the epilogue drops them)
        self.star_ends = False   # an ``except*`` handler's end sets ``wt.z`` (:meth:`HeldCode.star_pending`)
        self.bare_raises = False   # the body holds a bare ``raise`` (set by the rewriter: :meth:`raising_again`)
        self.marked = False   # a coroutine's ``wt.v`` (``instrument.loopwrap.hand_recorder``): handlers resume if it is set

    @property
    def counts(self) -> bool:
        """Count modes: probes increment counters; no stream, ENTER or LEAVE."""
        return not self.plan.traces

    @property
    def knows_reraise(self) -> bool:
        """Count and witness modes tell an exception re-raised in the frame (recorded as coming
        from the re-raise site) from a new one; blocks mode needs not.  Only bodies with
        re-raise sites (bare ``raise``, ``finally``, ``with``) can re-raise."""
        return (self.counts or self.plan.records_handler) and self.reraises

    @property
    def tracks_reraise(self) -> bool:
        """Functions keep the last re-raise site passed (``wt.r``) and the traceback entry
        their last handler saw (``wt.s``) in locals; module and class bodies in the runtime
        (``RunState.namespace_reraise``)."""
        return self.knows_reraise and not self.in_class

    @property
    def marks_bare(self) -> bool:
        """Trace modes that do not track re-raises (blocks, full, a witness mode's block
        fallback), in a function with a bare ``raise``: ``wt.b`` holds the statement of the bare
        ``raise`` last passed until the next exception record, which names it as the statement
        that raised (what it re-raises may have no traceback entry for this frame)."""
        return self.bare_raises and self.plan.traces and not self.tracks_reraise and not self.in_class

    def locals_counted(self) -> list[int]:
        return sorted(self.plan.local_counters | self.expr_locals)

    def stream(self) -> ast.expr:
        return ast.BoolOp(ast.Or(), [ast_call(rt(GET), ast_const(None)), ast_call(rt(NEW))])

    def append(self, value: int) -> ast.expr:
        """The probe as an expression whose value is false (``while`` tests, ``for`` iterables)."""
        if self.plan.paths and value >= 0:
            return self.path_expr(value)
        if self.counts:
            if self.in_class:
                return ast_call(rt(INC), rt(COUNTS), ast_const(counter_slot(value)))
            self.expr_locals.add(value)
            name = self.local(value)
            bump = ast.NamedExpr(ast_name(name, True), ast.BinOp(ast_name(name), ast.Add(), ast_const(1.0)))
            return ast.BinOp(bump, ast.Mult(), ast_const(0))   # 0.0; a comparison counts as a call
        # module and class bodies: the prologue made the stream, so it is there (no branch)
        target: ast.expr = ast_call(rt(GET), ast_const(None)) if self.in_class else ast_name(A)
        return ast.Call(target, [ast_const(value)], [])

    def stmt(self, value: int, like: ast.AST | None) -> ast.stmt:
        """The probe as a statement (count modes: ``counts.c<j> += 1.0``, or ``wt.n<j> += 1.0``).

        Counts are floats (exact up to 2**53): a float add takes its result from CPython's
        float free list, where an int above 256 is a fresh allocation — a fifth of the
        probe's cost (docs/design.md).  ``like``: see :func:`place`.
        """
        if value in self.plan.local_counters or (self.counts and value in self.expr_locals):
            node: ast.stmt = ast.AugAssign(ast_name(self.local(value), True), ast.Add(), ast_const(1.0))
        elif self.counts:
            node = ast.AugAssign(_counter(value, ast.Store()), ast.Add(), ast_const(1.0))
        else:
            node = ast.Expr(self.append(value))
        return place(node, like)  # type: ignore[return-value]

    def stmts(self, values: Sequence[int], like: ast.AST | None) -> list[ast.stmt]:
        if self.plan.paths:   # edge ids: one or two statements each
            return [place(n, like) for v in values for n in self.path_stmts(v)]  # type: ignore[misc]
        return [self.stmt(v, like) for v in values]

    # --- path mode: plan values are CFG edge ids, ``plan.path_probes[e]`` says what runs
    def path_stmts(self, edge: int) -> list[ast.stmt]:
        """``wt.p = K`` (edge out of ENTRY), ``wt.p += K``, or ``wt.a(id); wt.p = R`` (a cut)."""
        p = self.plan.path_probes[edge]
        if p.kind in ("leave", "leave-const"):
            return [ast.Assign([ast_name(O, True)], self._leave_record(edge, p))]
        if p.kind in ("init", "init-exit"):
            return [ast.Assign([ast_name(P, True)], ast_const(p.value))]
        if p.kind in ("cut", "cut-const"):
            record = ast.Expr(ast_call(A, self._path_record(edge, p)))
            if self.plan.register_free or edge in self.plan.same_resets:   # (the register holds the reset already)
                return [record]
            return [record, ast.Assign([ast_name(P, True)], ast_const(p.reset))]
        return [ast.AugAssign(ast_name(P, True), ast.Add(), ast_const(p.value))]

    def _table(self, edge: int) -> ast.expr | None:
        """``T[wt.p]`` for an edge whose record reads a constant table (``pathforms.register_forms``)."""
        table = self.plan.reg_tables.get(edge)
        return None if table is None else ast.Subscript(ast_const(table), ast_name(P), ast.Load())

    def _path_record(self, edge: int, p: "EdgeProbe") -> ast.expr:
        """The id a cut records: ``wt.p + K`` (or ``(K, K + 1, ...)[wt.p]``), or the constant when
        the register is known there."""
        if p.kind == "cut-const":
            return ast_const(p.value)
        if not p.value:
            return ast_name(P)
        return self._table(edge) or ast.BinOp(ast_name(P), ast.Add(), ast_const(p.value))

    def _leave_record(self, edge: int, p: "EdgeProbe") -> ast.expr:
        """An edge into EXIT: the closing record ``LEAVE_PATH + id``, a constant where the
        register is known, else ``T[wt.p + K]`` (``leave_table``: an existing int object; the
        table shifted by ``K`` where the register cannot be negative there)."""
        if p.kind == "leave-const":
            return ast_const(p.value)
        shifted = self._table(edge)
        if shifted is not None:
            return shifted
        index: ast.expr = ast_name(P) if not p.value else ast.BinOp(ast_name(P), ast.Add(), ast_const(p.value))
        return ast.Subscript(ast_const(self.leave_table()), index, ast.Load())

    @property
    def exit_record(self) -> bool:
        """Path mode: the edges into EXIT set ``wt.o`` to the closing record and the epilogue
        appends it (``modes.fold_exit_records``), instead of ``T[wt.p]`` in the epilogue."""
        return self.plan.paths and any(p.kind in ("leave", "leave-const") for p in self.plan.path_probes)

    def sets_exit_record(self, values: Sequence[int]) -> bool:
        """Do the probes of a return edge only set ``wt.o``?  They may then run before the
        return value is computed (no ``wt.t`` hold): if that raises, the exception's handler
        sets ``wt.o`` again (to LEAVE), as does any later edge into EXIT."""
        return self.plan.paths and all(self.plan.path_probes[v].kind in ("leave", "leave-const") for v in values)

    def path_expr(self, edge: int) -> ast.expr:
        """The same as a false expression without a branch: ``(wt.p := wt.p + K) * 0``, and
        ``wt.a(id) is (wt.p := R)`` (None is no int) for a cut (``wt.a(id)``, None, in a
        register-free function)."""
        p = self.plan.path_probes[edge]
        if p.kind in ("leave", "leave-const"):
            return ast.BinOp(ast.NamedExpr(ast_name(O, True), self._leave_record(edge, p)), ast.Mult(), ast_const(0))
        if p.kind in ("cut", "cut-const"):
            if self.plan.register_free or edge in self.plan.same_resets:   # None, a false value
                return ast_call(A, self._path_record(edge, p))
            reset = ast.NamedExpr(ast_name(P, True), ast_const(p.reset))
            return ast.Compare(ast_call(A, self._path_record(edge, p)), [ast.Is()], [reset])
        value: ast.expr = ast_const(p.value)
        if p.kind not in ("init", "init-exit"):
            value = ast.BinOp(ast_name(P), ast.Add(), value)
        return ast.BinOp(ast.NamedExpr(ast_name(P, True), value), ast.Mult(), ast_const(0))

    def exprs(self, values: Sequence[int]) -> list[ast.expr]:
        return [artificial(self.append(v)) for v in values]  # type: ignore[misc]

    def prologue(self, like: ast.AST) -> list[ast.stmt]:
        """What runs first in an activation, at the position of the first instruction of the
        first statement ``like`` (the instruction after ``RESUME`` starts a line event)."""
        like = first_evaluated(like)
        if self.counts:
            return self.forget_reraise(like) + [place(ast.Assign([ast_name(self.local(k), True)], ast_const(0.0)), like)  # type: ignore[misc]
                                                for k in self.locals_counted()]
        if self.in_class:
            enter = ast.Expr(ast.Call(self.stream(), [ast_const(enter_code(self.fid))], []))
            return [place(enter, like)] + self.forget_reraise(like)  # type: ignore[list-item]
        fetch: ast.stmt = ast.Assign([ast_name(A, True)], self.stream())
        if C_CALLS_COUNT:
            fetch = self._recursion_guard(fetch)
        start = [self.stmt(START, like)] if self.plan.paths and self.generator else []   # ENTER alone: resumed
        bare = [place(ast.Assign([ast_name(BARE, True)], ast_const(None)), like)] if self.marks_bare else []
        return [place(fetch, like), self.stmt(enter_code(self.fid), like)] + start + self.forget_reraise(like) + bare  # type: ignore[list-item]

    @staticmethod
    def _recursion_guard(fetch: ast.stmt) -> ast.stmt:
        """At the recursion limit the stream fetch (a C call) fails in the callee, where the
        plain program's call would have failed in the caller: raise the error the plain
        program sees (message, no traceback entry for this frame)."""
        err = ast_name(EXC_CAUGHT)
        fix = [ast.Assign([ast.Attribute(err, "args", ast.Store())],
                          ast_const(("maximum recursion depth exceeded",))),
               ast.Assign([ast.Attribute(ast_name(EXC_CAUGHT), "__traceback__", ast.Store())], ast_const(None)),
               ast.Raise()]
        handler = ast.ExceptHandler(rt(RECURSION_ERROR), EXC_CAUGHT, fix)
        return ast.Try([fetch], [artificial(handler)], [], [])  # type: ignore[list-item]

    def local(self, counter: int) -> str:
        """The local that holds ``counter`` during an activation (named by its index in the
        function, so the name does not depend on ids handed out at run time)."""
        return f"{LOCAL}{counter - self.plan.base}"

    def leave_table(self) -> tuple[int, ...] | None:
        """Path mode: the epilogue's table of closing records, None past ``LEAVE_TABLE_MAX`` paths."""
        num = self.plan.numbering
        return leave_table(num.num_paths) if num is not None and num.num_paths <= LEAVE_TABLE_MAX else None

    def no_path(self) -> int:
        """Path mode: the register once an exception left the activation (the epilogue then
        records a plain LEAVE)."""
        return NO_PATH if self.leave_table() is None else -1

    def epilogue(self) -> list[ast.stmt]:
        """What the activation's final ``finally`` runs: LEAVE (trace modes), or adding the
        local counts to the counter list (count modes)."""
        if self.plan.paths:   # the last path and LEAVE in one record (a plain LEAVE after an exception)
            table = self.plan.exit_table or self.leave_table()
            # (an exception leaves ``wt.p = no_path()``: the shifted table's last entry, LEAVE,
            # only if that is -1, i.e. within LEAVE_TABLE_MAX paths; ``pathforms.exit_table`` checks)
            assert self.plan.exit_table is None or self.no_path() == -1, "exit_table past LEAVE_TABLE_MAX paths"
            value: ast.expr = (ast_const(self.plan.exit_const) if self.plan.exit_const is not None
                               else ast.BinOp(ast_name(P), ast.Add(), ast_const(LEAVE_PATH)) if table is None
                               else ast_name(O) if self.exit_record
                               else ast.Subscript(ast_const(table), ast_name(P), ast.Load()))
            record = ast.Expr(ast_call(A, value))
            return self._forget_all() + [artificial(record)]  # type: ignore[list-item]
        if not self.counts:
            return self._forget_all() + [self.stmt(LEAVE, None)]
        out = [artificial(ast.AugAssign(_counter(k, ast.Store()), ast.Add(), ast_name(self.local(k))))
               for k in self.locals_counted()]
        return self._forget_all() + out  # type: ignore[return-value]

    # --- exception edges
    def site_of(self, tb: ast.expr) -> ast.expr:
        """The statement a traceback entry of this frame points at (-1 if none): a lookup in
        the function's site table by instruction index, without a call or a branch (a branch
        would leave the code after it without a line)."""
        some_tb = ast.Subscript(ast.Tuple([rt(NO_TB), ast.NamedExpr(ast_name(LASTI, True), tb)], ast.Load()),
                                ast.Compare(ast_name(LASTI), [ast.IsNot()], [ast_const(None)]), ast.Load())
        lasti = ast.NamedExpr(ast_name(LASTI, True),
                              ast.BinOp(ast.Attribute(some_tb, "tb_lasti", ast.Load()), ast.RShift(), ast_const(1)))
        cell = ast.Subscript(ast_const(sites_constant(self.table)),
                             ast.Slice(lasti, ast.BinOp(ast_name(LASTI), ast.Add(), ast_const(1))), ast.Load())
        padded = ast.BinOp(cell, ast.Add(), ast_const(sites_constant(self.table, pad=True)))
        return ast.BinOp(ast.Subscript(padded, ast_const(0), ast.Load()), ast.Sub(), ast_const(1))

    def xedge(self, dst: int, exc: str | None, at: ast.AST | None = None,
              tail: Callable[[], list[ast.stmt]] | None = None, star: bool = False) -> list[ast.stmt]:
        """Record the exception edge into block ``dst`` at a handler entry; ``exc``: the local
        bound to the exception (None in module and class bodies); ``at``: the handler of the
        program it opens (the probe takes its ``except`` line), None in a guard, whose
        ``tail()`` (the re-raise) ends the probe code; ``star``: an ``except*`` handler (its
        exception group has no traceback when it wraps a naked exception: :func:`star_tb`)."""
        if self.in_class or exc is None:
            lookup = ast_const(self.knows_reraise)
            if self.counts:
                args = [ast_const(self.fid), ast_const(dst), lookup]
                return [place(ast.Expr(ast_call(rt(XCOUNT), *args)), at)]  # type: ignore[list-item]
            extra = [ast_const(-1 if dst == EXIT else dst), lookup] if self.plan.records_handler else []
            return [place(ast.Expr(ast_call(rt(XEDGE), ast_const(self.fid), *extra)), at)]  # type: ignore[list-item]

        def tb() -> ast.expr:
            callless = self.counts and C_CALLS_COUNT
            if star or self.star:
                return star_tb(exc, handler=star, callless=callless)
            return traceback_of(ast_name(exc), callless)

        # A body with re-raise sites uses the traceback entry more than once: it is read once,
        # into ``wt.u``, which is dropped at the probe's end (``wt.s`` holds it from there, as before)
        def read_once() -> list[ast.stmt]:
            return [ast.Assign([ast_name(TB, True)], tb())] if self.tracks_reraise else []

        def drop() -> list[ast.stmt]:
            return [ast.Assign([ast_name(TB, True)], ast_const(None))] if self.tracks_reraise else []

        if self.counts:
            if self.tracks_reraise:
                src = ast.Subscript(ast.Tuple([self.site_of(ast_name(TB)), ast_name(R)], ast.Load()),
                                    self.again(ast_name(TB), hold=True), ast.Load())
            else:
                src = self.site_of(tb())
            record = read_once() + [
                ast.Assign([ast_name(XLIST, True)], ast.Attribute(rt(EDGES), "x", ast.Load())),
                ast.AugAssign(ast_name(XLIST, True), ast.Add(),
                              ast.Tuple([ast_const(self.fid), src, ast_const(dst)], ast.Load()))]
            record += self.star_taken() + drop()
            return [place(s, at) for s in record + (tail() if tail is not None else [])]  # type: ignore[misc]
        def record() -> list[ast.stmt]:
            # One append call for the whole record (``list.extend`` of a tuple): a thread is
            # stopped only between calls, so the recorder never finds a record half written
            # (``runtime.unfinished``: a daemon thread stopped at exit is closed after it).
            extra: list[ast.expr] = []
            if self.plan.paths:   # path mode: the register, as the exception left it (0 if kept by no probe)
                extra.append(ast_const(0) if self.plan.register_free else ast_name(P))
            if self.plan.records_handler and dst != EXIT:  # witness modes also name the handler block
                extra.append(ast_const(dst))
            # a constant closing record (``pathforms.single_exit_record``): the activation's handler
            # appends the plain LEAVE with the record, then turns ``wt.a`` into ``skip`` (``wt.a =
            # extend(...) or skip``), so the epilogue's ``wt.a(K)`` records nothing.  The switch
            # comes after the append, never before: Python code can run inside the record's
            # arguments (3.11's GC in an allocation, a profile function at the call); if the
            # append raises, the epilogue's ``wt.a(K)`` closes the activation.  A frame stopped
            # at the append's call has appended it (``runtime.unfinished._scan_leaves``).
            closing = self.plan.paths and dst == EXIT and self.plan.exit_const is not None
            if closing:
                extra.append(ast_const(LEAVE))
            out: list[ast.stmt] = []
            # after a bare raise the statement that raised is the raise (``s`` of EXC s, RERAISE s r):
            # what it re-raises may be a caller's, whose traceback has no entry for this frame
            if not self.tracks_reraise:
                src = self.site_of(tb())
                if self.marks_bare:
                    passed = ast.Compare(ast_name(BARE), [ast.IsNot()], [ast_const(None)])
                    src = ast.Subscript(ast.Tuple([src, ast_name(BARE)], ast.Load()), passed, ast.Load())
                    out.append(ast.Assign([ast_name(BARE, True)], ast_const(None)))
                items: ast.expr = ast.Tuple([ast_const(EXC), src] + extra, ast.Load())
            else:   # RERAISE s r for a re-raise, else EXC s; then hold the traceback entry
                code = ast.Subscript(ast.Tuple([ast_const(EXC), ast_const(RERAISE_CODE)], ast.Load()),
                                     self.again(ast_name(TB)), ast.Load())
                site = ast.Subscript(ast.Tuple([ast_name(R)], ast.Load()), ast.Slice(None, self.again(ast_name(TB))),
                                     ast.Load())
                src = self.site_of(ast_name(TB))
                if self.bare_raises:
                    bare = ast.Compare(ast_name(SEEN), [ast.Is()], [ast_const(RAISING_AGAIN)])
                    src = ast.Subscript(ast.Tuple([src, ast_name(R)], ast.Load()), bare, ast.Load())
                items = ast.BinOp(ast.Tuple([code, src], ast.Load()), ast.Add(), site)
                if extra:
                    items = ast.BinOp(items, ast.Add(), ast.Tuple(extra, ast.Load()))
                out += [ast.Assign([ast_name(SEEN, True)], ast_name(TB))] + self.star_taken() + drop()
            extend = ast.Attribute(ast.Attribute(ast_name(A), "__self__", ast.Load()), "extend", ast.Load())
            if closing:   # (extend returns None)
                then_skip = ast.BoolOp(ast.Or(), [ast_call(extend, items), rt(SKIP)])
                closed = [ast.Assign([ast_name(A, True)], then_skip)]
                return read_once() + closed + out + (tail() if tail is not None else [])
            out.insert(0, ast.Expr(ast_call(extend, items)))
            out[:0] = read_once()
            if self.plan.paths:   # the handler's path starts (none after the edge to EXIT)
                start = self.plan.path_starts[dst] if dst != EXIT else self.no_path()
                if not self.plan.register_free:   # (no probe of a register-free function reads it)
                    out.append(ast.Assign([ast_name(P, True)], ast_const(start)))
                if dst == EXIT and self.exit_record:   # the epilogue then appends a plain LEAVE
                    out.append(ast.Assign([ast_name(O, True)], ast_const(LEAVE)))
            return out + (tail() if tail is not None else [])

        if not self.generator:
            return [place(s, at) for s in record()]  # type: ignore[misc]
        # thrown in at a yield: the activation resumes here.  In a guard both arms end the
        # handler (no join left without a line: Python 3.13 cannot copy such an exit here)
        resume = [ast.Assign([ast_name(A, True)], self.stream()),
                  ast.Expr(ast_call(A, ast_const(enter_code(self.fid))))]
        test: ast.expr = ast.Compare(ast_name(A), [ast.Is()], [ast_const(None)])
        if self.marked:   # or left by a wrapped ``async for``'s step, which cannot unbind ``wt.a`` (``|``: no
            # branch, whose join 3.13's compiler rejects in a handler: "Invalid CFG, inconsistent stackdepth")
            test = ast.BinOp(test, ast.BitOr(), ast.Compare(ast_name(WRAP_LEFT), [ast.NotEq()], [ast.List([], ast.Load())]))
            resume.append(ast.Expr(ast.Call(ast.Attribute(ast_name(WRAP_LEFT), "clear", ast.Load()), [], [])))
        if tail is not None:
            return [place(ast.If(test, resume + record(), record()), at)]  # type: ignore[list-item]
        return [place(s, at) for s in [ast.If(test, resume, [])] + record()]  # type: ignore[misc]

    def again(self, tb: ast.expr, hold: bool = False) -> ast.expr:
        """Was the exception re-raised in this frame (a bool, computed without a branch)?

        A re-raise (bare ``raise``, the end of a ``finally``, a ``with`` exit, a guard's own
        re-raise) leaves the head of the exception's traceback as it was, while raising anew,
        even the same object, adds a new entry for the frame.  So an exception whose entry
        ``tb`` is the one the frame's last handler saw (``wt.s``, held) was re-raised, from
        the last re-raise site passed (``wt.r``).  ``hold``: also make ``tb`` the held entry.
        """
        seen = ast.NamedExpr(ast_name(SEEN, True), tb) if hold else tb
        same: ast.expr = ast.Compare(ast_name(SEEN), [ast.Is()], [seen])
        if self.bare_raises:   # (tested before ``hold`` replaces it)
            same = ast.BinOp(ast.Compare(ast_name(SEEN), [ast.Is()], [ast_const(RAISING_AGAIN)]), ast.BitOr(), same)
        if self.star_ends:   # just past an except* handler's end: from its star-end
            same = ast.BinOp(same, ast.BitOr(), ast_name(STAR_PENDING))
        passed = ast.Compare(ast_name(R), [ast.GtE()], [ast_const(0)])
        return ast.BinOp(same, ast.BitAnd(), passed)

    def raising_again(self, sid: int) -> list[ast.stmt]:
        """Functions, before a bare ``raise`` (statement ``sid``, after ``wt.r``): what it raises
        comes from it, even an exception a caller caught, whose traceback has no entry for this
        frame (design.md, waves 19 and 21)."""
        if self.marks_bare:
            return [artificial(ast.Assign([ast_name(BARE, True)], ast_const(sid)))]  # type: ignore[list-item]
        if not self.tracks_reraise:
            return []
        return [artificial(ast.Assign([ast_name(SEEN, True)], ast_const(RAISING_AGAIN)))]  # type: ignore[list-item]

    def guard(self, body: list[ast.stmt], final: list[ast.stmt], dst: int, own_final: bool,
              like: ast.AST | None = None, then: Callable[[], list[ast.stmt]] | None = None) -> ast.Try:
        """``try: body / except: record edge; re-raise / finally: final``.

        The re-raise leaves the exception exactly where it was raised: the compiled template
        turns the marked expression before ``raise`` into ``RERAISE`` with the instruction
        offset the handler received (``instrument.bytecode``), and, when ``own_final`` (the
        ``finally`` is probe code), the ``finally``'s own re-raise too.  Tracebacks,
        ``frame.f_lineno`` and a tracer's ``return`` event are those of the plain program.
        ``like``: the program's ``try`` statement the guard stands for (its line is traced).
        ``then``: what runs between the record and the re-raise (fresh nodes each call).
        """
        if self.in_class:
            name = None
            mark: ast.expr = ast_call(rt(RERAISE_MARK if own_final and final else RERAISE_MARK_GUARD))
        else:
            name = EXC_OWN if own_final and final else EXC_GUARD
            mark = ast_name(name)
        def reraise() -> list[ast.stmt]:
            first = then() if then is not None else []
            return first + [ast.Expr(mark if self.in_class else ast_name(name)), ast.Raise()]  # type: ignore[arg-type]

        if self.in_class:
            probe = self.xedge(dst, name) + reraise()
        else:
            probe = self.xedge(dst, name, tail=reraise)
        handler = artificial(ast.ExceptHandler(None, name, probe))
        node = ast.Try(body, [handler], [], final)  # type: ignore[list-item]
        return place(node, like)  # type: ignore[return-value]

    def activation_guard(self, body: list[ast.stmt]) -> ast.Try:
        """The guard of a whole code body: records the edge to EXIT and runs the epilogue.

        A function's body ends with a bare ``return`` of its own, so that where several paths
        fall off the end, the compiler gives each its own copy of the exit (and its line),
        as it does without instrumentation.  Module and class bodies cannot ``return``: their
        epilogue runs in ``else`` and in the handler (the compiler copies their small exit).
        """
        if not self.in_class:
            return self.guard(body + [artificial(ast.Return(None))], self.epilogue(), EXIT, own_final=True)  # type: ignore[list-item]
        mark = ast_call(rt(RERAISE_MARK_GUARD))
        recorded = self.xedge(EXIT, None) + self.epilogue()
        handler = artificial(ast.ExceptHandler(None, None, recorded + [ast.Expr(mark), ast.Raise()]))
        return artificial(ast.Try(body, [handler], self.epilogue(), []))  # type: ignore[list-item, return-value]
