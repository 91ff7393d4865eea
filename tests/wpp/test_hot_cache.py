"""``hot``'s wave-10 grammars cached in a version-3 recording (``wpp.flatcache``): the second query
reads them instead of rebuilding, a cache of other grammars is ignored, and a file that cannot be
written answers all the same.  The oracle is wave 10's grammar built from the ``--keep-raw``
events (``test_hot_seq.wave10_view``), never the cache's own output."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from test_hot_seq import PROGRAM, keyed, wave10_view
from wholetrace.cli import main
from wholetrace.errors import StoreError
from wholetrace.store import Recording
from wholetrace.wpp import flatcache, hotreport, view as viewmod
from wholetrace.wpp.hotreport import HotOptions, hot_report
from wholetrace.wpp.stored import StoredWpp
from wholetrace.wpp.view import open_view
from wtutil import run_recorded

SMALL = PROGRAM.replace("range(30)", "range(2)")   # (a rebuild run as Python, NUMBA_DISABLE_JIT=1, in seconds)
OTHER = PROGRAM.replace("range(n)", "range(n // 2 + 1)").replace("i % 7 == 0", "i % 5 == 1")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("hotcache")
    out = {}
    for name, text, mode, more in (("a", PROGRAM, "path", ()), ("b", OTHER, "path", ()),
                                   ("plain", PROGRAM, "path", ("--no-lookahead",)), ("blocks", PROGRAM, "blocks", ()),
                                   ("small", SMALL, "path", ())):
        script = tmp / f"{name}.py"
        script.write_text(text)
        path = tmp / f"{name}.wt"
        proc = run_recorded(script, path, mode=mode, options=("--wpp", "--keep-raw", *more))
        assert proc.returncode == 0, proc.stderr
        out[name] = path
    return out


def fresh(recorded: dict[str, Path], name: str, tmp_path: Path) -> Path:
    """A copy of recording ``name`` with no cache in it yet."""
    path = tmp_path / f"{name}.wt"
    path.write_bytes(recorded[name].read_bytes())
    return path


def cached_meta(path: Path) -> dict | None:
    with Recording(path) as rec:
        raw = rec.get_array(flatcache.META)
    return None if raw is None else json.loads(raw.tobytes())


def hot_doc(path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert main(["hot", str(path), "--json", "--limit", "0", *args]) == 0
    return json.loads(capsys.readouterr().out)


def oracle(path: Path) -> list[str]:
    return keyed(hot_report(wave10_view(path), HotOptions(limit=0)))


def no_rebuild(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(view):  # type: ignore[no-untyped-def]
        raise AssertionError("rebuilt although the recording holds the cache")
    monkeypatch.setattr(viewmod, "ungrouped_view", lambda v: v if v.flat else refuse(v))
    monkeypatch.setattr(hotreport, "ungrouped_view", lambda v: v if v.flat else refuse(v))


def test_the_second_query_reads_the_cache(recorded: dict[str, Path], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    path = fresh(recorded, "a", tmp_path)
    assert cached_meta(path) is None
    first = hot_doc(path, capsys)
    meta = cached_meta(path)
    assert meta is not None and meta["streams"]
    with monkeypatch.context() as m:
        no_rebuild(m)
        assert hot_doc(path, capsys) == first
        got = keyed(hot_report(open_view(str(path), progress=False, ungroup=True), HotOptions(limit=0)))
    assert got and got == oracle(path)


@pytest.mark.parametrize("other", ["b", "plain"])
def test_a_cache_of_other_grammars_is_ignored(recorded: dict[str, Path], tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str], other: str) -> None:
    """The cache rows of recording a copied into another: b (same functions, other events) or
    plain (the same events and table, grammars built with plain SEQUITUR): its answer stays its
    own (its oracle), and the next build replaces the stale cache."""
    a, b = fresh(recorded, "a", tmp_path), fresh(recorded, other, tmp_path)
    answer_a = hot_doc(a, capsys)
    want_b = oracle(b)
    assert want_b != oracle(a)
    src = sqlite3.connect(a)
    rows = src.execute("SELECT * FROM arrays WHERE name LIKE 'wpp.flat.%'").fetchall()
    src.close()
    assert rows
    dst = sqlite3.connect(b)
    dst.executemany(f"INSERT OR REPLACE INTO arrays VALUES ({', '.join('?' * len(rows[0]))})", rows)
    dst.commit()
    dst.close()
    assert cached_meta(b) == cached_meta(a)
    assert hot_doc(b, capsys) != answer_a
    assert keyed(hot_report(open_view(str(b), progress=False, ungroup=True), HotOptions(limit=0))) == want_b
    assert cached_meta(b)["key"] != cached_meta(a)["key"]


def flip_a_byte(path: Path) -> None:
    """review13a's damaged.sh: one byte of a stream's cached grammar flipped (its checksum fails)."""
    con = sqlite3.connect(path)
    rowid, blob = con.execute("SELECT rowid, blob FROM arrays WHERE name = ? ORDER BY key DESC",
                              (flatcache.GRAMMAR,)).fetchone()
    b = bytearray(blob)
    b[len(b) // 2] ^= 0xFF
    con.execute("UPDATE arrays SET blob = ? WHERE rowid = ?", (bytes(b), rowid))
    con.commit()
    con.close()


def garbage_grammar(path: Path) -> None:
    """A cached grammar stored intact (its checksum holds) that is no grammar."""
    from wholetrace.store.writer import updating

    with updating(str(path)) as w:
        w.put_array(flatcache.GRAMMAR, np.frombuffer(b"not a grammar at all", np.uint8),
                    key=str(cached_meta(path)["streams"][-1]))


def odd_meta(path: Path) -> None:
    """A cache whose meta counts its terminals with a string."""
    from wholetrace.store.writer import updating

    meta = cached_meta(path)
    meta["terminals"] = "many"
    with updating(str(path)) as w:
        w.put_array(flatcache.META, np.frombuffer(json.dumps(meta).encode(), np.uint8))


@pytest.mark.parametrize("damage", [flip_a_byte, garbage_grammar, odd_meta])
def test_a_damaged_cache_is_rebuilt_and_replaced(recorded: dict[str, Path], tmp_path: Path, damage: Any,
                                                 capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache is derived data: damaged, the query answers from the recording's own grammars and
    stores a sound cache again (review13a MED-2: a flipped byte made ``hot`` exit 2)."""
    path = fresh(recorded, "a", tmp_path)
    first = hot_doc(path, capsys)
    damage(path)
    assert hot_doc(path, capsys) == first
    got = keyed(hot_report(open_view(str(path), progress=False, ungroup=True), HotOptions(limit=0)))
    assert got == oracle(path)
    with monkeypatch.context() as m:      # replaced: read again without a rebuild
        no_rebuild(m)
        assert hot_doc(path, capsys) == first


