"""Exact counts from a `count` / `count-naive` recording: the stored counters propagated over each CFG.

What a reader needs is stored by the recorder: each function's plan (strategy, chord edges or
counted blocks and edges, its first counter's id), the counters, the measured exception edges
and the frames still unfinished at the end.  All of it is checked here before use: a corrupt
value is a one-line StoreError, never an index error.
"""

from __future__ import annotations

from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

from wholetrace.errors import InternalError, StoreError
from wholetrace.ids import ENTRY, EXIT
from wholetrace.instrument.flowgraph import FlowGraph
from wholetrace.instrument.placement import CounterPlacement
from wholetrace.profile.model import FunctionProfile, Idle
from wholetrace.profile.propagate import ExtraEdge, propagate_counts
from wholetrace.trace.shape import FunctionShape

if TYPE_CHECKING:
    from wholetrace.store.reader import FunctionInfo
    from wholetrace.trace.session import Trace

UNKNOWN = -1
_LIST_TYPES, _INT_TYPES = frozenset({list}), frozenset({int})
STRATEGIES = ("chords", "blocks", "full")
Exc = list[tuple[int, int, int]]


def _bad(sh: FunctionShape, what: str) -> StoreError:
    return StoreError(f"function {sh.fid} ({sh.qualname}) of the recording: {what}")


def _index_list(value: object, hi: int, sh: FunctionShape, what: str) -> list[int]:
    if not isinstance(value, list) or not all(type(x) is int and 0 <= x < hi for x in value):
        raise _bad(sh, f"corrupt plan ({what})")
    return value


def _extras(sh: FunctionShape, exc: Exc, early: list[int]) -> tuple[list[ExtraEdge], np.ndarray]:
    """Exception and early-exit edges as measured extra edges, and the statements they cut short."""
    cut = np.zeros(sh.nstmts, np.int64)
    extra: list[ExtraEdge] = []
    for src, dst, n in exc + [(s, EXIT, 1) for s in early]:
        if not 0 <= src < sh.nstmts or sh.stmt_block[src] < 0 or not 0 <= dst < sh.nblocks or n < 0:
            raise _bad(sh, f"exception edge from statement {src} to block {dst} does not exist")
        blk = int(sh.stmt_block[src])
        extra.append(ExtraEdge(blk, dst, n))
        stmts = sh.block_stmts[blk]
        for later in stmts[stmts.index(src) + 1:]:
            cut[later] += n
    return extra, cut


def _complete_edges(sh: FunctionShape, blocks: np.ndarray, edges: np.ndarray, extra: list[ExtraEdge]) -> None:
    """Fill unknown edge counts by flow conservation, on each block's two sides: where exactly
    one of its out-edges is unknown it is the block's count less its other out-edges and its
    exceptions out; likewise for its in-edges with the exceptions into it (ENTRY's edge
    included: the activations that started); where nothing is left, every unknown edge of
    that side is 0.  The in-side is what solves a ``finally`` dispatch or ``with`` exit with
    several uninstrumentable out-edges: its targets' other ways in are counted."""
    out_extra = np.zeros(sh.nblocks, np.int64)
    in_extra = np.zeros(sh.nblocks, np.int64)
    for x in extra:
        out_extra[x.src] += x.count
        in_extra[x.dst] += x.count
    outs_of = sh.out_edges
    ins_of: list[list[int]] = [[] for _ in range(sh.nblocks)]
    for e, d in enumerate(sh.edge_dst.tolist()):
        ins_of[d].append(e)
    changed = True
    while changed:
        changed = False
        for b in range(2, sh.nblocks):
            for side, spare in ((outs_of[b], out_extra[b]), (ins_of[b], in_extra[b])):
                unknown = [i for i in side if edges[i] == UNKNOWN]
                if not unknown:
                    continue
                left = int(blocks[b]) - int(spare) - sum(int(edges[i]) for i in side if edges[i] != UNKNOWN)
                if len(unknown) == 1 or left <= 0:       # (counts are never negative)
                    edges[unknown] = max(left, 0) if len(unknown) == 1 else 0
                    changed = True


