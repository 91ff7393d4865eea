"""Free-threaded interpreters: recording needs the GIL, so it is refused without one.

The probes rely on what the GIL makes atomic: ``count`` increments ``_wt_C[k] += 1`` on a list
shared by every thread, and the trace modes hand whole chunks from a thread's buffer to the
flusher.  On a free-threaded build (3.13t, PEP 703) running without the GIL, concurrent
increments would be lost.  Rather than lose counts silently, ``record`` and ``profile`` stop
with a one-line error naming the switch that turns the GIL back on (``PYTHON_GIL=1`` or
``-X gil=1``); a free-threaded build with the GIL enabled records as usual.
"""

from __future__ import annotations

import sys

from wholetrace.errors import UsageError


def free_threaded_build() -> bool:
    """True on a free-threaded (``--disable-gil``) build of CPython, whether or not the GIL is on."""
    import sysconfig   # here: only the tests ask, and recording's start-up need not import it

    return bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def gil_enabled() -> bool:
    """True if the GIL is on now (always before 3.13)."""
    probe = getattr(sys, "_is_gil_enabled", None)
    return True if probe is None else bool(probe())


def require_gil() -> None:
    """Raise ``UsageError`` when this interpreter runs without the GIL."""
    if not gil_enabled():
        raise UsageError("recording needs the GIL, and this free-threaded Python runs without it: "
                         "run with PYTHON_GIL=1 (or python -X gil=1)")
