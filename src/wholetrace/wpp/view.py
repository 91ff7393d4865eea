"""What the WPP analyses read: one grammar per stream over (kind, function, value) terminals, with the CFGs that give them meaning.

A recording made with ``record --wpp`` in `blocks` or `path` mode is read as it is stored
(``wpp.stored.StoredWpp``): its terminals are blocks or Ball-Larus paths.  Any other trace
recording (`blocks`, `witness`, `branches` without ``--wpp``, or `witness`/`branches` with it,
whose terminals are witness ids rather than blocks) is first turned into its `blocks` trace
(``trace.Trace.blocks``: regenerated for the reduced modes) and a block grammar is built from
it on the fly, a chunk at a time, with a progress bar on a terminal; a `path` recording stored
raw (``--no-wpp``) gets a grammar of its path events (docs/design.md, "Hot
subpaths and path profiles on the command line").
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from wholetrace.errors import UsageError
from wholetrace.grammar import Grammar
from wholetrace.instrument.cfg import CFG
from wholetrace.wpp.symbols import BLOCK, PATH, SEQ, Terminals, split_entered
from wholetrace.wpp.ungroup import n_functions, ungrouped_view, wave10_interner   # (hot's rebuild; re-exported)

if TYPE_CHECKING:
    from wholetrace.instrument.pathnum import PathNumbering

#: Recording modes whose streams are traces the analyses can read.
TRACE_MODES = ("blocks", "witness", "branches", "path")
#: Modes whose stored WPP terminals are read as they are (blocks, or paths).
STORED_MODES = ("blocks", "path")


@dataclass
class StreamGrammar:
    """One stream's grammar."""

    sid: int
    name: str
    grammar: Grammar


@dataclass
class WppView:
    """Grammars and terminals of a recording, ready for ``wpp.hot`` and ``wpp.paths``.

    ``source`` is ``"stored"`` (the WPP of ``record --wpp``) or ``"built"`` (a block grammar
    built here from the recording's block trace).  ``numberings`` caches each function's path
    numbering (`path` recordings; ``None`` for a function recorded with block ids).
    """

    path: str
    mode: str
    source: str
    terminals: Terminals
    streams: list[StreamGrammar]
    cfgs: dict[int, CFG]
    files: dict[int, str]
    numberings: dict[int, "PathNumbering | None"] = field(default_factory=dict)
    quiet: dict[int, frozenset[int]] = field(default_factory=dict)   # (``instrument.modes.stored_quiet``)
    old_inc: set[int] = field(default_factory=set)   # numbered before wave 11 (``modes.stored_free_records``)
    lookahead: bool = True                 # the SEQUITUR variant the stored grammars were built with
    path_fids: frozenset[int] = frozenset()   # functions recorded with path ids (plan strategy ``paths``)
    flat: bool = False                     # rules of wave 10's terminals, SEQ groups undone (``ungrouped_view``)

    @cached_property
    def symbol_kind(self) -> str:
        """``"path"`` when terminals are Ball-Larus paths, else ``"block"``."""
        return "path" if np.any(self.terminals.kind == PATH) else "block"

    def numbering(self, fid: int) -> "PathNumbering | None":
        """Function ``fid``'s path numbering as `path` mode records it, or None (block ids)."""
        if fid not in self.numberings:
            self.numberings[fid] = (path_numbering(self.cfgs[fid], self.quiet.get(fid), fid not in self.old_inc)
                                    if fid in self.cfgs else None)
        return self.numberings[fid]


def path_numbering(cfg: CFG, quiet: "frozenset[int] | None" = None, free_records: bool = True) -> "PathNumbering | None":
    """The numbering `path` mode records ``cfg`` with, or None when it records block ids.

    Path mode's own rule (``instrument.modes.path_numbering``) when it is there; until then
    the numbering of ``pathnum.number_cfg`` for functions and None for module/class bodies
    and over-limit functions."""
    try:
        from wholetrace.instrument.modes import path_numbering as mode_rule  # type: ignore[attr-defined]
    except ImportError:
        mode_rule = None
    if mode_rule is not None:
        return mode_rule(cfg, quiet, free_records)  # type: ignore[no-any-return]
    from wholetrace.instrument.pathnum import number_cfg

    if cfg.kind != "function":
        return None
    num = number_cfg(cfg)
    return None if num.fallback else num


