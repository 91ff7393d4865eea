"""The WPP builder process's first moments: its ``sys.path`` when started without ``site``, and numpy's core without the rest of numpy.

``wpp.spawn`` starts the builder as ``python [-S] -c 'import gc; gc.disable(); import
wholetrace.wpp.startup as s; s.run()' MODE LOOKAHEAD QUEUE SPAWNED [PATH...]`` (the collector is
enabled again by ``wpp.builder.build`` once the kernels are warm); :func:`run` sets ``sys.path``,
imports numpy leanly and calls ``wpp.builder.main`` (docs/design.md, "The builder's start-up,
wave 11" and "The WPP's own cost, wave 13").

* **No ``site`` (``-S``)**, when the recorded process's imports are plain path-based ones (no
  meta-path finder but the interpreter's own, no ``.pth``-installed editable finder): ``site``,
  its ``.pth`` files and ``sitecustomize`` cost ~3 ms of the builder's ~0.1 s of CPU, and the
  recorded process's ``sys.path`` (passed as ``PATH...``, with the PYTHONPATH and ``.pth``
  entries it has) already says where everything is.  Otherwise ``wpp.spawn`` starts the builder
  with ``site`` and no paths, as before.
* **numpy's compiled module only** (the default since wave 18, :func:`_c_core`): ``numpy._core``'s
  ``_multiarray_umath`` and ``_type_aliases``, numpy given only names that are the compiled module's
  own objects; the first other name, or the first ndarray reduction, brings in the lean core below
  (:func:`_upgrade`; docs/design.md, "The builder's numpy, wave 18").  ``WHOLETRACE_LEAN_NUMPY=python``
  starts with the lean core.
* **numpy's core only, and of it what the builder calls** (:func:`lean_numpy`): ``import numpy``
  runs ``numpy/__init__.py``, which imports ``numpy._core`` and then ``numpy.lib``,
  ``numpy.linalg``, ``numpy.matrixlib``, ``numpy.__config__``, none of which the builder calls;
  ``numpy/_core/__init__.py`` in turn imports modules it does not call either (``einsumfunc``,
  ``function_base``, ``getlimits``, ``memmap``, ``records``, the docstrings of
  ``_add_newdocs``, ``_internal`` with ``ctypes``).  The lean module runs the first part of
  ``numpy/__init__.py`` (the version, ``_globals``, the distributor's hook), then makes
  ``numpy._core`` from its spec without running its ``__init__`` and imports the modules of it
  the builder calls in that ``__init__``'s order (:func:`_lean_core`), binding numpy's names of
  ``numeric`` and ``shape_base`` (the objects ``import numpy`` binds).  The first attribute numpy
  does not have completes the import: ``numpy/_core/__init__.py`` runs in the lean
  ``numpy._core``, then ``numpy/__init__.py`` in the lean numpy, so every name is then what
  ``import numpy`` gives (the same objects: modules already imported are not imported again).
  ``WHOLETRACE_LEAN_NUMPY=0`` turns it off; numpy already imported, or a failure before
  ``numpy._core``, means the ordinary import; a failure in ``numpy._core``'s step (a layout not
  seen yet) completes numpy at once.  The completion holds a lock: another thread asking for a
  name meanwhile waits for it.  numpy's ``madvise`` hugepage setting and (numpy 2.0-2.1) its
  promotion state are made as ``numpy/__init__.py`` makes them.
"""

from __future__ import annotations

import importlib
import _thread   # threading.RLock is _thread.RLock (the C one); threading is not needed for it
import sys
import types

#: ``WHOLETRACE_LEAN_NUMPY=0``: the builder imports numpy whole
ENV_LEAN = "WHOLETRACE_LEAN_NUMPY"
#: the code ``wpp.spawn`` runs with ``python -c``
CODE = "import gc; gc.disable(); import wholetrace.wpp.startup as s; s.run()"


def find_spec(name: str, path: list[str] | None = None) -> importlib.machinery.ModuleSpec | None:
    """``importlib.util.find_spec(name)`` for a module not imported yet (``path``: its parent
    package's ``__path__``), through the import system's own ``_find_spec``: ``importlib.util``
    brings ``contextlib`` and ``importlib._abc`` (~4 M instructions of the builder's start-up;
    docs/design.md, "wave 15, builder start-up")."""
    try:
        from _frozen_importlib import _find_spec
    except ImportError:   # pragma: no cover - another interpreter
        import importlib.util

        return importlib.util.find_spec(name)
    return _find_spec(name, path)