def function_counts(sh: FunctionShape, counters: np.ndarray, exc: Exc,
                    early: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(block counts, statement counts, edge counts) of one function of a count recording."""
    plan = sh.plan
    strategy, base = plan.get("strategy"), plan.get("counter_base")
    if strategy not in STRATEGIES or type(base) is not int or base < 0:
        raise _bad(sh, "corrupt plan (strategy or counter base)")
    nb, ne = sh.nblocks, sh.nedges
    if strategy == "chords":
        chords = _index_list(plan.get("chords"), ne, sh, "chords")
        if base + len(chords) > len(counters):
            raise _bad(sh, "its counters are missing")
        chord_counts = counters[base:base + len(chords)]
        if not exc and not early and not chord_counts.any():       # never ran
            return np.zeros(nb, np.int64), np.zeros(sh.nstmts, np.int64), np.zeros(ne, np.int64)
        extra, cut = _extras(sh, exc, early)
        chosen = set(chords)
        placement = CounterPlacement(chords=tuple(chords), tree=tuple(e for e in range(ne) if e not in chosen),
                                     cost=0.0)
        graph = FlowGraph(nb, ENTRY, EXIT, tuple(zip(sh.edge_src.tolist(), sh.edge_dst.tolist())))
        try:
            flow = propagate_counts(graph, placement, chord_counts.tolist(), extra)
        except InternalError as err:
            raise _bad(sh, f"its counts are inconsistent ({err})") from None
        edges = np.array(flow.edges, np.int64)
        blocks = np.array(flow.nodes, np.int64)
        blocks[:2] = 0
    else:  # a counter per block (and per instrumentable edge for "full")
        counted = _index_list(plan.get("counted_edges", []), ne, sh, "counted edges")
        if base + nb - 2 + len(counted) > len(counters):
            raise _bad(sh, "its counters are missing")
        extra, cut = _extras(sh, exc, early)
        blocks = np.zeros(nb, np.int64)
        blocks[2:] = counters[base: base + nb - 2]
        edges = np.full(ne, UNKNOWN, np.int64)
        edges[counted] = counters[base + nb - 2: base + nb - 2 + len(counted)]
        _complete_edges(sh, blocks, edges, extra)
    live = sh.stmt_block >= 0
    stmts = np.where(live, blocks[np.where(live, sh.stmt_block, 0)], 0) - cut
    return blocks, stmts, edges


def _table(rec: Any, name: str, width: int) -> np.ndarray:
    arr = rec.get_array(name)
    if arr is None:
        return np.zeros((0, width), np.int64)
    if arr.dtype.kind not in "iu" or arr.ndim != 2 or arr.shape[1] != width:
        raise StoreError(f"array {name!r} of the recording is corrupt (shape {arr.shape}, dtype {arr.dtype})")
    return arr.astype(np.int64)


def count_profiles(trace: Trace, prefix: str = "") -> list[FunctionProfile | Idle]:
    """Profiles of every function of a `count` or `count-naive` recording (``prefix``: of the
    arrays named so, e.g. a fork child's counts at the fork, ``runtime.children``); a function
    whose counters are all zero and that no exception left gets an `Idle` summary, its CFG unparsed."""
    rec = trace.recording
    counters = rec.get_array(prefix + "counters")
    if counters is None:
        raise StoreError("count recording has no counters (the run did not finish, or they were lost)")
    if counters.dtype.kind not in "iu" or counters.ndim != 1:
        raise StoreError(f"the counters of the recording are corrupt (dtype {counters.dtype})")
    counters = counters.astype(np.int64)
    exc: dict[int, Exc] = {}
    for f, s, d, n in _table(rec, prefix + "exception_edges", 4).tolist():
        exc.setdefault(f, []).append((s, d, n))
    early: dict[int, list[int]] = {}
    for f, s in _table(rec, prefix + "early_exits", 2).tolist():
        early.setdefault(f, []).append(s)
    infos = [info for _fid, info in sorted(trace.functions.items())]
    maybe = _may_have_run(infos, counters, set(exc) | set(early))
    shapes = trace.shapes_of([info.fid for info, m in zip(infos, maybe) if m])
    counts = iter(all_counts(shapes, counters, exc, early))
    out: list[FunctionProfile | Idle] = []
    facts = trace.facts
    for info, m in zip(infos, maybe):
        if not m:
            out.append(Idle(info, facts))
            continue
        sh, (blocks, stmts, edges) = next(counts)
        out.append(FunctionProfile(sh, blocks, stmts, edges, info.source, None, info.source_lines))
    return out


def all_counts(shapes: list[FunctionShape], counters: np.ndarray, exc: dict[int, Exc],
               early: dict[int, list[int]]) -> list[tuple[FunctionShape, tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """:func:`function_counts` of each of ``shapes``: those counted by chords propagated
    together (``kernels.chords``: the counts are views of one array each), the others one by one."""
    batch, done = [], {}
    for i, sh in enumerate(shapes):
        if sh.plan.get("strategy") == "chords":
            batch.append(i)
        else:
            done[i] = function_counts(sh, counters, exc.get(sh.fid, []), early.get(sh.fid, []))
    if batch:
        done.update(zip(batch, _propagate_batch([shapes[i] for i in batch], counters, exc, early)))
    return [(sh, done[i]) for i, sh in enumerate(shapes)]


_STATUS = {1: "propagate: tree edges left unsolved (the tree has a cycle)",
           2: "propagate: counts violate flow conservation",
           3: "propagate: negative derived count (missing extra edges?)"}


def _propagate_batch(shs: list[FunctionShape], counters: np.ndarray, exc: dict[int, Exc],
                     early: dict[int, list[int]]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(blocks, statements, edges) of functions planned with chords, propagated in one kernel call."""
    from wholetrace.kernels.chords import propagate_chords

    nb = np.array([sh.nblocks for sh in shs], np.int64)
    ne = np.array([sh.nedges for sh in shs], np.int64)
    ns = np.array([sh.nstmts for sh in shs], np.int64)
    nbase, ebase, sbase = np.cumsum(nb) - nb, np.cumsum(ne) - ne, np.cumsum(ns) - ns
    plans = [sh.plan for sh in shs]
    chords = [p.get("chords") for p in plans]
    bases = [p.get("counter_base") for p in plans]
    if not (_LIST_TYPES.issuperset(map(type, chords)) and _INT_TYPES.issuperset(map(type, bases))):
        for sh, c, b in zip(shs, chords, bases):
            if type(b) is not int:
                raise _bad(sh, "corrupt plan (strategy or counter base)")
            _index_list(c, sh.nedges, sh, "chords")
    nch = np.array(list(map(len, chords)), np.int64)
    owner = np.repeat(np.arange(len(shs)), nch)
    items = list(chain.from_iterable(chords))
    flat = np.array(items, np.int64) if _INT_TYPES.issuperset(map(type, items)) else None
    first = np.array(bases, np.int64)
    if flat is None or ((flat < 0) | (flat >= ne[owner])).any():
        for sh, c in zip(shs, chords):
            _index_list(c, sh.nedges, sh, "chords")
    wrong = np.flatnonzero((first < 0) | (first + nch > len(counters)))
    if wrong.size:
        f = int(wrong[0])
        raise _bad(shs[f], "corrupt plan (strategy or counter base)" if first[f] < 0 else "its counters are missing")
    known = np.full(int(ne.sum()), -1, np.int64)
    known[ebase[owner] + flat] = counters[first[owner] + np.arange(len(flat)) - (np.cumsum(nch) - nch)[owner]]
    src = np.concatenate([sh.edge_src for sh in shs]).astype(np.int64)
    dst = np.concatenate([sh.edge_dst for sh in shs]).astype(np.int64)
    balance = np.zeros(int(nb.sum()), np.int64)
    cut = np.zeros(int(ns.sum()), np.int64)
    into = []
    for f, sh in enumerate(shs):
        if sh.fid in exc or sh.fid in early:
            extra, c = _extras(sh, exc.get(sh.fid, []), early.get(sh.fid, []))
            cut[sbase[f]:sbase[f] + sh.nstmts] = c
            for x in extra:
                balance[nbase[f] + x.dst] += x.count
                balance[nbase[f] + x.src] -= x.count
                into.append((nbase[f] + x.dst, x.count))
    fn = np.stack([nbase, nb, ebase, ne], axis=1)
    edges = np.zeros(len(known), np.int64)
    blocks = np.zeros(len(balance), np.int64)
    acts = np.zeros(len(shs), np.int64)
    status = np.zeros(len(shs), np.int64)
    propagate_chords(fn, src, dst, known, balance, edges, blocks, acts, status)
    wrong = np.flatnonzero(status)
    if wrong.size:
        f = int(wrong[0])
        raise _bad(shs[f], f"its counts are inconsistent ({_STATUS.get(int(status[f]), 'propagate failed')})")
    for node, n in into:
        blocks[node] += n
    blocks[nbase] = 0
    blocks[nbase + 1] = 0
    stmt_block = np.concatenate([sh.stmt_block for sh in shs]).astype(np.int64)
    s_owner = np.repeat(np.arange(len(shs)), ns)
    live = stmt_block >= 0
    stmts = np.where(live, blocks[nbase[s_owner] + np.where(live, stmt_block, 0)], 0) - cut
    b_cut, e_cut, s_cut = np.cumsum(nb).tolist(), np.cumsum(ne).tolist(), np.cumsum(ns).tolist()
    return [(blocks[b1 - k_b:b1], stmts[s1 - k_s:s1], edges[e1 - k_e:e1])
            for b1, e1, s1, k_b, k_e, k_s in zip(b_cut, e_cut, s_cut, nb.tolist(), ne.tolist(), ns.tolist())]


def _may_have_run(infos: list[FunctionInfo], counters: np.ndarray, measured: set[int]) -> list[bool]:
    """Per function: whether it may have run.  A file's functions own consecutive counters
    from their ``counter_base`` (``runtime.recorder``), so a function's counters end where the
    next larger base begins: all zero there, and no exception or early exit measured, means
    it never ran.  Without a base (rows of older writers), or with one past the counters (a
    corrupt file: the parse says so), a function is parsed and counted."""
    base = np.array([-1 if i.counter_base is None else i.counter_base for i in infos], np.int64)
    known = (base >= 0) & (base < len(counters))
    starts = np.unique(np.concatenate([base[known], [len(counters)]]))
    end = np.full(len(infos), len(counters), np.int64)
    end[known] = starts[np.minimum(np.searchsorted(starts, base[known], side="right"), len(starts) - 1)]
    lo = np.clip(base, 0, len(counters))
    hi = np.clip(np.maximum(end, lo), 0, len(counters))
    nonzero = np.concatenate([[0], np.cumsum(counters != 0)])
    some = nonzero[hi] > nonzero[lo]
    return [bool(not k or s or i.fid in measured) for i, k, s in zip(infos, known.tolist(), some.tolist())]
