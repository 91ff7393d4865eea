"""Counts of a recording with child processes: each process's own counts, summed over processes.

Every part of a recording (``store/parts.py``) decodes on its own; a fork child's part also
holds what ran before the fork (its streams continue the parent's, its counters start from the
parent's), so what the child itself ran is its part minus its *base*: the prefix of each stream
closed at the fork (``EXC s`` LEAVE per open activation), or the counters at the fork with the
frames in flight as early exits (``runtime/children.py``).  Counts are linear in the rows and
the counters, so the difference is exact; a function is matched across processes by file,
qualified name and lines and CFG size.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from wholetrace.errors import StoreError

from wholetrace.store.parts import BASE_PREFIX, CHILDREN_KEY, PROCESS_KEY, processes

if TYPE_CHECKING:
    from wholetrace.profile import Entry
    from wholetrace.profile.model import FunctionProfile
    from wholetrace.trace.session import Trace

Own = Callable[["Trace"], list["Entry"]]
#: Set on a Trace (``trace.<name> = True``) to count its own process only (``--process``).
ONE_PROCESS = "wt_one_process"


def with_processes(trace: Trace, own: Own) -> list[Entry]:
    """``trace``'s profiles: of its own process, less a fork child's base; summed over its
    child processes too if it is a root with children (and not limited to one process)."""
    mine = own_profiles(trace, own)
    if getattr(trace, ONE_PROCESS, False) or not isinstance(trace.meta.get(CHILDREN_KEY), str):
        return mine
    total = mine
    for proc in processes(trace.path, trace.meta, 0)[1:]:
        try:
            with open_part(proc.path) as part:
                if ran_after_fork(part):
                    total = summed(total, own_profiles(part, own))
        except StoreError as exc:   # a child killed before it stored anything countable
            print(f"wholetrace: process {proc.number} (pid {proc.pid}) left out: {exc}", file=sys.stderr)
    return total


def open_part(path: str) -> Trace:
    """A part of a recording as a Trace whose streams start where the program started
    (a fork child's are joined to its parent's, ``store.parts.Lineage``)."""
    from wholetrace.store.parts import Lineage
    from wholetrace.store.reader import Recording
    from wholetrace.trace.session import Trace

    return Trace(Lineage(Recording(path)), owns=True)  # type: ignore[arg-type]


def one_process(root: str, number: int, *, salvage: bool = False, segments: bool = False) -> Trace:
    """Process ``number`` of the recording ``root``, opened to be read on its own (its
    counts are what that process itself ran)."""
    import argparse

    from wholetrace.store.parts import select
    from wholetrace.trace.cli import open_trace

    path = select(root, number)
    if number and not salvage:
        trace = open_part(path)
    else:
        trace = open_trace(argparse.Namespace(file=path, salvage=salvage), segments=segments)
    setattr(trace, ONE_PROCESS, True)
    return trace


def ran_after_fork(trace: Trace) -> bool:
    """False for a fork child (trace modes) that stored nothing past the fork (killed at once):
    its streams end before its base does, and it has nothing of its own to count."""
    info = trace.meta.get(PROCESS_KEY)
    if not isinstance(info, dict) or info.get("start") != "fork" or trace.mode.startswith("count"):
        return True
    stored = {s.sid: s.n_events for s in trace.recording.streams()}
    return all(sum(int(n) for _name, _sid, n in spec["chain"]) + stored.get(int(sid), 0) >= int(spec["events"])
               for sid, spec in (info.get("base") or {}).items())


def own_profiles(trace: Trace, own: Own) -> list[Entry]:
    """What this process ran: its profiles, less its base if it is a fork child."""
    mine = own(trace)
    info = trace.meta.get(PROCESS_KEY)
    if not isinstance(info, dict) or info.get("start") != "fork":
        return mine
    base = _count_base(trace) if trace.mode.startswith("count") else _trace_base(trace, info.get("base"))
    return [minus(p, b) for p, b in zip(mine, base)]


def _count_base(trace: Trace) -> list[Entry]:
    from wholetrace.profile.counting import count_profiles

    return count_profiles(trace, BASE_PREFIX)


def _trace_base(trace: Trace, base: Any) -> list[Entry]:
    from wholetrace.profile import tally_profiles
    from wholetrace.trace.counts import Tally

    trace.tables.reset()
    tally = Tally(trace.tables)
    for sid, spec in (base or {}).items():
        n, tail = int(spec["events"]), np.asarray(spec["tail"], np.int32)
        for rows in trace.decoder(int(sid)).decode(_Prefix(trace, int(sid), n, tail), copy=False):
            tally.add(rows)
    trace.tables.reset()
    return tally_profiles(trace, tally)


class _Prefix:
    """The first ``n`` events of a stored stream, then ``tail`` (re-iterable: witness
    recordings are read twice)."""

    def __init__(self, trace: Trace, sid: int, n: int, tail: np.ndarray) -> None:
        self.trace, self.sid, self.n, self.tail = trace, sid, n, tail

    def __iter__(self) -> Iterator[np.ndarray]:
        left = self.n
        for chunk in self.trace.recording.iter_chunks(self.sid):
            if left <= 0:
                break
            yield chunk[:left]
            left -= len(chunk)
        if len(self.tail):
            yield self.tail


def _combine(a: np.ndarray, b: np.ndarray, sign: int) -> np.ndarray:
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    return np.where((a < 0) | (b < 0), -1, a + sign * b)


def minus(p: Entry, q: Entry) -> Entry:
    """``p`` less ``q`` (the same function; an edge a mode does not measure stays -1; a
    function that never ran in either stays as it is)."""
    from wholetrace.profile.model import FunctionProfile, Idle

    if isinstance(p, Idle) or isinstance(q, Idle):
        return p

    acts = None if p.activations is None or q.activations is None else p.activations - q.activations
    return FunctionProfile(p.shape, p.blocks - q.blocks, p.stmts - q.stmts, _combine(p.edges, q.edges, -1),
                           p.source, acts)


def summed(into: list[Entry], more: list[Entry]) -> list[Entry]:
    """``into`` with ``more`` added: a function of both (same file, qualified name, lines
    and source text: the same code; two ``python -c`` commands are both ``<string>`` line 1)
    gets the sum, the others are kept as they are.  A function that never ran in one process
    takes the other's counts."""
    from wholetrace.profile.model import FunctionProfile, Idle

    def key(p: Entry) -> tuple[Any, ...]:
        return (p.file, p.qualname, p.firstline, p.lastline, p.source)

    out = list(into)
    where = {key(p): i for i, p in enumerate(out)}
    for q in more:
        i = where.get(key(q))
        if i is None:
            where[key(q)] = len(out)
            out.append(q)
            continue
        p = out[i]
        if isinstance(q, Idle):
            continue
        if isinstance(p, Idle):
            out[i] = q
            continue
        if len(p.blocks) != len(q.blocks) or len(p.edges) != len(q.edges):   # the same code makes the same CFG
            out.append(q)
            continue
        acts = None if p.activations is None or q.activations is None else p.activations + q.activations
        out[i] = FunctionProfile(p.shape, p.blocks + q.blocks, p.stmts + q.stmts, _combine(p.edges, q.edges, 1),
                                 p.source, acts)
    return out
