"""The runs of intact chunks of a salvaged recording as streams of their own, each cut to
the activations it holds from their start, so counting and regeneration can read them.

After a lost chunk, the events of the activations that were running when it was lost
cannot be attributed (their ENTER is gone, and a block id means nothing without its
function).  So each run of consecutive intact chunks (a *segment*) becomes one stream
that keeps an event only inside an activation whose ENTER it holds and whose function
survived: events of the unknown outer context, including the LEAVEs that close it, are
dropped, and so are the events of a lost function's own activations (the activations it
calls are kept).  What remains is a sequence of whole activations (the last ones possibly
unfinished, as at the end of any recording), which every reader of streams accepts.
Counts read this way are exact for what they hold, and a lower bound for the run.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from wholetrace.events import ENTER_BASE, EXC, LEAVE
from wholetrace.store.reader import StreamInfo
from wholetrace.store.salvage import SalvagedRecording


def attributable(chunks: Iterable[np.ndarray], known: set[int] | frozenset[int],
                 from_start: bool) -> Iterator[np.ndarray]:
    """The events of ``chunks`` (one segment) that lie in activations begun inside it and of
    a function in ``known``; ``from_start``: the segment starts at the stream's first event."""
    stack: list[bool] = [from_start]     # the context the segment starts in: known only at the start
    after_exc = False
    for chunk in chunks:
        out: list[int] = []
        for v in chunk.tolist():
            if after_exc:                # the statement id of an EXC pair
                after_exc = False
                if stack[-1]:
                    out.append(v)
            elif v <= -ENTER_BASE:
                ok = -v - ENTER_BASE in known
                stack.append(ok)
                if ok:
                    out.append(v)
            elif v == LEAVE:
                if len(stack) > 1:
                    if stack.pop():
                        out.append(v)
                elif stack[0]:           # leaving the top level of a complete stream: keep as is
                    out.append(v)
            else:
                after_exc = v == EXC
                if stack[-1]:
                    out.append(v)
        yield np.array(out, dtype=np.int32)


class SegmentView:
    """A salvaged recording whose streams are its segments (ids 0, 1, ... in stream order);
    everything else (meta, functions, arrays) is the salvaged recording's."""

    def __init__(self, rec: SalvagedRecording) -> None:
        self.rec = rec
        self.known = frozenset(f.fid for f in rec.functions())
        self.parts: list[tuple[StreamInfo, list[int]]] = [
            (st, seqs) for st in rec.streams() for seqs in rec.segments(st.sid)]

    def streams(self) -> list[StreamInfo]:
        rows = self.rec.chunk_rows
        return [StreamInfo(i, st.kind, st.name, st.thread_ident, st.parent,
                           sum(rows(st.sid)[q].values[2] for q in seqs), len(seqs),
                           sum(len(rows(st.sid)[q].values[3]) for q in seqs))
                for i, (st, seqs) in enumerate(self.parts)]

    def segments_of(self, sid: int) -> list[int]:
        """The segment ids of the real stream ``sid``, in order."""
        return [i for i, (st, _seqs) in enumerate(self.parts) if st.sid == sid]

    def iter_chunks(self, i: int) -> Iterator[np.ndarray]:
        st, seqs = self.parts[i]
        chunks = (self.rec.chunk(st.sid, q) for q in seqs)
        return attributable(chunks, self.known, seqs[0] == 0)

    def events(self, i: int) -> np.ndarray:
        chunks = list(self.iter_chunks(i))
        return np.concatenate(chunks) if chunks else np.zeros(0, np.int32)

    def __getattr__(self, name: str) -> Any:   # meta, functions(), get_array(), sizes() ...
        return getattr(self.rec, name)


class JoinedSegments:
    """Per real stream, the chunks of its segments read through ``inner`` (a reader over a
    :class:`SegmentView`, e.g. a regenerating one), one after another."""

    def __init__(self, view: SegmentView, inner: Any) -> None:
        self.view, self.inner = view, inner

    def iter_chunks(self, sid: int) -> Iterator[np.ndarray]:
        for i in self.view.segments_of(sid):
            yield from self.inner.iter_chunks(i)

    def __getattr__(self, name: str) -> Any:   # streams(), functions(), meta ... of the salvage
        return getattr(self.view.rec, name)
