"""Cleanup regions' probes: ``with`` exits, ``try`` handlers and ``finally`` ends (the methods of the function rewriter)."""

from __future__ import annotations

import ast
import sys

from wholetrace.instrument import awaits
from wholetrace.instrument.cfg import CFG, Stmt
from wholetrace.instrument.emit import (A, EXC_CAUGHT, STAR_HELD, VARS, WITH_VALUE, Emitter, artificial, ast_const,
                                        ast_name, locate, rt)

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from collections.abc import Iterator

    from wholetrace.instrument.modes import ProbePlan
    from wholetrace.instrument.rewrite import _LoopInfo


class CleanupRewriter:
    """``with``/``try`` statements of ``instrument.rewrite._FunctionRewriter`` (a mixin: the
    rewriter's CFG, plan, emitter and block helpers are its own)."""

    cfg: CFG
    plan: ProbePlan
    em: Emitter
    loops: list[_LoopInfo]
    # Re-raise after a nested handler (docs/design.md, wave 18): the regions (finally bodies,
    # except bodies with a bare raise, except* handlers) whose re-raise sites must find the
    # traceback entry held at their start, which a handler or guard nested in them replaces.
    # ``plan_held`` sets these four before the body is rewritten (its only initialisation).
    held: dict[int, str]                 # id(Try or handler node) -> its ``wt.h<k>`` local
    held_names: list[str]                # every such local of the function (star ones too)
    running: list[tuple[str | None, int, int]]   # the regions around the statement: (local, loops and
    unwinds: int                         # cleanups open at its start); with bodies and try bodies
                                         # (their handlers) whose finally has a bare raise, open
    catching: int                        # open with bodies, bodies of a try with handlers or a
                                         # finally that breaks/continues
    catching_at: list[int]               # per running region: ``catching`` at its start

    if TYPE_CHECKING:   # pragma: no cover - the rewriter's own helpers
        def starts_block(self, st: Stmt | None) -> bool: ...
        def block_values(self, b: int) -> list[int]: ...
        def site_values(self, kind: str, sid: int, arm: str = "") -> list[int]: ...
        def probe_for(self, st: Stmt | None, like: ast.AST) -> list[ast.stmt]: ...
        def first_block(self, stmts: list[ast.stmt]) -> int: ...
        def body(self, stmts: list[ast.stmt]) -> list[ast.stmt]: ...
        def expr(self, e: ast.expr) -> ast.expr: ...

    # --- held traceback entries
    def plan_held(self, stmts: list[ast.stmt]) -> None:
        """Before rewriting: name the ``wt.h<k>`` local of each region that needs one (a
        ``finally`` body or an ``except`` body holding a bare ``raise``, when a ``try`` or
        ``with`` nested in it can replace ``wt.s``; every ``except*`` handler, as before)."""
        self.held, self.held_names, self.running, self.unwinds = {}, [], [], 0
        self.catching, self.catching_at = 0, []
        if not self.em.knows_reraise:   # (module and class bodies: regions in the runtime's slot)
            return
        for n in _same_scope(stmts):
            if not isinstance(n, (ast.Try, ast.TryStar)):
                continue
            star_end = self.cfg.stmt_at(n, "star-end") if isinstance(n, ast.TryStar) else None
            for h in n.handlers:
                if star_end is not None and star_end.block >= 0:
                    self._name(f"{STAR_HELD}{star_end.id}", h if _replaces_held(h.body) else None)
                elif star_end is None and _replaces_held(h.body) and _bare_raises(h.body):
                    self._name(f"{STAR_HELD}{len(self.cfg.stmts) + len(self.held_names)}", h)
            end = self.cfg.stmt_at(n, "finally-end") if n.finalbody else None
            if end is not None and _replaces_held(n.finalbody):
                self._name(f"{STAR_HELD}{end.id}", n)
        for name in self.held_names:
            if name not in self.em.star_held:
                self.em.star_held.append(name)   # the epilogue drops them (a body's: its slot)

    def _name(self, name: str, node: ast.AST | None) -> None:
        if node is not None:
            self.held[id(node)] = name
        if name not in self.held_names:
            self.held_names.append(name)

    def release(self, keep: int, like: ast.AST | None = None) -> list[ast.stmt]:
        """``wt.h<k> = NO_TB`` for every region's local but those of the ``keep`` outermost
        running regions: where plain Python drops the exception a region holds (its end, a
        ``break``/``continue``/``return`` out of it, the end of a handler or ``with`` that
        took what escaped it), so no traceback outlives the region (docs/design.md, wave 18)."""
        return self.em.drop_regions(self._released(keep), like)

    def _released(self, keep: int) -> list[str]:
        """The regions' locals but those of the ``keep`` outermost running regions."""
        live = {n for n, _loops, _u in self.running[:keep] if n is not None}
        return [n for n in self.held_names if n not in live]

    def exit_release(self, s: ast.stmt) -> list[ast.stmt]:
        """Before a ``break``/``continue`` (the regions opened inside the innermost loop) or a
        ``return`` (all): what they leave is dropped."""
        if not self.running:
            return []
        if isinstance(s, ast.Return):
            # plain Python drops the innermost handler's or finally's exception before the
            # cleanups around it run (an enclosing finally's body, a with's exit), unless a
            # cleanup opened inside it that may re-raise it runs first (a finally holding a bare
            # raise, a with's exit): then the epilogue drops wt.s
            drop = self.unwinds == self.running[-1][2]
            return self.em.drop_regions(self.held_names, held=drop)
        keep = sum(1 for _n, loops, _u in self.running if loops < len(self.loops))
        if keep == len(self.running):
            return []
        # the exception of the finally or handler left is dropped: wt.s no longer holds it
        # (a region around the loop that re-raises later holds its own entry again)
        return self.em.drop_regions(self._released(keep), held=True)

    def _hold_again(self, like: ast.AST | None = None) -> list[ast.stmt]:
        """At a re-raise site of the innermost region: ``wt.s = wt.h<k>``."""
        name = self.running[-1][0] if self.running else None
        if name is None:
            return []
        return self.em.hold_region(name, like)

    def bare_raise(self) -> list[ast.stmt]:
        """Before a bare ``raise``: the entry of the region around it (then its local is
        dropped: ``wt.s`` holds the entry, as for any re-raise), unless a ``try`` with handlers
        or a ``with`` opened inside the region holds the ``raise``: what it raises may be taken
        there and the region go on to its own re-raise (an ``except*`` handler's end), which
        needs the entry again (review19a MED-2); the region's end or the epilogue drops it."""
        hold = self._hold_again()
        if not hold or self.catching > self.catching_at[-1]:
            return hold
        return hold + self.em.drop_regions([self.running[-1][0]])  # type: ignore[list-item]

    def _save(self, name: str | None) -> list[ast.stmt]:
        return [] if name is None else self.em.save_region(name)

    # --- with
    def _with(self, s: ast.With | ast.AsyncWith) -> list[ast.stmt]:
        items = s.items
        first = items[0]
        enter = self.cfg.stmt_at(first, "with-enter")
        exit_ = self.cfg.stmt_at(first, "with-exit")
        pre = self.probe_for(enter, s)
        first.context_expr = self.expr(first.context_expr)
        store = self._target_store(first)
        if len(items) > 1:
            # at the statement, as plain Python places every item's BEFORE_WITH and exit code
            # (3.11, 3.12): the site tables tell the items apart by nesting (with_exit_spans)
            inner_node = ast.copy_location(type(s)(items[1:], s.body, getattr(s, "type_comment", None)), s)
            body = self._with(inner_node)  # type: ignore[arg-type]
            inner_exit = self.cfg.stmt_at(items[1], "with-exit")
            if inner_exit is not None:
                after = self.em.stmts(self.site_values("after", inner_exit.id), None)
                body += callless(after)
            # plain Python runs the items' exit code with no other line between; the code after
            # the inner item's (its probes, the guard's jump to its finally) takes the exit's line
            at = next(i for i, st in enumerate(body) if st is inner_node or (
                isinstance(st, ast.Try) and st.body and st.body[0] is inner_node))
            body.append(ast.Pass())
            _at_exit_line(body[at + 1:], first.context_expr if sys.version_info >= (3, 13) else s)
        else:
            self.unwinds += 1
            self.catching += 1
            body = self.body(s.body)
            self.catching -= 1
            self.unwinds -= 1
        assert exit_ is not None
        final = self.em.set_reraise(exit_.id, None)
        if self.starts_block(exit_):
            final += self.em.stmts(self.block_values(exit_.block), None)
        s.items = [first]
        suspends = isinstance(s, ast.AsyncWith) and self.gen and not self.em.counts  # type: ignore[attr-defined]
        if suspends:   # __aenter__/__aexit__ awaited: generator suspensions (instrument.awaits)
            first.context_expr = awaits.around(self.em, first.context_expr, leaves=False)
            # the resume (ENTER by hand) first: a raising target store is recorded after it
            body = awaits.resume(self.em, like=awaits.first_located(store + body)) + store + body
            store = []
            final += awaits.leave_stmts(self.em)
        held_inside = self.held_names and any(id(n) in self.held for n in _same_scope(s.body))
        s.body = [self.em.guard(store + body, final, exit_.block, own_final=True)]
        # an exit that swallows drops the exception (and one that escaped a region inside, the
        # region's): wt.s no longer holds it; a region around that re-raises holds its own again
        drop = self.em.drop_regions(self._released(len(self.running)) if held_inside else [], held=True)
        if suspends:   # every way out (fall, return, break, an exception) follows __aexit__
            after = awaits.resume_if_left(self.em, awaits.exits_after(self.cfg, exit_.block))
            return pre + [artificial(ast.Try([s], [], [], after))] + drop  # type: ignore[list-item]
        return pre + [s] + drop

    def _target_store(self, item: ast.withitem) -> list[ast.stmt]:
        """A target that can raise (``as (a, b)``, ``as o.x``, ``as d[k]``) is stored inside the
        guard, which records the edge to the exit block before ``__exit__`` runs: ``with e as
        wt.w: try: wt.w, TARGET = None, wt.w``, placed at the target (the value leaves the
        local before the store, so it lives as long as in plain Python). A module body binds no
        local: ``vars().pop("wt.w")`` (a real dict), out of the namespace before the store. A
        class body keeps the plain store: its namespace may be any ``__prepare__`` mapping (an
        ``enum.Enum`` body makes ``wt.w`` a member; review21b), so its raising store stays unread."""
        target = item.optional_vars
        if target is None or isinstance(target, ast.Name) or self.cfg.kind == "class":
            return []
        target = self.expr(target)
        item.optional_vars = locate(ast_name(WITH_VALUE, True), target)  # type: ignore[assignment]
        if self.em.in_class:
            value = ast.Call(ast.Attribute(ast.Call(rt(VARS), [], []), "pop", ast.Load()), [ast_const(WITH_VALUE)], [])
            return [locate(ast.Assign([target], value), target)]  # type: ignore[list-item]
        # ``wt.w, TARGET = None, wt.w``: the pair compiles to a SWAP (no tuple), wt.w stored first
        pair = ast.Tuple([ast_name(WITH_VALUE, True), target], ast.Store())
        return [locate(ast.Assign([pair], ast.Tuple([ast_const(None), ast_name(WITH_VALUE)], ast.Load())), target)]  # type: ignore[list-item]

    # --- try
    def _try(self, s: ast.Try | ast.TryStar) -> list[ast.stmt]:
        if isinstance(s, ast.TryStar):   # the guards built from here on (those around it) read groups' entries
            self.em.star = True
        unwind = _bare_raises(s.finalbody)   # a return in what runs before the finally runs it
        self.unwinds += unwind
        # a finally that breaks or continues swallows what its body raises, as a handler does
        catches = bool(s.handlers) or _leaves_loop(s.finalbody)
        self.catching += catches
        s.body = self.body(s.body)
        self.catching -= catches
        s.orelse = self.body(s.orelse)
        star_end = self.cfg.stmt_at(s, "star-end") if isinstance(s, ast.TryStar) else None
        # what escapes an except* handler's body is taken at the star-end (the next handler's
        # test): a guard records that edge (module and class bodies: not done)
        wraps = star_end is not None and star_end.block >= 0 and not self.em.in_class
        self.em.star_ends |= wraps and self.em.tracks_reraise   # (before the probes that read it are made)
        for h in s.handlers:
            if h.type is not None:
                h.type = self.expr(h.type)
            if h.name is None and not self.em.in_class:
                h.name = EXC_CAUGHT     # the handler's probe reads the exception without a call
            entry = self.em.xedge(self.first_block(h.body), h.name, h, star=isinstance(s, ast.TryStar))
            name = self.held.get(id(h))
            if star_end is not None and star_end.block >= 0:
                entry += self.em.save_held(star_end.id)
            else:
                entry += self._save(name)
            self.running.append((name, len(self.loops), self.unwinds))
            self.catching_at.append(self.catching)
            self.catching += wraps   # (a bare raise in it goes on to the handler's end: keep its entry)
            body = self.body(h.body)
            self.catching -= wraps
            self.catching_at.pop()
            self.running.pop()
            if wraps:
                body = [self._star_escape(body, star_end)]   # type: ignore[arg-type]
            h.body = entry + body + self._handler_end(star_end)
        self.unwinds -= unwind
        # past an except* whose handlers took the whole group: plain Python has dropped it, but
        # each handler's end held its entry again in wt.s for a re-raise that did not come
        holds = star_end is not None and star_end.block >= 0     # (as _handler_end)
        dropped = self.em.drop_regions([], held=True) + self.em.star_taken() if holds else []
        if not s.finalbody:
            return [s] + dropped
        end = self.cfg.stmt_at(s, "finally-end")
        entry = self.first_block(s.finalbody)
        name = self.held.get(id(s))
        self.running.append((name, len(self.loops), self.unwinds))
        self.catching_at.append(self.catching)
        final = self._save(name) + self.body(s.finalbody)
        # at the last statement's position: the finally's own re-raise takes the position of
        # the code before it, and a tracer sees it (return event after an exception)
        last: ast.AST | None = s.finalbody[-1]
        if isinstance(last, _COMPOUND):   # its line is not the one the finally ends on: no line
            last = None
        if end is not None:
            # after wt.r's store, in its position: a location-less store at a finally's end
            # gives a 3.11 tracer a line event (review17c)
            final += self.em.set_reraise(end.id, last) + self._hold_again(last)
        self.catching_at.pop()
        self.running.pop()
        final += self.release(len(self.running), last) if name is not None else []
        if self.starts_block(end):
            assert end is not None
            probes = self.em.stmts(self.block_values(end.block), last)
            final += callless(probes) if last is None else probes
        inner: list[ast.stmt] = s.body
        if s.handlers or s.orelse:
            inner_try = type(s)(s.body, s.handlers, s.orelse, [])
            ast.copy_location(inner_try, s)
            inner = [inner_try] + dropped
        return [self.em.guard(inner, final, entry, own_final=False, like=None if s.handlers or s.orelse else s)]

    def _star_escape(self, body: list[ast.stmt], star_end: Stmt) -> ast.Try:
        """An ``except*`` handler's body in a guard: an exception that escapes it is taken by
        the ``except*`` (kept for the star-end's re-raise) and the next handler's test runs,
        as at the handler's end.  So the guard records the edge into the star-end's block and
        then does what the end does."""
        def then() -> list[ast.stmt]:
            return self._handler_end(star_end)

        return self.em.guard(body, [], star_end.block, own_final=False, then=then)

    def _handler_end(self, star_end: Stmt | None) -> list[ast.stmt]:
        """What ends an except handler's body: its traceback is no longer held.  An ``except*``
        handler ends at the ``star-end`` statement instead (the next handler's test, or the
        re-raise of what no handler took): a re-raise site, so the traceback stays held (again
        the handler's, which a handler nested in it may have replaced) and its block's probe runs."""
        if star_end is None or star_end.block < 0:
            return self.em.drop_regions(self._released(len(self.running)), held=True)
        release = self.release(len(self.running))
        out = self.em.set_reraise(star_end.id, None) + self.em.hold(star_end.id) + release + self.em.star_pending()
        if self.starts_block(star_end):
            probes = self.em.stmts(self.block_values(star_end.block), None)
            out += callless(probes)   # (as after a with)
        return out


