"""The run's end hands the WPP builder what the buffers hold before the rest of the stop (wave 24)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from wholetrace.runtime import recorder as R


class _Writer:
    """What ``Recorder.stop`` calls on a writer; ``wpp``: it has ``flusher_stats`` (as ``wpp.online.OnlineWpp``)."""

    flush_seconds = 0.25

    def __init__(self) -> None:
        self.got: list[tuple[int, list[int]]] = []

    def add_stream(self, sid: int, **row: Any) -> None:
        pass

    def append_events(self, sid: int, events: Any) -> None:
        self.got.append((sid, list(events)))

    def put_array(self, *args: Any, **kwargs: Any) -> None:
        pass

    def close(self, **how: Any) -> None:
        self.closed = how

    def sent(self) -> int:
        return sum(len(e) for _, e in self.got)


class _WppWriter(_Writer):
    flush_seconds = 0.005

    def flusher_stats(self, stats: list[float]) -> None:
        self.stats = stats


def _recorder(writer: _Writer, mode: str) -> R.Recorder:
    """A recorder whose stream holds 1,000 events, appended on a thread of its own (a program thread's)."""
    rec = R.Recorder(writer, mode=mode)
    events = list(range(1000))

    def program() -> None:
        append = rec.state.streams.new()
        for v in events:
            append(v)

    t = threading.Thread(target=program)
    t.start()
    t.join()
    return rec


def _stop_with_events(writer: _Writer, monkeypatch: pytest.MonkeyPatch, mode: str = "path") -> tuple[int, list[int]]:
    """Stop such a recorder; return how many events the writer had when the snapshot was taken, and all it got."""
    rec = _recorder(writer, mode)
    seen: list[int] = []
    real = R.unfinished.snapshot

    def snapshot(*args: Any, **kwargs: Any) -> Any:
        seen.append(writer.sent())
        return real(*args, **kwargs)

    monkeypatch.setattr(R.unfinished, "snapshot", snapshot)
    rec.stop()
    assert len(seen) == 1
    return seen[0], [v for _, e in writer.got for v in e]


def test_the_builder_gets_the_buffers_before_the_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    before_snapshot, got = _stop_with_events(_WppWriter(), monkeypatch)
    assert before_snapshot == 1000
    assert got == list(range(1000))   # each event once, in order


def test_other_writers_flush_once_after_the_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    writer = _Writer()
    before_snapshot, got = _stop_with_events(writer, monkeypatch, mode="witness")
    assert before_snapshot == 0
    assert got == list(range(1000)) and len(writer.got) == 1


class _Uninstalled(Exception):
    pass


@pytest.mark.parametrize("wpp", [True, False])
def test_the_run_end_hands_over_before_the_scans(monkeypatch: pytest.MonkeyPatch, wpp: bool) -> None:
    """``runner.Live.stop``: the builder has the buffers once the finder is uninstalled, before the
    bypassed/recompiled scans and the recorder's stop; other writers get nothing there."""
    from types import SimpleNamespace

    from wholetrace.instrument import bypass
    from wholetrace.runtime import runner

    writer = _WppWriter() if wpp else _Writer()
    rec = _recorder(writer, "path" if wpp else "witness")
    seen: list[int] = []

    def end_notes(*args: Any) -> list[Any]:   # (the scans: bypass.end_notes catches their errors itself)
        seen.append(writer.sent())
        raise _Uninstalled

    from wholetrace.instrument.emit import NO_TB

    monkeypatch.setattr(runner, "uninstall", lambda finder: None)
    monkeypatch.setattr(bypass, "end_notes", end_notes)
    instrumenter = SimpleNamespace(unrecorded=[], left_out=[], instrumented_files=set(),
                                   registry=SimpleNamespace(constants={NO_TB: object()}))
    finder = SimpleNamespace(scope=None, preloaded={}, declined={})
    live = runner.Live(writer, rec, instrumenter, finder)   # type: ignore[arg-type]
    with pytest.raises(_Uninstalled):
        live.stop("exit", 0)
    assert seen == [1000 if wpp else 0]
    assert writer.closed["ended"] == "exit"
