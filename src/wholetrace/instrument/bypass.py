"""In-scope modules loaded without wholetrace's loader (a program's finder in front of ours, a zip archive), found once when the recording stops."""

from __future__ import annotations

import sys

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from collections.abc import Iterator
    from typing import Any
    from wholetrace.instrument.loader import Scope

# Everything below reads objects statically (exact types, the types' own descriptors): the check
# runs after the program ended and must run none of its code (a proxy's ``__getattr__`` or
# ``__class__`` property, a lazily loaded module's ``__getattribute__``: review24a HIGH-1/2).
_MODULE = type(sys)
_MODULE_DICT = _MODULE.__dict__["__dict__"].__get__
_CLASS_DICT = type.__dict__["__dict__"].__get__
_TYPE_NAME = type.__dict__["__name__"].__get__
_SPEC = type(sys.__spec__)   # importlib's ModuleSpec (origin and loader: plain instance attributes)
_WRAPPERS = (staticmethod, classmethod)


def _function_type() -> None:
    """(its type: ``types.FunctionType`` without importing ``types``)"""


_FUNCTION = type(_function_type)
_CODE = type(_function_type.__code__)


def _modules(preloaded: dict[str, Any] | None = None) -> Iterator[tuple[str, dict, str]]:
    """(name, namespace, origin) of each loaded module of ``sys.modules`` from a file, but those
    still the very module that was there when the finder was installed (``preloaded``: name ->
    id; imported by wholetrace or the interpreter, not by the program's loaders); a module
    whose class intercepts attribute reads (``importlib.util._LazyModule`` not loaded yet: it ran
    no code) and any other object are skipped."""
    for name, module in list(sys.modules.items()):
        if type(name) is not str or preloaded is not None and (ref := preloaded.get(name)) is not None and ref() is module:
            continue   # (a key of another type: hashing it could run the program's code; no id(): an audit event)
        cls = type(module)
        if not issubclass(cls, _MODULE) or any("__getattribute__" in _CLASS_DICT(c) or "__getattr__" in _CLASS_DICT(c)
                                               for c in cls.__mro__ if c is not _MODULE and c is not object):
            continue
        ns = _MODULE_DICT(module)
        spec = ns.get("__spec__")
        origin = object.__getattribute__(spec, "__dict__").get("origin") if type(spec) is _SPEC else None
        if type(origin) is not str:
            origin = ns.get("__file__")
        if type(origin) is str:
            yield name, ns, origin


def bypassed(scope: Scope, instrumented: list[str], noted: list[str],
             preloaded: dict[str, Any] | None = None, declined: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """(module name, why) of each module in ``sys.modules`` from a ``.py`` file ``scope`` wants
    whose code the instrumenter did not compile (``instrumented``: its files; ``noted``: names
    and files already in the recording's notes; ``preloaded``: :func:`_modules`; ``declined``:
    name -> file of the modules the finder found out of scope, the same answer).  One pass over
    ``sys.modules`` at the end: nothing per call."""
    done = set(instrumented) | set(noted)
    declined = declined or {}
    out: list[tuple[str, str]] = []
    for name, ns, origin in _modules(preloaded):
        if origin in done or name in done or not origin.endswith(".py") or declined.get(name) == origin:
            continue
        try:
            wanted = scope.wants(name, origin)
        except (OSError, ValueError):
            continue
        if wanted:
            loader = ns.get("__loader__")
            spec = ns.get("__spec__")
            if loader is None and type(spec) is _SPEC:
                loader = object.__getattribute__(spec, "__dict__").get("loader")
            out.append((f"{name} ({origin})", f"loaded by {_TYPE_NAME(type(loader))}, nothing recorded"))
    return out


def _functions(ns: dict) -> Iterator[object]:
    """The plain functions of a namespace and of its classes (static and class methods unwrapped),
    found by exact type: nothing of the program runs."""
    for value in list(ns.values()):
        inner = list(_CLASS_DICT(value).values()) if issubclass(type(value), type) else [value]
        for f in inner:
            if type(f) in _WRAPPERS:
                f = object.__getattribute__(f, "__func__")
            if type(f) is _FUNCTION:
                yield f


def recompiled(instrumented: list[str], marker: object, noted: list[str],
               preloaded: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    """(module.qualname, why) of the functions (module level, and in the module's classes) of
    the instrumented modules in ``sys.modules`` whose code comes from their file but holds no
    probe (``marker``: a constant every instrumented body holds, ``emit.NO_TB``'s object): code
    the program compiled itself from the source (typeguard's ``@typechecked``).  ``noted``:
    ``file:qualname`` already in the notes (bodies left to numba).  Lambdas are not bodies of
    their own (no probe of theirs: review24a MED-1) and are never named."""
    files = set(instrumented)
    seen = set(noted)
    out: list[tuple[str, str]] = []
    for name, ns, origin in _modules(preloaded):
        if origin not in files:
            continue
        for f in _functions(ns):
            code = f.__code__   # (an exact function: its own descriptors, no program code)
            qualname = f.__qualname__
            if type(code) is not _CODE or code.co_filename != origin or code.co_name == "<lambda>" \
                    or type(qualname) is not str:
                continue
            where = f"{origin}:{qualname}"
            if where not in seen and not any(c is marker for c in code.co_consts):
                seen.add(where)
                out.append((f"{name}.{qualname}", "code compiled by the program, nothing recorded"))
    return out


def end_notes(scope: Scope, instrumented: list[str], unrecorded: list[str], marker: object,
              left_out: list[tuple[str, str]], preloaded: dict[str, Any] | None = None,
              declined: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """:func:`bypassed` and :func:`recompiled`'s notes; an error in either costs at most the
    notes, never the recording."""
    try:
        return bypassed(scope, instrumented, unrecorded, preloaded, declined) \
            + recompiled(instrumented, marker, [w for w, _why in left_out], preloaded)
    except Exception:   # (a module whose namespace is not a dict, a program's odd object: no notes)
        return []
