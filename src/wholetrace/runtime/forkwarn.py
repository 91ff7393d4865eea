"""No fork DeprecationWarning plain python would not print: the flusher is the second thread."""

from __future__ import annotations

import _warnings
import sys
import time

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:
    from typing import Any

#: Python 3.12+ warns when a process with more than one thread forks.  3.12 warns before the
#: after-in-parent fork handlers run, 3.13 after them (docs/design.md, "Record's start-up, wave 15").
WARNS = sys.version_info >= (3, 12)
LATE = sys.version_info >= (3, 13)
HOLD_SECONDS = 0.2   # 3.13: the filter stays until the flusher's first wake-up this long after the fork
_pending: list[tuple[tuple[Any, ...], float]] = []   # (filter entry, not before), at most one


def _threads() -> int:
    """This process's thread count as CPython's fork warning counts it (``/proc/self/stat``)."""
    try:
        with open("/proc/self/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[17])
    except (OSError, ValueError, IndexError):
        return 0


def before_fork(flusher_alive: bool) -> None:
    """Before ``os.fork``: when the flusher is the only other thread (plain python would not
    warn), an ``ignore`` filter for a ``DeprecationWarning`` at the forking line.  Narrow:
    that category, that line number, no Python code called to match it (a message regex
    would need ``re``, a ``match`` method would show in the program's trace hooks)."""
    drop_due(force=True)   # the last fork's (3.13): that os.fork has returned, its warning is past
    if not WARNS or not flusher_alive or _threads() != 2:
        return
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_OWN):
        frame = frame.f_back
    if frame is None:
        return
    entry = ("ignore", None, DeprecationWarning, None, frame.f_lineno)
    _warnings.filters.insert(0, entry)
    _warnings._filters_mutated()
    _pending.append((entry, float("inf")))


def after_fork_parent() -> None:
    """3.12 has warned by now: the filter goes.  3.13 warns after this: the flusher takes it
    out at its first wake-up :data:`HOLD_SECONDS` later (:func:`drop_due`)."""
    if _pending:
        if LATE:
            _pending[0] = (_pending[0][0], time.monotonic() + HOLD_SECONDS)
        else:
            drop_due(force=True)


def drop_due(force: bool = False) -> None:
    """Take the filter out when it is due (or ``force``: the child, the end of the recording)."""
    if _pending and (force or time.monotonic() >= _pending[0][1]):
        entry = _pending.pop()[0]
        try:
            _warnings.filters.remove(entry)
        except ValueError:   # the program reset its filters meanwhile
            return
        _warnings._filters_mutated()


_OWN = __file__.rsplit("/", 2)[0] + "/"     # wholetrace's package directory
