"""The instrumenter's cache-miss path (``ast``, CFGs, planners, rewriter), imported on the first miss.

A recording whose code all comes from the code cache (``instrument.cache``) never parses,
plans or rewrites: ``ast`` (with ``_ast``'s ~120 node classes and ``enum``) and the modules
that build templates are a third of ``record``'s start-up instructions (docs/design.md,
"Record's fixed cost, wave 13").  So they are imported by :func:`load`, on the first miss,
and stay in ``sys.modules`` from then on (one copy of every module, as before wave 13; a
warm-cache recording never loads them, so its program sees none of them).

The standard-library modules are loaded from the interpreter's own standard library
(:func:`stdlib_spec`), not through ``sys.path`` (whose first entry is the program's
directory by then) nor through the finders: a program's ``enum.py`` or ``bisect.py`` is not
taken by wholetrace.  A name the program already holds under another origin is swapped out
for the load and put back after it.  While a thread loads, the finder neither instruments
nor waits in that thread (:func:`loading_here`; a module imported meanwhile by that thread,
from a ``gc`` callback or a signal handler, is imported plain and noted); other threads
wait for the load (the module locks it needs are named in docs/design.md).

``runtime.runner.start`` loads it before the finder is installed when the scope names a
module of :data:`CLOSURE` (``--include enum``) or a root inside the Python installation.
"""

from __future__ import annotations

import _thread
import sys

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from collections.abc import Iterator

#: wholetrace's modules the miss path needs: the template builder, every mode's planners
#: (``instrument.modes`` imports them when it first plans), full mode's value probes.
MODULES = ("wholetrace.instrument.cfg", "wholetrace.instrument.sites", "wholetrace.instrument.facts",
           "wholetrace.instrument.emit", "wholetrace.instrument.probeast", "wholetrace.instrument.probecode",
           "wholetrace.instrument.heldcode", "wholetrace.instrument.rewrite", "wholetrace.instrument.bytecode",
           "wholetrace.instrument.flowgraph", "wholetrace.instrument.weighting", "wholetrace.instrument.placement",
           "wholetrace.instrument.witnesses", "wholetrace.instrument.chains", "wholetrace.instrument.pathnum",
           "wholetrace.instrument.pathregs", "wholetrace.instrument.defuse", "wholetrace.instrument.wetemit",
           "wholetrace.instrument.compiled", "wholetrace.instrument.matchsplit")
#: Every standard-library module an import statement run by :func:`load` names, directly or
#: through the modules it imports, on Python 3.11-3.13 (3.13's opcode imports ``_opcode_metadata``),
#: and the modules those use
#: (``tests/runtime/test_startup13.py`` checks it on the running version).  A scope that
#: names one of them loads the miss path at start-up.
CLOSURE = frozenset({
    "__future__", "_abc", "_ast", "_bisect", "_collections", "_collections_abc", "_frozen_importlib",
    "_frozen_importlib_external", "_functools", "_io", "_warnings", "importlib",
    "_locale", "_opcode", "_opcode_metadata", "_operator", "_sre", "_thread", "_weakref", "_weakrefset",
    "abc", "array", "ast",
    "bisect", "builtins", "collections", "contextlib", "copy", "copyreg", "enum", "functools",
    "genericpath", "io", "itertools", "keyword", "math", "opcode", "operator", "os", "posixpath", "re",
    "reprlib", "sre_compile", "sre_constants", "sre_parse", "stat", "sys", "types", "warnings", "weakref"})

#: The top-level standard-library modules the miss path imports while it loads, in an order
#: where each one's own imports come before it, on Python 3.11-3.13 (each version loads the
#: ones it lacks; ``tests/runtime/test_startup13.py`` checks that no other top-level module
#: is imported by ``load`` on the running version).
ORDER = ("__future__", "_stat", "stat", "_collections_abc", "genericpath", "posixpath", "os", "itertools",
         "keyword", "_operator", "operator", "reprlib", "_collections", "types", "_functools",
         "collections", "functools", "contextlib", "enum", "_sre", "copyreg", "re", "_ast", "ast",
         "_opcode", "_opcode_metadata", "opcode", "warnings", "_bisect", "bisect")
#: Those of :data:`ORDER` only 3.12 and later import there (3.11's ``ast`` does not need ``re``).
SINCE_312 = frozenset({"_sre", "copyreg", "re"})

_lock = _thread.allocate_lock()
_loaded: dict[str, ModuleType] = {}
_loading: list[int] = []   # the thread loading the miss path now, if any


def loaded() -> bool:
    """True once :func:`load` has run in this process."""
    return bool(_loaded)


def loading_here() -> bool:
    """True while this thread runs :func:`load` (a nested import must not instrument)."""
    return bool(_loading) and _loading[0] == _thread.get_ident()