#: CPython 3.13 miscompiles location-less arms reached by several jumps (``_FunctionRewriter.arm``).
NO_LOCATION_ARMS_MISCOMPILE = sys.version_info[:2] == (3, 13)

_BIG = 0x7FFFFFFFFFFFFFFF


def _at_exit_line(nodes: list[ast.AST], like: ast.AST) -> None:
    """Give the artificial nodes of ``nodes`` (probe code with no line) the start of ``like``,
    where the item's exit code that follows them is placed: a line event after artificial
    code compares with no line, and would repeat the exit's line."""
    line, col = like.lineno, like.col_offset   # type: ignore[attr-defined]
    stack = list(nodes)
    while stack:
        n = stack.pop()
        if "lineno" not in n._attributes or getattr(n, "lineno", -1) == -1:
            if "lineno" in n._attributes:
                n.lineno, n.col_offset, n.end_lineno, n.end_col_offset = line, col, line, col  # type: ignore[attr-defined]
            stack.extend(ast.iter_child_nodes(n))


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


def _same_scope(stmts: list[ast.stmt]) -> Iterator[ast.AST]:
    """The nodes of ``stmts`` that run in their function's frame (not nested scopes' bodies)."""
    todo: list[ast.AST] = list(stmts)
    while todo:
        n = todo.pop()
        yield n
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(n))


