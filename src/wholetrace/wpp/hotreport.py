"""`wholetrace hot` as data: the minimal hot subpaths of every stream of a recording, each with the acyclic paths it covers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from wholetrace.wpp.hot import hot_subpaths
from wholetrace.wpp.meaning import Piece, pieces, statement_lines, terminal_costs
from wholetrace.wpp.queries import terminal_counts
from wholetrace.wpp.view import WppView, split_view, ungrouped_view

#: Default minimum cost: this fraction of the stream's total cost (statements it executed).
DEFAULT_COST_FRACTION = 0.01


@dataclass(frozen=True)
class HotOptions:
    """Parameters of ``wholetrace hot`` (``min_cost`` None: 1% of each stream's total cost)."""

    min_cost: int | None = None
    max_length: int = 100
    min_length: int = 4
    limit: int = 10
    cost: str = "statements"


@dataclass(frozen=True)
class HotEntry:
    """One minimal hot subpath of stream ``stream``, with the pieces a reader sees."""

    stream: int
    stream_name: str
    rules: tuple[int, ...]
    symbols: tuple[int, ...]
    frequency: int
    unit_cost: int
    cost: int
    pieces: list[Piece]

    @property
    def length(self) -> int:
        return len(self.symbols)


@dataclass(frozen=True)
class HotReport:
    """Every stream's subpaths by decreasing cost (``found`` before ``limit``), and the thresholds used."""

    view: WppView
    options: HotOptions
    entries: list[HotEntry]
    found: int
    thresholds: dict[int, int]
    totals: dict[int, int]
    seconds: float


def hot_report(view: WppView, options: HotOptions) -> HotReport:
    """Run ``wpp.hot.hot_subpaths`` on every stream of ``view`` with terminal costs ``options.cost``
    (on one terminal an event: fused terminals are split first, ``wpp.view.split_view``; SEQ groups
    are undone before, ``wpp.view.ungrouped_view``, so the rules are wave 10's)."""
    view = split_view(ungrouped_view(view))
    costs = terminal_costs(view, options.cost)
    entries: list[HotEntry] = []
    thresholds, totals = {}, {}
    secs = 0.0
    for s in view.streams:
        counts = terminal_counts(s.grammar, len(costs))
        total = int(np.dot(counts[: len(costs)], costs))
        c = options.min_cost if options.min_cost is not None else max(1, int(total * DEFAULT_COST_FRACTION))
        thresholds[s.sid], totals[s.sid] = c, total
        res = hot_subpaths(s.grammar, costs, min_cost=c, max_length=options.max_length,
                           min_length=min(options.min_length, options.max_length))
        secs += res.seconds
        for h in res.subpaths:
            entries.append(HotEntry(s.sid, s.name, h.rules, h.symbols, h.frequency, h.unit_cost, h.cost, []))
    entries.sort(key=lambda e: (-e.cost, e.stream, e.symbols))
    shown = entries if options.limit <= 0 else entries[: options.limit]
    shown = [HotEntry(e.stream, e.stream_name, e.rules, e.symbols, e.frequency, e.unit_cost, e.cost,
                      pieces(view, list(e.symbols))) for e in shown]
    return HotReport(view, options, shown, len(entries), thresholds, totals, secs)


def hot_json(report: HotReport) -> dict[str, Any]:
    """``{"subpaths": [{"stream", "rule", "symbols", "length", "frequency", "cost", "paths":
    [{"function", "file", "lines", "blocks"}]}]}`` (issue 11); ``rule`` is the first rule it was
    found in, ``symbols`` terminal ids of ``wpp.symbols`` (``wholetrace wpp --print --json``
    names them), ``lines`` the source line of every statement on the path."""
    v = report.view
    out = []
    for e in report.entries:
        paths = [{"function": v.cfgs[p.fid].qualname, "file": v.files.get(p.fid, ""),
                  "lines": statement_lines(v, p.fid, p.blocks), "blocks": list(p.blocks)}
                 for p in e.pieces if p.blocks]
        out.append({"stream": e.stream, "rule": e.rules[0] if e.rules else 0, "symbols": list(e.symbols),
                    "length": e.length, "frequency": e.frequency, "cost": e.cost, "paths": paths})
    return {"subpaths": out}