def load() -> ModuleType:
    """Import the miss path (once per process); returns ``ast``.  Other threads wait for
    it; in the loading thread itself (re-entered through a ``gc`` callback, a signal
    handler), raises ``RuntimeError``: callers check :func:`loading_here` first."""
    if _loaded:
        return _loaded["ast"]
    if loading_here():
        raise RuntimeError("the instrumenter's miss path is loading in this thread")
    with _lock:
        if not _loaded:
            _loading.append(_thread.get_ident())
            try:
                _loaded["ast"] = _load()
            finally:
                _loading.clear()
    return _loaded["ast"]


def _load() -> ModuleType:
    dirs = stdlib_dirs()
    held: dict[str, ModuleType] = {}   # the program's own module under a name of ORDER, put back after
    before = set(sys.modules)
    try:
        _load_stdlib([n for n in ORDER if n not in SINCE_312 or sys.version_info >= (3, 12)], dirs, held)
        import ast

        from wholetrace.instrument import heldcode, probeast, probecode
        for name in MODULES:
            __import__(name)
        probecode.ast = probeast.ast = heldcode.ast = ast   # in place of their LazyModules
        return ast
    finally:
        sys.modules.update(held)
        forget_shadowed(before, dirs)


def forget_shadowed(before: set[str], dirs: tuple[str, ...]) -> None:
    """Take out of ``sys.modules`` the standard library's modules (with their submodules)
    imported since ``before`` was taken that the program's own import would not find: a
    ``warnings.py`` (``opcode.py``, ``enum.py``, ...) where ``sys.path`` looks before the
    standard library.  The program's ``import warnings`` then runs the import plain
    ``python`` runs and takes its own file (review14d P1; docs/design.md, "Record's start-up,
    wave 15"); the miss path keeps using the standard library's (its modules hold it).  The
    others stay, one copy each: a program thread may have taken one while the load ran
    (``test_misspath13``'s one ``enum``).  Built-in and frozen modules come before
    ``sys.path`` in plain imports too."""
    added = [n for n in sys.modules if n not in before]
    for top in {n.partition(".")[0] for n in added}:
        module = sys.modules.get(top)
        origin = getattr(getattr(module, "__spec__", None), "origin", None)
        if top in before or module is None or origin in ("built-in", "frozen") or top.startswith("wholetrace") \
                or not is_stdlib(module, dirs):
            continue
        if _shadowed_on_disk(top, dirs):
            for name in added:
                if name == top or name.startswith(top + "."):
                    del sys.modules[name]


def _before_stdlib(dirs: tuple[str, ...]) -> Iterator[str]:
    """The real paths of the ``sys.path`` string entries before the first of the standard
    library's directories ``dirs`` (``''`` is the current directory)."""
    import os

    stdlib = {os.path.realpath(d) for d in dirs}
    for entry in list(sys.path):
        if not isinstance(entry, str):
            continue
        where = os.path.realpath(entry or os.getcwd())
        if where in stdlib:
            return
        yield where


def program_shadows_stdlib() -> bool:
    """Whether a ``sys.path`` directory before the standard library's holds a ``.py`` file or
    a package named as a standard-library module (``sys.stdlib_module_names``): one
    ``listdir`` per such entry."""
    import os

    names = sys.stdlib_module_names
    for where in _before_stdlib(stdlib_dirs()):
        try:
            listing = os.listdir(where)
        except OSError:
            continue
        if any(n.partition(".")[0] in names for n in listing if n.endswith(".py") or "." not in n):
            return True
    return False


def import_past_program(name: str) -> ModuleType:
    """Import ``name`` (a third-party package wholetrace uses, numpy) with ``sys.path`` from
    the standard library's directory on, so that an ``enum.py`` or ``warnings.py`` beside the
    script is not what it imports; then forget the standard library's modules it added that a
    program file shadows (:func:`forget_shadowed`).  Only before the program runs: ``sys.path``
    is changed while the import runs.  If ``name`` is only found before the standard library
    (a ``PYTHONPATH`` install), imports it with the whole ``sys.path``."""
    import os

    dirs = stdlib_dirs()
    stdlib = {os.path.realpath(d) for d in dirs}
    before = set(sys.modules)
    saved = list(sys.path)
    start = next((k for k, e in enumerate(saved) if isinstance(e, str) and os.path.realpath(e or os.getcwd()) in stdlib), 0)
    try:
        sys.path[:] = saved[start:]
        try:
            __import__(name)
        except ImportError:
            sys.path[:] = saved
            __import__(name)
    finally:
        sys.path[:] = saved
        forget_shadowed(before, dirs)
    return sys.modules[name]