def open_view(path: str, *, stream: int | None = None, progress: bool = True, ungroup: bool = False,
              store: bool = True) -> WppView:
    """The grammars of recording ``path`` (only stream ``stream`` if given); see the module doc.
    ``ungroup``: with SEQ groups undone (``ungrouped_view``, what ``hot`` reads), from the cache in
    the recording when it holds one for these grammars, else rebuilt and (all streams asked for)
    cached there unless ``store`` is false (``wpp.flatcache``)."""
    from wholetrace.store import Recording

    key = None
    with Recording(path) as rec:
        mode = str(rec.meta.get("mode"))
        if mode not in TRACE_MODES:
            raise UsageError(f"a {mode} recording holds no trace; record with --mode blocks "
                             "(or witness, branches, path)")
        functions = rec.functions()
        cfgs = {f.fid: CFG.from_json(f.cfg) for f in functions}
        files = {f.fid: f.file for f in functions}
        # functions recorded with path ids (their exception records carry a register)
        path_fids = frozenset(f.fid for f in functions if f.cfg.get("plan", {}).get("strategy") == "paths")
        from wholetrace.instrument.modes import check_leave_base
        for f in functions:     # a path recording made before wave 14 (closing records at 2^30)
            check_leave_base(f.cfg.get("plan"), f"function {f.fid} ({f.qualname})")
        wpp = rec.meta.get("wpp")
        if isinstance(wpp, dict) and mode in STORED_MODES:
            from wholetrace.wpp.stored import StoredWpp

            stored = StoredWpp(rec)
            streams = [StreamGrammar(s.sid, s.name, s.grammar) for s in stored.streams
                       if stream is None or s.sid == stream]
            view = WppView(path, mode, "stored", stored.terminals, streams, cfgs, files,
                           lookahead=bool(stored.meta.get("lookahead")), path_fids=path_fids)
            if ungroup and np.any(view.terminals.kind == SEQ):
                view, key = _cached_flat(rec, view, stored.digest)
        else:
            view = _build(rec, path, mode, cfgs, files, path_fids, stream, progress)
        from wholetrace.instrument.modes import stored_free_records, stored_quiet
        view.quiet = {f.fid: stored_quiet(f.cfg) for f in functions}   # what path mode numbered with
        view.old_inc = {f.fid for f in functions if not stored_free_records(f.cfg)}
    if stream is not None and not view.streams:
        raise UsageError(f"{path}: no stream {stream} with events")
    if key is not None:      # no cache for these grammars: rebuild, and keep it if it is whole
        grouped_terms = view.terminals
        view = ungrouped_view(view)
        if stream is None and store:
            from wholetrace.wpp import flatcache

            flatcache.save(path, key, grouped_terms, view.terminals, {s.sid: s.grammar for s in view.streams})
    return split_view(view)


def _cached_flat(rec: Any, view: WppView, digest: str) -> "tuple[WppView, str | None]":
    """``view`` ungrouped from the cache in ``rec`` (and None), or as it is with the cache key to
    build it under (``wpp.flatcache``)."""
    from wholetrace.wpp import flatcache

    key = flatcache.cache_key(digest, view.lookahead, view.path_fids, n_functions(view))
    grammars = flatcache.load(rec, key, view.terminals, [s.sid for s in view.streams])
    if grammars is None:
        return view, key
    streams = [StreamGrammar(s.sid, s.name, grammars[s.sid]) for s in view.streams]
    return dataclasses.replace(view, streams=streams, flat=True), None


def split_view(view: WppView) -> WppView:
    """``view`` with its fused ENTER_PATH/ENTER_CHAIN terminals split (``wpp.symbols.split_entered``): the
    analyses read one terminal per event, so lengths, costs and grams mean what they meant
    before wave 10 (docs/design.md, "The WPP's terminals, wave 10")."""
    grammars, terms = split_entered([s.grammar for s in view.streams], view.terminals)
    if terms is view.terminals:
        return view
    streams = [StreamGrammar(s.sid, s.name, g) for s, g in zip(view.streams, grammars)]
    # every other field as it is (the numbering rule per function: ``quiet``, ``old_inc``)
    return dataclasses.replace(view, terminals=terms, streams=streams)


def _build(rec: Any, path: str, mode: str, cfgs: dict[int, CFG], files: dict[int, str],
           path_fids: frozenset[int], stream: int | None, show: bool) -> WppView:
    """A grammar per stream: of the raw path events of a `path` recording, else of the `blocks`
    trace (regenerated for the reduced modes)."""
    from wholetrace.grammar import GrammarBuilder
    from wholetrace.progress import progress
    from wholetrace.trace.session import Trace
    from wholetrace.wpp.cli import readable
    from wholetrace.wpp.intern import EventInterner

    trace = Trace(readable(rec))
    # a path recording stored raw keeps its path symbols (wave 10's: no SEQ groups, which ``hot``
    # would undo, ``ungrouped_view``; their exception records carry a register, read by position);
    # the others become blocks
    interner = wave10_interner(path_fids) if mode == "path" else EventInterner(BLOCK)
    chunks = rec.iter_chunks if mode == "path" else trace.blocks
    what = "path" if mode == "path" else "block"
    wanted = [s for s in trace.streams() if s.n_events and (stream is None or s.sid == stream)]
    total = sum(int(s.n_events) for s in wanted)
    if show and sys.stderr.isatty():
        print(f"wholetrace: {path} has no {what} WPP: building one from its {mode} trace "
              f"({total:,} events; record with --wpp to store it)", file=sys.stderr)
    out = []
    with progress(f"building the {what} grammar", total if show else 0) as advance:
        for st in wanted:
            b = GrammarBuilder(lookahead=True)
            for chunk in chunks(st.sid):
                b.feed(interner.codes(st.sid, chunk))
                advance(len(chunk))
            b.feed(interner.finish(st.sid))
            g = b.finish()
            if len(g):
                out.append(StreamGrammar(st.sid, st.name, g))
    return WppView(path, mode, "built", interner.terminals(), out, cfgs, files, path_fids=path_fids)
