"""`Trace`: one recording opened for reading, owning its tables and decoder (pyinstrument's Session).

The read side in one direction: ``record`` writes a ``.wt``; ``Trace.open`` reads it; queries
(``rows``, ``counts``, ``events``, ``activation_form``, ``profile.profiles``) decode its
streams through one kernel; renderers (``wholetrace.render``) format what the queries give.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable, Iterable, Iterator
from functools import cached_property
from types import TracebackType
from typing import Any, Self, TypeVar

import numpy as np

from wholetrace.errors import UsageError
from wholetrace.events import ENTER_BASE, EXC, LEAVE
from wholetrace.store.reader import FunctionInfo, Recording, StreamInfo
from wholetrace.trace.counts import Tally
from wholetrace.trace.decode import EID_ENTER, EID_EXC, EID_LEAVE, Rows, StreamDecoder
from wholetrace.trace.facts import StoredFacts, load_facts
from wholetrace.trace.shape import FunctionShape, parse_shape, parse_shapes
from wholetrace.trace.tables import Tables

Activation = tuple[int, tuple[int, ...], int]
#: Events of a stream read with its neighbours in one query and held whole (``Trace.stream_chunks``).
SMALL_STREAM = 1 << 16
#: Streams read in one query at most.
RUN_STREAMS = 4096
T = TypeVar("T")


class Trace:
    """A validated recording and everything decoded from it, computed once and cached.

    ``Trace.open(path)`` opens a file (use it as a context manager); ``Trace(recording)``
    wraps an open :class:`~wholetrace.store.reader.Recording`, which the caller keeps.
    """

    def __init__(self, recording: Recording, *, owns: bool = False) -> None:
        self.recording = recording
        self._owns = owns
        self._shapes: dict[int, FunctionShape] = {}
        self._memo: dict[str, Any] = {}
        self._run: Iterator[tuple[int, list[np.ndarray]]] = iter(())   # ``stream_chunks``' read ahead
        self._run_next: list[int] = []      # the streams it has still to give, last first

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, check: bool = True) -> Trace:
        """Open a recording file; one made with ``--wpp`` (``path`` mode's default) and no raw
        streams is read through its grammars (``wpp.stored.readable``)."""
        rec = Recording(path, check=check)
        if isinstance(rec.meta.get("wpp"), dict):
            from wholetrace.wpp.stored import readable
            rec = readable(rec)
        return cls(rec, owns=True)

    def close(self) -> None:
        if self._owns:
            self.recording.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- what the file holds
    @property
    def path(self) -> str:
        return self.recording.path

    @property
    def meta(self) -> dict[str, Any]:
        return self.recording.meta

    @property
    def mode(self) -> str:
        return str(self.meta.get("mode"))

    @cached_property
    def functions(self) -> dict[int, FunctionInfo]:
        """The function registry by id."""
        return {f.fid: f for f in self.recording.functions()}

    @cached_property
    def facts(self) -> StoredFacts | None:
        """The stored lines and branches of functions (``trace.facts``), or None if the
        recording has none (then reports parse the CFGs of functions that never ran)."""
        return load_facts(self.recording, max(self.functions, default=-1) + 1)

    def streams(self) -> list[StreamInfo]:
        return self.recording.streams()

    def shape(self, fid: int) -> FunctionShape:
        """Function ``fid``'s validated CFG and plan (parsed on first use)."""
        hit = self._shapes.get(fid)
        if hit is None:
            info = self.functions.get(fid)
            if info is None:
                raise UsageError(f"{self.path}: no function {fid}")
            hit = self._shapes[fid] = parse_shape(fid, info.cfg, file=info.file, qualname=info.qualname)
        return hit

    def shapes(self) -> list[FunctionShape]:
        """Every function's shape, by id (those not parsed yet are parsed together)."""
        return self.shapes_of(sorted(self.functions))

    def shapes_of(self, fids: list[int]) -> list[FunctionShape]:
        """The shapes of functions ``fids`` (those not parsed yet are parsed together: one
        batch costs far less than one parse per function)."""
        todo = [self.functions[fid] for fid in fids if fid not in self._shapes and fid in self.functions]
        if todo:
            for sh in parse_shapes([(f.fid, f.cfg, f.file, f.qualname) for f in todo]):
                self._shapes[sh.fid] = sh
        return [self._shapes[fid] if fid in self._shapes else self.shape(fid) for fid in fids]

    @cached_property
    def tables(self) -> Tables:
        """The decoding tables (count recordings keep no trace: their streams are empty)."""
        version = getattr(self.recording, "schema_version", None) or self.meta.get("schema_version")
        return Tables(self.functions, self.shape, self.mode, version if isinstance(version, int) else None,
                      prefetch=self.shapes_of)

    # -- decoding
    def decoder(self, sid: int) -> StreamDecoder:
        return StreamDecoder(self.tables, what=f"stream {sid}")

    def rows(self, sid: int, *, copy: bool = True) -> Iterator[Rows]:
        """Decoded rows of stream ``sid``, batch by batch (memory bounded by a batch)."""
        yield from self.decoder(sid).decode(self.stream_chunks(sid), copy=copy)

    def memo(self, key: str, compute: Callable[[], T]) -> T:
        """``compute()`` once per trace (queries built on the trace cache their results here)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]  # type: ignore[no-any-return]

    def counts(self) -> Tally:
        """Block, edge, statement-cut and activation counts over every stream (cached)."""
        return self.memo("counts", self.tally)

    def tally(self) -> Tally:
        """The counts of :meth:`counts`, decoded afresh.  Only the functions the streams enter
        are parsed (in batches, ``Tables.need``); those that never ran keep their CFGs unread."""
        self.tables.reset()
        tally = Tally(self.tables)
        out = None                      # one row buffer for every stream
        for st in self.streams():
            dec = self.decoder(st.sid)
            dec.count(self.stream_chunks(st.sid), tally, out=out)
            out = dec.out
        return tally

    def stream_chunks(self, sid: int) -> Iterable[np.ndarray]:
        """Stream ``sid``'s chunks, re-iterable (a witness stream is read twice).  A small stream
        of a plain recording is read with the small streams after it in one query, held one
        stream at a time (``Recording.streams_chunks``): a query per stream cost more than
        decoding a task's few events (explore22 MED-6); a large one is read afresh each time."""
        if self._run_next and sid == self._run_next[-1]:      # the run's next stream: read on
            self._run_next.pop()
            got = next(self._run, None)                       # None: the run stopped at a damaged chunk
            if got is not None:
                return got[1]
        if type(self.recording) is Recording:     # views (parts, salvage, grammars) read stream by stream
            sids = self._small_run(sid)
            if sids:           # a new run (a stream skipped is never read: its damage is not reported)
                self._run, self._run_next = iter(self.recording.streams_chunks(sids)), sids[:0:-1]
                return next(self._run)[1]
        self._run_next = []
        return _Reread(self.recording, sid)

    def _small_run(self, sid: int) -> list[int]:
        """``sid`` and the streams after it up to the first large one, if ``sid`` is small."""
        sids, sizes = self._sizes
        i = bisect.bisect_left(sids, sid)
        j = i
        while j < min(len(sids), i + RUN_STREAMS) and sizes[j] <= SMALL_STREAM:
            j += 1
        return sids[i:j] if i < len(sids) and sids[i] == sid else []

    @cached_property
    def _sizes(self) -> tuple[list[int], list[int]]:
        streams = self.streams()
        return [st.sid for st in streams], [st.n_events for st in streams]

    def blocks(self, sid: int) -> Iterator[np.ndarray]:
        """Stream ``sid`` as `blocks` events (regenerated for reduced modes), chunk by chunk."""
        for rows in self.rows(sid, copy=False):
            yield block_events(rows)

    def events(self, sid: int) -> np.ndarray:
        """The whole of stream ``sid`` as `blocks` events."""
        parts = list(self.blocks(sid))
        return np.concatenate(parts) if parts else np.zeros(0, np.int32)

    def activation_form(self, sid: int) -> list[Activation]:
        """Each activation's own events and number of children, in preorder (entry 0:
        events outside any activation); equal forms mean equal traces up to where
        child activations sit among their parent's blocks."""
        return activation_form(Rows.concat(self.rows(sid)))


class _Reread:
    """The chunks of one stored stream, read afresh each time it is iterated (a witness
    stream is read twice without being held in memory)."""

    def __init__(self, recording: Recording, sid: int) -> None:
        self.recording, self.sid = recording, sid

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter(self.recording.iter_chunks(self.sid))


# ---------------------------------------------------------------- rows as events

def _event_layout(rows: Rows) -> tuple[np.ndarray, np.ndarray]:
    """Per row: how many `blocks` events it stands for, and where they start."""
    eid, dst = rows.eid, rows.dst
    n = np.where(eid == EID_EXC, 2 + (dst >= 2), np.where(eid >= 0, dst >= 2, 1)).astype(np.int64)
    start = np.cumsum(n) - n
    return n, start


def block_events(rows: Rows) -> np.ndarray:
    """The `blocks` encoding (``wholetrace.events``) of decoded rows: ENTER f, B k, EXC s
    (then the handler's B), LEAVE."""
    eid, dst = rows.eid, rows.dst
    n, start = _event_layout(rows)
    out = np.empty(int(n.sum()), np.int32)
    first = np.where(eid == EID_ENTER, -(ENTER_BASE + rows.fid),
                     np.where(eid == EID_LEAVE, LEAVE, np.where(eid == EID_EXC, EXC, dst)))
    some = n > 0
    out[start[some]] = first[some]
    exc = eid == EID_EXC
    out[start[exc] + 1] = rows.aux[exc]
    handled = exc & (dst >= 2)
    out[start[handled] + 2] = dst[handled]
    return out


def activation_form(rows: Rows) -> list[Activation]:
    """The activation form of a whole stream's rows (see :meth:`Trace.activation_form`)."""
    enter = rows.eid == EID_ENTER
    nact = int(rows.act[enter].max()) + 1 if enter.any() else 0
    fids = np.full(nact, -1, np.int64)
    fids[rows.act[enter]] = rows.fid[enter]
    kids = np.bincount(rows.aux[enter] + 1, minlength=nact + 1)
    own = (rows.eid == EID_EXC) | ((rows.eid >= 0) & (rows.dst >= 2))
    sub = rows.select(own)
    ev = block_events(sub)
    n, _ = _event_layout(sub)
    owner = np.repeat(sub.act, n)
    order = np.argsort(owner, kind="stable")
    bounds = np.searchsorted(owner[order], np.arange(nact + 1))
    ev = ev[order].tolist()
    form: list[Activation] = [(-1, (), int(kids[0]))]
    for a in range(nact):
        form.append((int(fids[a]), tuple(ev[bounds[a]:bounds[a + 1]]), int(kids[a + 1])))
    return form
