"""Round-trip, concurrency and writer-contract tests for the .wt store."""

from __future__ import annotations

import array
import json
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import zstandard
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from store_helpers import FUNCS, chunk_data, write_wt

from wholetrace.errors import StoreError
from wholetrace.store import (
    MAGIC,
    SCHEMA_VERSION,
    FunctionInfo,
    Recording,
    RecordingWriter,
    open_recording,
)


def raw_rows(path: Path, query: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(query).fetchall()
    finally:
        conn.close()


# -- file format -------------------------------------------------------------------------

def test_file_format_is_what_the_design_says(wt):
    path = wt()
    assert path.read_bytes()[:16] == b"SQLite format 3\x00"
    assert raw_rows(path, "PRAGMA application_id") == [(int.from_bytes(b"WTRC", "big"),)]
    assert MAGIC == 0x57545243
    assert raw_rows(path, "PRAGMA user_version") == [(3,)] and SCHEMA_VERSION == 3
    assert raw_rows(path, "PRAGMA journal_mode") == [("delete",)]
    assert not Path(str(path) + "-journal").exists() and not Path(str(path) + "-wal").exists()
    # chunk blobs are zstd frames of the little-endian int32 bytes, seq 0, 1, 2, ...
    rows = raw_rows(path, "SELECT seq, n_events, blob FROM chunks WHERE sid = 1 ORDER BY seq")
    expected = chunk_data(4, 5000)
    assert [r[0] for r in rows] == [0, 1, 2, 3]
    for (_, n, blob), chunk in zip(rows, expected):
        assert n == 5000
        assert zstandard.ZstdDecompressor().decompress(blob) == chunk.astype("<i4").tobytes()
    # cfg is zstd-compressed JSON, meta values are JSON text
    (cfg,) = raw_rows(path, "SELECT cfg FROM functions WHERE fid = 7")[0]
    assert json.loads(zstandard.ZstdDecompressor().decompress(cfg)) == FUNCS[7]["cfg"]
    assert dict(raw_rows(path, "SELECT key, value FROM meta"))["command"] == '["prog.py","--flag"]'


# -- round trips ---------------------------------------------------------------------

def test_meta_round_trip(tmp_path):
    path = tmp_path / "m.wt"
    before = time.time()
    w = RecordingWriter(path)
    w.set_meta(command=["a", "b"], argv=("x", 1), nested={"k": [1, 2.5, None, True]}, text="ünï")
    w.set_meta(text="last write wins")
    w.close(ended="keyboard-interrupt", exit_code=130, end_time=12.5)
    with Recording(path) as rec:
        meta = rec.meta
    assert meta["command"] == ["a", "b"] and meta["argv"] == ["x", 1]
    assert meta["nested"] == {"k": [1, 2.5, None, True]} and meta["text"] == "last write wins"
    assert meta["schema_version"] == SCHEMA_VERSION and meta["wholetrace_version"] == "0.1.0"
    assert before - 1 <= meta["created"] <= time.time() + 1
    assert meta["python_version"] == ".".join(map(str, sys.version_info[:3]))
    assert (meta["ended"], meta["exit_code"], meta["end_time"]) == ("keyboard-interrupt", 130, 12.5)
    assert rec.ended == "keyboard-interrupt"


def test_functions_round_trip(wt):
    with open_recording(wt()) as rec:
        funcs = rec.functions()
        assert [f.fid for f in funcs] == [0, 7]
        for f in funcs:
            expected = FUNCS[f.fid]
            assert isinstance(f, FunctionInfo)
            assert (f.file, f.qualname, f.firstline, f.lastline, f.source, f.fingerprint) == (
                expected["file"], expected["qualname"], expected["firstline"],
                expected["lastline"], expected["source"], expected["fingerprint"])
            assert f.cfg == expected["cfg"]
        assert rec.function(7).cfg == {"nested": {"a": None, "b": 1.5}}
        with pytest.raises(StoreError, match="no function 3"):
            rec.function(3)


def test_streams_round_trip(wt):
    chunks = [np.arange(10, dtype=np.int32), np.arange(3, dtype=np.int32)]
    with open_recording(wt(chunks=chunks)) as rec:
        main, task = rec.streams()
        assert (main.sid, main.kind, main.name, main.thread_ident, main.parent) == (
            1, "thread", "MainThread", 140000000000000, None)
        assert (main.n_events, main.n_chunks) == (13, 2)
        assert main.stored_bytes == rec.sizes()["events_stored"] > 0
        assert (task.sid, task.kind, task.name, task.thread_ident, task.parent) == (
            2, "task", "Task-1", None, 1)
        assert (task.n_events, task.n_chunks, task.stored_bytes) == (0, 0, 0)
        assert rec.events(2).dtype == np.int32 and rec.events(2).size == 0
        assert list(rec.iter_chunks(2)) == []
        with pytest.raises(StoreError, match="no stream 5"):
            rec.events(5)


def test_thread_ident_full_unsigned_range(tmp_path):
    path = tmp_path / "ident.wt"
    with RecordingWriter(path) as w:
        for sid, ident in enumerate([0, 2**63 - 1, 2**63, 2**64 - 1]):
            w.add_stream(sid, kind="thread", name=f"t{sid}", thread_ident=ident)
        with pytest.raises(StoreError):
            w.add_stream(9, kind="thread", name="bad", thread_ident=2**64)
    with open_recording(path) as rec:
        assert [s.thread_ident for s in rec.streams()] == [0, 2**63 - 1, 2**63, 2**64 - 1]


sizes = st.one_of(st.just(0), st.integers(1, 50), st.integers(1, 70_000),
                  st.integers(1_000_001, 1_100_000))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lengths=st.lists(sizes, max_size=6).filter(lambda ls: sum(ls) <= 2_300_000),
       seed=st.integers(0, 2**32 - 1), as_array_module=st.booleans())
