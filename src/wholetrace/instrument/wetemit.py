"""Value probes of ``full`` mode: rewrites one function body so it records values and locations.

Applied in place before the control-flow rewriter (``instrument.rewrite``), on the plan of
``instrument.defuse``.  Three forms, none of which evaluates anything twice or calls code
the program would not call:

* *bind once*: an expression whose value is recorded becomes ``value(k, expr)``, which
  appends the record and returns the value (assignment values, ``return``/``yield``
  values, walrus values, the object of an attribute or subscript, a subscript key);
* *read back*: after a statement that binds plain names (tuple targets, augmented
  assignment, ``import``, ``def``/``class``), ``value(k, name)`` or
  ``values(k, name1, name2, ...)`` reads the names back (a local, cell or global load runs
  no code of the program); ``for``/``with ... as`` targets and ``except ... as`` names are
  read back at the start of the body;
* nothing for locals read or written (the static facts say which).

``value`` and ``values`` are run-time objects of the recording (``runtime.values``), constants
of the compiled code like every probe's (``instrument.emit.rt``): the program sees no name.
In a function they are ``value-in``/``values-in``, which also take the function's stream local
``wt.a`` (read after the value: a generator may resume elsewhere) and so skip the context
variable look-up while the stream is the latest probe's.
Inserted statements carry ``_wt_probe = True`` so the control-flow rewriter does not take
one for the first statement of a handler.
"""

from __future__ import annotations

import ast

from wholetrace.instrument.defuse import ValuePlan
from wholetrace.instrument.emit import A, ast_const, ast_name, locate, rt

VALUE = "value"     # run-time object: record one value (or key, or object), return it
VALUES = "values"   # run-time object: record several read-back names under consecutive slots
VALUE_IN = "value-in"    # the same in a function: ``value-in(k, expr, wt.a)``, its stream passed in
VALUES_IN = "values-in"  # the same in a function: ``values-in(k, wt.a, name1, ...)``
PROBE_MARK = "_wt_probe"


def _call(fn: str, *args: ast.expr) -> ast.Call:
    return ast.Call(rt(fn), list(args), [])


class _Wrap(ast.NodeTransformer):
    """Replace every planned expression ``e`` by ``value(k, e)`` (positions of ``e``)."""

    def __init__(self, plan: ValuePlan, base: int) -> None:
        self.plan = plan
        self.base = base
        self.local = plan.kind == "function"      # functions hold their stream's append in ``wt.a``

    def visit(self, node: ast.AST) -> ast.AST:
        slot = self.plan.wrap.get(id(node))
        new = self.generic_visit(node)
        if slot is None:
            return new
        k = ast_const(self.base + slot)
        call = _call(VALUE_IN, k, new, ast_name(A)) if self.local else _call(VALUE, k, new)  # type: ignore[arg-type]
        return locate(call, node)


def _readback(base: int, slots: list[tuple[int, str]], like: ast.AST, local: bool) -> ast.stmt:
    names = [ast_name(n) for _k, n in slots]
    first = ast_const(base + slots[0][0])
    if local:
        call = _call(VALUE_IN, first, names[0], ast_name(A)) if len(names) == 1 else \
            _call(VALUES_IN, first, ast_name(A), *names)
    else:
        call = _call(VALUE, first, *names) if len(names) == 1 else _call(VALUES, first, *names)
    stmt = ast.Expr(call)
    setattr(stmt, PROBE_MARK, True)
    return locate(stmt, like)  # type: ignore[return-value]


def instrument_values(fn: ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
                      plan: ValuePlan, base: int) -> None:
    """Rewrite the body of ``fn`` (not its nested functions) in place under ``plan``;
    slot ``j`` is recorded as ``base + j``."""
    wrap = _Wrap(plan, base)
    fn.body = _body(fn.body, plan, base, wrap)


def _body(stmts: list[ast.stmt], plan: ValuePlan, base: int, wrap: _Wrap) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for s in stmts:
        _stmt(s, plan, base, wrap)
        out.append(s)
        after = plan.readback.get(id(s))
        if after:
            out.append(_readback(base, after, s, wrap.local))
    return out


def _start(body: list[ast.stmt], slots: list[tuple[int, str]] | None, base: int, like: ast.AST,
           local: bool) -> list[ast.stmt]:
    return ([_readback(base, slots, body[0] if body else like, local)] if slots else []) + body


def _stmt(s: ast.stmt, plan: ValuePlan, base: int, wrap: _Wrap) -> None:  # noqa: C901 - one arm per construct
    """Wrap the planned expressions of ``s``'s own parts and recurse into its bodies."""
    if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        s.decorator_list = [wrap.visit(d) for d in s.decorator_list]  # type: ignore[misc]
        if isinstance(s, ast.ClassDef):
            s.bases = [wrap.visit(b) for b in s.bases]  # type: ignore[misc]
            for k in s.keywords:
                k.value = wrap.visit(k.value)  # type: ignore[assignment]
        else:
            a = s.args
            a.defaults = [wrap.visit(d) for d in a.defaults]  # type: ignore[misc]
            a.kw_defaults = [None if d is None else wrap.visit(d) for d in a.kw_defaults]  # type: ignore[misc]
        return
    if isinstance(s, (ast.If, ast.While)):
        s.test = wrap.visit(s.test)  # type: ignore[assignment]
        s.body = _body(s.body, plan, base, wrap)
        s.orelse = _body(s.orelse, plan, base, wrap)
        return
    if isinstance(s, (ast.For, ast.AsyncFor)):
        s.iter = wrap.visit(s.iter)  # type: ignore[assignment]
        s.target = wrap.visit(s.target)  # type: ignore[assignment]
        s.body = _start(_body(s.body, plan, base, wrap), plan.at_start.get(id(s)), base, s, wrap.local)
        s.orelse = _body(s.orelse, plan, base, wrap)
        return
    if isinstance(s, (ast.With, ast.AsyncWith)):
        starts: list[tuple[int, str]] = []
        for item in s.items:
            item.context_expr = wrap.visit(item.context_expr)  # type: ignore[assignment]
            if item.optional_vars is not None:
                item.optional_vars = wrap.visit(item.optional_vars)  # type: ignore[assignment]
            starts += plan.at_start.get(id(item), [])
        s.body = _start(_body(s.body, plan, base, wrap), starts, base, s, wrap.local)
        return
    if isinstance(s, (ast.Try, ast.TryStar)):
        s.body = _body(s.body, plan, base, wrap)
        for h in s.handlers:
            if h.type is not None:
                h.type = wrap.visit(h.type)  # type: ignore[assignment]
            h.body = _start(_body(h.body, plan, base, wrap), plan.at_start.get(id(h)), base, h, wrap.local)
        s.orelse = _body(s.orelse, plan, base, wrap)
        s.finalbody = _body(s.finalbody, plan, base, wrap)
        return
    if isinstance(s, ast.Match):
        s.subject = wrap.visit(s.subject)  # type: ignore[assignment]
        for case in s.cases:
            if case.guard is not None:
                case.guard = wrap.visit(case.guard)  # type: ignore[assignment]
            case.body = _body(case.body, plan, base, wrap)
        return
    for name, value in ast.iter_fields(s):
        if isinstance(value, ast.expr):
            setattr(s, name, wrap.visit(value))
        elif isinstance(value, list):
            setattr(s, name, [wrap.visit(v) if isinstance(v, ast.expr) else v for v in value])
