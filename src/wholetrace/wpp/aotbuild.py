"""Building the WPP builder's compiled kernels: drive the JIT through every kernel entry, then export each signature with ``numba.pycc``."""

# Split from ``wpp.aot`` (wave 17), which keeps what the builder's start-up runs (the key, loading,
# the stand-ins, the description's format); this side is imported by ``python -m wholetrace.wpp.aot``
# and the tests only (``aot.build``, ``aot.exercise``, ... reach it through ``aot.__getattr__``).
# Its source is in the key (``aot._key_files``): it decides what the compiled module holds.

from __future__ import annotations

import builtins
import marshal
import os
import sys
import types

from wholetrace.wpp.aot import DESCRIPTION, DESCRIPTION_PICKLED, EXT_NAME, _KERNELS, _plain, cache_dir, key, rebuilt_dtype

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path
    from typing import Any


def exercise() -> None:
    """Drive the builder's Python layer through every kernel entry and growth path it can take:
    interning for every trace mode (table, symbol list and stack growth; exception records),
    SEQUITUR with and without look-ahead (node, rule and digram-table growth), finishing and
    encoding a grammar, the terminal table."""
    import numpy as np

    from wholetrace.events import ENTER_BASE, EXC, LEAVE, LEAVE_PATH, RERAISE, START
    from wholetrace.grammar import GrammarBuilder
    from wholetrace.wpp.intern import INTERNERS, interner_for, terminals_to_array

    rng = np.random.default_rng(10)
    depth = 100  # > the interner's initial 64-deep function stack
    nest = [-(ENTER_BASE + f % 7) for f in range(depth)] + [LEAVE] * depth
    values = rng.integers(0, 6000, 20000)  # > the interner's initial 4096-slot table
    body = [-(ENTER_BASE + 1), START] + values.tolist() + [EXC, 3, 5, RERAISE, 3, -1, 5, LEAVE]
    events = np.array(nest + body + [-(ENTER_BASE + 2), LEAVE_PATH + 3], np.int32)
    for mode in INTERNERS:
        interner = interner_for(mode)
        interner.set_path_functions([1, 2], 8)
        codes = np.concatenate([interner.codes(0, events[:-1]), interner.codes(0, events[-1:], final=True)])
        terminals_to_array(interner.terminals())
        # a long, repetitive but irregular sequence: many rules, nodes and digrams
        motifs = [rng.integers(0, 300, rng.integers(2, 9)) for _ in range(400)]
        seq = np.concatenate([motifs[i] for i in rng.integers(0, len(motifs), 60000)])
        for lookahead in (False, True):
            b = GrammarBuilder(lookahead=lookahead)
            b.feed(codes)
            b.feed(seq.astype(np.int64))
            g = b.finish()
            g.to_bytes()
            (g.num_rules, g.num_symbols, g.start_length, len(g))


def _numba_arg(t: Any) -> tuple[Any, ...]:
    """The ``aot._accepts`` form of a numba argument type."""
    import numpy as np
    from numba.core import types as nt

    t = nt.unliteral(t)
    if isinstance(t, nt.Array):
        return ("a", np.dtype(str(t.dtype)).str, t.ndim, t.layout == "C", bool(t.mutable))
    if isinstance(t, nt.Boolean):
        return ("s", "bool")
    if isinstance(t, nt.Integer):
        return ("s", "int") if t == nt.int64 else ("s", np.dtype(str(t)).str)
    if isinstance(t, nt.Float):
        return ("s", "float")
    raise TypeError(f"no compiled form for argument type {t}")


def _constants(module: types.ModuleType) -> dict[str, Any]:
    """The module's plain data attributes (what a stand-in holds besides kernels)."""
    import numpy as np

    plain = (int, float, bool, str, bytes, type(None), np.ndarray, np.generic)
    out: dict[str, Any] = {}
    for name, value in vars(module).items():
        if name.startswith("__") or not isinstance(value, plain + (tuple,)):
            continue
        if isinstance(value, tuple) and not all(isinstance(v, plain) for v in value):
            continue
        out[name] = value
    return out