@example(lengths=[0, 1_500_000, 0, 3], seed=1, as_array_module=True)
@example(lengths=[0], seed=2, as_array_module=False)
@example(lengths=[1] * 6, seed=3, as_array_module=True)
def test_events_round_trip(lengths, seed, as_array_module):
    rng = np.random.default_rng(seed)
    chunks = []
    for n in lengths:
        values = rng.integers(-(2**31), 2**31, size=n, dtype=np.int64)
        values[: min(n, 2)] = [-(2**31), 2**31 - 1][: min(n, 2)]
        chunks.append(values.astype(np.int32))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ev.wt"
        with RecordingWriter(path) as w:
            w.add_stream(0, kind="thread", name="main")
            for c in chunks:
                w.append_events(0, array.array("i", c.tolist()) if as_array_module and c.size < 100
                                else c)
        nonempty = [c for c in chunks if c.size]
        with open_recording(path) as rec:
            (info,) = rec.streams()
            assert info.n_events == sum(lengths) and info.n_chunks == len(nonempty)
            got = list(rec.iter_chunks(0))
            assert len(got) == len(nonempty)
            for g, c in zip(got, nonempty):
                assert g.dtype == np.int32 and np.array_equal(g, c)
            everything = rec.events(0)
            assert everything.dtype == np.int32
            assert np.array_equal(everything, np.concatenate([np.zeros(0, np.int32), *chunks]))
            assert rec.sizes()["events_raw"] == 4 * sum(lengths)


def test_many_chunks_and_input_types(tmp_path):
    path = tmp_path / "many.wt"
    expected: list[int] = []
    with RecordingWriter(path) as w:
        w.add_stream(3, kind="thread", name="main")
        for i in range(500):
            chunk = list(range(i, i + i % 7))
            kind = i % 4
            if kind == 0:
                w.append_events(3, np.array(chunk, dtype=np.int64))   # narrowed, values fit
            elif kind == 1:
                w.append_events(3, array.array("i", chunk))
            elif kind == 2:
                w.append_events(3, array.array("q", chunk))
            else:
                w.append_events(3, np.array(chunk, dtype=">i4"))     # big-endian input
            expected.extend(chunk)
    with open_recording(path) as rec:
        assert rec.events(3).tolist() == expected
        assert rec.streams()[0].n_chunks == sum(1 for i in range(500) if i % 7)


@pytest.mark.parametrize("data", [
    np.arange(24, dtype=np.int8).reshape(2, 3, 4),
    np.array([2**64 - 1, 0], dtype=np.uint64),
    np.array([[1.5, -0.0], [np.inf, np.nan]], dtype=np.float32),
    np.array([1 + 2j], dtype=np.complex128),
    np.array([True, False, True]),
    np.array([b"ab", b"xyz"], dtype="S3"),
    np.array(["é", "zz"], dtype="U2"),
    np.array([1, 2, 3], dtype=">i4"),
    np.asfortranarray(np.arange(6, dtype=np.int64).reshape(2, 3)),
    np.zeros((0, 5), dtype=np.int32),
    np.array(42, dtype=np.int16),
])
def test_arrays_round_trip(tmp_path, data):
    path = tmp_path / "arr.wt"
    with RecordingWriter(path) as w:
        w.put_array("a", data)
        w.put_array("a", data[..., :0] if data.ndim else data, key="other")
    with open_recording(path) as rec:
        got = rec.get_array("a")
        assert got is not None
        assert got.dtype == data.dtype and got.shape == data.shape
        np.testing.assert_array_equal(got, data)
        assert rec.get_array("a", key="missing") is None and rec.get_array("zz") is None


