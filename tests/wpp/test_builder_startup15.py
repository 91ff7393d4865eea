"""The builder's start-up, wave 15: no pickle (with re) in the lean numpy or the compiled kernels' description, no importlib.util, no json or store for the file frames."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest

from wholetrace.wpp import aot
from wtutil import ENV


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-W", "error", "-c", code], env=ENV, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_the_lean_numpy_imports_no_pickle_and_ndarray_dumps_still_works() -> None:
    """``numpy._core._methods`` gets a deferring stand-in for ``pickle``: the lean numpy imports
    neither ``pickle`` nor ``re`` (nor ``importlib.util``), ``ndarray.dumps`` then imports the real
    one and gives the bytes a plain ``import numpy`` gives (oracle: another process), and once
    numpy is completed ``_methods`` holds the real module."""
    lean = _run("import sys\nimport wholetrace.wpp.startup as s\nnp = s.lean_numpy()\n"
                "print(sorted(m for m in ('pickle', 're', 'importlib.util', 'json') if m in sys.modules))\n"
                "print(np.arange(5, dtype=np.int32).dumps().hex())\n"
                "m = sys.modules['numpy._core._methods']\n"
                "print(s.numpy_state(), m.pickle is sys.modules['pickle'])\n"
                "np.unique\n"
                "print(s.numpy_state(), m.pickle is sys.modules['pickle'], type(m.pickle).__name__)")
    mods, dumped, before, after = lean.splitlines()
    assert mods == "[]"
    assert before == "lean False"          # the stand-in, forwarding to the real module
    assert after == "full True module"
    plain = _run("import numpy as np\nprint(np.arange(5, dtype=np.int32).dumps().hex())")
    assert dumped == plain


def test_a_pickle_imported_before_is_left_alone() -> None:
    out = _run("import pickle, sys\nimport wholetrace.wpp.startup as s\ns.lean_numpy()\n"
               "print(sys.modules['numpy._core._methods'].pickle is pickle)")
    assert out == "True"


VALUES = [
    0, -1, 1 << 70, 2.5, True, None, "x", b"\x00y", (1, "a"), [1, (2.0,)], {"k": (1, 2)},
    np.arange(6, dtype=np.int64), np.arange(12, dtype=np.int32).reshape(3, 4), np.zeros(0, np.uint8),
    np.array([1.5, -2.0], np.float32), np.array([True, False]), np.int64(-7), np.uint32(9), np.float64(0.25),
    np.bool_(True), (np.int32(3), np.array([1, 2], np.int16)),
]


@pytest.mark.parametrize("value", VALUES, ids=[f"{type(v).__name__}{i}" for i, v in enumerate(VALUES)])
def test_the_marshalled_description_gives_what_pickle_gives(value: object) -> None:
    """``aot._plain``/``_unplain`` through ``marshal``, against a pickle round trip (the oracle):
    same types, dtypes, shapes, values, and writeable arrays."""
    import marshal

    got = aot._unplain(marshal.loads(marshal.dumps(aot._plain(value))))
    want = pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))

    def same(a: object, b: object) -> None:
        assert type(a) is type(b)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and a.shape == b.shape and (a == b).all() and a.flags.writeable
            assert a.flags.c_contiguous
        elif isinstance(a, (tuple, list)):
            assert len(a) == len(b)
            for x, y in zip(a, b):
                same(x, y)
        elif isinstance(a, dict):
            assert a.keys() == b.keys()
            for k in a:
                same(a[k], b[k])
        elif isinstance(a, np.generic):
            assert a.dtype == b.dtype and a == b
        else:
            assert a == b

    same(got, want)


_RECORDS = np.zeros(2, dtype=[("a", "<i4"), ("b", "<f8")])


@pytest.mark.parametrize("value", [np.arange(6).reshape(2, 3).T, np.array([object()]), object(), {1: 2},
                                   _RECORDS, _RECORDS[0]])
def test_what_marshal_cannot_hold_is_refused(value: object) -> None:
    """A Fortran-ordered array, an object array, another object, a non-string key, a record array
    or scalar (its dtype's ``.str`` is ``|V12``, its fields lost: review15b LOW 3): TypeError, and
    ``aot.build`` then writes the pickled description (``exports.pickle``, still read by ``load``)."""
    with pytest.raises(TypeError):
        aot._plain(value)


def test_the_compiled_kernels_load_without_pickle_or_importlib_util() -> None:
    """The builder's imports, from its start to ready (started as ``wpp.spawn`` starts it; the
    compiled kernels are the ones this tree's ``python -m wholetrace.wpp.aot`` built): none of
    ``pickle``, ``re``, ``json``, ``importlib.util``, ``resource``."""
    if aot.load() is None or isinstance(aot.load(), str):
        pytest.skip("no compiled kernels for this tree (python -m wholetrace.wpp.aot)")
    out = _run("import gc; gc.disable()\nimport sys\nimport wholetrace.wpp.startup as s\ns.lean_numpy()\n"
               "from wholetrace.wpp import aot, builder\n"
               "print(aot.install())\n"
               "from wholetrace.grammar import GrammarBuilder\nfrom wholetrace.grammar.encoding import encode_explicit\n"
               "from wholetrace.wpp.intern import interner_for\n"
               "print(sorted(m for m in ('pickle', 're', 'json', 'importlib.util', 'resource', 'numba') if m in sys.modules))")
    installed, mods = out.splitlines()
    assert installed == "aot"
    assert mods == "[]"


def test_a_stand_in_asked_by_two_threads_at_once_gives_the_real_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """review15b LOW 5: the other thread took the stand-in out of ``sys.modules`` between this
    one's check and its removal (the check sees it, the module table no longer holds it)."""
    import colorsys
    import types

    from wholetrace.wpp import startup

    stand_in = startup._deferred("colorsys")

    class Raced(dict):   # type: ignore[type-arg]
        def get(self, key: object, default: object = None) -> object:
            return stand_in

    monkeypatch.setattr(startup, "sys", types.SimpleNamespace(modules=Raced()))
    assert stand_in.rgb_to_hsv is colorsys.rgb_to_hsv
