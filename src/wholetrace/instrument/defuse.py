"""Static def/use facts of every statement and the value probes ``full`` mode places (WET stage 1).

For each statement of one function (``instrument.cfg`` statements) this module finds:

* the names it reads and writes, each with its scope (``local``, ``free`` for ``nonlocal``,
  ``global``, ``outer`` for a name the function does not bind: global, builtin or a
  closure variable, resolved later), and the names it deletes;
* the *slots*: places where the instrumented statement records something at run time.
  A ``def`` slot records a value the statement defined (bound once from the expression
  that produced it, or read back from a plain name right after the binding); an ``obj``
  slot records the object whose attribute or item is read, written or deleted (its serial
  identity), a ``key`` slot the subscript key (a literal int or str key is written in the
  slot, not recorded: the log reader adds its record after the object's).  Locals, globals
  and names need no run-time record: their location is static and the frame instance comes
  from the control flow.

Lambdas and comprehensions are opaque parts of their statement (spec §6.5): their names are
uses of the statement, their attribute and item accesses are not recorded.  Class bodies
record only values bound once (their namespace may be a mapping whose reads run code).
Slot ids are global counter ids (``plan.base + j``), so the instrumented-code cache relocates
them like counters.
"""

from __future__ import annotations

import ast

from wholetrace.instrument.cfg import CFG
from wholetrace.plain import Record

TYPE_CHECKING = False   # typing is not imported by a recording (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from typing import Iterator

#: Slot kinds.
DEF, OBJ, KEY = "def", "obj", "key"
_OPAQUE = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class Slot(Record):
    """One run-time record site: statement id, kind, what it stands for, source line."""

    _fields = ('sid', 'kind', 'what', 'op', 'line', 'scope', 'key')

    def __init__(self, sid: int, kind: str, what: str, op: str, line: int, scope: str = "",
                 key: int | str | None = None) -> None:
        self.sid = sid
        self.kind = kind  # DEF | OBJ | KEY
        self.what = what  # DEF: target name / "<return>" / "<yield>" / "<value>"; OBJ/KEY: attribute or "[]"
        self.op = op  # "bind" | "readback" (DEF); "read" | "write" | "rw" | "del" (OBJ/KEY)
        self.line = line
        self.scope = scope  # DEF of a name: its scope
        self.key = key  # KEY of a constant subscript: the key (recorded by no probe)

    def to_json(self) -> list[object]:
        out: list[object] = [self.sid, self.kind, self.what, self.op, self.line, self.scope]
        return out if self.key is None else out + [self.key]


class StmtFacts(Record):
    """What one statement uses, defines and kills: (name, scope) pairs."""

    _fields = ('uses', 'defs', 'kills')

    def __init__(self, uses: list[tuple[str, str]] | None = None, defs: list[tuple[str, str]] | None = None,
                 kills: list[tuple[str, str]] | None = None) -> None:
        self.uses: list[tuple[str, str]] = [] if uses is None else uses  # (name, scope)
        self.defs: list[tuple[str, str]] = [] if defs is None else defs
        self.kills: list[tuple[str, str]] = [] if kills is None else kills

    def to_json(self) -> dict[str, list[list[str]]]:
        return {k: [list(p) for p in getattr(self, k)] for k in ("uses", "defs", "kills") if getattr(self, k)}


class ValuePlan(Record):
    """Where one function records values and locations; AST nodes are keyed by ``id``."""

    _fields = ('kind', 'scope_of', 'slots', 'facts', 'wrap', 'readback', 'at_start')

    def __init__(self, kind: str, scope_of: dict[str, str], slots: list[Slot] | None = None,
                 facts: dict[int, StmtFacts] | None = None, wrap: dict[int, int] | None = None,
                 readback: dict[int, list[tuple[int, str]]] | None = None,
                 at_start: dict[int, list[tuple[int, str]]] | None = None) -> None:
        self.kind = kind  # cfg.kind
        self.scope_of = scope_of
        self.slots: list[Slot] = [] if slots is None else slots
        self.facts: dict[int, StmtFacts] = {} if facts is None else facts  # statement id -> facts
        self.wrap: dict[int, int] = {} if wrap is None else wrap  # id(expr) -> slot: record it, keep its value
        #: id(stmt) -> [(slot, name)] after it
        self.readback: dict[int, list[tuple[int, str]]] = {} if readback is None else readback
        #: id(for/with/handler) -> body start
        self.at_start: dict[int, list[tuple[int, str]]] = {} if at_start is None else at_start

    def new(self, sid: int, kind: str, what: str, op: str, line: int, scope: str = "",
            key: int | str | None = None) -> int:
        self.slots.append(Slot(sid, kind, what, op, line, scope, key))
        return len(self.slots) - 1

    def to_json(self) -> dict[str, object]:
        return {"slots": [s.to_json() for s in self.slots],
                "stmts": {str(k): v.to_json() for k, v in sorted(self.facts.items())}}