TRACE_REBUILD = """
import json, os, sys
import wholetrace
from wholetrace.grammar import Grammar
from wholetrace.grammar.encoding import encode_explicit
from wholetrace.store import Recording
from wholetrace.wpp.stored import StoredWpp
from wholetrace.wpp.view import StreamGrammar, WppView, open_view, ungrouped_view

path = sys.argv[1]
cfgs = open_view(path, progress=False).cfgs
with Recording(path) as rec:
    st = StoredWpp(rec)
    fids = frozenset(f.fid for f in rec.functions() if f.cfg.get("plan", {}).get("strategy") == "paths")
view = WppView(path, "path", "stored", st.terminals, [StreamGrammar(s.sid, s.name, s.grammar) for s in st.streams],
               cfgs, {}, lookahead=bool(st.meta.get("lookahead")), path_fids=fids)
root = os.path.dirname(wholetrace.__file__)
seen = set()
def called(frame, event, arg):
    name = frame.f_code.co_filename
    if event == "call" and name.startswith(root + os.sep):
        seen.add(os.path.relpath(name, root).replace(os.sep, "/"))
sys.setprofile(called)
flat = ungrouped_view(view)                                      # the rebuild
for s in flat.streams:                                           # and what save stores, load reads back
    Grammar.from_bytes(encode_explicit(s.grammar, fast=True))
sys.setprofile(None)
print(json.dumps(sorted(seen)))
"""


