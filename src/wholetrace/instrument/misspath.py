"""The instrumenter's cache-miss path (``ast``, CFGs, planners, rewriter), imported on the first miss.

A recording whose code all comes from the code cache (``instrument.cache``) never parses,
plans or rewrites: ``ast`` (with ``_ast``'s ~120 node classes and ``enum``) and the modules
that build templates are a third of ``record``'s start-up instructions (docs/design.md,
"Record's fixed cost, wave 13").  So they are imported by :func:`load`, on the first miss,
and the stdlib modules that brought in are taken out of ``sys.modules`` again
(``hide``): the program does not see them appear, as it would not without wholetrace.

That is safe only when the program cannot have replaced or instrumented what the miss path
imports.  ``runtime.runner.start`` therefore loads it before the finder is installed (as
every recording did before wave 13) when the scope names a module of :data:`CLOSURE`
(``--include enum``: the program's instrumented ``enum`` would otherwise build ``ast``'s
enums, and its trace would hold them) or a root inside the Python installation (the finder
would instrument ``ast`` itself).  Modules are hidden only while no other thread of the
program runs (:func:`_alone`): a thread importing ``enum`` meanwhile could get the copy
taken out, and the program would then hold two.
"""

from __future__ import annotations

import _thread
import sys

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from types import ModuleType

#: wholetrace's modules the miss path needs: the template builder, every mode's planners
#: (``instrument.modes`` imports them when it first plans), full mode's value probes.
MODULES = ("wholetrace.instrument.cfg", "wholetrace.instrument.sites", "wholetrace.instrument.facts",
           "wholetrace.instrument.emit", "wholetrace.instrument.rewrite", "wholetrace.instrument.bytecode",
           "wholetrace.instrument.flowgraph", "wholetrace.instrument.weighting", "wholetrace.instrument.placement",
           "wholetrace.instrument.witnesses", "wholetrace.instrument.chains", "wholetrace.instrument.pathnum",
           "wholetrace.instrument.pathregs", "wholetrace.instrument.defuse", "wholetrace.instrument.wetemit")
#: Every standard-library module an import statement run by :func:`load` names, directly or
#: through the modules it imports, on Python 3.11-3.13, and the modules those use
#: (``tests/runtime/test_startup13.py`` checks it on the running version).  A scope that
#: names one of them loads the miss path at start-up.
CLOSURE = frozenset({
    "__future__", "_abc", "_ast", "_bisect", "_collections", "_collections_abc", "_functools", "_io",
    "_locale", "_opcode", "_operator", "_sre", "_thread", "_weakref", "_weakrefset", "abc", "array", "ast",
    "bisect", "builtins", "collections", "contextlib", "copy", "copyreg", "enum", "functools",
    "genericpath", "io", "itertools", "keyword", "math", "opcode", "operator", "os", "posixpath", "re",
    "reprlib", "sre_compile", "sre_constants", "sre_parse", "stat", "sys", "types", "warnings", "weakref"})

_lock = _thread.allocate_lock()
_loaded: dict[str, ModuleType] = {}


def loaded() -> bool:
    """True once :func:`load` has run in this process."""
    return bool(_loaded)


def load(hide: bool = False) -> ModuleType:
    """Import the miss path (once per process); returns ``ast``.  ``hide``: take the
    standard-library modules this imported out of ``sys.modules`` again, when no other thread
    of the program runs (wholetrace's own modules stay: the program sees them already)."""
    if _loaded:
        return _loaded["ast"]
    with _lock:
        if not _loaded:
            before = set(sys.modules) if hide else None
            import ast

            from wholetrace.instrument import emit
            for name in MODULES:
                __import__(name)
            emit.ast = ast   # in place of its LazyModule
            if before is not None and _alone():
                for name in set(sys.modules) - before:
                    if name != "wholetrace" and not name.startswith("wholetrace."):
                        del sys.modules[name]
            _loaded["ast"] = ast
    return _loaded["ast"]


def _alone() -> bool:
    """No thread runs but this one and wholetrace's own (named ``wholetrace-...``)."""
    import threading   # imported by the recorder already

    ours = {t.ident for t in threading.enumerate() if t.name.startswith("wholetrace")}
    ours.add(threading.get_ident())
    return set(sys._current_frames()) <= ours


class LazyModule:
    """Stands for a module in a namespace (``emit.ast``) until it is used or bound: the
    first attribute read imports it and puts it in the namespace in its place."""

    def __init__(self, name: str, namespace: dict[str, object], key: str) -> None:
        self._where = (name, namespace, key)

    def __getattr__(self, attr: str) -> object:
        name, namespace, key = self._where
        module = load() if name == "ast" else __import__(name)
        namespace[key] = module
        return getattr(module, attr)