def _replaces_held(stmts: list[ast.stmt]) -> bool:
    """Can a handler or guard in ``stmts`` replace the traceback entry the function holds
    (``wt.s``: each ``except`` handler and each ``try``/``with`` guard holds its own)?"""
    return any(isinstance(n, (ast.Try, ast.TryStar, ast.With, ast.AsyncWith)) for n in _same_scope(stmts))


def _leaves_loop(stmts: list[ast.stmt]) -> bool:
    """Does ``stmts`` hold a ``break`` or ``continue`` (in its frame; one of a loop nested in
    it counts too: an over-estimate only keeps a region's entry until its end)?"""
    return any(isinstance(n, (ast.Break, ast.Continue)) for n in _same_scope(stmts))


def _bare_raises(stmts: list[ast.stmt]) -> bool:
    """Does ``stmts`` hold a bare ``raise`` (in its frame)?"""
    return any(isinstance(n, ast.Raise) and n.exc is None for n in _same_scope(stmts))


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




def with_exit_spans(cfg: CFG) -> list[tuple[int, int, int, int, int]]:
    """Where the compiler places each ``with`` item's exit code (the ``__exit__`` call, the
    exceptional exit's ``WITH_EXCEPT_START``, the ``__aexit__`` await): ``(line, col, end
    line, end col, -1 - exit statement id)``, each followed by the same place with ``-1 -``
    the item's with-enter statement id, items in order.  3.11 and 3.12 place it, and every
    item's ``BEFORE_WITH``, at the ``with`` statement (``_with`` keeps each item after the
    first there), so the items of one statement share the place and
    ``instrument.bytecode.exit_statement`` tells them apart by nesting; 3.13 places it at
    the item's expression.  That is also where ``BEFORE_WITH`` (and in 3.13 the expression's
    own code) stands, so ``instrument.bytecode.with_exit_at`` tells them apart; without it an
    exception out of ``__exit__`` was the ``with-enter`` statement's, which count reads as
    an edge out of the ``with``'s first block (review19a MED-1)."""
    found = []
    for (anchor, kind), sid in cfg.anchors.items():
        item = cfg.with_items.get(anchor) if kind == "with-exit" else None
        enter = cfg.anchors.get((anchor, "with-enter"))
        node = cfg.stmts[sid].node if item is not None else None
        if item is not None and enter is not None and isinstance(node, (ast.With, ast.AsyncWith)):
            expr = item[0].context_expr
            at = expr if sys.version_info >= (3, 13) else node
            where = (at.lineno, at.col_offset, at.end_lineno or at.lineno, at.end_col_offset or 0)
            found.append((where, item[1], sid, enter))
    out = []
    for where, _i, sid, enter in sorted(found):
        out += [(*where, -1 - sid), (*where, -1 - enter)]
    return out
