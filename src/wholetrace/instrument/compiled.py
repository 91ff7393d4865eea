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
    """``e`` (a decorator or a callee) names one of numba's :data:`COMPILERS`."""
    parts = _dotted(e)
    if not parts or parts[0] not in names:
        return False
    full = names[parts[0]].split(".") + parts[1:]
    return full[0] == "numba" and full[-1] in COMPILERS


def compiled(tree: ast.Module) -> set[int]:
    """The ids of the function and class nodes of ``tree`` numba compiles: decorated with one
    of its compilers (``@njit``, ``@numba.jit(...)``, ``@nb.vectorize([...])``, ``@cuda.jit``
    after ``from numba import cuda``), or defined under a name passed to one
    (``fast = numba.njit(slow)``), with every body nested in them."""
    names = _numba_names(tree)
    if not names:
        return set()
    passed = {c.args[0].id for c in ast.walk(tree) if isinstance(c, ast.Call) and c.args
              and isinstance(c.args[0], ast.Name) and _is_compiler(c.func, names)}
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and id(node) not in out \
                and (node.name in passed and not isinstance(node, ast.ClassDef)
                     or any(_is_compiler(d, names) for d in node.decorator_list)):
            out.update(id(n) for n in ast.walk(node) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                         ast.ClassDef)))
    return out



def outermost(functions: Iterable[tuple[ast.AST, str]], ids: set[int]) -> list[tuple[str, str]]:
    """(qualname, why) of each body of ``ids`` not nested in another (``functions``: the
    module's bodies in source order, ``cfg.iter_functions``)."""
    out: list[tuple[str, str]] = []
    for fn, q in functions:
        if id(fn) in ids and not any(q.startswith(o + ".") for o, _why in out):
            out.append((q, WHY))
    return out
