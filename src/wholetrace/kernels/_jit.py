"""The one shared numba decorator for every kernel: cached, GIL-free, no Python objects."""

from __future__ import annotations

from typing import Any, Callable, TypeVar

import numba

F = TypeVar("F", bound=Callable[..., Any])


def kernel(fn: F) -> F:
    """Compile ``fn`` in nopython mode with ``cache=True`` and ``nogil=True``.

    The pure-Python original stays reachable as ``fn.py_func`` (the reference twin);
    under ``NUMBA_DISABLE_JIT=1`` the function is returned as plain Python.
    """
    return numba.njit(cache=True, nogil=True)(fn)  # type: ignore[no-any-return]
