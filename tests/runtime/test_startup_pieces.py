"""What `record`'s start-up uses instead of heavier modules (docs/design.md, "Start-up of record,
wave 10"), each against the module it stands in for: ``wholetrace.jsontext`` against ``json``,
``loader.decode_source`` against ``importlib.util.decode_source``, ``plain.Record`` against
``dataclasses``, and the memoised instrumenter digest against hashing the files."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import os
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wholetrace import jsontext
from wholetrace.instrument import cache, digest
from wholetrace.instrument.loader import decode_source
from wholetrace.plain import FrozenRecord, Record, replace

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5) | st.integers(), inner, max_size=4),
    max_leaves=20)
FLAGS = [dict(), dict(ensure_ascii=False), dict(allow_nan=False, separators=(",", ":"), ensure_ascii=False),
         dict(separators=(",", ":"))]


def _outcome(f, value, flags):  # type: ignore[no-untyped-def]
    try:
        return "ok", f(value, **flags)
    except (TypeError, ValueError, SyntaxError) as exc:
        return type(exc).__name__, str(exc)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES, st.sampled_from(FLAGS))
def test_jsontext_is_json_dumps(value, flags):
    assert _outcome(jsontext.dumps, value, flags) == _outcome(json.dumps, value, flags)


@pytest.mark.parametrize("value", [math.nan, [1, math.inf], {"a": -math.inf}, {1.5: 2, None: 3, True: 4},
                                   "\ud800 surrogate \u00e9 \U0001f600", {"k": object()}, {(1, 2): 3}, b"x"])
@pytest.mark.parametrize("flags", FLAGS)
def test_jsontext_edge_cases(value, flags):
    assert _outcome(jsontext.dumps, value, flags) == _outcome(json.dumps, value, flags)


def test_jsontext_circular_reference_is_the_same_error():
    loop: list[object] = []
    loop.append(loop)
    assert _outcome(jsontext.dumps, loop, {}) == _outcome(json.dumps, loop, {})


SOURCES = [b"", b"x = 1\n", b"\r", b"a\r\nb\rc\n", b"a\r", b"x\r\n", b"\xef\xbb\xbfx = 1\n",
           b"# -*- coding: latin-1 -*-\nx = '\xe9'\n", b"#!/usr/bin/env python\n# coding=cp1252\nx = '\x80'\n",
           b"\n\n# coding: latin-1\n'\xe9'", b"x = '\xff'\n", "x = '\u00e9\U0001f600'\n".encode(),
           b"# coding: nonsense\n", b"\xef\xbb\xbf# coding: latin-1\n", b"s = 'coding'\nt = 1\n"]


@pytest.mark.parametrize("data", SOURCES)
def test_decode_source_is_importlib_s(data):
    assert _outcome(lambda d: decode_source(d), data, {}) == \
        _outcome(lambda d: importlib.util.decode_source(d), data, {})


def test_decode_source_on_the_standard_library():
    root = Path(os.__file__).parent
    files = sorted(root.glob("*.py")) + sorted(root.glob("json/*.py")) + sorted(root.glob("email/*.py"))
    for f in files:
        data = f.read_bytes()
        assert decode_source(data) == importlib.util.decode_source(data), f


@dataclasses.dataclass
class _DC:
    a: int
    b: list[int] = dataclasses.field(default_factory=list)
    c: str = dataclasses.field(default="", repr=False, compare=False)


class _Plain(Record):
    __slots__ = ("a", "b", "c")
    _fields = ("a", "b")

    def __init__(self, a: int, b: list[int] | None = None, c: str = "") -> None:
        self.a, self.b, self.c = a, [] if b is None else b, c


@dataclasses.dataclass(frozen=True)
class _FDC:
    x: int
    y: tuple[int, ...] = ()


class _Frozen(FrozenRecord):
    __slots__ = ("x", "y")

    def __init__(self, x: int, y: tuple[int, ...] = ()) -> None:
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "y", y)


def test_record_behaves_as_the_dataclass():
    pairs = [(_DC(1), _Plain(1)), (_DC(1, [2], "z"), _Plain(1, [2], "z")), (_DC(2, [], "q"), _Plain(2, [], "q"))]
    for (d1, p1) in pairs:
        assert repr(p1).replace("_Plain", "_DC") == repr(d1)
        for (d2, p2) in pairs:
            assert (p1 == p2) == (d1 == d2)
    assert _Plain(1) != _DC(1) and _Plain(1) != (1, [])
    with pytest.raises(TypeError):
        hash(_Plain(1))
    with pytest.raises(TypeError):
        hash(_DC(1))


def test_frozen_record_behaves_as_the_frozen_dataclass():
    d, p = _FDC(1, (2,)), _Frozen(1, (2,))
    assert repr(p).replace("_Frozen", "_FDC") == repr(d)
    assert p == _Frozen(1, (2,)) and hash(p) == hash(_Frozen(1, (2,))) and p != _Frozen(1)
    assert {p, _Frozen(1, (2,))} == {p}
    with pytest.raises(AttributeError):
        p.x = 3  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del p.x  # type: ignore[misc]
    assert replace(p, y=(5,)) == _Frozen(1, (5,)) and p.y == (2,)


def test_digest_memo_follows_the_files(tmp_path, monkeypatch):
    """The memoised digest equals the digest of the files' bytes, and a changed file (same
    size, same modification time) gets a new one."""
    files = [tmp_path / "a.py", tmp_path / "b.py"]
    for f in files:
        f.write_text("x = 1\n")
    monkeypatch.setattr(cache, "digested_files", lambda: [str(f) for f in files])
    monkeypatch.setattr(digest, "RACY_NS", 0)          # files this fresh are memoised too (next test)
    memo = str(tmp_path / "memo")

    def fresh(m):  # type: ignore[no-untyped-def]
        cache.instrumenter_digest.cache_clear()
        return cache.instrumenter_digest(m)

    first = fresh(memo)
    assert first == fresh(None) == fresh(memo)       # the second read comes from the memo file
    assert len(os.listdir(memo)) == 1
    stat = os.stat(files[1])
    files[1].write_text("x = 2\n")
    os.utime(files[1], ns=(stat.st_atime_ns, stat.st_mtime_ns))
    second = fresh(memo)
    assert second != first and second == fresh(None)
    (Path(memo) / os.listdir(memo)[0]).write_text("not a digest")
    cache.instrumenter_digest.cache_clear()
    assert fresh(memo) in (first, second)  # a damaged memo is recomputed, never trusted
    cache.instrumenter_digest.cache_clear()


class _CoarseOs:
    """``os`` on a file system whose timestamps do not move within the test (1 s or 2 s
    granularity: ext3, FAT, some network file systems): stat times frozen at ``t0``."""

    def __init__(self, t0: int) -> None:
        self.t0 = t0

    def __getattr__(self, name):  # type: ignore[no-untyped-def]
        return getattr(os, name)

    def stat(self, path):  # type: ignore[no-untyped-def]
        st = os.stat(path)
        return type("Stat", (), {"st_size": st.st_size, "st_ino": st.st_ino, "st_mtime_ns": self.t0,
                                 "st_ctime_ns": self.t0})()


def test_digest_memo_is_not_fooled_by_coarse_timestamps(tmp_path, monkeypatch):
    """A file rewritten in place with the same size within one tick of the file system's clock
    keeps its whole stamp: a digest memoised in that tick would be stale (and templates made by
    the old instrumenter reused).  Stamps that recent are not memoised (as git's "racily clean")."""
    import time

    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    monkeypatch.setattr(cache, "digested_files", lambda: [str(f)])
    monkeypatch.setattr(cache, "os", _CoarseOs(time.time_ns() // 10**9 * 10**9))
    memo = str(tmp_path / "memo")
    cache.instrumenter_digest.cache_clear()
    first = cache.instrumenter_digest(memo)
    assert first == cache._content_digest([str(f)])
    with open(f, "r+") as fh:                          # same inode, same size, same (frozen) times
        fh.write("x = 2\n")
    cache.instrumenter_digest.cache_clear()
    second = cache.instrumenter_digest(memo)
    cache.instrumenter_digest.cache_clear()
    assert second == cache._content_digest([str(f)]) != first


def test_the_package_digest_is_the_files_digest():
    cache.instrumenter_digest.cache_clear()
    assert cache.instrumenter_digest(None) == cache._content_digest(cache.digested_files())
    names = {os.path.basename(f) for f in cache.digested_files()}
    assert {"events.py", "ids.py", "registry.py", "cfg.py", "emit.py"} <= names
    assert sys.modules["wholetrace.instrument.cache"] is cache


PATHS = st.lists(st.sampled_from(["", ".", "..", "a", "b.py", ".x", "x.", "a.b.c", "wt"]), max_size=5).map("/".join) \
    | st.text(alphabet="/.ab", max_size=12)


@settings(max_examples=500, deadline=None)
@given(PATHS, st.booleans())
def test_path_strings_are_pathlib_s(text, absolute):
    """The string helpers standing in for pathlib on record's start-up path give pathlib's answers."""
    from pathlib import PurePosixPath

    from wholetrace.instrument.loader import _within
    from wholetrace.runtime.children import _suffix
    from wholetrace.runtime.cli import _pure, _stem

    path = ("/" + text) if absolute else text
    pure = PurePosixPath(path)
    assert _pure(path) == str(pure)
    assert _stem(path) == pure.stem
    assert _suffix(pure.name) == pure.suffix
    for tree in ("/", "/a", "/a/b.py", "/a/b"):
        normal = str(PurePosixPath("/" + text.lstrip("/")))   # realpath gives one leading slash
        assert _within(normal, tree) == PurePosixPath(normal).is_relative_to(tree), (normal, tree)


_TREES = ["/nx", "/nx/a", "/nx/a/b", "/nx/a/b/site-packages", "/nx/c"]


@settings(max_examples=500, deadline=None)
@given(roots=st.lists(st.sampled_from(_TREES), max_size=3), install=st.lists(st.sampled_from(_TREES), max_size=2),
       home=st.sampled_from(_TREES), middle=st.sampled_from(["", "b", "site-packages"]),
       file=st.sampled_from(["m.py", "m.py", "m.txt"]), name=st.sampled_from(["m", "m", "json", "json.decoder", "jsonx"]),
       as_path=st.booleans())
def test_scope_wants_what_its_rules_say(roots, install, home, middle, file, name, as_path):
    """``Scope.wants`` (roots converted once, when the scope is made) against its rules spelled
    with pathlib: --include packages by name; else no site-packages; a file of the Python
    installation only under a root that lies in it too."""
    from pathlib import PurePosixPath as P

    from wholetrace.instrument.loader import Scope

    origin = "/".join([home, middle, file] if middle else [home, file])   # /nx does not exist: realpath keeps it
    scope = Scope([P(r) if as_path else r for r in roots], ["json"], _install=tuple(install))
    path = P(origin)
    if not origin.endswith(".py"):
        want = False
    elif name == "json" or name.startswith("json."):
        want = True
    elif {"site-packages", "dist-packages"} & set(path.parts):
        want = False
    else:
        installed = any(path.is_relative_to(p) for p in install)
        want = any(path.is_relative_to(r) and (not installed or any(P(r).is_relative_to(p) for p in install))
                   for r in roots)
    assert scope.wants(name, origin) == want


def test_python_build_is_platform_s():
    import platform

    from wholetrace.store.writer import python_build

    assert python_build() == {"python_version": platform.python_version(),
                              "python_implementation": platform.python_implementation()}


def test_zstandard_backend_is_the_package_s():
    """The store compresses with the backend the ``zstandard`` package re-exports, loaded
    without the package's ``__init__``: frames are interchangeable both ways."""
    import zstandard

    from wholetrace.store import schema

    raw = bytes(range(256)) * 50
    blob = schema.compress(raw)
    assert zstandard.ZstdDecompressor().decompress(blob) == raw
    assert schema.decompress(zstandard.ZstdCompressor(write_content_size=True).compress(raw), len(raw), "x") == raw
    assert schema.zstandard.__name__ in ("zstandard", "zstandard.backend_c")


def test_frozen_records_pickle_and_copy():
    import copy
    import pickle

    from wholetrace.instrument.cfg import Edge
    from wholetrace.instrument.flowgraph import FlowGraph
    from wholetrace.instrument.sites import Site

    graph = FlowGraph(4, 0, 1, ((0, 2), (2, 3), (3, 1)), call_nodes=frozenset({2}))
    assert graph.out_edges[0] == (0,)          # a cached property in the instance
    for obj in (Edge(2, 3, "true", True), Site("arm", 4, "body"), graph, _Frozen(1, (2,))):
        for twin in (pickle.loads(pickle.dumps(obj)), copy.copy(obj), copy.deepcopy(obj)):
            assert twin == obj and type(twin) is type(obj) and hash(twin) == hash(obj)
    assert pickle.loads(pickle.dumps(graph)).in_edges == graph.in_edges


def _naive_relocate(code, fid_base, counter_base, objects):  # type: ignore[no-untyped-def]
    """The relocation of wave 9 (every tuple and code object rebuilt): the oracle."""
    import types

    from wholetrace.events import ENTER_BASE, enter_code
    from wholetrace.instrument.emit import COUNTER_ORIGIN, COUNTS, FID_ORIGIN, MARK

    window = cache.WINDOW

    def fix(c):  # type: ignore[no-untyped-def]
        t = type(c)
        if t is frozenset and MARK in c:
            name = next(x for x in c if x != MARK)
            return objects[name](counter_base) if name == COUNTS else objects[name]
        if t is int:
            if FID_ORIGIN <= c < FID_ORIGIN + window:
                return fid_base + c - FID_ORIGIN
            if COUNTER_ORIGIN <= c < COUNTER_ORIGIN + window:
                return counter_base + c - COUNTER_ORIGIN
            if -(ENTER_BASE + FID_ORIGIN + window) < c <= -(ENTER_BASE + FID_ORIGIN):
                return enter_code(fid_base + (-c - ENTER_BASE - FID_ORIGIN))
            return c
        if t is tuple:
            return tuple(fix(x) for x in c)
        if t is types.CodeType:
            return c.replace(co_consts=tuple(fix(x) for x in c.co_consts))
        return c

    return code.replace(co_consts=tuple(fix(c) for c in code.co_consts))


@pytest.mark.parametrize("mode", ["blocks", "count", "path"])
def test_relocation_equals_the_naive_one(tmp_path, mode):
    """Relocation that copies only what holds a placeholder gives the code the naive
    relocation gives, on the templates of a recording of json (every code object compared)."""
    import marshal
    import subprocess

    from wtutil import ENV

    (tmp_path / "prog.py").write_text("import json\nprint(json.dumps(json.loads('[1, {\"a\": 2.5}]')))\n")
    env = {**ENV, "WHOLETRACE_CACHE_DIR": str(tmp_path / "cache")}
    r = subprocess.run([sys.executable, "-m", "wholetrace", "record", "--mode", mode, "-q", "--include", "json",
                        "-o", str(tmp_path / "t.wt"), "prog.py"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr

    class Objects(dict):
        def __missing__(self, name):  # type: ignore[no-untyped-def]
            return f"object {name}"

    objects = Objects(counts=lambda base: f"counts {base}")
    templates = [p for p in (tmp_path / "cache").iterdir() if p.suffix == ".wtc"]
    assert len(templates) >= 4
    for path in templates:
        _fmt, code, _entry = marshal.loads(path.read_bytes())
        assert cache.relocate(code, 17, 1000, objects) == _naive_relocate(code, 17, 1000, objects)


# -- PEP 263 cookies without tokenize ----------------------------------------------------------
_FIRST_LINES = [b"", b"\n", b"x = 1\n", b"#!/usr/bin/env python\n", b"   \n", b"\t\f# comment\n", b"\r\n",
                b"# -*- coding: latin-1 -*-\n", b"#coding=utf_8\n", b"# vim: set fileencoding=cp1252 :\n",
                b"# coding: nonsense\n", b"# coding:\n", b"# coding: !x coding=ascii\n", b"codingcoding: ascii\n",
                b"x = 1  # coding: latin-1\n", b"  # coding:\tUTF-8-sig\n", b"# CODING: latin-1\n",
                b"#codingcoding=iso_8859_1x\n", b"# coding: Latin-1-foo\n", b"# coding: utf-8\r\n",
                b"\xe9 = 1\n", b"# \xff coding: latin-1\n", b"# coding: latin-1", b"#\x0ccoding=ascii\n"]
_BODIES = [b"", b"x = '\xe9'\n", b"x = 1\r\ny = 2\r", b"s = '\xc3\xa9'\n", b"\xff\xfe\n", b"a\rb\r\n"]


@settings(max_examples=400, deadline=None)
@given(st.booleans(), st.sampled_from(_FIRST_LINES), st.sampled_from(_FIRST_LINES), st.sampled_from(_BODIES))
def test_decode_source_is_importlib_s_on_cookies(bom, first, second, body):
    """Cookies on line 1 or 2 (only after a blank or comment line), BOMs with and without a
    cookie, unknown encodings, bytes that are not UTF-8 before and after a cookie, CR/CRLF."""
    data = (b"\xef\xbb\xbf" if bom else b"") + first + second + body
    assert _outcome(lambda d: decode_source(d), data, {}) == \
        _outcome(lambda d: importlib.util.decode_source(d), data, {})


def test_zstandard_backend_loaded_first_is_the_package_s():
    """The store loads zstandard's C backend before (and without) the package; a program (or a
    reader) importing the package later gets the same classes, so ``except zstandard.ZstdError``
    anywhere catches what the store's decompressor raises (a backend with per-module types,
    multi-phase init, would break this: then load the package)."""
    import subprocess

    code = ("import sys\nfrom wholetrace.store import schema\nassert 'zstandard' not in sys.modules\n"
            "import zstandard\nprint(schema.zstandard.__name__, schema.zstandard.ZstdError is zstandard.ZstdError,"
            " schema.zstandard.ZstdDecompressor is zstandard.ZstdDecompressor)\n"
            "try:\n    schema.zstandard.ZstdDecompressor().decompress(b'not a frame')\n"
            "except zstandard.ZstdError:\n    print('caught')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["zstandard.backend_c", "True", "True", "caught"]