def lean_numpy() -> types.ModuleType:
    """numpy with the modules of ``numpy._core`` the builder calls imported (:func:`_lean_core`) and
    the rest of ``numpy/_core/__init__.py`` and ``numpy/__init__.py`` deferred to the first attribute
    the module lacks (then the real module: same names, same objects)."""
    import os
    from _frozen_importlib import module_from_spec

    if "numpy" in sys.modules or os.environ.get(ENV_LEAN, "1") == "0":
        import numpy
        return numpy
    spec = find_spec("numpy")
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        import numpy   # raises what the ordinary import raises
        return numpy
    m = module_from_spec(spec)
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
    global _tier
    try:
        if os.environ.get(ENV_LEAN) == "python":
            _lean_core(m)
            _tier = "python"
        else:
            _c_core(m)
            _tier = "c"
    except Exception:  # noqa: BLE001
        # a layout not seen yet (numpy._core may be half loaded: compiled modules cannot be loaded
        # twice): numpy._core's and numpy's __init__ complete the same module objects now (an
        # error they raise is the ordinary import's)
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
            if _tier == "c":
                _upgrade(m)          # the lean core's names: numpy's own objects
                if name in m.__dict__:
                    return m.__dict__[name]
            if m.__dict__.get("__getattr__") is __getattr__:
                _complete(m, spec)
        return getattr(m, name)

    __getattr__._lean = True  # type: ignore[attr-defined]   # numpy_state
    m.__getattr__ = __getattr__  # type: ignore[method-assign]
    return m


def _lean_core(m: types.ModuleType) -> None:
    """``numpy._core`` as a module object whose ``__init__`` has not run, with the modules of it the
    builder calls imported in ``__init__``'s order (``multiarray`` with ``OPENBLAS_MAIN_FREE`` set as
    there, ``umath``, ``numerictypes`` and its type names, ``fromnumeric``, ``numeric``,
    ``shape_base``), and their public names on ``m`` as ``from ._core import *`` binds them."""
    core = sys.modules.get("numpy._core")
    if core is None or _CORE_SPEC is None or core.__spec__ is not _CORE_SPEC:   # else the C tier's (_upgrade)
        _new_core(m)
    # numpy._core.overrides imports inspect (with ast, dis, tokenize: 20.7 M of this process's
    # 191.7 M instructions of start-up, a ninth) for cleandoc and 24 signatures: a stand-in while it loads
    stand_in = None if "inspect" in sys.modules else _inspect_stand_in()
    if stand_in is not None:
        sys.modules["inspect"] = stand_in
    try:
        multiarray = _openblas_import("multiarray")
    finally:
        if stand_in is not None and sys.modules.get("inspect") is stand_in:
            del sys.modules["inspect"]      # overrides keeps it; any other import gets the real one
    from numpy._core import numerictypes, umath  # noqa: F401 - umath: as numpy._core's __init__

    multiarray.set_typeDict(numerictypes.sctypeDict)
    _promotion(multiarray)
    # fromnumeric imports numpy._core._methods, which imports pickle (with re: 13 M instructions)
    # for ndarray.dump/dumps only: a deferring stand-in while it loads (_deferred)
    deferred = None if "pickle" in sys.modules else _deferred("pickle")
    if deferred is not None:
        sys.modules["pickle"] = deferred
    try:
        from numpy._core import fromnumeric, numeric, shape_base  # noqa: F401
    finally:
        if deferred is not None and sys.modules.get("pickle") is deferred:
            del sys.modules["pickle"]      # _methods keeps it; any other import gets the real one

    names = {name: getattr(mod, name) for mod in (numeric, shape_base) for name in mod.__all__}
    m.__dict__.update(names)
    # numpy/__init__.py's madvise(hugepage) setting (NUMPY_MADVISE_HUGEPAGE, the kernel's version)
    multiarray._set_madvise_hugepage(_hugepage_setup())


#: numpy's names that are ``_multiarray_umath``'s own objects (``import numpy`` binds the same ones;
#: tested), bound by the C tier (:func:`_c_core`); the scalar types come from its ``typeinfo``
_C_NAMES = ("empty", "zeros", "frombuffer", "array", "arange", "ascontiguousarray", "asarray", "dtype",
            "ndarray", "integer", "signedinteger", "unsignedinteger", "floating", "generic", "minimum",
            "maximum")
