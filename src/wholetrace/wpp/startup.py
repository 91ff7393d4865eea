"""The WPP builder process's first moments: its ``sys.path`` when started without ``site``, and numpy's core without the rest of numpy.

``wpp.spawn`` starts the builder as ``python [-S] -c 'import wholetrace.wpp.startup as s; s.run()'
MODE LOOKAHEAD QUEUE SPAWNED [PATH...]``; :func:`run` sets ``sys.path``, imports numpy leanly and
calls ``wpp.builder.main`` (docs/design.md, "The builder's start-up, wave 11").

* **No ``site`` (``-S``)**, when the recorded process's imports are plain path-based ones (no
  meta-path finder but the interpreter's own, no ``.pth``-installed editable finder): ``site``,
  its ``.pth`` files and ``sitecustomize`` cost ~3 ms of the builder's ~0.1 s of CPU, and the
  recorded process's ``sys.path`` (passed as ``PATH...``, with the PYTHONPATH and ``.pth``
  entries it has) already says where everything is.  Otherwise ``wpp.spawn`` starts the builder
  with ``site`` and no paths, as before.
* **numpy's core only** (:func:`lean_numpy`): ``import numpy`` runs ``numpy/__init__.py``, which
  imports ``numpy._core`` (the array type, ufuncs, the C API the compiled kernels unbox arrays
  through) and then ``numpy.lib``, ``numpy.linalg``, ``numpy.matrixlib``, ``numpy.__config__``
  (~25 ms of CPU, a third of numpy's import) that the builder never calls.  The lean module runs
  the first part of ``numpy/__init__.py`` (the version, ``_globals``, the distributor's hook,
  ``numpy._core`` and its public names), without ``numpy._core._add_newdocs`` (the docstrings
  of numpy's C objects, ~4-5 ms; a placeholder module stands in for it); the first attribute it does not have completes the
  import by executing the real ``numpy/__init__.py`` in the same module object, so every name
  is then what ``import numpy`` gives (the same objects: ``numpy._core``'s modules are imported
  once; the docstrings are added then).  ``WHOLETRACE_LEAN_NUMPY=0`` turns it off; numpy already imported, or a failure
  before ``numpy._core``, means the ordinary import; a failure in ``numpy._core``'s step (a layout
  not seen yet: its ``_core`` takes names from ``_add_newdocs``) completes numpy at once.  The
  completion holds a lock: another thread asking for a name meanwhile waits for it.  numpy's
  ``madvise`` hugepage setting is made as ``numpy/__init__.py`` makes it.
"""

from __future__ import annotations

import importlib
import sys
import threading
import types

#: ``WHOLETRACE_LEAN_NUMPY=0``: the builder imports numpy whole
ENV_LEAN = "WHOLETRACE_LEAN_NUMPY"
#: numpy._core's docstrings, not made in the builder until numpy is completed
_DOCS = "numpy._core._add_newdocs"
#: the code ``wpp.spawn`` runs with ``python -c``
CODE = "import wholetrace.wpp.startup as s; s.run()"


