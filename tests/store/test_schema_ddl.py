"""The schema a new recording gets is the one the wave-9 writer made (CREATE, then ALTER TABLE)."""

from __future__ import annotations

import sqlite3

from wholetrace.store import RecordingWriter, open_recording, schema

# The writer's statements before wave 13, as they were: the tables, then issue 9's columns
# and ``files`` table added at every file's creation (the independent oracle).
WAVE9_DDL = """
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL            -- JSON
);
CREATE TABLE functions (
    fid         INTEGER PRIMARY KEY,
    file        TEXT NOT NULL,
    qualname    TEXT NOT NULL,
    firstline   INTEGER NOT NULL,
    lastline    INTEGER NOT NULL,
    source      TEXT NOT NULL,
    cfg         BLOB NOT NULL,     -- zstd(JSON object)
    fingerprint TEXT NOT NULL
);
CREATE TABLE streams (
    sid          INTEGER PRIMARY KEY,
    kind         TEXT NOT NULL CHECK (kind IN ('thread', 'task')),
    name         TEXT NOT NULL,
    thread_ident INTEGER,          -- two's complement when >= 2**63
    parent       INTEGER
);
CREATE TABLE chunks (
    sid      INTEGER NOT NULL,
    seq      INTEGER NOT NULL,     -- 0, 1, 2, ... per stream
    n_events INTEGER NOT NULL,
    blob     BLOB NOT NULL,        -- zstd(little-endian int32 bytes)
    PRIMARY KEY (sid, seq)
);
CREATE TABLE arrays (
    name  TEXT NOT NULL,
    key   TEXT NOT NULL,
    dtype TEXT NOT NULL,           -- numpy dtype.str, e.g. '<i8'
    shape TEXT NOT NULL,           -- JSON list of ints
    blob  BLOB NOT NULL,           -- zstd(C-order bytes)
    PRIMARY KEY (name, key)
);
ALTER TABLE meta ADD COLUMN crc INTEGER;
ALTER TABLE functions ADD COLUMN crc INTEGER;
ALTER TABLE streams ADD COLUMN crc INTEGER;
ALTER TABLE chunks ADD COLUMN start INTEGER;
ALTER TABLE chunks ADD COLUMN crc INTEGER;
ALTER TABLE arrays ADD COLUMN crc INTEGER;
CREATE TABLE files (
    fid_base     INTEGER PRIMARY KEY,  -- the file's functions are fid_base .. fid_base + n_functions - 1
    path         TEXT NOT NULL,
    n_functions  INTEGER NOT NULL,
    counter_base INTEGER NOT NULL,     -- global id of the file's first counter (count modes)
    blob         BLOB NOT NULL,        -- zstd(JSON header, descriptions), see store/registry.py
    crc          INTEGER NOT NULL
);
"""


def _layout(path) -> tuple[list[tuple[object, ...]], dict[str, list[tuple[object, ...]]]]:
    conn = sqlite3.connect(path)
    try:
        master = conn.execute("SELECT type, name, tbl_name, rootpage, sql FROM sqlite_master ORDER BY rowid").fetchall()
        columns = {name: conn.execute(f"PRAGMA table_info({name})").fetchall()
                   for _t, name, *_ in master if _t == "table"}
        return master, columns
    finally:
        conn.close()


def test_new_file_has_the_wave9_tables_root_pages_and_sql(tmp_path):
    old = tmp_path / "wave9.db"
    conn = sqlite3.connect(old, isolation_level=None)
    conn.executescript("BEGIN;" + WAVE9_DDL + "COMMIT;")
    conn.close()
    new = tmp_path / "new.wt"
    RecordingWriter(new).close(ended="exit", exit_code=0)
    assert _layout(new) == _layout(old)
    assert "ALTER" not in schema.DDL


def test_a_new_file_reads_back(tmp_path):
    from array import array

    path = tmp_path / "r.wt"
    w = RecordingWriter(path)
    w.add_stream(0, kind="thread", name="MainThread", thread_ident=1)
    w.append_events(0, array("i", [5, -3, 7]))
    w.close(ended="exit", exit_code=0)
    rec = open_recording(path)
    try:
        assert rec.meta["ended"] == "exit"
        assert list(rec.events(0)) == [5, -3, 7]
    finally:
        rec.close()