def _python_parts(module: types.ModuleType, kernels: Any) -> tuple[dict[str, str], dict[str, Any]]:
    """The module's imported modules (numpy, ...; not numba's) and its plain Python functions
    (marshalled code: the key includes the Python version), which a stand-in re-creates over its
    own namespace so that they call the compiled kernels."""
    imports = {name: value.__name__ for name, value in vars(module).items()
               if isinstance(value, types.ModuleType) and value.__name__.split(".")[0] not in ("numba", "llvmlite")}
    functions = {name: (marshal.dumps(f.__code__), f.__defaults__, f.__kwdefaults__)
                 for name, f in vars(module).items()
                 if isinstance(f, types.FunctionType) and f.__module__ == module.__name__ and not f.__closure__}
    # A function re-created over the stand-in's namespace must find every global it reads there
    # (a global lookup never reaches the stand-in's __getattr__): those that would not stay out,
    # and are taken from the real module when called.
    have = set(_constants(module)) | set(imports) | set(functions) | set(kernels) | set(vars(builtins))
    while True:
        missing = {name for name, (code, _d, _k) in functions.items() if not _globals_read(marshal.loads(code)) <= have}
        if not missing:
            return imports, functions
        for name in missing:
            del functions[name]
        have -= missing


def _globals_read(code: types.CodeType) -> set[str]:
    """The global names ``code`` (and the code nested in it) loads."""
    import dis

    out = {ins.argval for ins in dis.get_instructions(code) if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out |= _globals_read(const)
    return {str(name) for name in out}


def build(directory: Path | None = None, verbose: bool = False) -> Path:
    """Compile the builder's kernels for the current key (JIT warm-up, then ``numba.pycc``);
    returns the key's directory.  Several builds may race: each writes its own temporary
    directory and the first rename wins."""
    import shutil
    import tempfile
    from pathlib import Path

    from numba.core.compiler import Flags
    from numba.core.registry import CPUDispatcher
    from numba.pycc import CC
    import numba.pycc.compiler as pycc_compiler

    where = (directory or cache_dir()) / key()
    exercise()
    cc = CC(EXT_NAME)
    cc.verbose = verbose
    desc: dict[str, Any] = {"modules": {}}
    no_nrt: dict[Any, bool] = {}
    n = 0
    for modname, module in sorted(sys.modules.items()):
        if not modname.startswith(_KERNELS) or module is None or modname.endswith("._jit"):
            continue
        kernels: dict[str, list[tuple[tuple[Any, ...], str]]] = {}
        for name, d in sorted(vars(module).items()):
            if (name.startswith("_") or not isinstance(d, CPUDispatcher)
                    or d.py_func.__module__ != modname):
                continue
            seen = set()
            for sig in d.signatures:
                want = tuple(_numba_arg(a) for a in sig)
                if want in seen:
                    continue
                seen.add(want)
                from numba.core import types as nt

                args = tuple(nt.unliteral(a) for a in sig)
                ret = d.overloads[sig].signature.return_type
                symbol = f"k{n}_{name}"
                n += 1
                cc.export(symbol, ret(*args))(d.py_func)
                no_nrt[d.py_func] = d.targetoptions.get("_nrt") is False
                kernels.setdefault(name, []).append((want, symbol))
        imports, functions = _python_parts(module, kernels)
        desc["modules"][modname] = {"constants": _constants(module), "kernels": kernels,
                                    "imports": imports, "functions": functions}
    tmp = Path(tempfile.mkdtemp(prefix=where.name + ".", dir=_made(where.parent)))
    cc.output_dir = str(tmp)
    # ``@kernel`` releases the GIL (``nogil=True``); pycc's exports would hold it: the builder's
    # reader thread must drain the recorded process's pipe while a kernel runs.
    original = pycc_compiler.Flags

    class _NoGil(Flags):  # type: ignore[misc]
        def __init__(self, *a: Any, **k: Any) -> None:
            super().__init__(*a, **k)
            self.release_gil = True

    # and pycc compiles every export with one set of flags, NRT on: a kernel ``@kernel(nrt=False)``
    # compiles without it (no atomic reference counts around its internal calls, ~2x here).
    compile_extra = pycc_compiler.compile_extra

    def _compile_extra(typingctx, targetctx, func, args, return_type, flags, locals, **kws):  # type: ignore[no-untyped-def]
        if no_nrt.get(func):
            flags = flags.copy()
            flags.nrt = False
        return compile_extra(typingctx, targetctx, func, args, return_type, flags, locals, **kws)

    pycc_compiler.Flags = _NoGil
    pycc_compiler.compile_extra = _compile_extra
    try:
        cc.compile()
    finally:
        pycc_compiler.Flags = original
        pycc_compiler.compile_extra = compile_extra
    desc["environments"] = _environments(tmp)
    desc["globals"] = _globals_pickled()
    try:
        data, name = marshal.dumps(_plain(desc)), DESCRIPTION
    except (TypeError, ValueError):   # a constant marshal cannot hold even as _plain makes it
        import pickle

        data, name = pickle.dumps(desc, protocol=pickle.HIGHEST_PROTOCOL), DESCRIPTION_PICKLED
    with open(tmp / name, "wb") as f:
        f.write(data)
    try:
        os.rename(tmp, where)
    except OSError:  # another build won the race (or an old one is there): keep it
        shutil.rmtree(tmp, ignore_errors=True)
    return where


def _environments(tmp: Path) -> list[tuple[bytes, list[tuple[tuple[Any, ...], tuple[Any, ...]]]]]:
    """What the compiled module's init unpickles (its exports' environments, numba's
    ``_helperlib``): each pickle's bytes with its value's recipe, the ``(args, state)`` of every
    ``numpy.dtype`` of the list it is, so that ``aot.load`` rebuilds them as ``pickle.loads`` does
    (``numpy.dtype(*args).__setstate__(state)``) without ``_pickle``'s module init (~2 M
    instructions of every builder).  Made by loading the module here with a recording ``loads``;
    empty (``_pickle`` then) if any value is anything else or its rebuild differs."""
    import pickle

    found = sorted(tmp.glob(EXT_NAME + ".*"))
    seen: list[tuple[bytes, Any]] = []
    real_loads = pickle.loads

    def loads(data: bytes, *a: Any, **k: Any) -> Any:
        value = real_loads(data, *a, **k)
        seen.append((bytes(data), value))
        return value

    from importlib.machinery import ExtensionFileLoader
    from importlib.util import module_from_spec, spec_from_file_location

    spec = spec_from_file_location(EXT_NAME, found[0], loader=ExtensionFileLoader(EXT_NAME, str(found[0])))
    assert spec is not None
    pickle.loads = loads
    try:
        module_from_spec(spec)   # PyInit runs here: the unpickling
    finally:
        pickle.loads = real_loads
    return _recipes(seen)


def _recipes(seen: list[tuple[bytes, Any]]) -> list[tuple[bytes, list[tuple[tuple[Any, ...], tuple[Any, ...]]]]]:
    """The recipes of :func:`_environments` for what the module's init unpickled (each pickle's
    bytes and value): empty if any value is not a list of dtypes, its rebuild differs, or its
    recipe is not in :func:`_plain`'s values (a record's or sub-array's state holds dtypes: the
    whole description would then be pickled, and every builder import ``pickle`` and ``re``)."""
    import numpy as np

    out: dict[bytes, list[tuple[tuple[Any, ...], tuple[Any, ...]]]] = {}
    for data, value in seen:
        if type(value) is not list:
            return []
        recipe = []
        for d in value:
            reduced = d.__reduce__() if isinstance(d, np.dtype) else None
            if reduced is None or len(reduced) != 3 or reduced[0] is not np.dtype:
                return []
            again = rebuilt_dtype(reduced[1], reduced[2])
            if type(again) is not type(d) or again != d or again.__reduce__() != reduced:
                return []
            recipe.append((reduced[1], reduced[2]))
        try:
            _plain(recipe)
        except TypeError:
            return []
        if out.setdefault(data, recipe) != recipe:
            return []
    return sorted(out.items())


def _globals_pickled() -> list[tuple[bytes, tuple[str, str]]]:
    """The pickles the compiled kernels unpickle when they run (numba's array boxing asks for
    ``numpy.ndarray``; protocol 4, as numba's serializer writes them) with the ``(module, name)``
    ``pickle``'s ``find_class`` resolves, each checked against ``pickle.loads``."""
    import pickle

    import numpy as np

    out = []
    for module, name in (("numpy", "ndarray"),):
        data = pickle.dumps(getattr(np, name), protocol=4)
        if pickle.loads(data) is getattr(np, name):
            out.append((data, (module, name)))
    return out


def _made(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