def test_the_key_covers_what_the_rebuild_reads(recorded: dict[str, Path]) -> None:
    """Every input of the rebuild changes the key; and every wholetrace source the rebuild and
    the cache's encode/decode run (traced, kernels run as Python with NUMBA_DISABLE_JIT=1) is in
    the code digest (review13a LOW-1: grammar.py, sequitur_flat.py, encoding.py, symbols.py were not)."""
    import os
    import subprocess
    import sys

    with Recording(recorded["a"]) as ra, Recording(recorded["b"]) as rb:
        da, db = StoredWpp(ra).digest, StoredWpp(rb).digest
    assert da != db
    base = flatcache.cache_key(da, True, frozenset({1, 2}), 5)
    assert base == flatcache.cache_key(da, True, frozenset({2, 1}), 5)
    for other in (flatcache.cache_key(db, True, frozenset({1, 2}), 5), flatcache.cache_key(da, False, frozenset({1, 2}), 5),
                  flatcache.cache_key(da, True, frozenset({1}), 5), flatcache.cache_key(da, True, frozenset({1, 2}), 6)):
        assert other != base
    proc = subprocess.run([sys.executable, "-c", TRACE_REBUILD, str(recorded["small"])], capture_output=True, text=True,
                          env={**os.environ, "NUMBA_DISABLE_JIT": "1"})
    assert proc.returncode == 0, proc.stderr
    ran = set(json.loads(proc.stdout.splitlines()[-1]))
    assert {"wpp/ungroup.py", "wpp/intern.py", "grammar/builder.py", "kernels/sequitur.py"} <= ran   # (it traced)
    assert ran - {"/".join(p) for p in flatcache._SOURCES} == set()


