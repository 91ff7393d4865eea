"""Ahead-of-time compiled kernels for the WPP builder process (``numba.pycc``), with the JIT as fallback.

The builder process (``wpp/builder.py``) would otherwise import numba and have it load its
type and implementation tables before the first cached kernel runs: 0.5-1 s of start-up, longer
than a short recorded program.  Here the same kernels (the functions of ``wholetrace.kernels``,
no second copy of any algorithm) are compiled once per machine and version into one extension
module; the builder then imports numpy and that module only.

* **Build** (``python -m wholetrace.wpp.aot``, run by ``make``; ``wpp.aotbuild``): ``exercise`` drives the
  builder's Python layer (interning every trace mode, SEQUITUR with and without look-ahead,
  every growth path, encoding) through the JIT; every public kernel of the ``wholetrace.kernels``
  modules this imported is exported once per signature it was compiled for, from its
  ``py_func``, with the GIL released as ``@kernel`` does.  The module goes to
  ``<cache>/<key>/`` (renamed into place: a reader never sees half a build) with a
  description (``marshal``'s format through :func:`_plain`, else pickled): the modules, their plain data attributes (constants), each export's symbol and
  argument types.
* **Key**: a hash of the kernels' sources (``kernels/*.py``, ``events.py``, whose constants are
  compiled in, the ``CALLERS``, this file and ``aotbuild.py``), the numba, llvmlite, numpy and Python versions and the machine.
  A source change makes the compiled module *stale*: it is not found, and the JIT is used.
* **Install** (:func:`install`, in the builder before it imports the grammar layer): each kernel
  module is replaced in ``sys.modules`` by a stand-in holding the constants and, per kernel, a
  function that picks the export whose argument types match (as numba's dispatcher would) and
  otherwise, as for any attribute not compiled, falls back to the real module (numba's JIT).
  Invariant: a stand-in computes exactly what the real module computes (tested byte for byte
  on grammars, ``tests/wpp/test_aot.py``).
"""

from __future__ import annotations

import importlib   # not .util, .machinery: the import system's frozen modules (wpp.startup.find_spec)
import marshal
import os
import sys
import types
TYPE_CHECKING = False   # typing is not imported by the builder (~11 M instructions of its start-up)

from wholetrace.instrument.digest import memoised, sha256   # not hashlib: OpenSSL's load was ~2.5 ms of the builder's start-up

if TYPE_CHECKING:  # the builder's start-up never imports pathlib (4-5 ms of its CPU): os.path below
    from pathlib import Path
    from typing import Any, Callable

#: name of the compiled extension module (its ``PyInit_`` symbol)
EXT_NAME = "wt_builder_kernels"
#: the description stored beside the module: ``marshal``'s format (:func:`_plain`), else ``pickle``'s
DESCRIPTION = "exports.marshal"
DESCRIPTION_PICKLED = "exports.pickle"
#: ``WHOLETRACE_AOT=0`` disables the compiled kernels (the builder then uses the JIT)
ENV_SWITCH = "WHOLETRACE_AOT"
#: where compiled modules are kept (default ``$XDG_CACHE_HOME/wholetrace/aot``)
ENV_DIR = "WHOLETRACE_AOT_DIR"
_KERNELS = "wholetrace.kernels."
#: The modules whose calls ``aotbuild.exercise`` compiles (their argument types are in the exports)
CALLERS = (("grammar", "builder.py"), ("grammar", "grammar.py"), ("grammar", "encoding.py"),
           ("wpp", "intern.py"), ("wpp", "builder.py"))
#: The build side (``wpp.aotbuild``, beside this file): its source is in the key too
BUILD = "aotbuild.py"
#: Kernels a stand-in handed to the JIT (no export for their argument types): the builder reports them
JIT_FALLBACKS: set[str] = set()


def _cache_dir() -> str:
    if os.environ.get(ENV_DIR):
        return os.environ[ENV_DIR]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "wholetrace", "aot")


