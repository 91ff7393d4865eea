"""The block trace of `wholetrace trace`: one event per line (``fbe``) or JSON, streamed.

``T <stream>`` where a stream starts, ``F <qualname>@<file>:<firstline>`` when an
activation starts (or a generator resumes), ``B <block>`` per block, ``X <statement>`` when
an exception moves control, ``E`` when an activation ends (or a generator suspends).
Reduced recordings (`witness`, `branches`) print the regenerated block trace.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, ClassVar, TextIO

import numpy as np

from wholetrace.events import ENTER_BASE, EXC, LEAVE
from wholetrace.render.base import Renderer

if TYPE_CHECKING:
    from wholetrace.trace.session import Trace


def function_labels(trace: Trace) -> dict[int, str]:
    """``qualname@file:firstline`` of every function, by id."""
    return {f.fid: f"{f.qualname}@{f.file}:{f.firstline}" for f in trace.functions.values()}


def iter_events(chunks: Iterable[np.ndarray]) -> Iterator[tuple[str, int]]:
    """("F", fid) / ("B", block) / ("X", statement) / ("E", 0) for `blocks` event chunks (an
    ``EXC`` and its statement may lie in two chunks)."""
    pending = False
    for chunk in chunks:
        for v in chunk.tolist():
            if pending:
                pending = False
                yield "X", v
            elif v >= 0:
                yield "B", v
            elif v == LEAVE:
                yield "E", 0
            elif v == EXC:
                pending = True
            else:
                yield "F", -v - ENTER_BASE


class _TraceRenderer(Renderer):
    """``stream``: only that stream; ``limit``: at most that many events; ``events``: the
    `blocks` event chunks of a stream (default ``trace.blocks``: decoded, regenerated)."""

    def __init__(self, stream: int | None = None, limit: int | None = None,
                 events: Callable[[int], Iterable[np.ndarray]] | None = None) -> None:
        self.stream = stream
        self.limit = limit
        self.events = events

    def render(self, trace: Trace, out: TextIO) -> None:
        from wholetrace.progress import progress

        streams = [s for s in trace.streams() if self.stream is None or s.sid == self.stream]
        total = sum(s.n_events for s in streams)
        total = total if self.limit is None else min(self.limit, total)
        labels = function_labels(trace)
        self.written = 0
        with progress("writing trace", total if total > 1_000_000 else 0) as advance:
            self._begin(out)
            for i, st in enumerate(streams):
                if self.limit is not None and self.written >= self.limit:
                    break
                self._stream(out, i, st)
                for kind, val in iter_events((self.events or trace.blocks)(st.sid)):
                    if self.limit is not None and self.written >= self.limit:
                        break
                    self.written += 1
                    if self.written % 65536 == 0:
                        advance(65536)
                    self._event(out, kind, val, labels)
                self._end_stream(out)
            self._end(out)

    def _begin(self, out: TextIO) -> None: ...
    def _stream(self, out: TextIO, i: int, st: object) -> None: ...
    def _event(self, out: TextIO, kind: str, val: int, labels: dict[int, str]) -> None: ...
    def _end_stream(self, out: TextIO) -> None: ...
    def _end(self, out: TextIO) -> None: ...


class TraceFbe(_TraceRenderer):
    """One event per line."""

    format: ClassVar[str] = "fbe"

    def _stream(self, out: TextIO, i: int, st: object) -> None:
        out.write(f"T {st.sid}\n")  # type: ignore[attr-defined]

    def _event(self, out: TextIO, kind: str, val: int, labels: dict[int, str]) -> None:
        if kind == "F":
            out.write(f"F {labels.get(val, f'<fid {val}>')}\n")
        elif kind == "E":
            out.write("E\n")
        else:
            out.write(f"{kind} {val}\n")


class TraceJson(_TraceRenderer):
    """``{"streams": [{"stream", "kind", "name", "events": [["F", label], ["B", k], ...]}]}``."""

    format: ClassVar[str] = "json"

    def _begin(self, out: TextIO) -> None:
        out.write('{"streams": [')

    def _stream(self, out: TextIO, i: int, st: object) -> None:
        head = {"stream": st.sid, "kind": st.kind, "name": st.name}  # type: ignore[attr-defined]
        out.write(("," if i else "") + json.dumps(head)[:-1] + ', "events": [')
        self._first = True

    def _event(self, out: TextIO, kind: str, val: int, labels: dict[int, str]) -> None:
        item = [kind] if kind == "E" else [kind, labels.get(val, val) if kind == "F" else val]
        out.write(("" if self._first else ",") + json.dumps(item))
        self._first = False

    def _end_stream(self, out: TextIO) -> None:
        out.write("]}")

    def _end(self, out: TextIO) -> None:
        out.write("]}\n")


RENDERERS: list[type[Renderer]] = [TraceFbe, TraceJson]
