"""Every damaged, foreign, newer or hostile .wt file fails with a one-line StoreError."""

from __future__ import annotations

import os
import pickle
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_helpers import FUNCS, chunk_data, sql

from wholetrace.errors import StoreError, WholetraceError
from wholetrace.store import Recording, open_recording


def open_fails(path: Path | str, *fragments: str, check: bool = True) -> str:
    """Open ``path``; assert a one-line StoreError mentioning every fragment; return it."""
    with pytest.raises(StoreError) as info:
        Recording(path, check=check)
    msg = str(info.value)
    assert "\n" not in msg and "\r" not in msg, msg
    assert isinstance(info.value, WholetraceError)
    for frag in fragments:
        assert frag in msg, msg
    return msg


def test_nonexistent_path(tmp_path):
    open_fails(tmp_path / "missing.wt", "no such file", "missing.wt")
    assert not (tmp_path / "missing.wt").exists()  # the reader never creates files
    open_fails(tmp_path / "line\nbreak.wt", "no such file")


def test_directory(tmp_path):
    open_fails(tmp_path, "directory")


def test_empty_file(tmp_path):
    (tmp_path / "empty.wt").write_bytes(b"")
    open_fails(tmp_path / "empty.wt", "empty")


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(min_size=1, max_size=5000), with_header=st.booleans())
def test_random_bytes(tmp_path, data, with_header):
    path = tmp_path / "random.wt"
    path.write_bytes((b"SQLite format 3\x00" if with_header else b"") + data)
    open_fails(path)


def test_random_bytes_message(tmp_path):
    (tmp_path / "r.wt").write_bytes(os.urandom(8192))
    open_fails(tmp_path / "r.wt", "not a wholetrace recording", "file is not a database")


@pytest.mark.parametrize("keep", [0.5, 0.1, 0.9, 0.99, 100, 4096])
def test_truncated_recording(wt, keep):
    path = wt()
    data = path.read_bytes()
    assert len(data) > 80_000  # several pages of incompressible chunks
    cut = int(len(data) * keep) if isinstance(keep, float) else keep
    path.write_bytes(data[:cut])
    open_fails(path)


@pytest.mark.parametrize("keep", [0.5, 0.9])
def test_truncated_recording_without_quick_check_fails_on_read(wt, keep):
    """Skipping the check moves the failure to the first read, still a StoreError."""
    path = wt()
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    try:
        rec = Recording(path, check=False)
    except StoreError as exc:
        assert "\n" not in str(exc)
        return
    with pytest.raises(StoreError) as info:
        rec.functions(), rec.streams(), rec.events(1), [f.cfg for f in rec.functions()]
    assert "\n" not in str(info.value)


def test_foreign_sqlite_database(tmp_path):
    path = tmp_path / "foreign.db"
    sql(path, "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT)",
        "CREATE TABLE chunks(x)")
    open_fails(path, "not a wholetrace recording", "application_id 0x0")
    sql(path, "PRAGMA application_id = 1234")
    open_fails(path, "not a wholetrace recording", "0x4d2")


def test_newer_schema(wt):
    path = wt()
    sql(path, "PRAGMA user_version = 99")
    open_fails(path, "written by a newer wholetrace (schema 99 > 3); upgrade wholetrace")


def test_unknown_older_schema(wt):
    path = wt()
    sql(path, "PRAGMA user_version = 0")
    open_fails(path, "unknown schema version 0")


def test_schema_1_files_still_open(wt):
    path = wt()
    sql(path, "PRAGMA user_version = 1")
    with Recording(path) as rec:
        assert rec.schema_version == 1


@pytest.mark.parametrize("table", ["meta", "functions", "streams", "chunks", "arrays"])
def test_dropped_table(wt, table):
    path = wt()
    sql(path, f"DROP TABLE {table}")
    open_fails(path, "damaged", f"missing table {table}")


def test_dropped_column(wt):
    path = wt()
    sql(path, "ALTER TABLE streams DROP COLUMN parent")
    open_fails(path, "damaged", "streams lacks parent")