def cache_dir() -> Path:
    """The directory holding one sub-directory per key."""
    from pathlib import Path

    return Path(_cache_dir())


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _version_path(package: str) -> str | None:
    """The ``_version.py`` of an installed package, found without importing it (None: no package)."""
    from wholetrace.wpp.startup import find_spec

    spec = getattr(sys.modules[package], "__spec__", None) if package in sys.modules else find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(next(iter(spec.submodule_search_locations)), "_version.py")


def _version_file(package: str) -> bytes:
    """The ``_version.py`` of an installed package, read without importing it."""
    path = _version_path(package)
    if path is None:
        return b"missing"
    return _read(path) if os.path.exists(path) else b"no _version.py"


def _key_files() -> list[str]:
    """The sources the compiled module is made of (their contents are in the key)."""
    here = os.path.realpath(__file__)
    package = os.path.dirname(os.path.dirname(here))
    kernels = os.path.join(package, "kernels")
    # joined as os.path.join joins these (absolute, no separator at the ends): its calls were a
    # sixth of the key's cost in the builder's start-up
    sep = os.sep
    sources = [kernels + sep + n for n in sorted(os.listdir(kernels)) if n.endswith(".py")]
    # the Python layer that decides the kernels' argument types: a dtype changed there needs an
    # export of another signature (wave 11: int32 codes had the builder fall back to the JIT)
    callers = [sep.join((package, *p)) for p in CALLERS]
    return sources + callers + [package + sep + "events.py", here, os.path.dirname(here) + sep + BUILD]


def _key_versions() -> list[bytes]:
    import numpy as np

    return [np.__version__.encode(), sys.version.encode(), os.uname().machine.encode(),
            sys.implementation.cache_tag.encode()]


def _full_key(files: list[str]) -> str:
    h = sha256()
    for path in files:
        h.update(os.path.basename(path).encode() + b"\0" + _read(path) + b"\0")
    for part in [_version_file("numba"), _version_file("llvmlite")] + _key_versions():
        h.update(part + b"\0")
    return h.hexdigest()[:24]


def key() -> str:
    """The hash naming a compiled module valid for these sources and versions.

    Hashing the ~250 KB of sources is most of its cost in the builder's start-up (the built-in
    SHA-256, ~3 ms; ``hashlib`` would load OpenSSL, ~2.5 ms): the key is kept in the cache directory
    in a file named by the files' paths, sizes, inodes, modification and change times (and the
    versions), and recomputed when any of them changes or the file is unreadable (as
    ``instrument.cache.instrumenter_digest``; docs/design.md, "The builder's start-up, wave 10").
    Not memoised while a file's times are within ``digest.RACY_NS`` of now (coarse file clocks)."""
    files = _key_files()
    versions = [p for p in (_version_path("numba"), _version_path("llvmlite")) if p]
    return memoised(_cache_dir(), "key", files + versions, lambda: _full_key(files), 24,
                    extra=b"".join(part + b"\0" for part in _key_versions()),
                    optional=frozenset(versions))    # a _version.py that is not there: its absence is the stamp


# -- loading ----------------------------------------------------------------------------------

def _arg_key(value: Any) -> tuple[Any, ...]:
    """What selects an export for an argument: (kind, dtype, ndim, C-contiguous, writeable)."""
    import numpy as np

    if isinstance(value, np.ndarray):
        return ("a", value.dtype.str, value.ndim, bool(value.flags.c_contiguous), bool(value.flags.writeable))
    if isinstance(value, (bool, np.bool_)):
        return ("s", "bool")
    if isinstance(value, np.integer):
        return ("s", value.dtype.str)
    if isinstance(value, int):
        return ("s", "int")
    if isinstance(value, (float, np.floating)):
        return ("s", "float")
    return ("?", type(value).__name__)


