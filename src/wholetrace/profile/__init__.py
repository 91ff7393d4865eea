"""Exact execution counts of every function of a recording, of any mode: `profiles(trace)`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wholetrace.errors import UsageError

if TYPE_CHECKING:
    from wholetrace.profile.model import FunctionProfile
    from wholetrace.trace.session import Trace

#: Modes whose recordings hold counters (the rest are traces, counted from their rows).
COUNT_MODES = ("count", "count-naive")


def profiles(trace: Trace) -> list[FunctionProfile]:
    """Per-function counts, by function id: from the trace of `blocks`, `witness`,
    `branches`, `path` and `full` recordings (decoded once), from the counters of `count` modes (cached on ``trace``).
    A recording with child processes: summed over its processes (``profile.processes``)."""
    from wholetrace.profile.processes import with_processes

    return trace.memo("profiles", lambda: with_processes(trace, _profiles))


def _profiles(trace: Trace) -> list[FunctionProfile]:
    from wholetrace.profile.counting import count_profiles
    from wholetrace.trace.tables import TRACE_MODES

    if trace.mode in COUNT_MODES:
        return count_profiles(trace)
    if trace.mode not in TRACE_MODES + ("full",):     # full: a blocks trace, values stored apart
        raise UsageError(f"{trace.path}: no counts in a {trace.mode!r} recording")
    return tally_profiles(trace, trace.counts())


def tally_profiles(trace: Trace, tally: Any) -> list[FunctionProfile]:
    """Profiles of every function of ``trace`` from a ``trace.counts.Tally`` of its rows."""
    from wholetrace.profile.model import FunctionProfile

    out = []
    for sh in trace.shapes():
        blocks = tally.blocks_of(sh)
        out.append(FunctionProfile(sh, blocks, tally.stmts_of(sh, blocks), tally.edges_of(sh),
                                   trace.functions[sh.fid].source, tally.activations_of(sh.fid)))
    return out


def edge_weights(path: str) -> dict[tuple[str, str, str], list[int]]:
    """Edge counts of an earlier recording by (file, qualname, CFG fingerprint), for ``--weights``."""
    from wholetrace.trace.session import Trace

    with Trace.open(path) as trace:
        prints = {f.fid: f.fingerprint for f in trace.functions.values()}
        return {(p.file, p.qualname, prints[p.fid]): [max(int(c), 0) for c in p.edges] for p in profiles(trace)}
