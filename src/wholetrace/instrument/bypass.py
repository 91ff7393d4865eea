"""In-scope modules loaded without wholetrace's loader (a program's finder in front of ours, a zip archive), found once when the recording stops."""

from __future__ import annotations

import sys

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from wholetrace.instrument.loader import Scope


def bypassed(scope: Scope, instrumented: list[str], noted: list[str]) -> list[tuple[str, str]]:
    """(module name, why) of each module in ``sys.modules`` from a ``.py`` file ``scope`` wants
    whose code the instrumenter did not compile (``instrumented``: its files; ``noted``: names
    and files already in the recording's notes).  One pass over ``sys.modules`` at the end:
    nothing per import or call."""
    done = set(instrumented) | set(noted)
    out: list[tuple[str, str]] = []
    for name, module in list(sys.modules.items()):
        spec = getattr(module, "__spec__", None)
        origin = getattr(spec, "origin", None) or getattr(module, "__file__", None)
        if not isinstance(origin, str) or origin in done or name in done or not origin.endswith(".py"):
            continue
        try:
            wanted = scope.wants(name, origin)
        except (OSError, ValueError):
            continue
        if wanted:
            loader = getattr(module, "__loader__", None) or getattr(spec, "loader", None)
            out.append((f"{name} ({origin})", f"loaded by {type(loader).__name__}, nothing recorded"))
    return out


def recompiled(instrumented: list[str], marker: object, noted: list[str]) -> list[tuple[str, str]]:
    """(module.qualname, why) of the functions (module level, and in the module's classes) of
    the instrumented modules in ``sys.modules`` whose code comes from their file but holds no
    probe (``marker``: a constant every instrumented body holds, ``emit.NO_TB``'s object): code
    the program compiled itself from the source (typeguard's ``@typechecked``).  ``noted``:
    ``file:qualname`` already in the notes (bodies left to numba)."""
    files = set(instrumented)
    seen = set(noted)
    out: list[tuple[str, str]] = []
    for name, module in list(sys.modules.items()):
        spec = getattr(module, "__spec__", None)
        origin = getattr(spec, "origin", None) or getattr(module, "__file__", None)
        if origin not in files:
            continue
        for value in list(getattr(module, "__dict__", {}).values()):
            inner = list(vars(value).values()) if isinstance(value, type) else [value]
            for f in inner:
                f = getattr(f, "__func__", f)
                code = getattr(f, "__code__", None)
                if type(code) is not type(_probe.__code__) or code.co_filename != origin:
                    continue
                where = f"{origin}:{f.__qualname__}"
                if where not in seen and not any(c is marker for c in code.co_consts):
                    seen.add(where)
                    out.append((f"{name}.{f.__qualname__}", "code compiled by the program, nothing recorded"))
    return out


def _probe() -> None:
    """(its ``__code__``'s type: ``types.CodeType`` without importing ``types``)"""