def lean_numpy() -> types.ModuleType:
    """numpy with ``numpy._core`` imported and the rest of ``numpy/__init__.py`` deferred to the first
    attribute the module lacks (then the real module: same names, same objects)."""
    import importlib.util
    import os

    if "numpy" in sys.modules or os.environ.get(ENV_LEAN, "1") == "0":
        import numpy
        return numpy
    spec = importlib.util.find_spec("numpy")
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        import numpy   # raises what the ordinary import raises
        return numpy
    m = importlib.util.module_from_spec(spec)
    sys.modules["numpy"] = m
    try:
        # what numpy/__init__.py does before ``from . import lib`` (numpy 2.x); nothing compiled is
        # loaded until numpy._core, so until then another layout can still take the ordinary import
        from numpy import _distributor_init, _globals, version  # noqa: F401
        if not version.__version__.startswith("2."):
            raise ImportError(f"numpy {version.__version__}: not the layout this follows")
        from numpy._expired_attrs_2_0 import __expired_attributes__
        m.__dict__.update(__version__=version.__version__, _CopyMode=_globals._CopyMode,
                          _NoValue=_globals._NoValue, __expired_attributes__=__expired_attributes__,
                          __NUMPY_SETUP__=False)
    except Exception:  # noqa: BLE001
        for name in [n for n in sys.modules if n == "numpy" or n.startswith("numpy.")]:
            del sys.modules[name]
        import numpy
        return numpy
    # numpy._core's docstrings of its C objects (~4-5 ms, 3400 lines of text): a placeholder
    # until the import is completed, when the real module adds them
    sys.modules[_DOCS] = _Placeholder(_DOCS)
    try:
        import numpy._core as core

        m.__dict__.update({name: getattr(core, name) for name in core.__all__})
        # numpy/__init__.py's madvise(hugepage) setting (NUMPY_MADVISE_HUGEPAGE, the kernel's version)
        core.multiarray._set_madvise_hugepage(_hugepage_setup())
        sys.modules[_DOCS].__class__ = types.ModuleType    # a plain empty module from now on
    except Exception:  # noqa: BLE001
        # numpy._core may be half loaded (compiled modules cannot be loaded twice): with the real
        # docstrings, numpy/__init__.py completes the same module object now (an error it raises
        # is the ordinary import's)
        _complete(m, spec)
        return m

    def __getattr__(name: str) -> object:
        # PEP 562: only for names the module lacks.  The real __init__ replaces this function
        # with numpy's own ``__getattr__`` (lazy submodules, expired names).  Another thread
        # asking meanwhile waits for the completion; this thread asking during it (numpy's own
        # imports) sees the partly initialised module, as in an ordinary import.
        with _COMPLETING:
            if _busy:
                raise AttributeError(f"partially initialized module 'numpy' has no attribute {name!r}")
            if m.__dict__.get("__getattr__") is __getattr__:
                _complete(m, spec)
        return getattr(m, name)

    __getattr__._lean = True  # type: ignore[attr-defined]   # numpy_state
    m.__getattr__ = __getattr__  # type: ignore[method-assign]
    return m


class _Placeholder(types.ModuleType):
    """Stands in for ``numpy._core._add_newdocs``, which numpy 2.0-2.4 import for its side effects
    only: a ``numpy._core`` that takes names from it (``from ._add_newdocs import x`` or ``*``)
    fails with ImportError, and :func:`lean_numpy` completes numpy at once.  Once ``numpy._core``
    is imported it becomes a plain empty module."""

    def __getattr__(self, name: str) -> object:
        # ``from m import *`` reads ``__all__`` and takes what else the module has without it;
        # ``from m import x`` turns an AttributeError into ImportError itself
        if name == "__all__":
            raise ImportError(f"{_DOCS} is not loaded in the lean numpy")
        raise AttributeError(name)


#: held while the lean numpy is completed (:func:`_complete`); ``_busy`` says it is under way
_COMPLETING = threading.RLock()
_busy = False


def _complete(m: types.ModuleType, spec: importlib.machinery.ModuleSpec) -> None:
    """Run the real ``numpy/__init__.py`` in the lean module ``m``, with the real docstrings."""
    global _busy
    with _COMPLETING:
        if getattr(sys.modules.get(_DOCS), "__file__", None) is None:
            sys.modules.pop(_DOCS, None)
            importlib.import_module(_DOCS)
        _busy = True
        spec._initializing = True  # type: ignore[attr-defined]   # as the import system marks it
        try:
            spec.loader.exec_module(m)  # type: ignore[union-attr]
        finally:
            spec._initializing = False  # type: ignore[attr-defined]
            _busy = False
        if getattr(m.__dict__.get("__getattr__"), "_lean", False):
            del m.__dict__["__getattr__"]     # an __init__ without its own: names it lacks are missing


def _hugepage_setup() -> int:
    """``hugepage_setup`` of numpy/__init__.py (numpy 2.0-2.4): NUMPY_MADVISE_HUGEPAGE, else on
    Linux 1 from kernel 4.6 on, else 1."""
    import os

    use = os.environ.get("NUMPY_MADVISE_HUGEPAGE", None)
    if use is not None:
        return int(use)
    if sys.platform != "linux":
        return 1
    try:
        return 0 if tuple(int(v) for v in os.uname().release.split(".")[:2]) < (4, 6) else 1
    except ValueError:
        return 0


def numpy_state() -> str:
    """``"lean"`` while numpy's ``__init__`` has not been completed, else ``"full"`` (meta ``wpp``)."""
    m = sys.modules.get("numpy")
    return "lean" if m is not None and getattr(m.__dict__.get("__getattr__"), "_lean", False) else "full"


def run() -> None:
    """The builder process's ``-c`` entry: ``sys.argv[1:5]`` are the builder's arguments, the rest
    (if any) the ``sys.path`` to use (started with ``-S``)."""
    args, path = sys.argv[1:5], sys.argv[5:]
    if path:
        sys.path[:] = path
    sys.argv[1:] = args
    lean_numpy()
    from wholetrace.wpp.builder import main

    sys.exit(main(args))