def test_array_keys_and_replacement(tmp_path):
    path = tmp_path / "arr.wt"
    with RecordingWriter(path) as w:
        w.put_array("counts", np.array([1, 2]), key="f1")
        w.put_array("counts", np.array([3]), key="f2")
        w.put_array("counts", np.array([9, 9, 9]), key="f1")
        with pytest.raises(StoreError, match="unsupported dtype"):
            w.put_array("objects", np.array([object()], dtype=object))
    with open_recording(path) as rec:
        assert rec.get_array("counts", "f1").tolist() == [9, 9, 9]
        assert rec.get_array("counts", "f2").tolist() == [3]
        assert rec.get_array("objects") is None


def test_bytes_are_stored_as_uint8_without_numpy(tmp_path):
    """The WPP's grammars reach the store as bytes (the recorded process imports no numpy):
    the same row as the uint8 array of those bytes."""
    blob = bytes(range(256)) * 3
    path = tmp_path / "arr.wt"
    with RecordingWriter(path) as w:
        w.put_array("b", blob)
        w.put_array("n", np.frombuffer(blob, np.uint8))
        w.put_array("e", b"")
    with open_recording(path) as rec:
        got, want = rec.get_array("b"), rec.get_array("n")
        assert got.dtype == want.dtype == np.uint8 and got.tobytes() == want.tobytes() == blob
        assert rec.get_array("e").shape == (0,)


# -- concurrency -----------------------------------------------------------------------

def test_background_appender_while_main_thread_registers(tmp_path):
    path = tmp_path / "conc.wt"
    w = RecordingWriter(path)
    w.add_stream(0, kind="thread", name="main")
    w.add_stream(1, kind="thread", name="worker")
    errors: list[BaseException] = []

    def flusher(sid: int, base: int) -> None:
        try:
            for i in range(300):
                w.append_events(sid, np.full(50 + i % 13, base + i, dtype=np.int32))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=flusher, args=(0, 0)),
               threading.Thread(target=flusher, args=(1, 10_000))]
    for t in threads:
        t.start()
    for fid in range(300):
        w.add_function(fid, file="m.py", qualname=f"f{fid}", firstline=fid, lastline=fid + 1,
                       source="pass", cfg={"fid": fid}, fingerprint=str(fid))
        if fid % 50 == 0:
            w.set_meta(progress=fid)
            w.put_array("c", np.array([fid]), key=str(fid))
    for t in threads:
        t.join()
    w.close(ended="exit", exit_code=0)
    assert errors == []
    with open_recording(path) as rec:
        assert [f.cfg["fid"] for f in rec.functions()] == list(range(300))
        assert rec.meta["progress"] == 250
        for sid, base in ((0, 0), (1, 10_000)):
            chunks = list(rec.iter_chunks(sid))
            assert [int(c[0]) for c in chunks] == [base + i for i in range(300)]
            assert [c.size for c in chunks] == [50 + i % 13 for i in range(300)]


def test_reader_sees_each_append_while_writer_is_open(tmp_path):
    path = tmp_path / "live.wt"
    w = RecordingWriter(path)
    w.add_stream(0, kind="thread", name="main")
    for i in range(3):
        w.append_events(0, np.array([i, i], dtype=np.int32))
        with open_recording(path) as rec:
            assert rec.events(0).tolist() == [j for j in range(i + 1) for _ in range(2)]
            assert rec.ended is None
    w.close(ended="exit", exit_code=0)


# -- writer contract -------------------------------------------------------------------

