"""One interface over the four schemes: a query over every stream, the answer modes, ``auto``.

``auto`` picks scheme 4 when the function is *rare*: the segment index marks at most a
quarter of the segments of the streams searched (the paper's type-1 and type-2 paths, where
skipping pays); otherwise scheme 2, which summarises every rule once and does not pay for
the index walk.  Both are exact; the rule only chooses the faster.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from wholetrace.errors import UsageError
from wholetrace.match import scheme1, scheme2, scheme3, scheme4
from wholetrace.match.cftrace import CompressedStream
from wholetrace.match.query import Query
from wholetrace.match.result import StreamResult

SCHEMES: dict[int, Callable[[CompressedStream, Query, bool, int], StreamResult]] = {
    1: scheme1.run, 2: scheme2.run, 3: scheme3.run, 4: scheme4.run}
#: auto: scheme 4 when at most this fraction of the segments is marked for the function
AUTO_RARE = 0.25
MODES = ("first", "count", "all", "default")
_ALL_CAP = 4096


@dataclass(frozen=True)
class Answer:
    """The answer over the streams searched; ``count`` is None when the search stopped at the first."""

    scheme: int
    count: int | None
    streams: tuple[StreamResult, ...]
    occurrences: tuple[tuple[int, int], ...]     # (stream, position of the last block), in order

    @property
    def first(self) -> tuple[int, int] | None:
        return self.occurrences[0] if self.occurrences else None


def choose_scheme(streams: Sequence[CompressedStream], fid: int) -> int:
    """The ``auto`` rule (module docstring)."""
    units = sum(cs.segments.units for cs in streams)
    marked = sum(int(cs.segments.marked(fid).sum()) for cs in streams)
    return 4 if marked <= AUTO_RARE * units else 2


def match(streams: Sequence[CompressedStream], q: Query, scheme: int | str = "auto", mode: str = "default",
          limit: int | None = None) -> Answer:
    """Search ``streams`` in order.  Modes: ``first`` (stop at the first occurrence), ``count``
    (no positions), ``all`` (every occurrence, at most ``limit``), ``default`` (count and first)."""
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r}")
    chosen = choose_scheme(streams, q.fid) if scheme == "auto" else int(scheme)
    run = SCHEMES.get(chosen)
    if run is None:
        raise UsageError(f"unknown scheme {scheme!r}: choose 1, 2, 3, 4 or auto")
    results: list[StreamResult] = []
    occ: list[tuple[int, int]] = []
    for cs in streams:
        if mode == "first":
            r = run(cs, q, True, 1)
        elif mode == "count":
            r = run(cs, q, False, 0)
        elif mode == "default":
            r = run(cs, q, False, 0 if occ else 1)
        else:
            room = _ALL_CAP if limit is None else max(0, limit - len(occ))
            r = run(cs, q, False, room)
            if limit is None and r.count > room:
                r = run(cs, q, False, r.count)
        results.append(r)
        occ += [(cs.sid, e) for e in r.ends]
        if mode == "first" and occ:
            break
    count = None if mode == "first" else sum(r.count for r in results)
    return Answer(chosen, count, tuple(results), tuple(occ))
