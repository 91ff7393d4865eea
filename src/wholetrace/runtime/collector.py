"""The cyclic garbage collector's counts as the program sees them: restarted at its first line, held while wholetrace works in its thread."""

from __future__ import annotations

import _signal
import _thread
import gc
from itertools import repeat
from types import CodeType


class _Spare:
    """A kept object the collector tracks: freeing one takes one off generation 0's count."""

    __slots__ = ()


#: How many spares :func:`restart` makes (32 bytes; ~200 instructions to make, ~250 to free,
#: and walked by every full collection): what the holds of one recording may take off generation
#: 0's count in all (docs/design.md: a warm small program takes a few hundred; the trial app
#: with pygments and click 9,400 warm, more than 16,384 cold).
POOL = 1 << 10
#: Objects made before the restart (so never counted), freed one at a time by :func:`set_young`.
_SPARE: list[_Spare] = []
#: Objects made, and kept, to raise generation 0's count.
_KEPT: list[_Spare] = []
#: ``_thread._count()`` with the recording's own threads running (:func:`own_threads`): more
#: means the program runs threads, and holds are off (another thread would see the collector off).
_THREADS = [0]


#: The signals a Python handler can be set for (``_signal``: the ``signal`` module's enums are not needed).
_SIGNALS = tuple(sorted(_signal.valid_signals()))
#: The handlers last read, and whether one is the program's.
_SEEN: list = [(), False]


def program_handler() -> bool:
    """True if the program has set a Python signal handler (one of its own, not Python's
    ``default_int_handler`` or one of wholetrace's): it runs in the main thread at any moment,
    so it would run inside a hold, see ``gc.isenabled()`` False and have its ``gc.disable()``
    undone; holds are off then (one ``getsignal`` a signal, the handlers judged again only when
    they changed: ~19,000 instructions an import)."""
    now = tuple(map(_signal.getsignal, _SIGNALS))
    if now != _SEEN[0]:
        _SEEN[:] = [now, any(map(_programs, now))]
    return _SEEN[1]


def _programs(handler: object) -> bool:
    return callable(handler) and handler is not _signal.default_int_handler \
        and not str(getattr(handler, "__module__", "")).startswith("wholetrace.")


def own_threads(n: int) -> None:
    """The recording runs ``n`` threads besides the main one (its flusher, and the threads the
    process ran before it started; ``_thread._count()`` counts a new thread only once it runs)."""
    _THREADS[0] = n


def restart() -> None:
    """Generation counts to (0, 0, 0), start-up's objects to the oldest generation unscanned
    (``gc.freeze(); gc.unfreeze()``), unless something froze objects before (then nothing
    moves); the spares are made first.  Called with automatic collections off, just before
    the program's first line."""
    if len(_SPARE) < POOL:
        _SPARE.extend(map(object.__new__, repeat(_Spare, POOL - len(_SPARE))))
    if not gc.get_freeze_count():
        gc.freeze()
        try:
            gc.collect(2)   # walks nothing (all frozen); empties the free lists, whose state the code cache sets
        finally:
            gc.unfreeze()


class held:
    """Automatic collections off around wholetrace's own work in the program's thread
    (instrumenting a module it imports, or its ``-m`` module): no collection, so no finaliser
    or ``gc`` callback of the program, runs inside it, and on leaving generation 0's count is
    what it was on entering plus ``extra`` (what loading the code from a ``.pyc`` would have
    added: :func:`containers`), whether the instrumented code came from the cache or was
    built.  Does nothing when collections are off already (the program's, or record's
    start-up's), or when the program runs threads of its own: one of them could see the
    collector off (``gc.isenabled()``) or have its ``gc.disable()`` undone, or has set a signal
    handler of its own (:func:`program_handler`).  The collector is on again when the hold
    ends, whatever the way out (an exception, a ``KeyboardInterrupt`` landing in it)."""

    __slots__ = ("on", "count", "extra")

    def __init__(self) -> None:
        self.on = False
        self.count = self.extra = 0

    def __enter__(self) -> held:
        self.on = gc.isenabled() and _thread._count() <= _THREADS[0] and not program_handler()
        if self.on:
            self.count = gc.get_count()[0]
            gc.disable()   # last: no Python call after it that could raise before the with's body
        return self

    def __exit__(self, *exc: object) -> None:
        if self.on:
            try:   # Python calls: a KeyboardInterrupt may land in them
                _fill_free_lists()
                set_young(self.count + self.extra)
            finally:
                gc.enable()


#: The list and dict free lists' length (3.11-3.13: ``PyList_MAXFREELIST``, ``PyDict_MAXFREELIST``).
FREE_LIST = 80


def _fill_free_lists() -> None:
    """The list and dict free lists full, whatever wholetrace's work left in them (a cache miss
    fills them, a hit empties them): a list or dict taken from them is not counted in
    generation 0's count, nor one given back, so the program's next allocations count alike."""
    made = [[{}] for _ in range(FREE_LIST)]
    del made


def release() -> None:
    """Free the spares left and the objects kept (the recording ends): the interpreter's last
    collections do not walk them."""
    _SPARE.clear()
    _KEPT.clear()


def set_young(target: int) -> None:
    """Generation 0's count to ``target`` by freeing spares or keeping new objects (the count
    goes down by one for each tracked object freed, up by one for each made); short of spares,
    it stays above."""
    have = gc.get_count()[0]
    while have > target and _SPARE:
        del _SPARE[-1]
        have -= 1
    if have < target:
        _KEPT.extend(map(object.__new__, repeat(_Spare, target - have)))


def containers(code: CodeType) -> int:
    """The tuples a code tree's unmarshalling makes (constants, names, local names of each code
    object, and its tuple and frozenset constants): an estimate of the tracked objects a plain
    import's ``.pyc`` load leaves."""
    n = 0
    todo = [code]
    while todo:
        co = todo.pop()
        n += 3
        for c in co.co_consts:
            if isinstance(c, CodeType):
                todo.append(c)
            elif isinstance(c, (tuple, frozenset)):
                n += 1
    return n
