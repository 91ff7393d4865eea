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
