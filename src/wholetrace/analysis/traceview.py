"""Streaming views of recorded event streams: the F/B/E text format and JSON."""

from __future__ import annotations

import json
from typing import Any, Iterable, Iterator, TextIO

import numpy as np

from wholetrace.events import ENTER_BASE, EXC, LEAVE


def iter_events(chunks: Iterable[np.ndarray]) -> Iterator[tuple[str, int]]:
    """Decode int32 chunks into ("F", fid) / ("B", block) / ("X", stmt) / ("E", 0), across chunk edges."""
    pending_exc = False
    for chunk in chunks:
        for v in chunk.tolist():
            if pending_exc:
                pending_exc = False
                yield "X", v
            elif v >= 0:
                yield "B", v
            elif v == LEAVE:
                yield "E", 0
            elif v == EXC:
                pending_exc = True
            elif v <= -ENTER_BASE:
                yield "F", -v - ENTER_BASE
            else:
                raise ValueError(f"unknown event code {v}")


def function_labels(rec: Any) -> dict[int, str]:
    return {f.fid: f"{f.qualname}@{f.file}:{f.firstline}" for f in rec.functions()}


def write_trace(rec: Any, out: TextIO, *, fmt: str = "fbe", stream: int | None = None,
                limit: int | None = None) -> int:
    """Write the trace of every stream (or one) to ``out``; returns the number of events written."""
    from wholetrace.progress import progress

    labels = function_labels(rec)
    streams = [s for s in rec.streams() if stream is None or s.sid == stream]
    total = sum(s.n_events for s in streams) if limit is None else min(limit, sum(s.n_events for s in streams))
    with progress("writing trace", total if total > 1_000_000 else 0) as advance:
        return _write_streams(rec, out, streams, labels, fmt, limit, advance)


def _write_streams(rec: Any, out: TextIO, streams: list[Any], labels: dict[int, str], fmt: str,
                   limit: int | None, advance: Any) -> int:
    written = 0
    if fmt == "json":
        out.write('{"streams": [')
    for i, st in enumerate(streams):
        if limit is not None and written >= limit:
            break
        if fmt == "fbe":
            out.write(f"T {st.sid}\n")
        else:
            head = {"stream": st.sid, "kind": st.kind, "name": st.name}
            out.write(("," if i else "") + json.dumps(head)[:-1] + ', "events": [')
        first = True
        for kind, val in iter_events(rec.iter_chunks(st.sid)):
            if limit is not None and written >= limit:
                break
            written += 1
            if written % 65536 == 0:
                advance(65536)
            if fmt == "fbe":
                out.write(_fbe(kind, val, labels) + "\n")
            else:
                item = [kind] if kind == "E" else [kind, labels.get(val, val) if kind == "F" else val]
                out.write(("" if first else ",") + json.dumps(item))
                first = False
        if fmt == "json":
            out.write("]}")
    if fmt == "json":
        out.write("]}\n")
    return written


def _fbe(kind: str, val: int, labels: dict[int, str]) -> str:
    if kind == "F":
        return f"F {labels.get(val, f'<fid {val}>')}"
    if kind == "E":
        return "E"
    return f"{kind} {val}"
