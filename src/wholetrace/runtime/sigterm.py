"""SIGTERM in ``multiprocessing`` children: a watcher thread re-sends it to the main thread until ``Children._terminated`` has run."""

# Split from ``runtime.children`` (wave 17): imported only by a ``multiprocessing`` child, when
# ``Children._mp_child`` installs the handler.

from __future__ import annotations

import _thread
import os
import _signal as signal   # the C module ``signal`` wraps (see ``runtime.children``)
import time

from wholetrace.store.fdguard import high_pipe

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from wholetrace.runtime.children import Children

#: How long the watcher lets the main thread run ``Children._terminated`` before sending SIGTERM again.
NUDGE_SECONDS = 0.05
#: The wakeup pipe this process set (read end, write end); a fork child inherits the setting, not the reader.
_WAKEUP: tuple[int, int] | None = None


def watch(ch: Children) -> None:
    """Make sure a SIGTERM reaches ``ch._terminated`` (main thread only).

    Python runs a handler in the main thread at its next check between bytecodes.  A signal
    that arrives while the main thread waits for the GIL (held by the flusher) just before a
    blocking call that is not interrupted again is never handled: an idle pool worker then waits
    in ``SemLock.acquire`` forever and ``Pool.terminate`` hangs.  Python's C handler also writes
    the signal number to the wakeup fd, from whatever thread it ran on; a watcher thread reads
    it and sends SIGTERM to the main thread again (``pthread_kill``: the blocking call returns
    EINTR and runs the handler) until the handler has run.  A wakeup fd of the program's own is
    left alone (the watcher is then not started).  The watcher is a bare ``_thread`` thread, which
    the program does not see in ``threading.enumerate()``."""
    global _WAKEUP
    r, w = high_pipe()
    os.set_blocking(w, False)
    try:
        old = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except (ValueError, OSError):
        os.close(r)
        os.close(w)
        return
    if old != -1 and (_WAKEUP is None or old != _WAKEUP[1]):
        signal.set_wakeup_fd(old, warn_on_full_buffer=False)
        os.close(r)
        os.close(w)
        return
    if _WAKEUP is not None:                 # inherited from the parent process: nobody reads it here
        for fd in _WAKEUP:
            os.close(fd)
    _WAKEUP = (r, w)
    main = _thread.get_ident()   # (called in the main thread: ``Children._mp_child``)
    term = int(signal.SIGTERM)

    def run() -> None:
        try:
            while data := os.read(r, 256):
                while term in data and not ch.term_seen and signal.getsignal(signal.SIGTERM) == ch._terminated:
                    time.sleep(NUDGE_SECONDS)
                    if not ch.term_seen:
                        signal.pthread_kill(main, signal.SIGTERM)
        except Exception:       # noqa: BLE001 - the process is ending; nothing to report to
            return

    _thread.start_new_thread(run, ())     # a bare thread: not in threading.enumerate()
