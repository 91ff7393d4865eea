"""Probe code for the traceback entries held to recognise re-raises (``wt.r``, ``wt.s``, ``wt.h<k>``; a mixin of ``probecode.Emitter``)."""

from __future__ import annotations

from wholetrace.instrument.emit import FORGET, FRAME, NO_SLOT, NO_TB, R, SEEN, SLOT, STAR_HELD, STAR_PENDING
from wholetrace.instrument.misspath import LazyModule
from wholetrace.instrument.probeast import artificial, ast_call, ast_const, ast_name, place, rt

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    import ast
else:   # ast only on a cache miss
    ast = LazyModule("ast", globals(), "ast")


def _region(name: str) -> int:
    """The number ``k`` of a region's ``wt.h<k>``."""
    return int(name[len(STAR_HELD):])


# A module or class body keeps its re-raise state in a slot of the runtime (``emit.SLOT``: -2 the
# last re-raise site passed, -1 the held entry, k region k's); the body reaches it with C calls and
# stores only, so a program's tracer sees no frame of ours (review19d MED-1).
def _key() -> ast.expr:
    return ast_call(rt(FRAME))


def _slot() -> ast.expr:
    """The body's slot, or, before its first handler, ``runtime.probes.NoSlot``."""
    return ast_call(rt(SLOT), _key(), rt(NO_SLOT))


def _item(k: int, store: bool = False) -> ast.Subscript:
    return ast.Subscript(_slot(), ast_const(k), ast.Store() if store else ast.Load())


def _get(k: int) -> ast.Call:
    return ast_call(ast.Attribute(_slot(), "get", ast.Load()), ast_const(k))


def _body_site(sid: int) -> ast.stmt:
    """``slot[-2] = sid``, or (-1) forget the slot: ``forget(key, None)``."""
    if sid == -1:
        return ast.Expr(ast_call(rt(FORGET), _key(), ast_const(None)))
    return ast.Assign([_item(-2, True)], ast_const(sid))


def _body_drops(held: bool, regions: list[int]) -> list[ast.stmt]:
    """``slot.pop(-1, None)`` (``held``), ``slot.pop(k, None)``."""
    return [ast.Expr(ast_call(ast.Attribute(_slot(), "pop", ast.Load()), ast_const(k), ast_const(None)))
            for k in ([-1] if held else []) + regions]


