"""The probe contract's names: the locals probe code binds and the placeholders standing for run-time objects in templates.

docs/design.md ("Probe contract") states the contract: run-time objects are placeholder
constants (:func:`runtime_constant`) relocated at load into the recording's own objects, never
builtins; functions use a few locals whose names contain a dot (no source can spell them).
This module is what the runtime and the template cache read on every recording
(``runtime.probes.runtime_objects``, ``instrument.cache.relocate``).  The code that builds
probes is imported on a cache miss only (wave 17: split from here, still imported from here):
``instrument.probecode`` (``Emitter``), ``instrument.handledtb`` (``star_tb``) and ``instrument.probeast`` (nodes and
their positions).
"""

from __future__ import annotations

import sys

from wholetrace.events import LEAVE, LEAVE_PATH, NO_PATH  # noqa: F401 (NO_PATH: read from here too)

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from wholetrace.instrument.probeast import (artificial, ast_call, ast_const, ast_name, first_evaluated, locate,
                                                place, rt, start_line)
    from wholetrace.instrument.handledtb import star_tb
    from wholetrace.instrument.probecode import Emitter

# --- locals of instrumented functions (module and class bodies bind none)
A = "wt.a"           # trace modes: append method of the current stream
R = "wt.r"           # count and witness modes: statement id of the last re-raise site passed
SEEN = "wt.s"        # the same modes: traceback entry the frame's last handler saw (held, see Emitter.held)
BARE = "wt.b"        # blocks and full modes: statement id of the bare ``raise`` last passed, None once recorded
HOLD = "wt.t"        # a return value held while the return edge's probe runs
LOCAL = "wt.n"       # count modes: ``wt.n<j>`` counts the function's j-th counter in the activation
EXC_OWN = "wt.e"     # the exception in a guard whose ``finally`` is ours (both re-raise in place)
EXC_GUARD = "wt.g"   # the exception in a guard around a ``finally`` of the program
EXC_CAUGHT = "wt.x"  # the exception in a handler of the program that binds no name
LASTI = "wt.l"       # temporary: instruction index of a traceback entry
TB = "wt.u"          # temporary (count and witness modes, bodies with re-raise sites): the handled
                     # traceback entry, read once a handler probe and dropped at its end
XLIST = "wt.q"       # count modes: the recording's exception-edge list, fetched in a handler
WITH_VALUE = "wt.w"  # ``__enter__``'s value while a ``with`` target that can raise is stored in the guard
MATCH = "wt.m"       # ``wt.m<N>``: the saved subject of a split ``match``
STAR_HELD = "wt.h"   # ``wt.h<N>``: the traceback entry an ``except*`` handler held (statement N its star-end)
STAR_PENDING = "wt.z"  # True from an ``except*`` handler's end to the next probe (which records it from the star-end)
P = "wt.p"           # path mode: the path register
O = "wt.o"           # path mode: the activation's closing record, set on the edges into EXIT (``Emitter.exit_record``)
D = "wt.d"           # trace modes, coroutines: the activation is driven by hand, not by an asyncio task (``instrument.awaits``)
F = "wt.f"           # the same: the activation's frame, while the prologue finds that out
K = "wt.k"           # the same: the frame below it
WRAP_LEFT = "wt.v"    # the same, a body with an ``async for`` behind a wrapper: non-empty from the wrapper's LEAVE (driven by hand) to the next ENTER


_LEAVE_TABLES: dict[int, tuple[int, ...]] = {}   # a memo dict, not functools.lru_cache (rstart15: no functools at start-up)


def leave_table(num_paths: int) -> tuple[int, ...]:
    """``LEAVE_PATH + p`` for every path id ``p``, then LEAVE (index -1: the register after an
    exception left the activation, ``no_path``)."""
    table = _LEAVE_TABLES.get(num_paths)
    if table is None:
        table = _LEAVE_TABLES[num_paths] = tuple(LEAVE_PATH + p for p in range(num_paths)) + (LEAVE,)
    return table

# --- run-time objects, constants of the compiled code (runtime.probes.runtime_objects)
GET = "get"          # ContextVar.get of the current stream (trace modes)
NEW = "new"          # create a stream for this thread/task
XEDGE = "xedge"      # module/class bodies: record an exception edge
XCOUNT = "xcount"    # module/class bodies, count modes: the same
#: module/class bodies, count and witness modes: their slot of re-raise state in the runtime (a
#: dict: -2 the last re-raise site passed, -1 the held traceback entry, k region k's), reached with
#: C calls only (no frame a program's tracer sees): ``slot(getframe(), no_slot)`` (the bound ``get``
#: of the runtime's dict of slots), ``forget(getframe(), None)`` (its ``pop``)
SLOT, NO_SLOT, FORGET, FRAME = "slot", "no-slot", "forget", "getframe"
#: loops whose ``continue`` crosses cleanup code: the C callables of their wrapping iterator, which
#: records the for-next block before each ``__next__``/``__anext__`` (``instrument.loopwrap``)
LOOP_MAP, LOOP_ZIP, LOOP_SECOND = "map", "zip", "second"
LOOP_EXTEND, LOOP_SELF, LOOP_REPEAT, LOOP_ATTRGETTER = "methodcaller", "stream-list", "repeat", "attrgetter"
LOOP_SETATTR, LOOP_ADD = "setattr", "add"
LOOP_AITER, LOOP_ANEXT, LOOP_ASYNC, LOOP_CALL = "aiter", "anext", "async-loop", "call"
COUNTS = "counts"    # count modes: the file's counters, one slot ``c<j>`` per counter of the file
                     # (a per-file object: ``cache.relocate`` asks for it by the file's first id)