def _accepts(want: tuple[Any, ...], got: tuple[Any, ...]) -> bool:
    """Whether an export compiled for argument type ``want`` (``aotbuild._numba_arg``) takes ``got``."""
    if want[0] != got[0]:
        return False
    if want[0] == "a":
        _, dtype, ndim, c_only, mutable = want
        return dtype == got[1] and ndim == got[2] and (got[3] or not c_only) and (got[4] or not mutable)
    if want[1] == "int":  # numba's int64: a Python int or an np.int64 scalar
        return got[1] in ("int", "<i8")
    return bool(want[1] == got[1])


class _Kernel:
    """One kernel of a stand-in module: the compiled export for matching arguments, else the JIT."""

    def __init__(self, standin: "_StandIn", name: str, variants: list[tuple[tuple[Any, ...], Callable[..., Any]]]):
        self._standin, self.__name__, self._variants = standin, name, variants

    def __call__(self, *args: Any) -> Any:
        got = tuple(_arg_key(a) for a in args)
        for want, fn in self._variants:
            if len(want) == len(got) and all(_accepts(w, g) for w, g in zip(want, got)):
                return fn(*args)
        JIT_FALLBACKS.add(f"{self._standin.__name__.rpartition('.')[2]}.{self.__name__}")
        return getattr(self._standin._real(), self.__name__)(*args)


class _StandIn(types.ModuleType):
    """A kernel module's constants and compiled kernels; any other attribute comes from the
    real module, imported (with numba) on first use."""

    _real_module: types.ModuleType | None = None

    def _spec(self) -> Any:
        """The real module's spec (found where an import finds it, not through ``importlib.util``)."""
        from _frozen_importlib_external import PathFinder

        spec = PathFinder.find_spec(self.__name__, sys.modules[self.__name__.rpartition(".")[0]].__path__)
        assert spec is not None and spec.loader is not None
        return spec

    def _real(self) -> types.ModuleType:
        if self._real_module is None:
            from _frozen_importlib import module_from_spec

            spec = self._spec()
            module = module_from_spec(spec)
            # in sys.modules while it runs, as an import puts it: a kernel module's
            # ``cache_depends((..., __name__))`` looks itself up there (wave 14: a KeyError, so a
            # call no export matched failed instead of running on the JIT)
            stand_in = sys.modules.get(self.__name__)
            sys.modules[self.__name__] = module
            try:
                spec.loader.exec_module(module)
            finally:
                if stand_in is None:
                    del sys.modules[self.__name__]
                else:
                    sys.modules[self.__name__] = stand_in
            self._real_module = module
        return self._real_module

    def __getattr__(self, name: str) -> Any:
        if name == "__file__":
            # the real module's file, found when first asked (no search at start-up): a sibling's
            # ``cache_depends`` reads it when the JIT fallback loads it (review15b MED 2)
            self.__file__ = self._spec().origin
            return self.__file__
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._real(), name)


