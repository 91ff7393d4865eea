"""Slow reference twin of the decoding kernel's path mode: a plain Python walk turning `path`
streams (Ball-Larus path ids) into `blocks` streams, with the numbering recomputed from each
stored CFG (``instrument.modes.path_numbering``, given the blocks the recorder found quiet,
``instrument.modes.stored_quiet``), not read from the stored plan.

It emits blocks lazily (a cut's target when the next event shows it ran), where the kernel
emits them eagerly: both must give the same events.

Input: the path stream format of ``wholetrace.events`` (ENTER/LEAVE as in blocks mode; in a
function recorded with path ids, ``p`` ends a path at a cut, ``LEAVE_PATH + p`` ends one at
EXIT and returns, START marks a generator's first activation, ``EXC s r [H]`` an exception
edge with the truncated path's register, ``RERAISE s x r [H]`` one re-raised at ``x``).  Functions recorded with block ids (plan strategy
``trace``) are passed through.

Each frame of the stack keeps where its next path begins (``pend``: the target of the last
cut, the entry block after ENTER or START, the handler after ``EXC s r H``, unknown for a
resumed generator) and whether that block has been emitted already (``shown``).  A path
record emits its blocks, leaving out the first one if it is shown; a child ENTER first emits
its parent's pending block (the call block the child runs in: Larus's cut guarantees that a
call block begins a path), and, where that block starts a forced chain (blocks that cannot call,
one uncut edge each, into a call block whose cut ``pathnum.choose_cuts`` left out), the chain up
to that call block: the next path then starts where the frame stood before the child and its
blocks up to the call block are left out; a suspension emits the ``yield`` block; the exception record
emits the truncated path up to the raising block, ``EXC s`` and the handler.  A resumed
generator's first path begins at the ``yield`` block it stopped in, which was emitted before
it suspended.  The raising block is the block of the re-raise site ``x`` or of ``s``; should
the register name no path through it that starts where the frame stands (an exception in a
``for`` header after its next-step probe ran), the path's first block and then every block
are tried: the first for which ``decode_truncated`` succeeds.

Records that close activations still open when the recording ended (``runtime.unfinished``:
``EXC s r`` LEAVE) may find the stack already empty, when a frame had written its last path
but not yet returned: they are copied through as ``EXC s`` LEAVE, as a blocks recording has
them.  State is O(stack depth) plus per-function caches; the output comes in chunks of about
``chunk_size`` events (docs/design.md, "Path mode").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from wholetrace.errors import InternalError
from wholetrace.events import ENTER_BASE, EXC, LEAVE, LEAVE_PATH, NO_PATH, RERAISE, START
from wholetrace.ids import ENTRY, EXIT
from wholetrace.instrument.cfg import CFG
from wholetrace.instrument.flowgraph import from_cfg
from wholetrace.instrument.pathnum import END_DEAD, END_EXIT, END_TRUNCATED, PathNumbering

PathPlan = tuple[CFG, "PathNumbering | None"]

#: ``pend`` of a resumed generator frame: it stands in the yield block it suspended in.
UNKNOWN = -1
_SUB = 4096          # input events handled between two checks of the output size


class PathTables:
    """Per-function decoding tables with caches (paths by id, truncated paths by register)."""

    def __init__(self, fid: int, cfg: CFG, num: PathNumbering | None) -> None:
        self.fid = fid
        self.passthrough = num is None
        self.is_gen = cfg.is_generator
        if num is None:
            return
        self.num = num
        g = self.graph = from_cfg(cfg)
        outs = g.out_edges[ENTRY]
        self.entry_block = g.edges[outs[0]][1] if len(outs) == 1 else UNKNOWN
        self.block_of = [int(s.block) for s in cfg.stmts]
        if any(not b.stmts for b in cfg.blocks[2:]):   # pragma: no cover - CFG blocks hold statements
            raise InternalError(f"regenerate: function {fid}: a block without statements")
        #: block -> the blocks of its forced chain up to a call block (empty: none), from the
        #: twin's own renumbering: uncut single out-edges through blocks that are not call blocks
        self._chains: dict[int, list[int]] = {}
        #: raw event (``p`` or ``LEAVE_PATH + p``) -> (first block, following blocks, next block, returns)
        self.paths: dict[int, tuple[int, list[int], int, bool]] = {}
        self._truncated: dict[tuple[int, int], tuple[int, list[int]] | None] = {}

    def _blocks(self, start: int, edges: tuple[int, ...]) -> tuple[int, list[int]]:
        """(first block, the blocks after it) of a path."""
        g = self.graph
        seq = [] if start == ENTRY else [start]
        seq += [g.edges[e][1] for e in edges]
        seq = [v for v in seq if v != EXIT]
        if not seq:
            return EXIT, []
        return seq[0], seq[1:]

    def path(self, event: int) -> tuple[int, list[int], int, bool]:
        """(first block, following blocks, where the frame goes on: a cut's target or EXIT,
        whether the activation returns) of a path event."""
        returns = event >= LEAVE_PATH
        pid = event - LEAVE_PATH if returns else event
        if not 0 <= pid < self.num.num_paths:
            raise InternalError(f"regenerate: function {self.fid}: no path {pid}")
        p = self.num.decode(pid)
        first, rest = self._blocks(p.start, p.edges)
        if p.end == END_EXIT:
            nxt = EXIT
        elif p.end == END_DEAD:
            raise InternalError(f"regenerate: function {self.fid}: path {pid} ends in a block without successors")
        else:
            nxt = self.graph.edges[p.end][1]
        if returns != (nxt == EXIT):
            raise InternalError(f"regenerate: function {self.fid}: path {pid} "
                                + ("returns but does not end at EXIT" if returns else "ends at EXIT without returning"))
        found = (first, rest, nxt, returns)
        self.paths[event] = found
        return found

    def chain(self, block: int) -> list[int]:
        """The blocks a frame standing at ``block`` passes before a child can start: the
        forced chain (``pathnum.forced_chain_edges``) to the call block at its end, that block
        included; empty where ``block`` is no such chain's start."""
        hit = self._chains.get(block)
        if hit is not None:
            return hit
        g, cuts = self.graph, self.num.cuts
        seq: list[int] = []
        v = block
        while v >= 2 and v not in g.call_nodes and len(g.out_edges[v]) == 1 and len(seq) < g.num_nodes:
            e = g.out_edges[v][0]
            if e in cuts:
                break
            v = g.edges[e][1]
            seq.append(v)
        found = seq if seq and v in g.call_nodes else []
        self._chains[block] = found
        return found

    def truncated(self, register: int, block: int) -> tuple[int, list[int]] | None:
        """(first block, following blocks) of the path cut short in ``block``, or None if the
        register names no path through ``block``."""
        key = (register, block)
        if key in self._truncated:
            return self._truncated[key]
        try:
            p = self.num.decode_truncated(register, block)
        except InternalError:
            found = None
        else:
            assert p.end == END_TRUNCATED
            found = self._blocks(p.start, p.edges)
        self._truncated[key] = found
        return found

    def raised(self, register: int, sid: int, first: int) -> tuple[int, list[int]]:
        """The truncated path of an exception raised at statement ``sid`` (see the module doc)."""
        origin = self.block_of[sid] if 0 <= sid < len(self.block_of) else -1
        order = [origin, first] + list(range(2, self.graph.num_nodes))
        for b in order:
            if b < 2 or b >= self.graph.num_nodes:
                continue
            found = self.truncated(register, b)
            if found is not None and (first == UNKNOWN or found[0] == first):
                return found
        raise InternalError(f"regenerate: function {self.fid}: register {register} of an exception at "
                            f"statement {sid} names no path")