_C_TYPES = (("int8", "int8"), ("int16", "int16"), ("int32", "int32"), ("int64", "int64"), ("uint8", "uint8"),
            ("uint16", "uint16"), ("uint32", "uint32"), ("uint64", "uint64"), ("intp", "intp"),
            ("float64", "float64"), ("bool_", "bool"), ("bool", "bool"))
#: which numpy :func:`lean_numpy` made: "c" (:func:`_c_core`, until :func:`_upgrade`), "python"
#: (:func:`_lean_core`), "" (none yet, or numpy completed at once)
_tier = ""


def _c_core(m: types.ModuleType) -> None:
    """``numpy._core`` as a module object whose ``__init__`` has not run, holding only the compiled
    ``_multiarray_umath`` (loaded as ``numpy._core.multiarray`` loads it: ``OPENBLAS_MAIN_FREE`` set
    around it) and ``_type_aliases`` (the ``sctypeDict`` numpy gives ``set_typeDict``; loaded with the
    compiled module standing for ``multiarray``, whose names it reads and re-exports unchanged); ``m``
    gets :data:`_C_NAMES` and :data:`_C_TYPES`.  None of numpy's Python modules that wrap the compiled
    one (``multiarray``, ``overrides``, ``numerictypes``, ``umath``, ``fromnumeric``, ``_methods``,
    ``numeric``, ``shape_base``: ~47 M instructions of the builder's start-up) is imported: any other
    name, or the first ndarray method that needs ``_methods`` (``max``, ``sum``, ...: the stand-in of
    :func:`_methods_stand_in`), brings the lean core in (:func:`_upgrade`)."""
    _new_core(m)
    # the compiled module's init asks ``datetime`` for its C API capsule only (PyDateTime_IMPORT):
    # ``datetime.py`` runs its pure-Python twin classes first (~4.6 M instructions with ``math``)
    # to re-export ``_datetime``'s, capsule included; a deferring stand-in holds that very capsule
    datetime = _datetime_stand_in()
    try:
        mu = _openblas_import("_multiarray_umath")
    finally:
        if datetime is not None and sys.modules.get("datetime") is datetime:
            del sys.modules["datetime"]      # any later ``import datetime`` gets the real module
    sys.modules["numpy._core.multiarray"] = mu
    try:
        from numpy._core import _type_aliases
    finally:
        if sys.modules.get("numpy._core.multiarray") is mu:
            del sys.modules["numpy._core.multiarray"]
    names = {n: getattr(mu, n) for n in _C_NAMES}
    names.update({n: mu.typeinfo[t].type for n, t in _C_TYPES})
    mu.set_typeDict(_type_aliases.sctypeDict)
    _promotion(mu)
    sys.modules["numpy._core._methods"] = _methods_stand_in(m)
    m.__dict__.update(names)
    mu._set_madvise_hugepage(_hugepage_setup())


def _new_core(m: types.ModuleType) -> types.ModuleType:
    """``numpy._core`` made from its spec, its ``__init__`` not run, in ``sys.modules`` and on ``m``."""
    from _frozen_importlib import module_from_spec

    global _CORE_SPEC
    cspec = find_spec("numpy._core", m.__path__)
    if cspec is None or cspec.loader is None:
        raise ImportError("numpy._core has no spec")
    core = module_from_spec(cspec)
    sys.modules["numpy._core"] = core
    m._core = core   # type: ignore[attr-defined]   # as the import system binds a submodule
    _CORE_SPEC = cspec
    return core


def _openblas_import(name: str) -> types.ModuleType:
    """``numpy._core.<name>`` imported with ``OPENBLAS_MAIN_FREE`` put and unset around it, as
    ``numpy/_core/__init__.py`` loads the compiled module (when the variable was not set)."""
    import os

    added = "OPENBLAS_MAIN_FREE" not in os.environ
    if added:
        os.putenv("OPENBLAS_MAIN_FREE", "1")
    try:
        return importlib.import_module("numpy._core." + name)
    finally:
        if added:
            os.unsetenv("OPENBLAS_MAIN_FREE")


def _promotion(multiarray: types.ModuleType) -> None:
    """numpy 2.0-2.1's ``__init__`` sets NEP 50's promotion ("weak"; 2.0's C default is "legacy"): as there."""
    import os

    promotion = getattr(multiarray, "_set_promotion_state", None)
    if promotion is not None:
        promotion(os.environ.get("NPY_PROMOTION_STATE", "weak"))