# --------------------------------------------------------------------------- scopes

def _bound_names(body: list[ast.stmt], args: ast.arguments | None) -> tuple[set[str], set[str], set[str]]:
    """(bound, declared global, declared nonlocal) of one function body, nested bodies excluded."""
    bound: set[str] = set()
    glob: set[str] = set()
    nonloc: set[str] = set()
    if args is not None:
        for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
            if a is not None:
                bound.add(a.arg)
    stack: list[ast.AST] = list(body)
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Global):
            glob.update(n.names)
        elif isinstance(n, ast.Nonlocal):
            nonloc.update(n.names)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            bound.add(n.id)
        elif isinstance(n, _NESTED):
            bound.add(n.name)
            stack.extend(n.decorator_list)
            if isinstance(n, ast.ClassDef):
                stack.extend(n.bases + [k.value for k in n.keywords])
            else:
                stack.extend(d for d in n.args.defaults + n.args.kw_defaults if d is not None)
            continue
        elif isinstance(n, ast.Lambda):
            stack.extend(d for d in n.args.defaults + n.args.kw_defaults if d is not None)
            continue
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for al in n.names:
                if al.name != "*":
                    bound.add((al.asname or al.name).split(".")[0])
        elif isinstance(n, ast.ExceptHandler) and n.name:
            bound.add(n.name)
        elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
            bound.add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            bound.add(n.rest)
        stack.extend(ast.iter_child_nodes(n))
    return bound - glob - nonloc, glob, nonloc


def scopes(cfg: CFG) -> dict[str, str]:
    """Scope of every name the function binds or declares; names not in it are ``outer``."""
    fn = cfg.node
    if fn is None or isinstance(fn, ast.Module):
        return {}
    args = None if isinstance(fn, ast.ClassDef) else fn.args
    bound, glob, nonloc = _bound_names(fn.body, args)
    out = {n: ("class" if isinstance(fn, ast.ClassDef) else "local") for n in bound}
    out.update({n: "global" for n in glob})
    out.update({n: "free" for n in nonloc})
    return out


def scope(plan: ValuePlan, name: str) -> str:
    if plan.kind == "module":
        return "global"
    return plan.scope_of.get(name, "outer")


# --------------------------------------------------------------------------- the parts of a statement

def own_exprs(kind: str, node: ast.AST) -> tuple[list[ast.AST], list[ast.AST]]:
    """(read parts, target parts) of one CFG statement; compound statements give their header."""
    if kind in ("if", "while"):
        return [node.test], []  # type: ignore[attr-defined]
    if kind == "for-iter":
        return [node.iter], []  # type: ignore[attr-defined]
    if kind == "for-next":
        return [], [node.target]  # type: ignore[attr-defined]
    if kind == "with-enter":
        return [node.context_expr], [node.optional_vars] if node.optional_vars is not None else []  # type: ignore[attr-defined]
    if kind == "match":
        return [node.subject], []  # type: ignore[attr-defined]
    if kind == "case":
        return ([node.guard] if node.guard is not None else []), []  # type: ignore[attr-defined]
    if kind != "simple":
        return [], []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = node.args
        return list(node.decorator_list) + [d for d in a.defaults + a.kw_defaults if d is not None], []
    if isinstance(node, ast.ClassDef):
        return list(node.decorator_list) + node.bases + [k.value for k in node.keywords], []
    if isinstance(node, ast.Assign):
        return [node.value], list(node.targets)
    if isinstance(node, ast.AnnAssign):
        return ([node.value] if node.value is not None else []), [node.target]
    if isinstance(node, ast.AugAssign):
        return [node.value], [node.target]
    if isinstance(node, ast.Delete):
        return [], list(node.targets)
    if isinstance(node, (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Pass,
                         ast.Break, ast.Continue)):
        return [], []
    return [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)], []