def load(directory: Path | str | None = None) -> dict[str, types.ModuleType] | str:
    """The stand-in modules of the compiled build for the current key, or why there is none."""
    parent = os.fspath(directory) if directory is not None else _cache_dir()
    where = os.path.join(parent, key())
    desc_path = os.path.join(where, DESCRIPTION)
    pickled = not os.path.exists(desc_path)
    if pickled:
        desc_path = os.path.join(where, DESCRIPTION_PICKLED)
    found = sorted(os.path.join(where, n) for n in os.listdir(where)
                   if n.startswith(EXT_NAME + ".")) if os.path.exists(desc_path) else []
    if not found:
        return f"no compiled kernels for key {os.path.basename(where)} in {parent}"
    with open(desc_path, "rb") as f:
        if pickled:
            import pickle

            desc = pickle.load(f)
        else:
            desc = _unplain(marshal.loads(f.read()))   # not marshal.load(f): a read call per value
    from _frozen_importlib import module_from_spec   # importlib.util's (not imported: wpp.startup.find_spec)
    from _frozen_importlib_external import ExtensionFileLoader, spec_from_file_location

    loader = ExtensionFileLoader(EXT_NAME, str(found[0]))
    spec = spec_from_file_location(EXT_NAME, found[0], loader=loader)
    assert spec is not None
    # pycc's module init unpickles its exports' environments with ``pickle.loads`` (numba's
    # _helperlib.c, PYCC_COMPILING): a stand-in's ``loads`` spares the start-up pickle.py and re
    # (~10 M instructions), and rebuilds the pickles the description knows without ``_pickle``
    # (its init with copyreg, ~2 M; :func:`_known_loads`); any other name imports the real one
    stand_in = None
    if "pickle" not in sys.modules:
        from wholetrace.wpp.startup import _deferred

        stand_in = sys.modules["pickle"] = _deferred("pickle")
        stand_in.loads = _known_loads(dict(desc.get("environments", ())),  # type: ignore[attr-defined]
                                      dict(desc.get("globals", ())))
    try:
        ext = module_from_spec(spec)   # PyInit runs here
        loader.exec_module(ext)
    finally:
        if stand_in is not None and sys.modules.get("pickle") is stand_in:
            del sys.modules["pickle"]
    modules: dict[str, types.ModuleType] = {}
    for modname, info in desc["modules"].items():
        m = _StandIn(modname)
        m.__dict__.update(info["constants"])
        for name, modname_used in info["imports"].items():
            m.__dict__[name] = importlib.import_module(modname_used)
        for name, (code, defaults, kwdefaults) in info["functions"].items():
            f = types.FunctionType(marshal.loads(code), m.__dict__, name, defaults)
            f.__kwdefaults__ = kwdefaults
            f.__module__ = modname
            setattr(m, name, f)
        for name, variants in info["kernels"].items():
            setattr(m, name, _Kernel(m, name, [(tuple(want), getattr(ext, sym)) for want, sym in variants]))
        modules[modname] = m
    return modules


def rebuilt_dtype(args: tuple[Any, ...], state: tuple[Any, ...]) -> Any:
    """The ``numpy.dtype`` ``pickle.loads`` makes of ``dtype.__reduce__()``'s ``(numpy.dtype, args,
    state)``: ``numpy.dtype(*args)`` (a copy: ``args`` ends ``copy=True``), then its ``__setstate__``."""
    import numpy as np

    d = np.dtype(*args)
    d.__setstate__(state)
    return d


def _known_loads(known: dict[bytes, list[tuple[tuple[Any, ...], tuple[Any, ...]]]],
                 names: dict[bytes, tuple[str, str]] | None = None) -> Callable[..., Any]:
    """``pickle.loads`` for the compiled module (its init, its kernels' array boxing): a pickle
    ``wpp.aotbuild._environments`` recorded (a list of dtypes) is rebuilt from its recipe as
    ``pickle.loads`` builds it (:func:`rebuilt_dtype`), one of ``names`` (``aotbuild._globals_pickled``:
    a module's attribute) is looked up as ``pickle``'s ``find_class`` looks it up, any other goes
    to ``_pickle.loads``."""
    names = names or {}

    def loads(data: bytes, *args: Any, **kwargs: Any) -> Any:
        plain = type(data) is bytes and not args and not kwargs
        recipe = known.get(data) if plain else None
        if recipe is None:
            where = names.get(data) if plain else None
            if where is not None:
                __import__(where[0])
                return getattr(sys.modules[where[0]], where[1])
            from _pickle import loads as real

            return real(data, *args, **kwargs)
        return [rebuilt_dtype(a, state) for a, state in recipe]

    return loads


def install(directory: Path | str | None = None) -> str:
    """Put the compiled kernels in place of the kernel modules, before anything imports them.
    Returns ``"aot"``, or ``"jit: <why>"`` when the JIT modules will be used.  :data:`JIT_FALLBACKS`
    starts empty: it names the fallbacks of the kernels installed now."""
    JIT_FALLBACKS.clear()
    if os.environ.get(ENV_SWITCH, "1") == "0":
        return f"jit: {ENV_SWITCH}=0"
    if os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0"):  # the pure-Python twins, as asked
        return "jit: NUMBA_DISABLE_JIT"
    try:
        modules = load(directory)
    except Exception as exc:  # noqa: BLE001 - any failure to load means the JIT fallback
        return f"jit: {type(exc).__name__}: {exc}"
    if isinstance(modules, str):
        return "jit: " + modules
    loaded = [name for name in modules if name in sys.modules]
    if loaded:
        return f"jit: {loaded[0]} already imported"
    package = sys.modules.get(_KERNELS[:-1]) or importlib.import_module(_KERNELS[:-1])
    for name, module in modules.items():
        sys.modules[name] = module
        setattr(package, name.rsplit(".", 1)[1], module)
    return "aot"


