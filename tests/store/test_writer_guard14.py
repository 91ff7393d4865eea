"""``RecordingWriter._guard`` (a class since wave 14, was ``contextlib.contextmanager``): what
raises where, as the generator did: refused when closed, a sqlite error of the reconnect check
or of the body turned into a one-line StoreError caused by it, other errors left alone."""

from __future__ import annotations

import sqlite3

import pytest

from wholetrace.errors import StoreError
from wholetrace.store.writer import RecordingWriter


@pytest.fixture()
def writer(tmp_path):
    w = RecordingWriter(tmp_path / "g.wt")
    yield w
    if not w._closed:
        w.close(ended="exit", exit_code=0)


def test_a_sqlite_error_in_the_body_is_a_store_error(writer):
    with pytest.raises(StoreError, match=r"cannot put things in .*g\.wt.*: boom") as info:
        with writer._guard("put things"):
            raise sqlite3.OperationalError("boom")
    assert isinstance(info.value.__cause__, sqlite3.OperationalError)


def test_an_overflow_in_the_body_is_a_store_error(writer):
    with pytest.raises(StoreError) as info:
        with writer._guard("bind"):
            raise OverflowError("too big")
    assert isinstance(info.value.__cause__, OverflowError)


def test_other_errors_pass_through(writer):
    with pytest.raises(KeyError):
        with writer._guard("look"):
            raise KeyError("x")


def test_the_reconnect_check_runs_on_entry_and_its_sqlite_error_is_a_store_error(writer, monkeypatch):
    calls = []

    def check():
        calls.append("check")
        raise sqlite3.OperationalError("cannot reconnect")

    monkeypatch.setattr(writer, "_check", check)
    guard = writer._guard("write")
    assert calls == []          # on entry, as the generator's first lines ran
    with pytest.raises(StoreError, match="cannot reconnect") as info:
        with guard:
            calls.append("body")
    assert calls == ["check"]
    assert isinstance(info.value.__cause__, sqlite3.OperationalError)


def test_a_closed_writer_refuses(writer):
    writer.close(ended="exit", exit_code=0)
    with pytest.raises(StoreError, match="is closed"):
        with writer._guard("late"):
            pass