def _walk(nodes: list[ast.AST], opaque: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    """Every node under ``nodes`` with whether it lies inside a lambda or comprehension."""
    stack = [(n, opaque) for n in reversed(nodes)]
    while stack:
        n, op = stack.pop()
        yield n, op
        inner = op or isinstance(n, _OPAQUE)
        stack.extend((c, inner) for c in reversed(list(ast.iter_child_nodes(n))))


def _opaque_bound(nodes: list[ast.AST]) -> set[str]:
    """Names bound by comprehension targets and lambda parameters (not uses of the statement)."""
    out: set[str] = set()
    for n, _op in _walk(nodes):
        if isinstance(n, ast.comprehension):
            out.update(x.id for x in ast.walk(n.target) if isinstance(x, ast.Name))
        elif isinstance(n, ast.Lambda):
            a = n.args
            out.update(x.arg for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if x is not None)
    return out


def _target_names(t: ast.AST) -> list[str]:
    """Plain names bound by an assignment target (through tuples, lists and starred)."""
    if isinstance(t, ast.Name):
        return [t.id]
    if isinstance(t, (ast.Tuple, ast.List)):
        return [n for e in t.elts for n in _target_names(e)]
    if isinstance(t, ast.Starred):
        return _target_names(t.value)
    return []


# --------------------------------------------------------------------------- the plan

def value_plan(cfg: CFG) -> ValuePlan:
    """Facts and slots of every statement of ``cfg`` (its AST is ``cfg.node``)."""
    plan = ValuePlan(cfg.kind, scopes(cfg))
    in_class = cfg.kind == "class"
    anchor_of = {sid: a for (a, _kind), sid in cfg.anchors.items()}
    for st in cfg.stmts:
        node = st.node
        if node is None:
            continue
        if st.kind in ("with-enter", "with-exit", "case"):   # the item or case, not the statement
            parts = node.cases if st.kind == "case" else node.items  # type: ignore[attr-defined]
            node = next(p for p in parts if id(p) == anchor_of.get(st.id))
        reads, targets = own_exprs(st.kind, node)
        facts = StmtFacts()
        plan.facts[st.id] = facts
        hidden = _opaque_bound(reads + targets)
        # uses: loaded names (incl. inside target sub-expressions), and augmented targets
        for n, op in _walk(reads + targets):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and not (op and n.id in hidden):
                facts.uses.append((n.id, scope(plan, n.id)))
            elif isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name):
                facts.defs.append((n.target.id, scope(plan, n.target.id)))
                if not op:
                    plan.wrap[id(n.value)] = plan.new(st.id, DEF, n.target.id, "bind", st.line,
                                                      scope(plan, n.target.id))
        aug = isinstance(node, ast.AugAssign) and st.kind == "simple"
        for t in targets:
            for name in _target_names(t):
                (facts.kills if isinstance(node, ast.Delete) else facts.defs).append((name, scope(plan, name)))
                if aug:
                    facts.uses.append((name, scope(plan, name)))
        _heap_slots(plan, st.id, st.line, reads + targets, aug)
        _value_slots(plan, st, node, targets, in_class)
    if cfg.node is not None:
        for h in _handlers(cfg.node.body):
            handler_slots(plan, h)
    return plan


def _handlers(body: list[ast.stmt]) -> Iterator[ast.ExceptHandler]:
    """The ``except`` clauses of one function body (nested functions excluded), in source order."""
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        n = stack.pop()
        if isinstance(n, _NESTED) or isinstance(n, ast.expr):
            continue
        if isinstance(n, ast.ExceptHandler):
            yield n
        stack.extend(reversed(list(ast.iter_child_nodes(n))))