class HeldCode:
    """Re-raise sites passed and held traceback entries: a function's locals, a module or class
    body's slot in the runtime (``emit.SLOT``), docs/design.md "Re-raise
    after a nested handler" (waves 17-19)."""

    in_class: bool
    star_held: list[str]
    star_ends: bool

    if TYPE_CHECKING:   # pragma: no cover - the emitter's own
        @property
        def knows_reraise(self) -> bool: ...
        @property
        def tracks_reraise(self) -> bool: ...

    def set_reraise(self, sid: int, like: ast.AST | None) -> list[ast.stmt]:
        """Count and witness modes: remember a re-raise site (a local; module/class bodies ask
        the runtime, where -1 forgets the site and the held traceback)."""
        if not self.knows_reraise:
            return []
        if self.in_class:
            return [place(_body_site(sid), like)]  # type: ignore[list-item]
        return [place(ast.Assign([ast_name(R, True)], ast_const(sid)), like)]  # type: ignore[list-item]

    def forget_reraise(self, like: ast.AST | None) -> list[ast.stmt]:
        """At entry and exit: no re-raise site passed, no traceback held (it refers to the
        frame and to the frames it unwound: kept past the exit it would keep them alive)."""
        if self.in_class:   # the runtime forgets the body's slot (its held entries too)
            return self.set_reraise(-1, like)
        return self.set_reraise(-1, like) + self.drop_held(like) + [place(s, like) for s in self.star_taken()]  # type: ignore[misc]

    def drop_held(self, like: ast.AST | None = None) -> list[ast.stmt]:
        """At the end of an ``except`` body (and at exit): the exception it handled can no
        longer be re-raised, so its traceback is no longer held."""
        return self.drop_regions((), like, held=True)

    def save_held(self, sid: int) -> list[ast.stmt]:
        """At the entry of an ``except*`` handler (after its probe): keep the traceback entry
        it holds for its end (``sid``: the star-end), which a handler nested in its body
        replaces and drops."""
        name = f"{STAR_HELD}{sid}"
        if self.knows_reraise and name not in self.star_held:
            self.star_held.append(name)
        return self.save_region(name)

    def hold(self, sid: int) -> list[ast.stmt]:
        """At the end of an ``except*`` handler: hold its traceback entry again (what is left
        of the group is re-raised with it at the star-end ``sid``)."""
        return self.hold_region(f"{STAR_HELD}{sid}", None)

    def star_pending(self) -> list[ast.stmt]:
        """Functions, at the end of an ``except*`` handler (its body's or an exception's that
        escaped it): ``wt.z = True``, the next probe's edge comes from the star-end (the next
        handler's entry, or a handler or guard taking what the star-end re-raises, whatever
        traceback it has: a group the ``except*`` made has none, and its members' entries
        differ from handler to handler).  ``again`` reads it; every probe, and the fall-through
        past the ``except*``, forgets it (:meth:`star_taken`)."""
        if not self.tracks_reraise:
            return []
        self.star_ends = True
        return [artificial(ast.Assign([ast_name(STAR_PENDING, True)], ast_const(True)))]  # type: ignore[list-item]

    def star_taken(self) -> list[ast.stmt]:
        """``wt.z = False`` (after a probe, past an ``except*``, at entry and exit)."""
        if not self.star_ends:
            return []
        return [artificial(ast.Assign([ast_name(STAR_PENDING, True)], ast_const(False)))]  # type: ignore[list-item]

    # --- regions (docs/design.md, "Re-raise after a nested handler", waves 18 and 19): a
    # function's ``wt.h<k>`` locals; a module or class body's entries in the runtime's slot
    def save_region(self, name: str) -> list[ast.stmt]:
        """At a region's start: ``wt.h<k> = wt.s``."""
        if not self.knows_reraise:
            return []
        if self.in_class:
            return [artificial(ast.Assign([_item(_region(name), True)], _get(-1)))]  # type: ignore[list-item]
        return [artificial(ast.Assign([ast_name(name, True)], ast_name(SEEN)))]  # type: ignore[list-item]

    def hold_region(self, name: str, like: ast.AST | None) -> list[ast.stmt]:
        """At a re-raise site of region ``name``: ``wt.s = wt.h<k>``."""
        if not self.knows_reraise:
            return []
        if self.in_class:
            return [place(ast.Assign([_item(-1, True)], _get(_region(name))), like)]  # type: ignore[list-item]
        node = ast.Assign([ast_name(SEEN, True)], ast_name(name))
        return [place(node, like)]  # type: ignore[list-item]

    def drop_regions(self, names: list[str] | tuple[str, ...], like: ast.AST | None = None,
                     held: bool = False) -> list[ast.stmt]:
        """``wt.s = NO_TB`` (``held``) and ``wt.h<k> = NO_TB`` for the regions ``names``."""
        if not self.knows_reraise or not (names or held):
            return []
        if self.in_class:
            return [place(s, like) for s in _body_drops(held, [_region(n) for n in names])]  # type: ignore[misc]
        targets = ([SEEN] if held else []) + list(names)
        return [place(ast.Assign([ast_name(n, True)], rt(NO_TB)), like) for n in targets]  # type: ignore[misc]

    def _forget_all(self) -> list[ast.stmt]:
        """The epilogue's ``forget_reraise``, and the entries ``except*`` handlers kept (a
        module or class body's go with its slot)."""
        if self.in_class:
            return self.forget_reraise(None)
        return self.forget_reraise(None) + [artificial(ast.Assign([ast_name(n, True)], rt(NO_TB)))  # type: ignore[misc]
                                            for n in self.star_held]
