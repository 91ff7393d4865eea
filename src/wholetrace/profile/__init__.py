"""Exact execution counts of every function of a recording, of any mode: `profiles(trace)`.

``counted(trace)`` is what reports read: a `FunctionProfile` for each function that may have
run (its counts are views of one count array per recording) and an `Idle` summary for each
function that never ran, whose CFG is never parsed.  ``profiles(trace)`` gives a profile for
every function (those that never ran with zero counts; their CFGs parsed on the way).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Union

import numpy as np

from wholetrace.errors import UsageError

if TYPE_CHECKING:
    from wholetrace.profile.model import FunctionProfile, Idle
    from wholetrace.trace.counts import Tally
    from wholetrace.trace.session import Trace

#: Modes whose recordings hold counters (the rest are traces, counted from their rows).
COUNT_MODES = ("count", "count-naive")
#: One function's counts, or the summary of a function that never ran.
Entry = Union["FunctionProfile", "Idle"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for a report's bulk work, then as it was.  Report
    building allocates many short-lived containers and creates no reference cycles, so the
    collections it triggers only walk what is alive (the registry, the stored CFGs): about
    a tenth of the work (docs/design.md, "Report building, wave 9")."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def counted(trace: Trace) -> list[Entry]:
    """Every registered function by id (cached on ``trace``): a profile if it may have run,
    else an `Idle` summary.  From the trace of `blocks`, `witness`, `branches`, `path` and
    `full` recordings (decoded once), from the counters of `count` modes.  A recording with
    child processes: summed over its processes (``profile.processes``)."""
    from wholetrace.profile.processes import with_processes

    def compute() -> list[Entry]:
        with gc_paused():
            return with_processes(trace, _counted)
    return trace.memo("counted", compute)


def profiles(trace: Trace) -> list[FunctionProfile]:
    """Per-function counts of every function (cached on ``trace``); those that never ran get
    zero counts (their CFGs are parsed here, in one batch)."""
    return trace.memo("profiles", lambda: every_profile(counted(trace)))


def every_profile(entries: list[Entry]) -> list[FunctionProfile]:
    """``entries`` with each `Idle` summary replaced by a profile of zero counts."""
    from wholetrace.profile.model import FunctionProfile, Idle
    from wholetrace.trace.shape import parse_shapes

    idle = [e for e in entries if isinstance(e, Idle)]
    if not idle:
        return entries  # type: ignore[return-value]
    shapes = iter(parse_shapes([(e.fid, e.info.cfg, e.file, e.qualname) for e in idle]))
    out = []
    for e in entries:
        if isinstance(e, Idle):
            sh = next(shapes)
            e = FunctionProfile(sh, np.zeros(sh.nblocks, np.int64), np.zeros(sh.nstmts, np.int64),
                                np.zeros(sh.nedges, np.int64), e.source, 0)
        out.append(e)
    return out


def _counted(trace: Trace) -> list[Entry]:
    from wholetrace.profile.counting import count_profiles
    from wholetrace.trace.tables import TRACE_MODES

    if trace.mode in COUNT_MODES:
        return count_profiles(trace)
    if trace.mode not in TRACE_MODES + ("full",):     # full: a blocks trace, values stored apart
        raise UsageError(f"{trace.path}: no counts in a {trace.mode!r} recording")
    return tally_profiles(trace, trace.counts())


def tally_profiles(trace: Trace, tally: Tally) -> list[Entry]:
    """Profiles of every function of ``trace`` from a ``trace.counts.Tally`` of its rows: the
    functions the streams entered (their tables are loaded) get views of the tally's arrays,
    the others an `Idle` summary."""
    from wholetrace.profile.model import FunctionProfile, Idle

    stmts = tally.stmt_counts()
    shapes = trace.tables.shapes
    facts = trace.facts
    infos = sorted(trace.functions.items())
    loaded = [shapes[fid] for fid, _info in infos if fid in shapes]
    counts = iter(tally.per_function(loaded, stmts))
    enters = tally.enters.tolist()
    out: list[Entry] = []
    for fid, info in infos:
        sh = shapes.get(fid)
        if sh is None:
            out.append(Idle(info, facts))
            continue
        blocks, st, edges = next(counts)
        out.append(FunctionProfile(sh, blocks, st, edges, info.source, enters[fid] if fid < len(enters) else 0,
                                   info.source_lines))
    return out


def edge_weights(path: str) -> dict[tuple[str, str, str], list[int]]:
    """Edge counts of an earlier recording by (file, qualname, CFG fingerprint), for ``--weights``."""
    from wholetrace.trace.session import Trace

    with Trace.open(path) as trace:
        prints = {f.fid: f.fingerprint for f in trace.functions.values()}
        return {(p.file, p.qualname, prints[p.fid]): [max(int(c), 0) for c in p.edges] for p in profiles(trace)}