def test_a_file_that_cannot_be_written_answers(recorded: dict[str, Path], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from wholetrace.store import writer

    (tmp_path / "w").mkdir()
    want = hot_doc(fresh(recorded, "a", tmp_path / "w"), capsys)
    path = fresh(recorded, "a", tmp_path)

    def read_only(_path, **_kwargs):  # type: ignore[no-untyped-def]
        raise StoreError(f"cannot update recording {_path}: attempt to write a readonly database")
    monkeypatch.setattr(writer, "updating", read_only)
    before = path.read_bytes()
    assert hot_doc(path, capsys) == want
    assert path.read_bytes() == before


def test_a_reader_in_a_transaction_does_not_stall_the_query(recorded: dict[str, Path], tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Another connection in a read transaction (a sqlite3 shell, a notebook): the query answers
    without caching, after a short lock wait (review13a LOW-2: SQLite's 5 s; the wait is read
    from the writer's connection, not timed)."""
    from contextlib import contextmanager

    from wholetrace.store import writer

    (tmp_path / "w").mkdir()
    want = hot_doc(fresh(recorded, "a", tmp_path / "w"), capsys)
    path = fresh(recorded, "a", tmp_path)
    waits = []
    real = writer.updating

    @contextmanager
    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        with real(*args, **kwargs) as w:
            waits.append(w._conn.execute("PRAGMA busy_timeout").fetchone()[0])
            yield w
    monkeypatch.setattr(writer, "updating", spy)
    reader = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM arrays").fetchall()
        assert hot_doc(path, capsys) == want
    finally:
        reader.close()
    assert cached_meta(path) is None
    assert waits and 0 < waits[0] <= 1000


def test_one_stream_asked_for_is_answered_not_cached(recorded: dict[str, Path], tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = fresh(recorded, "a", tmp_path)
    before = path.read_bytes()
    doc = hot_doc(path, capsys, "--stream", "0")
    assert path.read_bytes() == before
    full = hot_doc(path, capsys)           # caches every stream
    assert cached_meta(path) is not None
    assert hot_doc(path, capsys, "--stream", "0") == doc
    assert [e for e in full["subpaths"] if e["stream"] == 0] == doc["subpaths"]


@pytest.mark.parametrize("how", ["option", "environment"])
def test_no_store_leaves_the_file_unchanged(recorded: dict[str, Path], tmp_path: Path, how: str,
                                           capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """``hot --no-store`` or ``WHOLETRACE_NO_STORE=1`` answers without writing the .wt (review13a
    LOW-3); a cache stored before is still read."""
    (tmp_path / "w").mkdir()
    want = hot_doc(fresh(recorded, "a", tmp_path / "w"), capsys)
    path = fresh(recorded, "a", tmp_path)
    args = ("--no-store",) if how == "option" else ()
    if how == "environment":
        monkeypatch.setenv(flatcache.ENV_NO_STORE, "1")
    before = path.read_bytes()
    assert hot_doc(path, capsys, *args) == want
    assert hot_doc(path, capsys, *args) == want
    assert path.read_bytes() == before
    monkeypatch.delenv(flatcache.ENV_NO_STORE, raising=False)
    assert hot_doc(path, capsys) == want            # stores
    stored = path.read_bytes()
    if how == "environment":
        monkeypatch.setenv(flatcache.ENV_NO_STORE, "1")
    with monkeypatch.context() as m:
        no_rebuild(m)
        assert hot_doc(path, capsys, *args) == want
    assert path.read_bytes() == stored


def test_a_rebuild_that_appends_terminals_is_not_cached(recorded: dict[str, Path], tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The rebuild appends no terminal to the stored table (the grouped interner interns every
    wave-10 one); were it to, the cache would number them in all streams' order and ``hot --stream
    S``'s ids would depend on it (review13a LOW-4), so such a rebuild is answered, not cached."""
    import dataclasses

    from wholetrace.wpp.symbols import Terminals

    path = fresh(recorded, "a", tmp_path)
    seen = []
    real = viewmod.ungrouped_view

    def spy(view):  # type: ignore[no-untyped-def]
        seen.append((len(view.terminals), len(real(view).terminals)))
        return real(view)
    with monkeypatch.context() as m:
        m.setattr(viewmod, "ungrouped_view", spy)
        hot_doc(path, capsys, "--no-store")
    assert len(seen) == 1 and seen[0][0] == seen[0][1]                # none appended, as it is

    def appends(view):  # type: ignore[no-untyped-def]
        v = real(view)
        t = v.terminals
        more = Terminals(np.append(t.kind, t.kind[-1]), np.append(t.fid, t.fid[-1]), np.append(t.value, t.value[-1] + 1))
        return dataclasses.replace(v, terminals=more)
    monkeypatch.setattr(viewmod, "ungrouped_view", appends)
    got = keyed(hot_report(open_view(str(path), progress=False, ungroup=True), HotOptions(limit=0)))
    assert got and got == oracle(path)
    assert cached_meta(path) is None


def test_recordings_without_groups_get_no_cache(recorded: dict[str, Path], tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = fresh(recorded, "blocks", tmp_path)
    before = path.read_bytes()
    assert hot_doc(path, capsys)["subpaths"]
    assert path.read_bytes() == before


def test_an_immutable_file_answers(recorded: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A .wt nobody may write (``chattr +i``: read-only even for root; skipped where it cannot be set)."""
    import shutil
    import subprocess

    (tmp_path / "w").mkdir()
    want = hot_doc(fresh(recorded, "a", tmp_path / "w"), capsys)
    path = fresh(recorded, "a", tmp_path)
    tool = shutil.which("chattr")
    if tool is None or subprocess.run([tool, "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("cannot make a file immutable here")
    try:
        before = path.read_bytes()
        assert hot_doc(path, capsys) == want
        assert path.read_bytes() == before and cached_meta(path) is None
    finally:
        subprocess.run([tool, "-i", str(path)], capture_output=True)