def _methods_stand_in(m: types.ModuleType) -> types.ModuleType:
    """``numpy._core._methods`` while the C tier lasts: the compiled module imports it at the first
    ndarray reduction method (``max``, ``min``, ``sum``, ``any``, ...) and keeps the function it asks
    for; its first attribute asked (not ``__path__``) brings the lean core in (:func:`_upgrade`,
    which imports the real ``_methods``) and gives the real module's, so the compiled module keeps
    numpy's own function."""
    stand_in = types.ModuleType("numpy._core._methods", "wholetrace.wpp.startup's stand-in (the C tier)")

    def __getattr__(attr: str) -> object:
        if attr == "__path__":
            raise AttributeError(f"module 'numpy._core._methods' has no attribute {attr!r}")
        with _COMPLETING:
            _upgrade(m)
        return getattr(sys.modules["numpy._core._methods"], attr)

    stand_in.__dict__.update(__getattr__=__getattr__, _wholetrace_stand_in=True)
    return stand_in


def _upgrade(m: types.ModuleType) -> None:
    """The C tier's numpy given the lean core's modules and names (:func:`_lean_core`, in the same
    ``numpy._core``); called with :data:`_COMPLETING` held.  Nothing after the first call."""
    global _tier
    if _tier != "c":
        return
    _tier = "python"
    if getattr(sys.modules.get("numpy._core._methods"), "_wholetrace_stand_in", False):
        del sys.modules["numpy._core._methods"]
    try:
        _lean_core(m)
    except Exception:  # noqa: BLE001 - a layout not seen yet: numpy whole, as lean_numpy does
        _complete(m, m.__spec__)


def _deferred(name: str) -> types.ModuleType:
    """A module standing for the top-level module ``name`` while the lean core loads: its first
    attribute asked (PEP 562; not ``__path__``, which the import system probes) imports the real
    module (the stand-in out of ``sys.modules`` first if still there) and gives the real one's.
    ``pickle`` here: numpy's ``_methods`` calls ``pickle.dump``/``dumps`` only in
    ``ndarray.dump``/``dumps``, which the builder never calls (:func:`_complete` gives it the real
    module); ``wpp.aot.load`` adds ``loads`` for the compiled kernels' module init."""
    stand_in = types.ModuleType(name, f"wholetrace.wpp.startup's stand-in for {name} (until its first use)")

    def __getattr__(attr: str) -> object:
        if attr == "__path__":
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        if sys.modules.get(name) is stand_in:
            sys.modules.pop(name, None)   # not del: two threads asking at once both get here
        return getattr(__import__(name), attr)

    stand_in.__dict__.update(__getattr__=__getattr__, _wholetrace_stand_in=True)
    return stand_in


def _datetime_stand_in() -> types.ModuleType | None:
    """A :func:`_deferred` ``datetime`` in ``sys.modules`` holding ``_datetime.datetime_CAPI`` (the
    object ``datetime.py``'s ``from _datetime import *`` re-exports), or None (``datetime`` already
    imported, or no ``_datetime``: the real module then)."""
    if "datetime" in sys.modules:
        return None
    try:
        from _datetime import datetime_CAPI
    except ImportError:   # pragma: no cover - an interpreter without the C module
        return None
    stand_in = sys.modules["datetime"] = _deferred("datetime")
    stand_in.datetime_CAPI = datetime_CAPI  # type: ignore[attr-defined]
    return stand_in


#: held while the lean numpy is completed (:func:`_complete`); ``_busy`` says it is under way
_COMPLETING = _thread.RLock()
_busy = False
#: the spec of a ``numpy._core`` made by :func:`_lean_core` whose ``__init__`` has not run yet
_CORE_SPEC: importlib.machinery.ModuleSpec | None = None


def _complete(m: types.ModuleType, spec: importlib.machinery.ModuleSpec) -> None:
    """Run the real ``numpy/_core/__init__.py`` in the lean ``numpy._core`` (if :func:`_lean_core`
    made one), then the real ``numpy/__init__.py`` in the lean module ``m``."""
    global _busy, _CORE_SPEC
    with _COMPLETING:
        _busy = True
        try:
            if getattr(sys.modules.get("numpy._core._methods"), "_wholetrace_stand_in", False):
                del sys.modules["numpy._core._methods"]
            _real_inspect()
            methods = sys.modules.get("numpy._core._methods")
            if getattr(getattr(methods, "pickle", None), "_wholetrace_stand_in", False):
                methods.pickle.__getattr__("dumps")   # the real pickle imported (the stand-in out of sys.modules)
                methods.pickle = sys.modules["pickle"]
            cspec, _CORE_SPEC = _CORE_SPEC, None
            core = sys.modules.get("numpy._core")
            if cspec is not None and core is not None and core.__spec__ is cspec:
                _exec(core, cspec)
            # the lean names stay bound meanwhile (the builder's reader uses frombuffer while the
            # JIT fallback's numba import completes numpy); numpy's __init__ binds each again, to
            # the same object (tested)
            _exec(m, spec)
        finally:
            _busy = False
        if getattr(m.__dict__.get("__getattr__"), "_lean", False):
            del m.__dict__["__getattr__"]     # an __init__ without its own: names it lacks are missing


