"""The interpreter's steps between the main module's end and ``atexit``: threads joined, daemon threads listed."""

# Split from ``runtime.runner`` (wave 18), whose ``record`` calls these once the program has ended;
# imported with the runner at start-up (nothing is imported while the program's threads still run).

from __future__ import annotations

import _thread
import sys

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any


def flush_io() -> None:
    """What ``python SCRIPT`` (and ``python < SCRIPT``) does once the main module's code has run,
    before it reports an uncaught exception (CPython's ``flush_io``): ``sys.stderr.flush()``
    then ``sys.stdout.flush()``, whatever they raise dropped.  ``-c`` and ``-m`` do not."""
    for name in ("stderr", "stdout"):
        try:
            getattr(sys, name).flush()
        except BaseException:   # noqa: BLE001 - as the interpreter: cleared
            pass


def _shut_down() -> None:
    """``threading._shutdown`` once it has run (and raised): nothing left to do."""


def _daemon_threads() -> list[str]:
    """The names of the program's daemon threads still running (see :func:`_program_threads`)."""
    try:
        thread = _stdlib_thread()
        return [thread.name.fget(t) for t in _program_threads()
                if thread.daemon.fget(t) and thread.is_alive(t)]
    except Exception:   # noqa: BLE001 - nothing here may skip live.stop
        return []


def _stdlib_thread() -> Any:
    """``threading.Thread`` as the standard library made it (a program may rebind the module's
    attribute): a class in the main thread's type's MRO."""
    th = sys.modules.get("threading")
    for cls in type(th._main_thread).__mro__:
        if cls.__module__ == "threading" and cls.__qualname__ == "Thread":
            return cls
    raise LookupError("threading.Thread")


def _program_threads() -> list[Any]:
    """The program's ``threading`` threads but the current one, as ``threading.enumerate()``
    lists them (no list when the program has not imported ``threading``: wholetrace does not
    import it, its flusher is a ``_thread`` thread; docs/design.md, "Record's start-up,
    wave 15").  Compared by ident (``current_thread()`` in a thread ``threading`` does not
    know would add a dummy thread); a program's own ``threading.py`` without ``enumerate``
    lists nothing."""
    # threading.enumerate()'s own lists: a program may have patched enumerate (wholetrace calls
    # no program code; wave 16), and Thread's own name/daemon/is_alive, not a subclass's
    th = sys.modules.get("threading")
    try:
        if th is None or not isinstance(th._active, dict) or not isinstance(th._limbo, dict):
            return []
        thread = _stdlib_thread()
        with th._active_limbo_lock:
            threads = list(th._active.values()) + list(th._limbo.values())
        me = _thread.get_ident()
        return [t for t in threads if isinstance(t, thread) and thread.ident.fget(t) != me]
    except Exception:   # noqa: BLE001 - not the standard library's threading
        return []


def _wait_for_threads() -> Any:
    """What the interpreter does before the ``atexit`` functions: the program's
    ``threading._shutdown()`` when it imported ``threading`` (its ``_register_atexit``
    callbacks, which wake ``concurrent.futures``' idle workers; the main thread marked
    stopped; ``_SHUTTING_DOWN``; joins until no non-daemon thread is left, threads started
    meanwhile included).  The interpreter's own call at finalisation then returns at once
    (docs/design.md, "Record's start-up, wave 15").  If it raises (a ``_register_atexit``
    callback), the exception is reported as unraisable and the rest of it skipped, as the
    interpreter does; then the ``threading`` module is returned (else None), whose
    ``_shutdown`` must not run again at finalisation (wave 16)."""
    th = sys.modules.get("threading")
    shutdown = getattr(th, "_shutdown", None) if th is not None else None
    if shutdown is None:   # not imported, or a program's threading.py without it
        return None
    try:
        shutdown()
    except BaseException as exc:   # noqa: BLE001 - a _register_atexit callback's (SystemExit and
        # KeyboardInterrupt too, a Ctrl-C while joining): reported as the interpreter does
        _unraisable(exc.with_traceback(exc.__traceback__.tb_next if exc.__traceback__ else None), th)
        return th
    return None


def _unraisable(exc: BaseException, obj: object) -> None:
    """``PyErr_WriteUnraisable(obj)`` of ``exc``, as the interpreter reports a ``threading._shutdown``
    that raised (``Exception ignored in: <module 'threading' ...>``, 3.13: ``Exception ignored
    on threading shutdown:``, and the traceback from ``_shutdown`` down): through the program's
    ``sys.unraisablehook``."""
    how = (None, obj) if sys.version_info < (3, 13) else ("Exception ignored on threading shutdown", None)
    report_unraisable(exc, *how)


def report_unraisable(exc: BaseException, err_msg: str | None, obj: object) -> None:
    """Call the program's ``sys.unraisablehook`` as ``PyErr_WriteUnraisable`` does: with the
    interpreter's own ``UnraisableHookArgs`` (the C default hook accepts nothing else, and a
    program's hook sees the real type); a hook that raises is reported through the default."""
    got: list[Any] = []
    hook, sys.unraisablehook = sys.unraisablehook, got.append

    class _Probe:       # one unraisable exception, caught, for the hook's argument type
        def __del__(self) -> None:
            raise RuntimeError

    try:
        _Probe()
    finally:
        sys.unraisablehook = hook
    args = type(got[0])((type(exc), exc, BaseException.__traceback__.__get__(exc), err_msg, obj))  # not through
    # the exception's own __getattribute__ (review22c LOW-4)
    try:
        hook(args)
    except Exception as e:  # noqa: BLE001 - as the interpreter: the hook's own error, through the default
        tb = BaseException.__traceback__.__get__(e)
        tb = tb.tb_next if tb is not None else None     # from the hook down
        sys.__unraisablehook__(type(args)((type(e), e, tb, "Exception ignored in sys.unraisablehook", hook)))