def _heap_slots(plan: ValuePlan, sid: int, line: int, parts: list[ast.AST], aug: bool) -> None:
    """An ``obj`` slot on the object of every attribute and subscript, a ``key`` slot on keys."""
    for n, op in _walk(parts):
        if op or not isinstance(n, (ast.Attribute, ast.Subscript)):
            continue
        how = {ast.Load: "read", ast.Store: "write", ast.Del: "del"}[type(n.ctx)]
        if aug and how == "write":
            how = "rw"
        if isinstance(n, ast.Attribute):
            plan.wrap[id(n.value)] = plan.new(sid, OBJ, n.attr, how, line)
        else:
            obj = plan.new(sid, OBJ, "[]", how, line)
            plan.wrap[id(n.value)] = obj
            if isinstance(n.slice, ast.Slice):
                continue
            key = constant_key(n.slice)
            if key is None:
                plan.wrap[id(n.slice)] = plan.new(sid, KEY, "[]", how, line)
            else:   # slot obj + 1, filled in when the log is read (wet.capture)
                plan.new(sid, KEY, "[]", how, line, key=key)


_I64 = 1 << 63


def constant_key(e: ast.expr) -> int | str | None:
    """The key of a subscript whose key is a literal int (signed, 64 bits) or str, else None."""
    sign = 1
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        sign, e = -1, e.operand
    if not isinstance(e, ast.Constant):
        return None
    v = e.value
    if type(v) is int and -_I64 <= sign * v < _I64:
        return sign * v
    if type(v) is str and sign == 1:
        return v
    return None


def _value_slots(plan: ValuePlan, st: object, node: ast.AST, targets: list[ast.AST], in_class: bool) -> None:
    """``def`` slots: values bound once where the statement produces them, names read back after."""
    sid, kind, line = st.id, st.kind, st.line  # type: ignore[attr-defined]

    def back(names: list[str]) -> list[tuple[int, str]]:
        return [(plan.new(sid, DEF, nm, "readback", line, scope(plan, nm)), nm) for nm in names]

    if kind == "for-next":
        if not in_class:
            plan.at_start[id(node)] = back(_target_names(node.target))  # type: ignore[attr-defined]
        return
    if kind == "with-enter":
        if not in_class and node.optional_vars is not None:  # type: ignore[attr-defined]
            plan.at_start[id(node)] = back(_target_names(node.optional_vars))  # type: ignore[attr-defined]
        return
    if kind != "simple":
        return
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        simple = all(not isinstance(t, (ast.Tuple, ast.List)) for t in targets)
        if simple:
            what = ",".join(ast.unparse(t) for t in targets)
            names = [n for t in targets for n in _target_names(t)]
            plan.wrap[id(node.value)] = plan.new(sid, DEF, what, "bind", line,
                                                 scope(plan, names[0]) if names else "")
        elif not in_class:
            plan.readback[id(node)] = back([n for t in targets for n in _target_names(t)])
    elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and not in_class:
        plan.readback[id(node)] = back([node.target.id])
    elif isinstance(node, (ast.Import, ast.ImportFrom)) and not in_class and not (
            isinstance(node, ast.ImportFrom) and node.module == "__future__"):
        names = [(al.asname or al.name).split(".")[0] for al in node.names if al.name != "*"]
        plan.readback[id(node)] = back(names)
    elif isinstance(node, _NESTED) and not in_class:
        plan.readback[id(node)] = back([node.name])
    elif isinstance(node, ast.Return) and node.value is not None:
        plan.wrap[id(node.value)] = plan.new(sid, DEF, "<return>", "bind", line)
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Yield) and node.value.value is not None:
        plan.wrap[id(node.value.value)] = plan.new(sid, DEF, "<yield>", "bind", line)


def handler_slots(plan: ValuePlan, handler: ast.ExceptHandler) -> list[tuple[int, str]]:
    """``except E as name``: a read-back slot at the handler's start (statement id -1: the
    binding belongs to the dynamic exception edge, not to a statement)."""
    if not handler.name or plan.kind == "class":
        return []
    slots = [(plan.new(-1, DEF, handler.name, "readback", handler.lineno, scope(plan, handler.name)),
              handler.name)]
    plan.at_start[id(handler)] = slots
    return slots
