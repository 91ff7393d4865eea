"""Functions handed to numba's compilers (they read the function's bytecode): found in the tree, left uninstrumented."""

from __future__ import annotations

import ast

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from collections.abc import Iterable

#: numba's entry points that compile a function (or a class's methods) from its bytecode: an
#: instrumented body (probes, guards that re-raise) is code numba does not compile
#: ("UnsupportedBytecodeError", byteflow assertions: explore23 HIGH-3).
COMPILERS = frozenset({"njit", "jit", "vectorize", "guvectorize", "cfunc", "stencil", "generated_jit",
                       "jitclass", "register_jitable", "overload_method", "overload"})
#: Why such a function is not recorded (the recording's notes, ``wholetrace info``).
WHY = "compiled by numba"


def _numba_names(tree: ast.Module) -> dict[str, str]:
    """Name -> the dotted numba name it is bound to, by any ``import numba[.x] [as y]`` or
    ``from numba[.x] import y [as z]`` anywhere in the module."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "numba" or a.name.startswith("numba."):
                    names[a.asname or "numba"] = a.name if a.asname else "numba"
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None \
                and (node.module == "numba" or node.module.startswith("numba.")):
            for a in node.names:
                names[a.asname or a.name] = node.module + "." + a.name
    return names


def _dotted(e: ast.expr) -> list[str] | None:
    """``a.b.c`` -> ``["a", "b", "c"]`` (a call's callee for ``@a.b(...)``); None for other shapes."""
    if isinstance(e, ast.Call):
        e = e.func
    parts: list[str] = []
    while isinstance(e, ast.Attribute):
        parts.append(e.attr)
        e = e.value
    if not isinstance(e, ast.Name):
        return None
    parts.append(e.id)
    return parts[::-1]


def _is_compiler(e: ast.expr, names: dict[str, str]) -> bool:
    """``e`` (a decorator or a callee) names one of numba's :data:`COMPILERS`, or is
    ``[functools.]partial(<one of them>, ...)`` (review24a MED-2)."""
    if isinstance(e, ast.Call) and e.args and (_dotted(e.func) or [""])[-1] == "partial":
        return _is_compiler(e.args[0], names)
    parts = _dotted(e)
    if not parts or parts[0] not in names:
        return False
    full = names[parts[0]].split(".") + parts[1:]
    return full[0] == "numba" and full[-1] in COMPILERS


def _aliases(tree: ast.Module, names: dict[str, str]) -> None:
    """Adds to ``names`` the names assigned a compiler anywhere in the module: ``deco = numba.njit``,
    ``fastjit = functools.partial(njit, cache=True)``, ``dj = numba.njit(cache=True)`` (a call with
    no function argument: the decorator it returns), to a fixed point (aliases of aliases)."""
    assigns = [(n.targets[0].id, n.value) for n in ast.walk(tree) if isinstance(n, ast.Assign)
               and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)]
    grown = True
    while grown:
        grown = False
        for name, value in assigns:
            if name in names:
                continue
            if isinstance(value, ast.Call) and value.args and isinstance(value.args[0], ast.Name) \
                    and (_dotted(value.func) or [""])[-1] != "partial":
                continue   # ``fast = njit(slow)``: a compiled function, not a compiler
            if _is_compiler(value, names):
                names[name] = "numba.njit"
                grown = True


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _scope(body: list[ast.stmt]) -> tuple[list[ast.AST], list[ast.Call]]:
    """The function definitions and the calls of one scope (a module's, a function's or a class's
    body), not those of the scopes nested in it (a nested definition's decorators and defaults
    are evaluated in this one)."""
    defs: list[ast.AST] = []
    calls: list[ast.Call] = []
    todo: list[ast.AST] = list(body)
    while todo:
        n = todo.pop()
        if isinstance(n, (*_DEFS, ast.Lambda)):
            if not isinstance(n, ast.Lambda):
                defs.append(n)
                todo += n.decorator_list
            todo += [d for d in (*n.args.defaults, *n.args.kw_defaults) if d is not None]
        elif isinstance(n, ast.ClassDef):
            todo += [*n.decorator_list, *n.bases, *n.keywords]
        elif not isinstance(n, _COMPREHENSIONS):
            if isinstance(n, ast.Call):
                calls.append(n)
            todo += ast.iter_child_nodes(n)
    return defs, calls


def compiled(tree: ast.Module) -> set[int]:
    """The ids of the function and class nodes of ``tree`` numba compiles: decorated with one
    of its compilers (``@njit``, ``@numba.jit(...)``, ``@nb.vectorize([...])``, ``@cuda.jit``
    after ``from numba import cuda``, an alias ``@fastjit`` of one), or a function passed by
    name to one in the scope that defines it (``fast = numba.njit(slow)`` next to ``def slow``;
    not ``def maybe_jit(f): return njit(f)``, whose ``f`` is a parameter: review24a HIGH-3),
    with every body nested in them."""
    names = _numba_names(tree)
    if not names:
        return set()
    _aliases(tree, names)
    out: set[int] = set()
    roots: list[ast.AST] = []
    for scope in [tree, *(n for n in ast.walk(tree) if isinstance(n, (*_DEFS, ast.ClassDef)))]:
        defs, calls = _scope(scope.body)
        passed = {c.args[0].id for c in calls if c.args and isinstance(c.args[0], ast.Name) and _is_compiler(c.func, names)}
        roots += [d for d in defs if d.name in passed]
    roots += [n for n in ast.walk(tree) if isinstance(n, (*_DEFS, ast.ClassDef))
              and any(_is_compiler(d, names) for d in n.decorator_list)]
    for node in roots:
        if id(node) not in out:
            out.update(id(n) for n in ast.walk(node) if isinstance(n, (*_DEFS, ast.ClassDef)))
    return out


def outermost(functions: Iterable[tuple[ast.AST, str]], ids: set[int]) -> list[tuple[str, str]]:
    """(qualname, why) of each body of ``ids`` not nested in another (``functions``: the
    module's bodies in source order, ``cfg.iter_functions``)."""
    out: list[tuple[str, str]] = []
    for fn, q in functions:
        if id(fn) in ids and not any(q.startswith(o + ".") for o, _why in out):
            out.append((q, WHY))
    return out
