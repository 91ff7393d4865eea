"""AST nodes of probe code and their source positions: a probe starts no line of its own, or the line of the statement it opens."""

# Split from ``instrument.emit`` (wave 17); imported on a cache miss only, as ``ast`` is
# (``instrument.misspath``).

from __future__ import annotations

from wholetrace.instrument.misspath import LazyModule
from wholetrace.instrument.emit import runtime_constant

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    import ast
else:   # ast only on a cache miss
    ast = LazyModule("ast", globals(), "ast")


def ast_name(n: str, store: bool = False) -> ast.Name:
    return ast.Name(n, ast.Store() if store else ast.Load())


def ast_call(fn: str | ast.expr, *args: ast.expr) -> ast.Call:
    return ast.Call(ast_name(fn) if isinstance(fn, str) else fn, list(args), [])


def ast_const(v: object) -> ast.Constant:
    return ast.Constant(v)


def rt(name: str) -> ast.Constant:
    """A run-time object, as a constant of the compiled code."""
    return ast.Constant(runtime_constant(name))


def _position(new: ast.AST, line: int, col: int, end_line: int, end_col: int) -> ast.AST:
    stack = [new]
    while stack:
        n = stack.pop()
        if "lineno" in n._attributes:
            if hasattr(n, "lineno"):
                continue
            n.lineno, n.col_offset = line, col  # type: ignore[attr-defined]
            n.end_lineno, n.end_col_offset = end_line, end_col  # type: ignore[attr-defined]
        stack.extend(ast.iter_child_nodes(n))
    return new


def locate(new: ast.AST, like: ast.AST) -> ast.AST:
    """Give the *new* nodes of ``new`` (those without a position) the start of ``like``.

    Nodes that already have a position (user code moved under a new node) are left alone
    and not descended into, so tracebacks keep pointing at the original source.
    """
    line = getattr(like, "lineno", 1)
    col = getattr(like, "col_offset", 0)
    return _position(new, line, col, line, col)


def artificial(new: ast.AST) -> ast.AST:
    """Mark the new nodes of ``new`` as having no source position: the compiler gives their
    instructions the line of the instruction before them, so they never start a line."""
    return _position(new, -1, -1, -1, -1)


#: By node class name (``ast`` is imported on a cache miss only: ``instrument.misspath``).
_FIRST_CHILD: dict[str, str] = {
    "Assign": "value", "AugAssign": "target", "Expr": "value", "Return": "value",
    "If": "test", "While": "test", "For": "iter", "AsyncFor": "iter", "Match": "subject",
    "Raise": "exc", "Assert": "test", "Call": "func", "Attribute": "value",
    "Subscript": "value", "BinOp": "left", "Compare": "left", "UnaryOp": "operand",
    "IfExp": "test", "NamedExpr": "value", "Await": "value", "Yield": "value",
    "YieldFrom": "value", "Starred": "value", "FormattedValue": "value",
}


def first_evaluated(node: ast.AST) -> ast.AST:
    """The node whose position the first instruction of ``node`` carries (the value of an
    assignment, the first decorator, the callee of a call, ...), so that a probe placed
    before ``node`` starts the same line as ``node`` would."""
    while True:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.decorator_list:
            node = node.decorator_list[0]
            continue
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            node = node.value
            continue
        if isinstance(node, (ast.With, ast.AsyncWith)):
            node = node.items[0].context_expr
            continue
        if isinstance(node, ast.Delete) and isinstance(node.targets[0], (ast.Attribute, ast.Subscript)):
            node = node.targets[0].value
            continue
        if isinstance(node, ast.BoolOp):
            node = node.values[0]
            continue
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and node.elts and not all(
                isinstance(e, ast.Constant) for e in node.elts):
            node = node.elts[0]
            continue
        if isinstance(node, ast.JoinedStr) and node.values:
            node = node.values[0]
            continue
        child = getattr(node, _FIRST_CHILD.get(type(node).__name__, "-"), None)
        if not isinstance(child, ast.AST) or not hasattr(child, "lineno"):
            return node
        node = child


def start_line(first: ast.stmt, like: ast.AST) -> None:
    """Give the probe code that runs first in an activation the position of the first
    instruction of its first statement ``like``: after ``RESUME`` the next instruction with
    a line starts a line event, and an artificial one would take the ``def`` line."""
    if getattr(first, "lineno", None) != -1:
        return
    at = first_evaluated(like)
    line, col = getattr(at, "lineno", 1), getattr(at, "col_offset", 0)
    if isinstance(first, ast.Try):   # a guard: only its own NOP takes the line
        first.lineno, first.col_offset, first.end_lineno, first.end_col_offset = line, col, line, col
        return
    stack: list[ast.AST] = [first]
    while stack:
        n = stack.pop()
        if getattr(n, "lineno", None) == -1:
            n.lineno, n.col_offset, n.end_lineno, n.end_col_offset = line, col, line, col  # type: ignore[attr-defined]
            stack.extend(ast.iter_child_nodes(n))
        elif not hasattr(n, "lineno"):
            stack.extend(ast.iter_child_nodes(n))


def place(new: ast.AST, like: ast.AST | None) -> ast.AST:
    """At the start of ``like`` (a probe that opens the block of statement ``like``), or artificial."""
    return artificial(new) if like is None else locate(new, like)
