"""Registering an instrumented file is one store operation, whatever its number of functions,
and what it stores reads back as the functions the CFG builder finds in the source."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wholetrace.instrument.cache import InstrumentCache
from wholetrace.instrument.cfg import build_module
from wholetrace.instrument.loader import Instrumenter
from wholetrace.runtime.recorder import Recorder
from wholetrace.store import Recording, RecordingWriter

SOURCE = "\n".join(f"def f{i}(x):\n    if x > {i}:\n        return x\n    return {i}\n\nclass C{i}:\n"
                   f"    def m(self):\n        yield {i}\n" for i in range(150))


class CountingWriter:
    """Counts the writer calls registration makes, and passes them to a real writer."""

    def __init__(self, inner: RecordingWriter) -> None:
        self.inner, self.calls = inner, []

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return getattr(self.inner, name)(*args, **kwargs)
        return call


def test_a_file_is_registered_with_one_row(tmp_path: Path) -> None:
    for cached in (False, True):
        path = tmp_path / f"r{cached}.wt"
        writer = CountingWriter(RecordingWriter(path))
        inst = Instrumenter(Recorder(writer, "count"), InstrumentCache(tmp_path / "cache"))
        inst.compile(SOURCE, "/x/many.py")
        inst.compile(SOURCE, "/x/again.py")
        assert writer.calls == ["add_file", "add_file"], cached
        writer.inner.close(ended="exit", exit_code=0)
        want = build_module(SOURCE, "/x/many.py")
        with Recording(path) as rec:
            got = rec.functions()
        assert len(got) == 2 * len(want) == 2 * 451
        assert [(f.file, f.qualname, f.firstline, f.fingerprint) for f in got[:len(want)]] == \
            [("/x/many.py", c.qualname, c.firstline, c.fingerprint) for c in want]
        assert [f.fid for f in got] == list(range(len(got)))
        bases = [f.cfg["plan"]["counter_base"] for f in got]
        counters = [f.cfg["plan"]["counters"] for f in got]
        assert bases == [sum(counters[:i]) for i in range(len(got))]   # consecutive counters, file after file


def test_program_threads_never_write_to_the_store(tmp_path: Path) -> None:
    """A thread's stream row is written by the flusher, not by the thread when it makes its
    stream: SQLite releases the GIL, and a program thread pausing there (in count modes: at its
    first exception) would let other threads run where they would not have."""
    import threading

    writer = CountingWriter(RecordingWriter(tmp_path / "t.wt"))
    callers: list[str] = []
    real = writer.inner.add_stream

    def add_stream(*args: Any, **kwargs: Any) -> None:
        callers.append(threading.current_thread().name)
        real(*args, **kwargs)

    writer.inner.add_stream = add_stream  # type: ignore[method-assign]
    recorder = Recorder(writer, "count")
    streams = recorder.state.streams
    before = len(streams.all)
    t = threading.Thread(target=streams.new, name="program-thread")
    t.start()
    t.join()
    assert callers == [] and len(streams.all) == before + 1
    recorder.flush()
    assert callers and set(callers) == {threading.current_thread().name}
    writer.inner.close(ended="exit", exit_code=0)


def test_a_stream_made_during_a_flush_waits_for_the_next(tmp_path: Path) -> None:
    """SQLite releases the GIL while the flusher writes a stream's row: a program thread that
    makes its stream (and appends to it) then must not get its events stored before its row
    (the store refuses them; the flusher thread died with the error on stderr)."""
    import threading

    writer = RecordingWriter(tmp_path / "s.wt")
    real = writer.add_stream
    recorder = Recorder(writer, "blocks")
    streams = recorder.state.streams
    streams.new()(7)

    def add_stream(*args: Any, **kwargs: Any) -> None:
        real(*args, **kwargs)
        if len(streams.all) == 1:           # the program thread runs while SQLite writes
            t = threading.Thread(target=lambda: streams.new()(8))
            t.start()
            t.join()

    writer.add_stream = add_stream  # type: ignore[method-assign]
    recorder.flush()
    assert [len(st.buf) for st in streams.all] == [0, 1]
    recorder.flush()
    writer.close(ended="exit", exit_code=0)
    with Recording(tmp_path / "s.wt") as rec:
        assert [[c.tolist() for c in rec.iter_chunks(st.sid)] for st in rec.streams()] == [[[7]], [[8]]]