def _shadowed_on_disk(top: str, dirs: tuple[str, ...]) -> bool:
    """Whether a ``sys.path`` directory before the standard library's holds what
    ``FileFinder`` would take for ``top`` (``top/__init__`` or ``top`` with an extension,
    source or bytecode suffix).  Looked up on disk, not through the finders: the program's
    ``sys.path_hooks`` are not called and ``sys.path_importer_cache`` is not filled, as in
    plain ``python`` (review15c MED).  A zip or other non-directory entry is not looked into."""
    import os
    from _frozen_importlib_external import BYTECODE_SUFFIXES, EXTENSION_SUFFIXES, SOURCE_SUFFIXES

    suffixes = [*EXTENSION_SUFFIXES, *SOURCE_SUFFIXES, *BYTECODE_SUFFIXES]
    for where in _before_stdlib(dirs):
        if not os.path.isdir(where):
            continue
        package = os.path.join(where, top)
        if os.path.isdir(package) and any(os.path.isfile(os.path.join(package, "__init__" + s)) for s in suffixes):
            return True
        if any(os.path.isfile(package + s) for s in suffixes):
            return True
    return False


def _load_stdlib(names: list[str], dirs: tuple[str, ...], held: dict[str, ModuleType]) -> None:
    """Load the standard library's modules ``names`` (top level, each after those it imports)
    that are not in ``sys.modules`` as the standard library's; a module of the program's under
    such a name goes to ``held`` (the caller puts it back)."""
    for name in names:
        have = sys.modules.get(name)
        if have is not None and is_stdlib(have, dirs):
            continue
        spec = stdlib_spec(name, dirs)
        if spec is None:
            continue   # not on this Python (``_sre`` is built in, ...)
        if have is not None:
            held[name] = have
        _load_unlocked(spec)   # no module lock: see "the miss path's locks" in docs/design.md


#: What ``dis`` imports that record's start-up does not (wave 14: ``opcode`` is not imported
#: then), in order, then ``dis``.
DIS_ORDER = ("_opcode", "_opcode_metadata", "opcode", "dis")


def stdlib_import(names: tuple[str, ...] = DIS_ORDER) -> ModuleType:
    """The standard library's module ``names[-1]``, loaded with the modules before it as
    :func:`load` loads the miss path's (whatever ``sys.path`` holds: the run is over when
    ``runtime.unfinished`` reads instructions with ``dis``, but ``sys.path[0]`` is still the
    program's directory, which may hold an ``opcode.py``).  A module of the program's under
    one of those names stays in ``sys.modules``."""
    dirs = stdlib_dirs()
    held: dict[str, ModuleType] = {}
    try:
        _load_stdlib(list(names), dirs, held)
        module = sys.modules[names[-1]]
    finally:
        sys.modules.update(held)
    return module


def _load_unlocked(spec: ModuleSpec) -> ModuleType:
    from _frozen_importlib import _load_unlocked as load_spec   # type: ignore[attr-defined]  # importlib._bootstrap's
    return load_spec(spec)   # type: ignore[no-any-return]


def stdlib_dirs() -> tuple[str, ...]:
    """The standard library's directories: pure modules and extension modules (``lib-dynload``)."""
    home = getattr(sys, "_stdlib_dir", None)
    if not home:   # pragma: no cover (set on every CPython 3.11+ that knows its prefix)
        import sysconfig
        paths = sysconfig.get_paths()
        return tuple(dict.fromkeys([paths["stdlib"], paths["platstdlib"], paths["platstdlib"] + "/lib-dynload"]))
    return (home, home.rstrip("/") + "/lib-dynload")   # (no os.path: os may not be loaded yet, python -S)


def stdlib_spec(name: str, dirs: tuple[str, ...] | None = None) -> ModuleSpec | None:
    """The spec of the standard library's module ``name`` (top level): built in, frozen, or
    found in :func:`stdlib_dirs` only, whatever ``sys.path`` and ``sys.meta_path`` hold."""
    from _frozen_importlib import BuiltinImporter, FrozenImporter   # importlib.machinery's (importlib may not be loaded)
    from _frozen_importlib_external import PathFinder
    return BuiltinImporter.find_spec(name) or FrozenImporter.find_spec(name) \
        or PathFinder.find_spec(name, list(dirs or stdlib_dirs()))


def is_stdlib(module: ModuleType, dirs: tuple[str, ...]) -> bool:
    """Whether ``module`` is the standard library's (built in, frozen or from ``dirs``)."""
    origin = getattr(getattr(module, "__spec__", None), "origin", None)
    if origin in ("built-in", "frozen"):
        return True
    return isinstance(origin, str) and "site-packages" not in origin \
        and any(origin.startswith(d.rstrip("/") + "/") for d in dirs)


class LazyModule:
    """Stands for a module in a namespace (``probecode.ast``) until it is used or bound: the
    first attribute read imports it and puts it in the namespace in its place."""

    def __init__(self, name: str, namespace: dict[str, object], key: str) -> None:
        self._where = (name, namespace, key)

    def __getattr__(self, attr: str) -> object:
        name, namespace, key = self._where
        module = load() if name == "ast" else __import__(name)
        namespace[key] = module
        return getattr(module, attr)
