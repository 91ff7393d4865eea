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

    from wholetrace.runtime.probes import STREAMS

    writer = CountingWriter(RecordingWriter(tmp_path / "t.wt"))
    callers: list[str] = []
    real = writer.inner.add_stream

    def add_stream(*args: Any, **kwargs: Any) -> None:
        callers.append(threading.current_thread().name)
        real(*args, **kwargs)

    writer.inner.add_stream = add_stream  # type: ignore[method-assign]
    recorder = Recorder(writer, "count")
    before = len(STREAMS.all)
    t = threading.Thread(target=STREAMS.new, name="program-thread")
    t.start()
    t.join()
    assert callers == [] and len(STREAMS.all) == before + 1
    recorder.flush()
    assert callers and set(callers) == {threading.current_thread().name}
    writer.inner.close(ended="exit", exit_code=0)
