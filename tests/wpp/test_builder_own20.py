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


def test_a_recipe_the_descriptions_format_cannot_hold_is_refused() -> None:
    """``aotbuild._recipes`` (review20b LOW 1): a record's or sub-array's dtype rebuilds exactly, but
    its state holds dtypes, which ``aot._plain`` refuses: its pickle is left to ``_pickle`` (no
    recipes) rather than making the whole description a pickle (``pickle`` and ``re`` in every
    builder); the plain dtypes the kernels' environments hold are kept, in ``_plain``'s values."""
    from wholetrace.wpp.aot import _plain
    from wholetrace.wpp.aotbuild import _recipes

    def seen(*values: list[np.dtype]) -> list[tuple[bytes, list[np.dtype]]]:
        return [(pickle.dumps(v, protocol=4), pickle.loads(pickle.dumps(v, protocol=4))) for v in values]

    plain = [np.dtype("i1"), np.dtype("i4"), np.dtype("i8"), np.dtype("u1")]
    kept = _recipes(seen(plain, [np.dtype(">f8")]))
    assert [data for data, _ in kept] == sorted(data for data, _ in seen(plain, [np.dtype(">f8")]))
    _plain(kept)
    for odd in (np.dtype([("a", "i4"), ("b", "f8")]), np.dtype([("a", "u1"), ("b", "i8")], align=True),
                np.dtype(("i4", (2, 3)))):
        assert _recipes(seen(plain, [np.dtype("i8"), odd])) == []


def test_the_installed_descriptions_pickles_are_the_compiled_modules() -> None:
    """The description installed for this key against what the compiled module holds and
    ``pickle.loads`` (the oracle) makes of it: each recorded pickle's bytes are in the module
    (numba wrote them there: a numpy or numba that writes other bytes fails here, where the builder
    would quietly import ``_pickle`` again), and ``aot._known_loads`` gives what ``pickle.loads`` does."""
    import marshal
    import os

    from wholetrace.wpp import aot

    where = os.path.join(aot._cache_dir(), aot.key())
    if not os.path.exists(os.path.join(where, aot.DESCRIPTION)):
        pytest.skip(f"no compiled kernels in {where} (python -m wholetrace.wpp.aot)")
    with open(os.path.join(where, aot.DESCRIPTION), "rb") as f:
        desc = aot._unplain(marshal.loads(f.read()))
    (so,) = [os.path.join(where, n) for n in os.listdir(where) if n.startswith(aot.EXT_NAME + ".")]
    with open(so, "rb") as f:
        module = f.read()
    environments, names = dict(desc["environments"]), dict(desc["globals"])
    assert environments and list(names.values()) == [("numpy", "ndarray")]
    loads = aot._known_loads(environments, names)
    for data in list(environments) + list(names):
        assert data in module
        want, got = pickle.loads(data), loads(data)
        if data in names:
            assert got is want is np.ndarray
            continue
        assert type(got) is list and len(got) == len(want)
        for w, g in zip(want, got):
            assert type(g) is type(w) and g == w and g.__reduce__() == w.__reduce__()


def test_the_kernels_load_time_is_the_compiled_modules_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """``jit_seconds`` (``wholetrace wpp``'s "kernels aot (loaded in ... s)", review20b LOW 3) is the
    thread CPU time of ``aot.install`` (the compiled module's load), plus the warm-up with the JIT;
    it is no longer 0 with the compiled kernels now that they have no warm-up.  A clock that only
    ``install`` moves (by 1 s) is the oracle."""
    import time

    import wholetrace.wpp.aot as aot
    from wholetrace.wpp import builder

    clock = [100.0]
    monkeypatch.setattr(time, "thread_time", lambda: clock[0])

    def install() -> str:
        clock[0] += 1.0
        return "aot"

    monkeypatch.setattr(aot, "install", install)
    q = builder.ChunkQueue(1 << 20)
    q.put(3, bytearray(np.array([-8, 0, 1, 0, 1, -2, 0, -1], np.int32).tobytes()))
    q.end()
    stats = builder.build("blocks", True, q)["stats"]
    # "aot", or "aot (jit: ...)" when this worker never loaded the compiled module (install is faked)
    assert stats["kernels"].startswith("aot") and stats["jit_seconds"] == 1.0
