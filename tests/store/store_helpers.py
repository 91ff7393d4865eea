"""Helpers for the store tests: build real .wt files with known contents, tamper with them."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from wholetrace.store import RecordingWriter

#: Contents written by ``make_wt``: independent expectations for the reader tests.
FUNCS = {
    0: {"file": "/src/app.py", "qualname": "<module>", "firstline": 1, "lastline": 40,
        "source": "import os\nprint(1)\n", "fingerprint": "f0",
        "cfg": {"blocks": [0, 1, 2], "edges": [[0, 2, "fall"]]}},
    7: {"file": "/src/app.py", "qualname": "Klass.method", "firstline": 10, "lastline": 12,
        "source": "def method(self):\n    return 'é'\n", "fingerprint": "f7",
        "cfg": {"nested": {"a": None, "b": 1.5}}},
}


def chunk_data(n_chunks: int, size: int, seed: int = 0) -> list[np.ndarray]:
    """Incompressible int32 chunks (so the file is large enough to cut meaningfully)."""
    rng = np.random.default_rng(seed)
    return [rng.integers(-(2**31), 2**31, size=size, dtype=np.int64).astype(np.int32)
            for _ in range(n_chunks)]


def write_wt(path: Path, chunks: list[np.ndarray] | None = None) -> Path:
    """A complete, closed recording with FUNCS, two streams and ``chunks`` in stream 1."""
    chunks = chunk_data(4, 5000) if chunks is None else chunks
    with RecordingWriter(path) as w:
        w.set_meta(command=["prog.py", "--flag"], python="3.11")
        for fid, info in FUNCS.items():
            w.add_function(fid, **info)  # type: ignore[arg-type]
        w.add_stream(1, kind="thread", name="MainThread", thread_ident=140000000000000)
        w.add_stream(2, kind="task", name="Task-1", parent=1)
        for chunk in chunks:
            w.append_events(1, chunk)
        w.put_array("counts", np.arange(12, dtype=np.int64).reshape(3, 4), key="f0")
    return path


def sql(path: Path, *statements: str, params: tuple[object, ...] = ()) -> None:
    """Tamper with a .wt through plain sqlite3 (the way a damaged or hostile file arises)."""
    conn = sqlite3.connect(os.fspath(path), isolation_level=None)
    try:
        for stmt in statements:
            conn.execute(stmt, params if "?" in stmt else ())
    finally:
        conn.close()


@pytest.fixture
def wt(tmp_path: Path) -> Callable[..., Path]:
    """Factory: ``wt(name="x.wt", chunks=None)`` writes a real recording and returns its path."""
    def make(name: str = "rec.wt", chunks: list[np.ndarray] | None = None) -> Path:
        return write_wt(tmp_path / name, chunks)
    return make