EDGES = "edges"      # count modes: ``.x``, the exception edges, flat (fid, source stmt, target
                     # block); a list cannot be a constant itself (code objects must stay hashable)
INC = "inc"          # module/class bodies, count modes: increment a counter inside an expression
RERAISE_MARK = "exception-reraise"  # sys.exception, marking a guard's re-raise in module/class bodies
RERAISE_MARK_GUARD = "exception-reraise-guard"  # the same in a guard around the program's finally
NO_TB = "no-traceback"   # stands for a missing traceback (tb_lasti -2), and for "none held"
SKIP = "skip"        # witness modes: a C function that ignores its one argument (no record)
VARS = "vars"
#: guards around except* find a group's first exception with these, calling no code of the program
#: (``star_tb``): builtins.type, builtins.issubclass, BaseExceptionGroup, and a group of one
#: never-raised exception (no traceback) standing in for an exception that is no group
TYPE, ISSUBCLASS, GROUP, STAR_HOLDER = "type", "issubclass", "BaseExceptionGroup", "star-holder"
RECURSION_ERROR = "RecursionError"
#: handlers read the handled exception's traceback as ``sys.exc_info()[2]`` (``EXC_INFO``), an
#: exception group's member's through ``BaseException.__traceback__``'s descriptor (``TRACEBACK``, its
#: ``__get__``) and the members through ``BaseExceptionGroup.exceptions``'s (``MEMBERS``): reading
#: ``exc.__traceback__`` ran an exception class's ``__getattribute__`` or a ``__traceback__`` it
#: defines (design.md, wave 22)
EXC_INFO, TRACEBACK, MEMBERS = "exc-info", "traceback", "exceptions"
#: count modes on 3.11 (and 3.11's ``except*`` member reads): the built-in exception classes whose
#: attributes a program cannot change (static types), a frozenset (``instrument.handledtb``)
BUILTIN_EXCEPTIONS = "builtin-exceptions"
#: coroutines' prologues (``instrument.awaits.hand_flag``): ``id``, the running task's root frame
#: id (a context variable's ``get``), and the ``get``/``__setitem__`` of the runtime's dict frame id -> the code
#: of an instrumented coroutine activation driven by a task (None: driven by hand)
ID, ROOT, DRIVEN_GET, DRIVEN_SET = "id", "root", "driven-get", "driven-set"

#: Marks a placeholder constant; placeholders are frozensets, a type no literal of the
#: program produces in these positions.
MARK = "\x00wholetrace"
#: Site tables are filled in when the template is compiled (``instrument.bytecode``).
SITES_MARK = "\x00wholetrace-sites"
#: Python 3.11 counts C calls towards the recursion limit: trace-mode prologues get one call
#: of headroom (runtime.recursion) and turn the prologue's own failure back into the error
#: the call would have raised without instrumentation.
C_CALLS_COUNT = sys.version_info < (3, 12)


def runtime_constant(name: str) -> frozenset[str]:
    """The placeholder of run-time object ``name`` in a template."""
    return frozenset((MARK, name))


def sites_constant(index: int, pad: bool = False) -> frozenset[object]:
    """The placeholder of the site table of the ``index``-th function of a file (``pad``: of
    the one-entry sequence of its type that stands for "no statement")."""
    return frozenset((SITES_MARK, -1 - index if pad else index))


#: Templates number functions and counters from these placeholder origins (``instrument.cache``).
FID_ORIGIN = 3_141_592_653_000_000
COUNTER_ORIGIN = 2_718_281_828_000_000


def counter_slot(counter: int) -> str:
    """The attribute of the file's counter object that holds template counter ``counter``."""
    return f"c{counter - COUNTER_ORIGIN}"


#: The names of the code that builds probes, read here as before wave 17 (``from wholetrace.instrument.emit
#: import Emitter``): by module, imported when first asked for (a cache miss), never at start-up.
_PROBE_CODE = {"Emitter": "probecode", "star_tb": "handledtb", "_counter": "probecode",
               "artificial": "probeast", "ast_call": "probeast", "ast_const": "probeast", "ast_name": "probeast",
               "first_evaluated": "probeast", "locate": "probeast", "place": "probeast", "rt": "probeast",
               "start_line": "probeast", "_position": "probeast", "_FIRST_CHILD": "probeast"}


def __getattr__(name: str) -> object:
    """``Emitter``, ``star_tb`` and the node helpers, from the module that now holds them."""
    module = _PROBE_CODE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(__import__(f"wholetrace.instrument.{module}", fromlist=["_"]), name)