# -- the description's format (written by ``wpp.aotbuild``, read by :func:`load`) ----------------

def _plain(v: Any) -> Any:
    """The description in values ``marshal`` takes: ``("v", v)``; a tuple ``("t", items)``, a dict
    ``("d", {key: item})``; numpy's (the kernel modules' constants, defaults) ``("a", dtype,
    shape, bytes)`` for a C-ordered array, ``("s", dtype, bytes)`` for a scalar.  The builder's
    start-up then imports no ``pickle`` (with ``re``: 13 M instructions; docs/design.md, "wave 15,
    builder start-up").  TypeError for anything else (:func:`build` then pickles)."""
    if type(v) in (int, float, bool, str, bytes, type(None)):
        return ("v", v)
    if type(v) in (tuple, list):
        return ("t" if type(v) is tuple else "l", [_plain(x) for x in v])
    if type(v) is dict and all(type(k) is str for k in v):
        return ("d", {k: _plain(x) for k, x in v.items()})
    import numpy as np

    # a dtype its ``.str`` does not give back (a record's fields, a sub-array: "|V12") is refused
    if isinstance(v, np.ndarray) and type(v) is np.ndarray and np.dtype(v.dtype.str) == v.dtype \
            and not v.dtype.hasobject and v.flags.c_contiguous:
        return ("a", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, np.generic) and np.dtype(v.dtype.str) == v.dtype and not v.dtype.hasobject \
            and type(v) is v.dtype.type:
        return ("s", v.dtype.str, v.tobytes())
    raise TypeError(f"no plain form for {type(v).__name__}")


def _unplain(v: Any) -> Any:
    """What :func:`_plain` was given (arrays writeable, as unpickled ones are)."""
    kind = v[0]
    if kind == "v":
        return v[1]
    if kind in ("t", "l"):
        items = [_unplain(x) for x in v[1]]
        return tuple(items) if kind == "t" else items
    if kind == "d":
        return {k: _unplain(x) for k, x in v[1].items()}
    import numpy as np

    if kind == "a":
        return np.frombuffer(bytearray(v[3]), v[1]).reshape(v[2])
    return np.frombuffer(v[2], v[1])[0]


#: What ``wpp.aotbuild`` defines that is read here as before its split (wave 17): ``aot.build`` ...
_BUILD_SIDE = frozenset(("exercise", "build", "_numba_arg", "_constants", "_python_parts", "_globals_read", "_made"))


def __getattr__(name: str) -> Any:
    """The build side's names (``wpp.aotbuild``), imported when first asked for: the builder never is."""
    if name in _BUILD_SIDE:
        from wholetrace.wpp import aotbuild

        return getattr(aotbuild, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str]) -> int:
    """``python -m wholetrace.wpp.aot [--force] [--status]``: build the compiled builder kernels
    for this machine unless they are there (``--status``: only say where they are)."""
    where = cache_dir() / key()
    present = (where / DESCRIPTION).exists() or (where / DESCRIPTION_PICKLED).exists()
    if "--status" in argv:
        print(f"{where}: {'present' if present else 'missing'}")
        return 0
    if present and "--force" not in argv:
        print(f"compiled WPP builder kernels up to date: {where}")
        return 0
    if "--force" in argv and where.exists():
        import shutil

        shutil.rmtree(where)
    import time

    from wholetrace.wpp.aotbuild import build

    t = time.perf_counter()
    print(f"compiled WPP builder kernels: {build()} ({time.perf_counter() - t:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