def regenerate_path_stream(events_chunks: Iterable[np.ndarray], plans: dict[int, PathPlan], *,
                           chunk_size: int = 1 << 16) -> Iterator[np.ndarray]:
    """Turn the int32 chunks of one path stream into int32 chunks of its blocks stream."""
    tables: dict[int, PathTables] = {}
    # frames: [tables, pend, shown, where a child moved it from along a forced chain (-1: it did
    # not), uncaught, path cache (None: block ids)]
    stack: list[list[Any]] = []
    out: list[int] = []
    # 0 normal, 1 after EXC, 2 register next (paths), 3 handler may follow, 4 after RERAISE, 5 site next
    state = 0
    sid = reg = site = -1

    def table(fid: int) -> PathTables:
        t = tables.get(fid)
        if t is None:
            plan = plans.get(fid)
            if plan is None:
                raise InternalError(f"regenerate: no plan for function {fid}")
            t = tables[fid] = PathTables(fid, plan[0], plan[1])
        return t

    def ahead(fr: list[Any], first: int, rest: list[int]) -> list[int]:
        """The blocks of a path (first block, the others) still to emit for a frame that a
        child moved along the path's forced chain (``fr[3]``: where it was): those after it."""
        if fr[3] < 0:
            return rest
        if first != fr[3] or fr[1] not in rest:
            raise InternalError(f"regenerate: function {fr[0].fid}: a path from block {first} "
                                f"does not pass block {fr[1]}, where a child placed the activation")
        return rest[rest.index(fr[1]) + 1:]

    def exception(handler: int) -> None:
        if not stack:    # a closing record for a frame whose LEAVE is already in (see below)
            out.extend((EXC, sid))
            return
        fr = stack[-1]
        t = fr[0]
        if not t.passthrough and reg != LEAVE and reg > NO_PATH:   # (-1 and NO_PATH or below: no path open)
            try:
                first, rest = t.raised(reg, site if site >= 0 else sid, fr[1] if fr[3] < 0 else fr[3])
                rest = ahead(fr, first, rest)
            except InternalError:
                if handler >= 0:
                    raise
                # a closing record with a stale register (a frame stopped between a cut's
                # record and its reset): the exit leaves from where the frame stands
                first, rest = fr[1], []
            if not fr[2] and first >= 2:
                out.append(first)
            out.extend(rest)
            fr[3] = -1
        elif not t.passthrough and not fr[2] and fr[1] >= 2:
            # no path open (a closing record of a frame stopped before its register was set,
            # at its entry): it stands in its entry block, which ENTER began as in `blocks`
            out.append(fr[1])
            fr[2] = True
        out.append(EXC)
        out.append(sid)
        if handler >= 0:
            out.append(handler)
            fr[1], fr[2], fr[3] = handler, True, -1
        elif not t.passthrough:
            fr[4] = True

    for chunk in events_chunks:
        values = chunk.tolist()
        for lo in range(0, len(values), _SUB):
            try:
                for v in values[lo:lo + _SUB]:
                    if state:
                        if state == 1 or state == 4:
                            sid, site = v, -1
                            state = 5 if state == 4 else 3 if stack and stack[-1][0].passthrough else 2
                            continue
                        if state == 5:
                            site = v
                            state = 3 if stack and stack[-1][0].passthrough else 2
                            continue
                        if state == 2:
                            reg, state = v, 3
                            continue
                        state = 0
                        if v >= 0:
                            exception(v)
                            continue
                        exception(-1)
                    if v >= 0:
                        fr = stack[-1]
                        paths = fr[5]
                        if paths is None:          # recorded with block ids
                            out.append(v)
                            continue
                        hit = paths.get(v)
                        first, rest, nxt, returns = hit if hit is not None else fr[0].path(v)
                        if fr[3] >= 0:
                            rest = ahead(fr, first, rest)
                            fr[3] = -1
                        elif first != fr[1] and fr[1] != UNKNOWN:
                            raise InternalError(f"regenerate: function {fr[0].fid}: path event {v} starts at block "
                                                f"{first}, the activation stands at block {fr[1]}")
                        if not fr[2]:
                            out.append(first)
                        out.extend(rest)
                        if returns:
                            stack.pop()
                            out.append(LEAVE)
                        else:
                            fr[1] = nxt
                            fr[2] = False
                    elif v <= -ENTER_BASE:
                        if stack:
                            parent = stack[-1]
                            if not parent[2] and parent[1] >= 2:
                                out.append(parent[1])      # the child runs in this call block
                                parent[2] = True
                            if parent[5] is not None and parent[3] < 0 and parent[1] >= 2:
                                chain = parent[0].chain(parent[1])
                                if chain:                  # ... or at the end of its forced chain
                                    out.extend(chain)
                                    parent[3], parent[1] = parent[1], chain[-1]
                        t = tables.get(-v - ENTER_BASE) or table(-v - ENTER_BASE)
                        if t.passthrough:
                            stack.append([t, UNKNOWN, True, -1, False, None])
                        elif t.is_gen:                      # a resumption, unless START follows
                            stack.append([t, UNKNOWN, True, -1, False, t.paths])
                        else:
                            stack.append([t, t.entry_block, False, -1, False, t.paths])
                        out.append(v)
                    elif v == LEAVE:
                        if not stack:      # see the closing records below
                            out.append(LEAVE)
                            continue
                        fr = stack.pop()
                        if not fr[2] and not fr[4] and fr[1] >= 2:
                            out.append(fr[1])              # a generator suspends in its yield block
                        out.append(LEAVE)
                    elif v == EXC:
                        state = 1
                    elif v == RERAISE:
                        state = 4
                    elif v == START:
                        fr = stack[-1]
                        if fr[0].passthrough or not fr[0].is_gen:
                            raise InternalError(f"regenerate: function {fr[0].fid}: START outside a generator")
                        fr[1], fr[2] = fr[0].entry_block, False
                    else:
                        raise InternalError(f"regenerate: unknown event code {v}")
            except IndexError:
                if stack:
                    raise
                raise InternalError("regenerate: event outside any activation") from None
            if len(out) >= chunk_size:
                yield np.array(out, dtype=np.int32)
                out = []
    if state == 3:
        exception(-1)
    elif state:                  # the stream ends inside an exception record
        out.append(EXC)
        if state in (2, 5):
            out.append(sid)
    if stack:
        fr = stack[-1]           # the program stopped (daemon thread): the block it stood in
        if not fr[2] and not fr[4] and fr[1] >= 2:
            out.append(fr[1])
    if out:
        yield np.array(out, dtype=np.int32)


def regenerate(rec: Any, sid: int) -> np.ndarray:
    """The whole blocks stream of stream ``sid`` of an open `path` recording."""
    parts = list(regenerate_path_stream(rec.iter_chunks(sid), path_plans(rec)))
    return np.concatenate(parts) if parts else np.zeros(0, np.int32)


def path_plans(rec: Any) -> dict[int, PathPlan]:
    """fid -> (CFG, numbering) for every function of an open `path` recording; functions whose
    stored plan has strategy ``trace`` recorded block ids and get ``None`` (passed through)."""
    from wholetrace.instrument.modes import path_numbering, stored_free_records, stored_quiet

    plans: dict[int, PathPlan] = {}
    for f in rec.functions():
        desc = f.cfg
        cfg = CFG.from_json(desc)
        plan = desc.get("plan") if isinstance(desc, dict) else None
        fallback = isinstance(plan, dict) and plan.get("strategy") == "trace"
        num = None if fallback else path_numbering(cfg, stored_quiet(desc), stored_free_records(desc))
        if num is None and not fallback:
            raise InternalError(f"regenerate: function {f.fid} ({f.qualname}) was recorded with path ids "
                                "but its CFG has no path numbering")
        plans[f.fid] = (cfg, num)
    return plans