def test_corrupt_page_in_the_middle(wt):
    path = wt()
    data = bytearray(path.read_bytes())
    for page in range(1, len(data) // 4096):  # wipe every b-tree page header but page 0
        data[page * 4096: page * 4096 + 16] = b"\xff" * 16
    path.write_bytes(bytes(data))
    open_fails(path)


class Boom:
    """If this is ever unpickled, it creates a marker directory."""

    marker = ""

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def pickle_bomb(tmp_path: Path) -> bytes:
    Boom.marker = str(tmp_path / "PWNED")
    payload = pickle.dumps(Boom())
    assert b"mkdir" in payload
    return payload


def test_pickle_in_cfg_is_never_unpickled(wt, tmp_path, monkeypatch):
    def no_pickle(*args, **kwargs):
        raise AssertionError("the store must never unpickle")
    monkeypatch.setattr(pickle, "loads", no_pickle)
    monkeypatch.setattr(pickle, "load", no_pickle)
    path = wt()
    payload = pickle_bomb(tmp_path)
    # raw pickle bytes, then a valid zstd frame holding pickle bytes
    for blob in (payload, zstandard.ZstdCompressor().compress(payload)):
        # crc NULL: a hostile file need not carry checksums (they catch honest damage)
        sql(path, "UPDATE functions SET cfg = ?, crc = NULL WHERE fid = 7", params=(blob,))
        with open_recording(path) as rec:
            good, hostile = rec.functions()
            assert good.cfg == FUNCS[0]["cfg"]
            with pytest.raises(StoreError) as info:
                _ = hostile.cfg
            assert "cfg of function 7" in str(info.value) and "\n" not in str(info.value)
            with pytest.raises(StoreError):
                _ = rec.function(7).cfg
    assert not (tmp_path / "PWNED").exists()


def test_pickle_in_meta_and_arrays_is_never_unpickled(wt, tmp_path):
    path = wt()
    payload = pickle_bomb(tmp_path)
    sql(path, "UPDATE arrays SET dtype = '|O', blob = ?, crc = NULL", params=(payload,))
    with open_recording(path) as rec:
        with pytest.raises(StoreError, match="corrupt|unsupported dtype"):
            rec.get_array("counts", "f0")
    sql(path, "INSERT INTO meta(key, value) VALUES ('evil', ?)", params=(payload,))
    open_fails(path, "meta value 'evil'")
    assert not (tmp_path / "PWNED").exists()


def test_tampered_chunks(wt):
    chunk = np.arange(100, dtype=np.int32)
    cases = {
        "UPDATE chunks SET blob = randomblob(50) WHERE seq = 1": "chunk 1 of stream 1",
        "UPDATE chunks SET n_events = 99 WHERE seq = 0": "chunk 0 of stream 1",
        "UPDATE chunks SET n_events = -1 WHERE seq = 0": "chunk 0 of stream 1",
        "UPDATE chunks SET n_events = 4000000000000 WHERE seq = 0": "chunk 0 of stream 1",
        "UPDATE chunks SET blob = 'text' WHERE seq = 2": "chunk 2 of stream 1",
        "DELETE FROM chunks WHERE seq = 1": "chunk 1 of stream 1 in",
    }
    for i, (stmt, fragment) in enumerate(cases.items()):
        path = wt(name=f"t{i}.wt", chunks=[chunk, chunk, chunk])
        sql(path, stmt)
        with open_recording(path) as rec:
            for read in (lambda: rec.events(1), lambda: list(rec.iter_chunks(1))):
                with pytest.raises(StoreError) as info:
                    read()
                assert fragment in str(info.value) and "\n" not in str(info.value), stmt


def test_tampered_rows(wt):
    path = wt()
    sql(path, "UPDATE functions SET firstline = 'x', crc = NULL WHERE fid = 0",
        "UPDATE arrays SET shape = '[-1, 4]', crc = NULL")
    with open_recording(path) as rec:
        with pytest.raises(StoreError, match="corrupt"):
            rec.functions()
        with pytest.raises(StoreError, match="shape"):
            rec.get_array("counts", "f0")


@pytest.mark.parametrize("stmt, fragment", [
    ("UPDATE functions SET qualname = 'g' WHERE fid = 7", "function 7"),
    ("UPDATE chunks SET seq = 4 WHERE seq = 3", "chunk 4 of stream 1"),
    ("UPDATE chunks SET sid = 2 WHERE seq = 0", "chunk 0 of stream 2"),
    ("UPDATE chunks SET start = 5 WHERE seq = 2", "chunk 2 of stream 1"),
    ("UPDATE streams SET name = 'other' WHERE sid = 2", "stream 2"),
    ("UPDATE arrays SET key = 'f1'", "array 'counts'/'f1'"),
    ("UPDATE meta SET value = '[\"prog.py\"]' WHERE key = 'command'", "meta value 'command'"),
])
def test_checksums_catch_changed_rows(wt, stmt, fragment):
    """Every row carries a crc: a value changed in place (as damage would) is refused."""
    path = wt(chunks=chunk_data(5, 100))
    sql(path, "DELETE FROM chunks WHERE seq = 4")
    sql(path, stmt)
    with pytest.raises(StoreError) as info:
        with open_recording(path) as rec:
            rec.functions()
            rec.streams()
            for s in (2, 1):   # stream 2 first: a chunk moved there is refused where it lands
                rec.events(s)
            rec.get_array("counts", "f1")
    assert fragment in str(info.value) and "checksum mismatch" in str(info.value), info.value


def test_closed_reader(wt):
    rec = open_recording(wt())
    rec.close()
    rec.close()
    with pytest.raises(StoreError, match="closed"):
        rec.streams()


CRASHER = textwrap.dedent("""
    import os, sys
    import numpy as np
    from wholetrace.store import RecordingWriter
    w = RecordingWriter(sys.argv[1])
    w.set_meta(command=["crash"])
    w.add_stream(0, kind="thread", name="main")
    for i in range(3):
        w.append_events(0, np.full(1000, i, dtype=np.int32))   # each one committed
    for fid in range(40):                                      # never committed, spills to disk
        w.add_function(fid, file="f.py", qualname="f", firstline=1, lastline=2,
                       source=os.urandom(200_000).hex(), cfg={}, fingerprint="")
    os._exit(9)
""")


def test_crash_keeps_committed_chunks(tmp_path):
    """A writer killed mid-transaction leaves a hot journal; readers recover the last commit."""
    path = tmp_path / "crash.wt"
    proc = subprocess.run([sys.executable, "-c", CRASHER, str(path)], capture_output=True,
                          check=False)
    assert proc.returncode == 9, proc.stderr.decode()
    assert Path(str(path) + "-journal").exists()
    with open_recording(path) as rec:
        assert rec.ended is None and "ended" not in rec.meta
        assert rec.meta["command"] == ["crash"]
        assert rec.events(0).tolist() == [0] * 1000 + [1] * 1000 + [2] * 1000
        assert rec.functions() == []
    assert not Path(str(path) + "-journal").exists()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
