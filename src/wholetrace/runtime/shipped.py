"""Instrumented code pickled by value (cloudpickle, dill): the probes' run-time constants travel by reference, to the receiving process's recording or to inert stand-ins."""

from __future__ import annotations

from _contextvars import ContextVar
from _operator import methodcaller

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any, Callable

    from wholetrace.runtime.probes import RunState

#: token -> the recording's objects by kind ("streams", "edges", "helpers", "held", "driven",
#: "current", "root"; "state": its run state, for the counts): the recordings of this process (a
#: fork child inherits its parent's, whose objects it keeps using: the same ids)
LIVE: dict[int, dict[str, Any]] = {}


class _Vars(dict):   # type: ignore[type-arg]
    """The reductions of the recordings' context variables; any other ``ContextVar`` reduces
    as without a recording, raising its own error from C (``__missing__``, a C callable: no
    frame of ours in the traceback)."""

    __slots__ = ()
    __missing__ = methodcaller("__reduce_ex__", 4)


#: ``copyreg.dispatch_table[ContextVar]`` is its ``__getitem__`` (:func:`install`)
VARS = _Vars()

_INERT: dict[str, object] = {}
NOTED: list[int] = []   # (the pid of this process once it left its note: a fork child leaves its own)


def register(state: RunState, edges: object, helpers: object, driven: object) -> None:
    """Make ``state``'s objects pickle by reference to a token only this process (and its fork
    children) knows; a process that does not know it gets inert stand-ins."""
    import os   # (already imported at start-up)
    token = int.from_bytes(os.urandom(8), "little") | 1
    streams = state.streams
    LIVE[token] = {"state": state, "streams": streams, "edges": edges, "helpers": helpers,
                   "held": state.namespace_reraise, "driven": driven, "current": streams.current, "root": streams.root}
    VARS[streams.current] = (resolve, (token, "current"))
    VARS[streams.root] = (resolve, (token, "root"))


class _Current:
    """The inert stream variable: ``get(None)`` and ``get()`` both give the sink (the body
    probes fetch the stream at each probe, ``current(None)(n)``), and nothing is set in the
    program's context."""

    __slots__ = ("get",)


def _inert(kind: str, n: int = 0) -> object:
    """A stand-in that records nothing: a stream whose appends keep nothing, counters nobody reads."""
    if kind == "counts":
        from wholetrace.runtime.probes import new_counts
        return new_counts(n)
    obj = _INERT.get(kind)
    if obj is None:
        from _collections import deque   # (collections is not imported at start-up)

        from wholetrace.runtime import probes
        from wholetrace.runtime.streams import Streams
        sink = deque(maxlen=0)   # append and extend keep nothing
        streams = _INERT.get("streams")
        if streams is None:
            streams = _INERT["streams"] = Streams.__new__(Streams)   # (no attribute: its ``new`` returns the sink)
            streams.sink = sink.append
        if kind == "edges":
            obj = probes.Edges(sink)   # type: ignore[arg-type]
        elif kind == "streams":
            obj = streams
        elif kind in ("held", "driven"):
            obj = probes.Held()
        elif kind == "helpers":
            obj = probes.BodyHelpers(_inert("current").get, streams.new, sink,   # type: ignore[attr-defined]
                                     probes.ExceptionSites(), _inert("held"))   # type: ignore[arg-type]
        elif kind == "current":
            from _functools import partial
            obj = _Current()
            obj.get = partial(dict.get, {None: streams.sink}, None)   # get() and get(None): d.get(None[, None])
        else:   # "root"
            obj = ContextVar("wholetrace_root", default=[None])
            VARS[obj] = (resolve, (0, kind))
        _INERT[kind] = obj
    return obj


#: why a process that loads such code is listed as not recorded (``wholetrace info``); and a
#: recorded process (one with a recording of its own: ``LIVE``), listed as partly recorded
WHY = "ran instrumented code pickled by value in another process (cloudpickle, dill): its calls here are not recorded"
WHY_RECORDED = ("calls of instrumented code pickled by value in another recording (cloudpickle, dill) "
                "not recorded; the rest of this process is")


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
            _note_unrecorded(json.loads(config), WHY_RECORDED if LIVE else WHY, partial=bool(LIVE))
        except ValueError:   # (a malformed variable: the program runs as it would)
            pass


def resolve(token: int, kind: str, base: int = 0, n: int = 0) -> object:
    """The object ``by_reference`` named, in this process: the live recording's, or inert."""
    live = LIVE.get(token)
    if live is None:
        import os
        if os.getpid() not in NOTED:
            NOTED.append(os.getpid())
            _note()
        return _inert(kind, n)
    return live["state"].file_counts[base] if kind == "counts" else live[kind]


def by_reference(obj: object) -> tuple[Callable[..., object], tuple[Any, ...]]:
    """``__reduce__`` of the probes' constants: a reference (token, kind) instead of the object."""
    for token, live in LIVE.items():
        for kind, known in live.items():
            if known is obj and kind != "state":
                return resolve, (token, kind)
        for base, counts in live["state"].file_counts.items():
            if counts is obj:
                return resolve, (token, "counts", base, len(type(obj).__slots__))   # type: ignore[attr-defined]
    for kind, inert in _INERT.items():
        if inert is obj:
            return resolve, (0, kind)
    kind = {"counts": "counts", "Streams": "streams", "Edges": "edges", "BodyHelpers": "helpers"}.get(
        type(obj).__name__, "held")   # of a finished recording
    return resolve, (0, kind, 0, len(getattr(type(obj), "__slots__", ())))


#: the modules of the picklers that pickle code by value (cloudpickle, and the copies joblib and
#: Ray vendor; dill): their picklers alone learn the recording's context variables (:func:`install`)
PICKLERS = ("cloudpickle.cloudpickle", "joblib.externals.cloudpickle.cloudpickle", "ray.cloudpickle.cloudpickle",
            "srsly.cloudpickle.cloudpickle", "dill._dill")


def install(_module: Any = None) -> None:
    """Once a pickler of code is imported (the finder's ``on_import``): its pickler reduces the
    recording's context variables by reference (a ``ContextVar`` cannot take a ``__reduce__`` of
    its own); ``copyreg.dispatch_table``, plain ``pickle`` and ``copy`` stay as without a recording."""
    import sys
    for name in PICKLERS:
        pickler = getattr(sys.modules.get(name), "Pickler", None)
        table = getattr(pickler, "dispatch_table", None)
        if hasattr(table, "maps"):   # cloudpickle: a ChainMap of its own reducers and copyreg's
            table.maps[0].setdefault(ContextVar, VARS.__getitem__)   # type: ignore[union-attr]
        elif pickler is not None and table is None:   # dill: the Python pickler reads copyreg's unless it has one
            from collections import ChainMap   # (dill imported it)

            import copyreg
            pickler.dispatch_table = ChainMap({ContextVar: VARS.__getitem__}, copyreg.dispatch_table)
