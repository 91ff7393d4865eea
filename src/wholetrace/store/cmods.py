"""``array`` and ``_sqlite3`` loaded without the Python modules their initialisation imports."""

# Record's start-up (docs/design.md, "Record's start-up, wave 17"): ``array``'s initialisation
# imports ``collections.abc`` (only to register ``array.array`` as a ``MutableSequence``) and
# ``_sqlite3``'s imports ``functools`` (only to keep ``functools.lru_cache`` for each
# connection's statement cache).  Those bring ``collections``, ``functools``, ``keyword``,
# ``operator``, ``reprlib`` (~9.5 M instructions of an empty recording's ~97 M, with their
# share of the interpreter's finalisation).  While each C module initialises, ``sys.modules``
# holds a stand-in for the one module it asks for: ``collections.abc``'s stand-in hands out
# the real ``_collections_abc.MutableSequence`` (what ``collections.abc.MutableSequence`` is;
# ``_collections_abc`` is loaded by every interpreter's start-up), so the registration is the
# one plain python makes; ``functools``'s hands out :func:`lru_cache`, which builds the same
# C ``_lru_cache_wrapper`` ``functools.lru_cache`` builds.  The stand-ins are taken out of
# ``sys.modules`` at once (and never put in when the real module is loaded already), so a
# later ``import collections`` or ``import functools`` of the program loads the real modules,
# as in a plain run.

import sys
from _functools import _lru_cache_wrapper   # bound once: no import (nor the program's __import__ hook) per connect()

TYPE_CHECKING = False   # typing is not imported at start-up
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any

__all__ = ["ArrayType", "array", "hide", "lru_cache", "sqlite3"]


def _cache_info(*counts: int) -> "Any":
    """``functools._CacheInfo`` (a namedtuple), made only if ``cache_info()`` is ever called."""
    import functools

    return functools._CacheInfo(*counts)


def lru_cache(maxsize: "int | None" = 128, typed: bool = False) -> "Any":
    """``functools.lru_cache(maxsize, typed)`` for an int or None ``maxsize``, as ``_sqlite3``
    calls it (``lru_cache(maxsize)(connection)``): the same C wrapper, without
    ``update_wrapper``'s attributes (a connection has none of them to copy)."""
    if maxsize is not None and maxsize < 0:
        maxsize = 0

    def decorating_function(user_function: "Any") -> "Any":
        return _lru_cache_wrapper(user_function, maxsize, typed, _cache_info)

    return decorating_function


def _load(name: str, stand_ins: "dict[str, dict[str, Any]]") -> "Any":
    """Import the C module ``name`` with stand-in modules (name: attributes) in ``sys.modules``
    while it initialises; none when one of them is loaded already."""
    module = sys.modules.get(name)
    if module is not None:
        return module
    if any(n in sys.modules for n in stand_ins):
        return __import__(name)
    stubs = {}
    for n, attrs in stand_ins.items():
        stubs[n] = stub = type(sys)(n)
        stub.__dict__.update(attrs)
    sys.modules.update(stubs)
    try:
        module = __import__(name)
        _LOADED[name] = module
        return module
    except Exception:   # pragma: no cover - an interpreter whose module asks for more: the real ones
        pass
    finally:
        for n, stub in stubs.items():
            if sys.modules.get(n) is stub:
                del sys.modules[n]
    return __import__(name)


#: The modules loaded here with stand-ins (name: module), for :func:`hide`.
_LOADED: "dict[str, Any]" = {}


def hide() -> None:
    """Take the modules loaded here with stand-ins out of ``sys.modules`` (wholetrace keeps
    its references): the program's own ``import array`` or ``import sqlite3`` then loads a
    module of its own (both initialise per module: a new module, new types), importing
    ``collections.abc`` or ``functools`` as in a plain run.  Record calls it just before the
    program's first line (``runtime.cli``)."""
    for name, module in _LOADED.items():
        if sys.modules.get(name) is module:
            del sys.modules[name]
    hidden = _LOADED.get("_sqlite3")
    if hidden is not None:   # the package, if something imported it since (record --weights: numba ->
        for name in ("sqlite3.dbapi2", "sqlite3"):   # coverage -> sqlite3), goes too: else the program's
            module = sys.modules.get(name)            # ``import sqlite3`` finds it tied to the hidden module
            if module is not None and getattr(module, "Connection", None) is hidden.Connection:
                del sys.modules[name]
    _LOADED.clear()


def _array() -> "Any":
    import _collections_abc

    # ``PyImport_ImportModule("collections.abc")`` imports ``collections`` too (its package)
    return _load("array", {"collections": {}, "collections.abc": {"MutableSequence": _collections_abc.MutableSequence}})


def _sqlite3() -> "Any":
    try:   # the C module ``sqlite3`` re-exports: ``sqlite3.dbapi2`` imports datetime (record's start-up)
        return _load("_sqlite3", {"functools": {"lru_cache": lru_cache}})
    except ImportError:  # pragma: no cover - a build without it
        import sqlite3

        return sqlite3


array = _array()
sqlite3 = _sqlite3()
#: ``array.array`` of :data:`array` (what wholetrace's modules that make arrays call ``array``)
ArrayType = array.ArrayType
