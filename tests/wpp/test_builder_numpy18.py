"""The builder's numpy, wave 18: the compiled ``_multiarray_umath`` only (the C tier), numpy's Python layer on the first name or ndarray reduction outside it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from wtutil import ENV

SRC = str(Path(__file__).resolve().parents[2] / "src")

#: numpy's Python modules the C tier leaves out (the lean core of wave 13 imports them)
PYTHON_LAYER = ("numpy._core.multiarray", "numpy._core.overrides", "numpy._core.numerictypes",
                "numpy._core.umath", "numpy._core.fromnumeric", "numpy._core.numeric",
                "numpy._core.shape_base", "inspect", "pickle")
#: what only unpickling loads (wave 20: the compiled module's init and its kernels' array boxing
#: unpickle through ``aot._known_loads``; ``re``, which imports ``copyreg`` too, is not loaded either)
PICKLE = ("_pickle", "copyreg", "_compat_pickle", "re")


def _run(code: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run([sys.executable, "-W", "error", "-c", code], env=env or ENV,
                          capture_output=True, text=True, check=True).stdout.strip()


_PRELUDE = ("import sys\nimport wholetrace.wpp.startup as s\nnp = s.lean_numpy()\n"
            f"loaded = lambda: [m for m in {PYTHON_LAYER!r} if m in sys.modules]\n"
            "methods = lambda: getattr(sys.modules.get('numpy._core._methods'), '_wholetrace_stand_in', None)\n")


def test_the_c_tier_loads_none_of_numpys_python_layer_and_its_names_are_numpys() -> None:
    """Before any name outside it: none of numpy's Python modules (and no ``inspect``, ``pickle``),
    ``_methods`` is the stand-in; after completion (``np.unique``) every name the C tier bound is
    still the very object (numpy's ``__init__`` binds its own to each: the oracle), and the
    completed module is the one the lean-numpy tests compare with a plain ``import numpy``."""
    out = _run(_PRELUDE +
               "names = dict(vars(np))\n"
               "print(loaded(), methods(), s.numpy_state(), s._tier, sorted(set(s._C_NAMES) - set(names)))\n"
               "print(np.dtype('bool'), np.dtype('int32') is np.dtype(np.int32))\n"   # the type dictionary is set
               "np.unique\n"
               "same = [k for k in list(s._C_NAMES) + [n for n, _ in s._C_TYPES] if getattr(np, k) is not names[k]]\n"
               "print(s.numpy_state(), same, methods(), len(loaded()))")
    first, dtypes, after = out.splitlines()
    assert first == "[] True lean c []"
    assert dtypes == "bool True"
    assert after == f"full [] None {len(PYTHON_LAYER)}"   # numpy whole: every module of its Python layer
    plain = _run("import numpy as np, numpy._core._multiarray_umath as mu\n"
                 "import wholetrace.wpp.startup as s\n"
                 "print([k for k in s._C_NAMES if getattr(mu, k) is not getattr(np, k)],"
                 " [n for n, t in s._C_TYPES if mu.typeinfo[t].type is not getattr(np, n)])")
    assert plain == "[] []"


@pytest.mark.parametrize("first", ["a.max()", "a.sum()", "np.full(3, 7, np.int64).tolist()", "np.stack([a, a]).shape"])
def test_the_first_use_outside_the_c_tier_brings_the_lean_core_in(first: str) -> None:
    """An ndarray reduction (through the ``_methods`` stand-in) or a name the C tier lacks gives
    the lean core of wave 13 (its modules, numpy's own ``_methods``; numpy not completed) and the
    right value; a plain process computes the same."""
    out = _run(_PRELUDE + "a = np.arange(5, dtype=np.int64)\n"
               f"v = {first}\n"
               "print(v, s.numpy_state(), s._tier, methods(), 'numpy._core.fromnumeric' in sys.modules,"
               " sys.modules['numpy._core._methods'] is np._core.fromnumeric._methods)")
    plain = _run(f"import numpy as np\na = np.arange(5, dtype=np.int64)\nprint({first})")
    assert out == f"{plain} lean python None True True"


def test_the_c_tier_can_be_left_for_the_python_tier() -> None:
    out = _run(_PRELUDE + "print(s._tier, 'numpy._core.numeric' in sys.modules)",
               env={**ENV, "WHOLETRACE_LEAN_NUMPY": "python"})
    assert out == "python True"


def test_the_builders_fills_and_extensions_equal_numpys() -> None:
    """``grammar.builder._filled``, ``wpp.intern._filled``/``_extended`` against ``np.full`` and
    ``np.concatenate`` (values, dtype, contiguity; the uninitialised part is not compared)."""
    from wholetrace.grammar.builder import _filled as filled32
    from wholetrace.wpp.intern import _extended, _filled as filled64

    for n, v in ((0, -1), (1, -1), (7, 3), (4096, -2)):
        for got, want in ((filled32(n, v), np.full(n, v, np.int32)), (filled64(n, v), np.full(n, v, np.int64))):
            assert got.dtype == want.dtype and got.flags.c_contiguous and np.array_equal(got, want)
    for a in (np.arange(5, dtype=np.int64), np.zeros(0, np.int8), np.array([1, 0, 1], np.int8)):
        for extra in (0, 1, 6):
            got = _extended(a, extra)
            want = np.concatenate([a, np.empty(extra, a.dtype)])
            assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got[:len(a)], a)
            z = _extended(a, extra, 0)
            assert np.array_equal(z, np.concatenate([a, np.zeros(extra, a.dtype)])) and z.dtype == a.dtype


def test_a_builder_process_builds_without_numpys_python_layer() -> None:
    """The builder process, started as ``wpp.spawn`` starts it, on a few events: at its exit none of
    numpy's Python layer is loaded (on main the lean core loaded all of it), nor (wave 19)
    ``threading`` and ``datetime``, nor (wave 20) ``_pickle``, ``copyreg``, ``_compat_pickle``:
    the compiled module's pickles and the ``numpy.ndarray`` its kernels' array boxing unpickles
    (the interning kernels return arrays) are all ones the description records (a numpy or numba
    whose pickles differ fails here rather than quietly going back to ``_pickle``), numpy is lean
    and the result is a built grammar (its exactness: the online and AOT tests)."""
    import marshal

    from test_builder_startup11 import _events, _frames, _path
    from wholetrace.wpp.spawn import _CODE

    code = ("import os, sys\nreal = os._exit\n"
            "def _exit(c):\n    sys.stderr.write('LOADED %s\\n' % ','.join(m for m in " + repr(PYTHON_LAYER + ("threading", "datetime") + PICKLE)
            + " if m in sys.modules))\n    sys.stderr.flush(); real(c)\n"
            "os._exit = _exit\n" + _CODE.replace("; ", "\n"))
    p = subprocess.run([sys.executable, "-S", "-c", code, "blocks", "1", "100000", "0", *_path()],
                       input=_frames(_events(4)), capture_output=True, check=True,
                       env={**ENV, "PYTHONPATH": SRC, "OPENBLAS_NUM_THREADS": "1"})
    result = marshal.loads(p.stdout)
    assert "error" not in result
    if result["stats"]["kernels"] != "aot":
        pytest.skip("no compiled kernels: numba imports all of numpy")
    loaded = p.stderr.decode().split("LOADED ", 1)[1].split("\n")[0]
    assert (loaded, result["stats"]["startup"]["numpy"], len(result["grammars"]) > 0) == ("", "lean", True)
