"""How handler probes read the handled exception's traceback without running the program's code (wave 22)."""

from __future__ import annotations

from wholetrace.instrument.emit import (BUILTIN_EXCEPTIONS, C_CALLS_COUNT, EXC_INFO, GROUP, ISSUBCLASS, LASTI, MEMBERS,
                                        STAR_HOLDER, TRACEBACK, TYPE)
from wholetrace.instrument.misspath import LazyModule
from wholetrace.instrument.probeast import ast_call, ast_const, ast_name, rt

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    import ast
else:   # ast only on a cache miss
    ast = LazyModule("ast", globals(), "ast")


def traceback_of(exc: ast.expr, callless: bool = False) -> ast.expr:
    """The traceback of ``exc``, the exception being handled where the probe runs (a handler's
    or a guard's first code), as ``sys.exc_info()[2]``: read from the exception's own field, so
    no ``__getattribute__`` or ``__traceback__`` of the program's exception class runs.
    ``callless`` (count modes on 3.11, whose handler probes must work in the deepest frame,
    where any C call but ``type()`` fails): ``exc.__traceback__`` for an exception of a built-in
    class (:func:`_read_if_builtin`), which has neither, else the call."""
    handled = ast.Subscript(ast_call(rt(EXC_INFO)), ast_const(2), ast.Load())
    return _read_if_builtin(exc, "__traceback__", handled) if callless else handled


def _read_if_builtin(obj: ast.expr, attr: str, otherwise: ast.expr) -> ast.expr:
    """``obj.attr`` if ``obj``'s class is a built-in one (no ``__getattribute__`` or ``attr`` of
    the program's), else ``otherwise``: ``type(type(obj)) is type and type(obj) in BUILTINS``
    (``runtime.probes``: the static exception classes, whose attributes no program can set),
    with ``type()`` calls only and a frozenset lookup that hashes a class of metaclass ``type``
    (no ``__hash__`` or ``__eq__`` of the program's; wave 22 read ``type(obj).__flags__``, a
    generic attribute lookup on the class that cost ~2.5 times the set's).  ``wt.l``, a
    temporary, holds ``type``: an ``is`` with a constant would warn when compiled."""
    meta = ast_call(rt(TYPE), ast_call(rt(TYPE), obj))
    plain_meta = ast.Compare(meta, [ast.Is()], [ast.NamedExpr(ast_name(LASTI, True), rt(TYPE))])
    known = ast.Compare(ast_call(rt(TYPE), obj), [ast.In()], [rt(BUILTIN_EXCEPTIONS)])
    builtin = ast.BoolOp(ast.And(), [plain_meta, known])
    return ast.IfExp(builtin, ast.Attribute(obj, attr, ast.Load()), otherwise)


def star_tb(exc: str, handler: bool = True, callless: bool = False) -> ast.expr:
    """The traceback entry an exception ``exc`` stands for where an ``except*`` may have made it,
    without a branch: the exception's own, or, for a group ``except*`` wrapped a naked exception
    in (it has no traceback, and keeps none when a bare ``raise`` in the handler re-raises it),
    the wrapped exception's, whose head is this frame's entry.  ``handler``: in an ``except*``
    handler (``exc`` is a group, the one handled), ``(tb(exc), tb(members(exc)[0]))[tb(exc) is None]``;
    else (in a guard around one) ``exc`` may be any exception, so the group read is
    ``members((HOLDER, exc)[issubclass(type(exc), BaseExceptionGroup)])`` (builtins' calls: no
    frame), HOLDER's one exception having no traceback.  ``tb`` of ``exc``: :func:`traceback_of`;
    ``members`` and the member's ``tb``: the descriptors of ``BaseExceptionGroup.exceptions`` and
    ``BaseException.__traceback__`` (no property or ``__getattribute__`` of the program runs);
    on 3.11 (calling a descriptor's ``__get__`` nests two recursion checks, more than the deepest
    frame has in any mode), attribute reads where the class is a built-in one
    (:func:`_read_if_builtin`), the calls otherwise.  ``callless``: count modes on 3.11."""
    own = traceback_of(ast_name(exc), callless)
    if handler:
        holder: ast.expr = ast_name(exc)
    else:
        is_group = ast_call(rt(ISSUBCLASS), ast_call(rt(TYPE), ast_name(exc)), rt(GROUP))
        holder = ast.Subscript(ast.Tuple([rt(STAR_HOLDER), ast_name(exc)], ast.Load()), is_group, ast.Load())
    members = ast_call(rt(MEMBERS), holder)
    if C_CALLS_COUNT:   # (a descriptor's __get__ is two levels: more than a trace mode's headroom)
        members = _read_if_builtin(holder, "exceptions", members)
    first = ast.Subscript(members, ast_const(0), ast.Load())
    wrapped = ast_call(rt(TRACEBACK), first)
    if C_CALLS_COUNT:
        wrapped = _read_if_builtin(first, "__traceback__", wrapped)
    missing = ast.Compare(traceback_of(ast_name(exc), callless), [ast.Is()], [ast_const(None)])
    return ast.Subscript(ast.Tuple([own, wrapped], ast.Load()), missing, ast.Load())
