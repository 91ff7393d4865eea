"""``hot``'s rebuild of a grouped (version-3) WPP with wave 10's terminals: what ``wpp.flatcache`` keeps (its code is in the cache key)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from wholetrace.wpp.symbols import PATH, SEQ

if TYPE_CHECKING:
    from wholetrace.wpp.intern import EventInterner
    from wholetrace.wpp.view import WppView


def n_functions(view: "WppView") -> int:
    """How many function ids the view's recording has (one past the largest)."""
    return max(view.cfgs, default=-1) + 1


def wave10_interner(path_fids: "frozenset[int] | set[int]", n_functions: int = 0) -> "EventInterner":
    """Wave 10's interner of path events (ENTERs fused, no SEQ groups: ``hot``'s terminals), with
    the functions recorded with path ids named."""
    from wholetrace.wpp.intern import PATH_LEAVE_AT, EventInterner

    it = EventInterner(PATH, PATH_LEAVE_AT, fuse=True)
    it.set_path_functions(sorted(path_fids), n_functions)
    return it


def ungrouped_view(view: "WppView") -> "WppView":
    """``view`` without SEQ groups (wave 12): each stream's events re-interned with wave 10's
    terminals (``EventInterner(fuse=True)``, seeded with the view's table so ids keep their
    meaning) and its grammar rebuilt with SEQUITUR (the recording's lookahead).  ``hot`` reads the
    grammar's rules, and groups change them (docs/design.md, "The WPP's terminals, wave 12",
    review fixes); a view without SEQ terminals is returned as it is."""
    if view.flat or not np.any(view.terminals.kind == SEQ):
        return view
    from wholetrace.grammar import GrammarBuilder
    from wholetrace.wpp.intern import events_of, terminal_widths
    from wholetrace.wpp.view import StreamGrammar

    it = wave10_interner(view.path_fids, n_functions(view))
    it.seed(view.terminals)
    widths = terminal_widths(view.terminals)
    streams = []
    for s in view.streams:
        b = GrammarBuilder(lookahead=view.lookahead)
        for codes in s.grammar.iter_chunks(1 << 16):
            b.feed(it.codes(s.sid, events_of(codes, view.terminals, widths), scratch=True))
        b.feed(it.finish(s.sid))
        streams.append(StreamGrammar(s.sid, s.name, b.finish()))
    return dataclasses.replace(view, terminals=it.terminals(), streams=streams, flat=True)