def test_context_manager_records_how_the_run_ended(tmp_path):
    cases = [(None, "exit", 0), (SystemExit(3), "sys.exit", 3), (SystemExit(None), "sys.exit", 0),
             (SystemExit("bye"), "sys.exit", 1), (KeyboardInterrupt(), "keyboard-interrupt", None),
             (ValueError("x"), "exception", None)]
    for i, (exc, ended, code) in enumerate(cases):
        path = tmp_path / f"end{i}.wt"
        if exc is None:
            with RecordingWriter(path):
                pass
        else:
            with pytest.raises(type(exc)), RecordingWriter(path):
                raise exc
        with open_recording(path) as rec:
            assert (rec.meta["ended"], rec.meta["exit_code"]) == (ended, code), exc


def test_close_is_idempotent_and_closed_writer_refuses(tmp_path):
    w = RecordingWriter(tmp_path / "c.wt")
    w.close(ended="exit", exit_code=0)
    w.close(ended="exception", exit_code=1)
    assert w.closed
    with open_recording(tmp_path / "c.wt") as rec:
        assert rec.meta["ended"] == "exit"
    for call in (lambda: w.set_meta(a=1), lambda: w.add_stream(0, kind="thread", name="x"),
                 lambda: w.append_events(0, np.array([1], dtype=np.int32)), w.commit):
        with pytest.raises(StoreError, match="closed") as info:
            call()
        assert "\n" not in str(info.value)


def test_writer_rejects_bad_calls_with_one_line_errors(tmp_path):
    w = RecordingWriter(tmp_path / "bad.wt")
    w.add_stream(0, kind="thread", name="main")
    w.add_function(1, file="f", qualname="q", firstline=1, lastline=1, source="", cfg={},
                   fingerprint="")
    bad = {
        "unknown stream": lambda: w.append_events(5, np.array([1], dtype=np.int32)),
        "duplicate stream": lambda: w.add_stream(0, kind="thread", name="again"),
        "bad kind": lambda: w.add_stream(2, kind="process", name="p"),
        "duplicate function": lambda: w.add_function(1, file="f", qualname="q", firstline=1,
                                                     lastline=1, source="", cfg={}, fingerprint=""),
        "cfg not dict": lambda: w.add_function(2, file="f", qualname="q", firstline=1, lastline=1,
                                               source="", cfg=[1], fingerprint=""),
        "cfg not json": lambda: w.add_function(3, file="f", qualname="q", firstline=1, lastline=1,
                                               source="", cfg={"x": object()}, fingerprint=""),
        "meta not json": lambda: w.set_meta(x={1, 2}),
        "meta nan": lambda: w.set_meta(x=float("nan")),
        "reserved meta": lambda: w.set_meta(schema_version=2),
        "too big": lambda: w.append_events(0, np.array([2**31], dtype=np.int64)),
        "too small": lambda: w.append_events(0, np.array([-(2**31) - 1], dtype=np.int64)),
        "uint32 big": lambda: w.append_events(0, np.array([2**32 - 1], dtype=np.uint32)),
        "floats": lambda: w.append_events(0, np.array([1.0])),
        "2-d": lambda: w.append_events(0, np.zeros((2, 2), dtype=np.int32)),
        "huge fid": lambda: w.add_function(2**70, file="f", qualname="q", firstline=1,
                                           lastline=1, source="", cfg={}, fingerprint=""),
    }
    for name, call in bad.items():
        with pytest.raises(StoreError) as info:
            call()
        assert "\n" not in str(info.value), name
    w.append_events(0, np.array([7], dtype=np.int32))  # the writer is still usable
    w.close(ended="exit", exit_code=0)
    with open_recording(tmp_path / "bad.wt") as rec:
        assert rec.events(0).tolist() == [7]
        assert [f.fid for f in rec.functions()] == [1]
        assert "x" not in rec.meta and rec.meta["schema_version"] == SCHEMA_VERSION


def test_overwrite(tmp_path):
    path = write_wt(tmp_path / "o.wt")
    with pytest.raises(StoreError, match="exists"):
        RecordingWriter(path, overwrite=False)
    assert open_recording(path).functions()  # untouched
    Path(str(path) + "-journal").write_bytes(b"stale journal of an old crash" * 100)
    with RecordingWriter(path) as w:
        w.set_meta(fresh=True)
    with open_recording(path) as rec:
        assert rec.meta["fresh"] is True and rec.functions() == [] and rec.streams() == []
    assert not Path(str(path) + "-journal").exists()


def test_writer_cannot_create(tmp_path):
    with pytest.raises(StoreError, match="directory"):
        RecordingWriter(tmp_path)
    with pytest.raises(StoreError) as info:
        RecordingWriter(tmp_path / "no" / "such" / "dir.wt")
    assert "\n" not in str(info.value)
