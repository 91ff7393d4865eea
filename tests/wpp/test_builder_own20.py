"""The builder's own layer, wave 20: no warm-up with the compiled kernels, the compiled module's pickles rebuilt without ``_pickle``."""

from __future__ import annotations

import pickle

import numpy as np
import pytest


def test_known_pickles_are_rebuilt_as_pickle_loads_builds_them() -> None:
    """``aot._known_loads`` against the oracle ``pickle.loads``: the environments' lists of dtypes
    (recipes as ``aotbuild._environments`` makes them) come back of the same types, equal, with the
    same ``__reduce__``, and copies as pickle's are; a pickle not known goes to ``_pickle``."""
    from wholetrace.wpp.aot import _known_loads

    values = [[], [np.dtype("i8")], [np.dtype("i1"), np.dtype("i4"), np.dtype("i8")],
              [np.dtype("u1"), np.dtype("<i8")], [np.dtype(">f8"), np.dtype("bool")]]
    known = {}
    for value in values:
        data = pickle.dumps(value, protocol=4)
        known[data] = [(d.__reduce__()[1], d.__reduce__()[2]) for d in value]
    loads = _known_loads(known)
    for data in known:
        want, got = pickle.loads(data), loads(data)
        assert type(got) is list and len(got) == len(want)
        for w, g in zip(want, got):
            assert type(g) is type(w) and g == w and g.__reduce__() == w.__reduce__()
            assert g.str == w.str and g.isnative == w.isnative
            assert (g is np.dtype(g.str)) == (w is np.dtype(w.str))   # a copy, as pickle's
    other = pickle.dumps(np.ndarray, protocol=4)      # what a kernel's array boxing unpickles
    assert other not in known and loads(other) is np.ndarray
    assert loads(pickle.dumps((1, "a"))) == (1, "a")
    named = _known_loads(known, {other: ("numpy", "ndarray")})   # as aotbuild._globals_pickled records it
    assert named(other) is pickle.loads(other) is np.ndarray
    assert named(pickle.dumps(np.int64, protocol=4)) is np.int64   # not named: _pickle


def test_the_recorded_globals_are_what_pickle_loads_gives() -> None:
    """``aotbuild._globals_pickled``: each pickle's bytes resolve, by ``pickle.loads`` (the oracle),
    to the attribute it names."""
    import importlib

    from wholetrace.wpp.aotbuild import _globals_pickled

    found = _globals_pickled()
    assert found
    for data, (module, name) in found:
        assert pickle.loads(data) is getattr(importlib.import_module(module), name)


def test_the_compiled_kernels_build_no_warm_up_grammar(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the compiled kernels (``install`` says "aot") ``build`` makes a grammar builder only for
    the streams that came (none for an empty input: the warm-up built one nobody read); with the JIT
    it still warms up."""
    import wholetrace.grammar as grammar
    import wholetrace.wpp.aot as aot
    from wholetrace.wpp import builder

    made: list[object] = []
    real = grammar.GrammarBuilder

    class Counting(real):  # type: ignore[misc, valid-type]
        def __init__(self, *a: object, **k: object) -> None:
            made.append(self)
            super().__init__(*a, **k)

    monkeypatch.setattr(grammar, "GrammarBuilder", Counting)
    for kernels, warmed in (("aot", 0), ("jit: as asked", 1)):
        made.clear()
        monkeypatch.setattr(aot, "install", lambda kernels=kernels: kernels)
        q = builder.ChunkQueue(1 << 20)
        q.put(3, bytearray(np.array([-8, 0, 1, 0, 1, -2, 0, -1], np.int32).tobytes()))
        q.end()
        result = builder.build("blocks", True, q)
        assert len(made) == 1 + warmed
        assert result["streams"]["3"]["events"] == 8
