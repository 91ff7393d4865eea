"""The one shared numba decorator for every kernel: cached, GIL-free, no Python objects.

Every numba function of the package is compiled through :func:`kernel`, always with
``cache=True`` and ``nogil=True``.  Two forms::

    @kernel                 # ordinary kernel (may allocate arrays)
    def f(...): ...

    @kernel(nrt=False)      # hot kernel that allocates nothing
    def g(...): ...

    @kernel(nrt=False, inline=True)   # small helper of hot kernels
    def h(...): ...

``nrt=False`` compiles without numba's runtime (NRT).  Without it, a kernel cannot
create, return or slice arrays (numba refuses at compile time), but calls between such
kernels no longer increment and decrement the reference counts of every array argument
with atomic instructions.  For small helpers called millions of times on shared state
arrays those atomics cost several times the useful work (measured on the SEQUITUR
builder, docs/design-sequitur.md).  This uses numba's private ``_nrt`` flag (present and
stable since numba 0.49); it is isolated here so that a numba change touches one line.

``inline=True`` (numba's ``inline="always"``) inlines the function into its callers at
numba-IR level.  Numba otherwise compiles every jitted callee as a separate function
and calls it with each array argument spread into seven machine words; for the small
helpers of the SEQUITUR builder that call overhead was most of the work.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, TypeVar, overload

import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

F = TypeVar("F", bound=Callable[..., Any])


@overload
def kernel(fn: F) -> F: ...


@overload
def kernel(fn: None = None, *, nrt: bool = True, inline: bool = False) -> Callable[[F], F]: ...


def kernel(fn: F | None = None, *, nrt: bool = True, inline: bool = False) -> F | Callable[[F], F]:
    """Compile ``fn`` in nopython mode with ``cache=True`` and ``nogil=True``.

    ``kernel(nrt=False)`` additionally compiles without numba's reference-counting
    runtime (see the module docstring); such a kernel must not allocate arrays.
    ``kernel(inline=True)`` inlines the function into its jitted callers.
    The pure-Python original stays reachable as ``fn.py_func`` (the reference twin);
    under ``NUMBA_DISABLE_JIT=1`` the function is returned as plain Python.
    """
    options: dict[str, Any] = {"cache": True, "nogil": True}
    if not nrt:
        options["_nrt"] = False
    if inline:
        options["inline"] = "always"

    def wrap(f: F) -> F:
        return numba.njit(**options)(f)  # type: ignore[no-any-return]

    return wrap(fn) if fn is not None else wrap


if numba.config.DISABLE_JIT:

    def prefetch(arr: Any, i: int) -> None:
        """No-op in the pure-Python twins."""

else:

    @intrinsic
    def prefetch(typingctx, arr, i):  # type: ignore[no-untyped-def]
        """Hint the CPU to load the cache line of ``arr[i]`` (LLVM ``llvm.prefetch``, read,
        high locality); no effect on results, so a kernel may call it with any index it
        would itself compute next (the SEQUITUR builder's digram slots, the coder's contexts)."""

        def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
            aty = sig.args[0]
            ary = context.make_array(aty)(context, builder, args[0])
            ptr = cgutils.get_item_pointer(context, builder, aty, ary, [args[1]], wraparound=False)
            i32 = ir.IntType(32)
            p8 = ir.IntType(8).as_pointer()  # one declaration for every element type
            fnty = ir.FunctionType(ir.VoidType(), [p8, i32, i32, i32])
            fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
            builder.call(fn, [builder.bitcast(ptr, p8), i32(0), i32(3), i32(1)])
            return context.get_dummy_value()

        return types.void(arr, types.intp), codegen


def cache_depends(names: Any) -> None:
    """Key the numba cache of every kernel defined in the modules ``names`` (imported) on the sources of all of them.

    numba's cache watches only the file that defines a kernel, so a kernel inlining a helper from
    another module would keep a stale copy after an edit of that module (docs/design.md, "Kernels
    in one file").  This hashes the modules' files into each kernel's cache index key (numba's
    ``FunctionCache._index_key``, private but stable since 0.49), so an edit of any of them
    recompiles all of them.  Call it at import, before the kernels first run."""
    if numba.config.DISABLE_JIT:
        return
    from numba.core.registry import CPUDispatcher

    from wholetrace.instrument.digest import sha256

    modules = [sys.modules[n] for n in names]
    h = sha256()
    for m in modules:
        with open(m.__file__, "rb") as f:
            h.update(f.read() + b"\0")
    digest = h.hexdigest()
    try:
        from numba.core.caching import FunctionCache
        FunctionCache._index_key  # noqa: B018 - the private hook this relies on
    except (ImportError, AttributeError):   # a numba without it: no disk cache for these (never stale)
        cache: Callable[[Any], Any] = lambda _py_func: _NoCache()
    else:
        class _Cache(FunctionCache):  # type: ignore[misc]
            def _index_key(self, sig: Any, codegen: Any) -> Any:
                return (super()._index_key(sig, codegen), digest)

        cache = _Cache
    for m in modules:
        for d in vars(m).values():
            if isinstance(d, CPUDispatcher) and d.py_func.__module__ == m.__name__ and d._cache is not None:
                d._cache = cache(d.py_func)


class _NoCache:
    """A dispatcher cache that keeps nothing (``cache_depends`` when numba lacks its hook)."""

    def load_overload(self, *_args: Any) -> None:
        return None

    def save_overload(self, *_args: Any) -> None:
        return None

    def flush(self) -> None:
        return None