class _Pending:
    """What the ``inspect`` stand-in's ``signature`` gives: the dispatcher whose signature
    :func:`_real_inspect` computes (an ``inspect.Signature`` once numpy is completed)."""

    __slots__ = ("dispatcher",)

    def __init__(self, dispatcher: object) -> None:
        self.dispatcher = dispatcher


def _inspect_stand_in() -> types.ModuleType | None:
    """A module ``inspect`` for ``numpy._core.overrides`` while the lean core loads: the real
    ``cleandoc`` (its source, taken from this interpreter's ``inspect.py``: the docstrings numpy
    sets are those ``import numpy`` sets) and a ``signature`` that defers (:class:`_Pending`;
    :func:`_real_inspect`).  None (the real ``inspect`` then) when the source is not there."""
    import os

    try:
        with open(os.path.join(os.path.dirname(os.__file__), "inspect.py"), encoding="utf-8") as f:
            text = f.read()
        start = text.index("\ndef cleandoc(doc):") + 1
        end = text.index("\ndef ", start + 1)
        stand_in = types.ModuleType("inspect", "wholetrace.wpp.startup's stand-in for inspect (numpy's overrides)")
        stand_in.__dict__.update(sys=sys, signature=_Pending, _wholetrace_stand_in=True, __getattr__=_from_inspect)
        exec(compile(text[start:end], "<inspect.cleandoc>", "exec"), stand_in.__dict__)
        if stand_in.cleandoc("x\n    y\n") != "x\ny":     # self-contained (3.6-3.13: builtins and sys only)
            return None
    except Exception:  # noqa: BLE001 - any surprise in another inspect.py: the real module
        return None
    return stand_in


def _from_inspect(name: str) -> object:
    """The stand-in's module ``__getattr__`` (PEP 562: names it lacks): the real ``inspect``'s
    ``name``, so that a name numpy's ``overrides`` (or any module importing ``inspect`` while the
    stand-in is there) uses beyond ``cleandoc`` and ``signature`` costs the real ``inspect``
    only, not the lean step's failure and numpy whole.  ``__path__`` (which the import system
    probes, and the real module lacks too) does not load it."""
    if name == "__path__":
        raise AttributeError(f"module 'inspect' has no attribute {name!r}")
    return getattr(_import_inspect(), name)


def _import_inspect() -> types.ModuleType:
    """The real ``inspect`` (imported once the stand-in, if it is still in ``sys.modules``, has left)."""
    if getattr(sys.modules.get("inspect"), "_wholetrace_stand_in", False):
        del sys.modules["inspect"]
    import inspect

    return inspect


def _real_inspect() -> None:
    """Give ``numpy._core.overrides`` the real ``inspect`` and every deferred signature its value,
    as ``import numpy`` computes it (before numpy is completed: what it imports then is decorated
    with the real ``inspect``); the stand-in's ``signature`` is the real one from then on (for a
    module other than ``overrides`` that kept it: none does in numpy 2.0-2.5)."""
    overrides = sys.modules.get("numpy._core.overrides")
    stand_in = getattr(overrides, "inspect", None)
    if overrides is None or not getattr(stand_in, "_wholetrace_stand_in", False):
        return
    inspect = _import_inspect()
    for f in list(overrides.ARRAY_FUNCTIONS):
        pending = getattr(f, "__signature__", None)
        if isinstance(pending, _Pending):
            f.__signature__ = inspect.signature(pending.dispatcher)
    stand_in.signature = inspect.signature
    overrides.inspect = inspect


def _exec(module: types.ModuleType, spec: importlib.machinery.ModuleSpec) -> None:
    """Execute ``spec``'s code in ``module``, marked as initialising as the import system marks it."""
    spec._initializing = True  # type: ignore[attr-defined]
    try:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    finally:
        spec._initializing = False  # type: ignore[attr-defined]


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
