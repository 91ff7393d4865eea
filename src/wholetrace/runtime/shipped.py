"""Instrumented code pickled by value (cloudpickle, dill): the probes' run-time constants travel by reference, to the receiving process's recording or to inert stand-ins."""

from __future__ import annotations

from _contextvars import ContextVar
from _operator import methodcaller

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any, Callable

    from wholetrace.runtime.probes import RunState

#: token -> (the recording's run state, its ``Edges``): the recordings of this process (a fork
#: child inherits its parent's, whose objects it keeps using: the same ids)
LIVE: dict[int, tuple[RunState, object]] = {}


class _Vars(dict):   # type: ignore[type-arg]
    """The reductions of the recordings' context variables; any other ``ContextVar`` reduces
    as without a recording, raising its own error from C (``__missing__``, a C callable: no
    frame of ours in the traceback)."""

    __slots__ = ()
    __missing__ = methodcaller("__reduce_ex__", 4)


#: ``copyreg.dispatch_table[ContextVar]`` is its ``__getitem__`` (:func:`install`)
VARS = _Vars()

_INERT: dict[str, object] = {}
NOTED: list[bool] = []   # (this process left its note)


def register(state: RunState, edges: object) -> None:
    """Make ``state``'s objects pickle by reference to a token only this process (and its fork
    children) knows; a process that does not know it gets inert stand-ins."""
    import os   # (already imported at start-up)
    token = int.from_bytes(os.urandom(8), "little") | 1
    LIVE[token] = (state, edges)
    VARS[state.streams.current] = (resolve, (token, "current"))
    VARS[state.streams.root] = (resolve, (token, "root"))
    VARS[state.streams.owned] = (resolve, (token, "owned"))


def _inert(kind: str, n: int = 0) -> object:
    """A stand-in that records nothing: a stream whose appends keep nothing, counters nobody reads."""
    if kind == "counts":
        from wholetrace.runtime.probes import new_counts
        return new_counts(n)
    obj = _INERT.get(kind)
    if obj is None:
        from _collections import deque   # (collections is not imported at start-up)

        from wholetrace.runtime.probes import Edges
        sink = deque(maxlen=0)   # append and extend keep nothing
        if kind == "edges":
            obj = Edges(sink)   # type: ignore[arg-type]
        elif kind == "streams":
            from wholetrace.runtime.streams import Streams
            obj = Streams.__new__(Streams)   # (its ``new`` returns the sink; ``here`` calls ``new``)
            obj.sink = sink.append
            obj.owned, obj.unowned = _inert("owned"), (_inert("unowned"), None)
        elif kind == "unowned":   # (its ``_is_owned()`` is false: the prologue calls the inert ``new``)
            from wholetrace.runtime.streams import Unowned
            obj = Unowned()
        else:   # "current" (get(None) is None: the prologue then calls the inert ``new``), "owned"
            # (get(unowned) is unowned: the same) or "root"
            obj = ContextVar(f"wholetrace_{kind}", default=[None] if kind == "root" else None)
            VARS[obj] = (resolve, (0, kind))
        _INERT[kind] = obj
    return obj


#: why a process that loads such code is listed as not recorded (``wholetrace info``)
WHY = "ran instrumented code pickled by value in another process (cloudpickle, dill): its calls here are not recorded"


def _note() -> None:
    """In a child of a recording (``WHOLETRACE_CHILD``): leave the note ``info`` lists (the
    first time this process loads such code): what runs from it here is lost."""
    import os
    from wholetrace.runtime.children import ENV
    config = os.environ.get(ENV)
    if config:
        import json
        from wholetrace.runtime.subprocs import _note_unrecorded
        try:
            _note_unrecorded(json.loads(config), WHY)
        except ValueError:   # (a malformed variable: the program runs as it would)
            pass


def resolve(token: int, kind: str, base: int = 0, n: int = 0) -> object:
    """The object ``by_reference`` named, in this process: the live recording's, or inert."""
    live = LIVE.get(token)
    if live is None:
        if not NOTED:
            NOTED.append(True)
            _note()
        return _inert(kind, n)
    state, edges = live
    if kind == "counts":
        return state.file_counts[base]
    if kind == "edges":
        return edges
    streams = state.streams
    return {"streams": streams, "current": streams.current, "owned": streams.owned,
            "unowned": streams.unowned[0]}.get(kind, streams.root)


def by_reference(obj: object) -> tuple[Callable[..., object], tuple[Any, ...]]:
    """``__reduce__`` of the probes' constants: a reference (token, kind) instead of the object."""
    for token, (state, edges) in LIVE.items():
        streams = state.streams
        found = "streams" if obj is streams else "edges" if obj is edges else "unowned" if obj is streams.unowned[0] else None
        if found is not None:
            return resolve, (token, found)
        for base, counts in state.file_counts.items():
            if counts is obj:
                return resolve, (token, "counts", base, len(type(obj).__slots__))   # type: ignore[attr-defined]
    for kind, inert in _INERT.items():
        if inert is obj:
            return resolve, (0, kind)
    kind = {"counts": "counts", "Streams": "streams", "Unowned": "unowned"}.get(type(obj).__name__, "edges")   # of a finished recording
    return resolve, (0, kind, 0, len(getattr(type(obj), "__slots__", ())))


def install(_module: Any = None) -> None:
    """Once ``copyreg`` is imported (by the program: the finder's ``on_import``; by the instrumenter's
    miss path on 3.12, ``ast`` imports ``re``: ``misspath.AFTER_LOAD``): pickle the recording's
    context variables by reference (a ``ContextVar`` cannot take a ``__reduce__`` of its own)."""
    import sys
    copyreg = sys.modules.get("copyreg")
    if copyreg is not None:
        copyreg.dispatch_table.setdefault(ContextVar, VARS.__getitem__)
