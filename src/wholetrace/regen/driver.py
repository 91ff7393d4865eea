"""Streaming regeneration of whole `witness`/`branches` streams into `blocks` streams (F/B/X/E).

This module (with ``regen.witness`` and ``trace.lookahead``) defines what regeneration means:
it is the reference twin of the decoding kernel (``kernels.decode``), which must give the same
output on every input.

Input encoding (a witness stream) is the blocks-mode encoding with two changes:

* a non-negative event is a *witness id* ``W``, local to the running function: the index
  in ``placement.witnessed`` of the static edge just taken.  The witness of an edge
  ``u -> v`` is recorded after every event of block ``u`` and before any event of ``v``;
* an exception record is ``EXC s H`` or ``RERAISE s r H``: ``s`` the statement the traceback
  points at (what blocks mode records), ``r`` for an exception re-raised in the activation the
  re-raise site the frame passed last (a bare ``raise``, the end of a ``finally``, a ``with``
  exit); the statement that *raised* is ``r``, else ``s``.  Then the handler's *block id* ``H``
  (a dynamic entry: except handler, ``finally`` body or ``with`` exit), absent when LEAVE
  follows (the exception left the activation).  ENTER and LEAVE are recorded exactly as in
  blocks mode.  An activation still open when the run ended is closed by the recorder with
  ``EXC s`` LEAVE, ``s`` its statement in flight (as in blocks mode).

The regenerator keeps a stack of active functions.  Each frame holds the last block it
emitted (``pc``); blocks are emitted lazily, only as far as the events prove:

* ``W``: the paper's Figure 7 step (witness sets choose at predicates) up to the edge's target;
* ENTER (a child): the parent first advances along its certain, witness-free chain to its next
  call block ``C`` (the child of an explicit call belongs to ``C``), unless the first pass
  (``trace.lookahead``) says that the parent's next own event after this group of children
  is an exception record whose raising block ``R`` (the block of the statement that raised)
  lies on that chain before ``C``: then only the path to ``R`` is emitted and the frame holds
  there until that record (the children were implicit calls made before the exception, or
  generators closed while it unwound a ``for``).  The child starts at ENTRY.  A generator's ENTER may also be a
  resumption: the frame stays *pending* until its first witness, which lies on an
  out-edge of ENTRY (a start) or of the ``yield`` block it resumes from (see ``plan``);
* LEAVE: the witness-free chain to EXIT (a return) or to a ``yield`` block (a suspension);
  a pending generator that leaves without a witness re-suspended at its ``yield``
  (``yield from``);
* ``EXC s H`` / ``RERAISE s r H``: the witness-free path to the raising block ``R`` (the block
  of the statement that raised; the current block if it is unknown or unreachable), ``EXC s``,
  then the handler ``H`` (or EXIT when LEAVE follows).

So each activation's own block sequence and ordered children equal blocks mode's (the
activation form), and a child sits exactly where blocks mode puts it when it was started by
a call-capable statement.  A child of an implicit call sits at the next call block, or at the
raising block when an exception follows: never before the block it came from, never after
the parent's next recorded event.

A function planned with ``None`` (recorded with block ids: the plan strategy ``trace`` of a
function whose witnesses would need an edge without a probe site) is passed through: its
events are already the blocks-mode events (``EXC s``, then the handler's block).

Memory is bounded by the stack depth, the per-function tables and the first pass's map
(one entry per group of children ended by an exception): events are read chunk by chunk,
twice, and the block stream is produced in chunks of about ``chunk_size`` events.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from wholetrace.errors import InternalError
from wholetrace.ids import ENTRY, EXIT
from wholetrace.instrument.cfg import CFG
from wholetrace.instrument.flowgraph import from_cfg
from wholetrace.instrument.placement import EOF, WitnessPlacement
from wholetrace.instrument.witnesses import suspend_blocks
from wholetrace.trace.lookahead import groups_ended_by_exceptions
from wholetrace.regen.witness import RegenTables
from wholetrace.events import ENTER_BASE, EXC, LEAVE, RERAISE

Plan = tuple[CFG, "WitnessPlacement | None"]

#: Frame states.
RUN, PENDING, UNCAUGHT, DONE = 0, 1, 2, 3
_SUB = 4096          # input events handled between two checks of the output size


class FunctionTables:
    """Per-function regeneration tables, with caches of every step already computed."""

    def __init__(self, fid: int, cfg: CFG, placement: WitnessPlacement | None) -> None:
        self.fid = fid
        #: recorded with block ids (blocks-mode events): pass its events through
        self.passthrough = placement is None
        self.graph = graph = from_cfg(cfg)
        if placement is None:
            self.is_gen = False
            self.num_nodes = graph.num_nodes
            return
        self.regen = RegenTables(graph, placement)
        self.edge_of_witness = placement.witnessed
        self.is_gen = cfg.is_generator
        self.suspend = suspend_blocks(cfg)
        self.block_of = [int(s.block) for s in cfg.stmts]
        wid = self.regen.witness_of_edge
        self._free_out = [[e for e in graph.out_edges[v] if e not in wid] for v in range(graph.num_nodes)]
        self._route: list[dict[int, tuple[list[int], int]]] = [{} for _ in range(graph.num_nodes)]
        self._call: dict[int, tuple[list[int], int]] = {}
        self._leave: dict[int, tuple[list[int], int]] = {}
        self._bfs: dict[int, list[int]] = {}

    def _emit(self, v: int, out: list[int]) -> None:
        if v != EXIT and v != ENTRY:
            out.append(v)

    def route(self, v: int, w: int) -> tuple[list[int], int]:
        """Blocks proven by witness ``w`` read at ``v``, and the new ``pc`` (cached)."""
        hit = self._route[v].get(w)
        if hit is not None:
            return hit
        g, t = self.graph, self.regen
        start, out = v, []
        for _ in range(len(g.edges) + 1):
            outs = g.out_edges[v]
            if len(outs) == 1:
                e = outs[0]
            else:
                e = t.choose[v].get(w, -1)
                if e < 0:
                    raise InternalError(f"regenerate: function {self.fid}: witness {w} cannot follow block {v}")
            own = t.witness_of_edge.get(e)
            if own is not None and own != w:
                raise InternalError(f"regenerate: function {self.fid}: expected witness {own} at block {v}, read {w}")
            v = g.edges[e][1]
            self._emit(v, out)
            if own is not None:
                self._route[start][w] = (out, v)
                return out, v
        raise InternalError(f"regenerate: function {self.fid}: witness-free cycle")  # pragma: no cover

    def to_call(self, v: int) -> tuple[list[int], int]:
        """The certain witness-free chain from ``v`` to the next call block (cached)."""
        hit = self._call.get(v)
        if hit is not None:
            return hit
        g, t = self.graph, self.regen
        start, out, seen = v, [], {v}
        while v not in g.call_nodes:
            outs = g.out_edges[v]
            if len(outs) != 1 or outs[0] in t.witness_of_edge:
                break
            nxt = g.edges[outs[0]][1]
            if nxt in seen or not t.reaches_call(nxt):
                break
            seen.add(nxt)
            v = nxt
            self._emit(v, out)
        self._call[start] = (out, v)
        return out, v

    def leave(self, v: int) -> tuple[list[int], int]:
        """The witness-free way from ``v`` to EXIT or to a ``yield`` block (cached)."""
        hit = self._leave.get(v)
        if hit is not None:
            return hit
        g, t = self.graph, self.regen
        start, out = v, []
        for _ in range(len(g.edges) + 1):
            if v == EXIT or v in self.suspend:
                self._leave[start] = (out, v)
                return out, v
            free = self._free_out[v]
            if len(g.out_edges[v]) == 1 and free:
                e = free[0]
            else:
                e = t.choose[v].get(EOF, -1)
                if e < 0 or e in t.witness_of_edge:
                    raise InternalError(f"regenerate: function {self.fid}: LEAVE read at block {v}, "
                                        "which reaches neither EXIT nor a yield without a witness")
            v = g.edges[e][1]
            self._emit(v, out)
        raise InternalError(f"regenerate: function {self.fid}: witness-free cycle")  # pragma: no cover

    def reach(self, v: int) -> list[int]:
        """Nodes reachable from ``v`` over unwitnessed edges, nearest first (``v`` included)."""
        hit = self._bfs.get(v)
        if hit is not None:
            return hit
        order, seen, todo = [v], {v}, deque([v])
        while todo:
            u = todo.popleft()
            for e in self._free_out[u]:
                x = self.graph.edges[e][1]
                if x not in seen:
                    seen.add(x)
                    order.append(x)
                    todo.append(x)
        self._bfs[v] = order
        return order

    def raising_block(self, v: int, stmt: int) -> int | None:
        """The block of statement ``stmt`` if a witness-free path leads there from ``v`` (``v``
        itself included), else None."""
        b = self.block_of[stmt] if 0 <= stmt < len(self.block_of) else -1
        return b if b >= 0 and b in self.reach(v) else None

    def before_child(self, v: int, raised: int | None) -> tuple[list[int], int, bool]:
        """What a parent at ``v`` emits before a child: (blocks, new pc, hold there).

        ``raised``: the statement that raised the exception recorded next in the parent after
        this group of children, if one is.  Normally the certain chain to the next call
        block; but if the raising block lies before that call block, the path to it, held.
        """
        hit = self._call.get(v)
        blocks, pc = hit if hit is not None else self.to_call(v)
        if raised is None or not blocks:
            return blocks, pc, False
        r = self.raising_block(v, raised)
        if r is None:
            return blocks, pc, False
        path = self.exc_path(v, r)
        if pc in path:
            return blocks, pc, False
        return path, r, True

    def exc_path(self, v: int, r: int) -> list[int]:
        out: list[int] = []
        for e in self.regen.path(v, r):
            self._emit(self.graph.edges[e][1], out)
        return out

    def resume_point(self, w: int) -> int:
        """Where a pending generator frame stands, given its first witness ``w``."""
        if not 0 <= w < len(self.edge_of_witness):
            raise InternalError(f"regenerate: function {self.fid}: no witness {w}")
        src = self.graph.edges[self.edge_of_witness[w]][0]
        if src != ENTRY and src not in self.suspend:
            raise InternalError(f"regenerate: function {self.fid}: witness {w} cannot start or resume "
                                "a generator")
        return src

    def resume_from_exc(self, sid: int) -> int:
        """The ``yield`` block of a pending generator frame that raised at ``sid`` (an exception
        thrown in at a ``yield``)."""
        b = self.block_of[sid] if 0 <= sid < len(self.block_of) else -1
        if b in self.suspend:
            return b
        if len(self.suspend) == 1:
            return next(iter(self.suspend))
        raise InternalError(f"regenerate: function {self.fid}: exception at statement {sid} "
                            "in a resumed generator cannot be placed")


@dataclass
class RegenStats:
    """What one regeneration produced (for benchmarks)."""

    events_in: int = 0
    events_out: int = 0
    blocks_out: int = 0
    seconds: float = 0.0

    @property
    def blocks_per_second(self) -> float:
        return self.blocks_out / self.seconds if self.seconds > 0 else 0.0


def regenerate_stream(events_chunks: Iterable[np.ndarray], plans: dict[int, Plan], *,
                      chunk_size: int = 1 << 16) -> Iterator[np.ndarray]:
    """Turn the int32 chunks of one witness stream into int32 chunks of its blocks stream.

    ``events_chunks`` is read twice (see the module docstring); a one-shot iterator is
    first gathered into a list.
    """
    if iter(events_chunks) is events_chunks:
        events_chunks = list(events_chunks)
    held_groups = groups_ended_by_exceptions(events_chunks)
    tables: dict[int, FunctionTables] = {}
    stack: list[list[Any]] = []          # frames: [tables, pc, state, held at a raising block]
    out: list[int] = []
    state = 0                            # 0 normal, 1 after EXC, 4 after RERAISE, 2 after RERAISE s, 3 after the record
    sid = raised = -1
    enters = 0                           # ENTERs read so far (keys of held_groups)

    def table(fid: int) -> FunctionTables:
        t = tables.get(fid)
        if t is None:
            plan = plans.get(fid)
            if plan is None:
                raise InternalError(f"regenerate: no plan for function {fid}")
            t = tables[fid] = FunctionTables(fid, plan[0], plan[1])
        return t

    def top() -> list[Any]:
        if not stack:
            raise InternalError("regenerate: event outside any activation")
        return stack[-1]

    def exception(handler: int) -> None:
        fr = top()
        t = fr[0]
        if t.passthrough:
            out.append(EXC)
            out.append(sid)
            if handler >= 0:
                out.append(handler)
            return
        if fr[2] == PENDING:
            fr[1], fr[2] = t.resume_from_exc(raised if raised >= 0 else sid), RUN
        elif fr[2] == DONE:
            raise InternalError(f"regenerate: function {t.fid}: exception after EXIT")
        r = t.raising_block(fr[1], raised)
        if r is None:
            r = fr[1]
        out.extend(t.exc_path(fr[1], r))
        out.append(EXC)
        out.append(sid)
        fr[3] = False
        if handler >= 0:
            if not (0 <= handler < t.graph.num_nodes):
                raise InternalError(f"regenerate: function {t.fid}: no handler block {handler}")
            out.append(handler)
            fr[1], fr[2] = handler, RUN
        else:
            fr[1], fr[2] = r, UNCAUGHT

    for chunk in events_chunks:
        values = chunk.tolist()
        for lo in range(0, len(values), _SUB):
            for v in values[lo:lo + _SUB]:
                if state:
                    if state == 1:
                        sid = raised = v
                        state = 3
                        continue
                    if state == 4:
                        sid, raised, state = v, -1, 2      # (-1 until the site is read)
                        continue
                    if state == 2:
                        raised, state = v, 3
                        continue
                    state = 0
                    if v >= 0:
                        exception(v)
                        continue
                    exception(-1)
                if v >= 0:
                    fr = top()
                    t = fr[0]
                    if t.passthrough:
                        out.append(v)
                        continue
                    st = fr[2]
                    if st != RUN:
                        if st == PENDING:
                            fr[1], fr[2] = t.resume_point(v), RUN
                        else:
                            raise InternalError(f"regenerate: function {t.fid}: witness {v} after the "
                                                "activation left")
                    fr[3] = False
                    hit = t._route[fr[1]].get(v)
                    blocks, pc = hit if hit is not None else t.route(fr[1], v)
                    out.extend(blocks)
                    fr[1] = pc
                    if pc == EXIT:
                        fr[2] = DONE
                elif v <= -ENTER_BASE:
                    if stack:
                        parent = stack[-1]
                        if parent[2] == RUN and not parent[3] and not parent[0].passthrough:
                            blocks, parent[1], parent[3] = parent[0].before_child(parent[1], held_groups.get(enters))
                            out.extend(blocks)
                    enters += 1
                    t = table(-v - ENTER_BASE)
                    stack.append([t, ENTRY, PENDING if t.is_gen else RUN, False])
                    out.append(v)
                elif v == LEAVE:
                    fr = top()
                    if fr[2] == RUN and not fr[0].passthrough:
                        t = fr[0]
                        hit = t._leave.get(fr[1])
                        blocks, _pc = hit if hit is not None else t.leave(fr[1])
                        out.extend(blocks)
                    stack.pop()
                    out.append(LEAVE)
                elif v == EXC:
                    state = 1
                elif v == RERAISE:
                    state = 4
                else:
                    raise InternalError(f"regenerate: unknown event code {v}")
            if len(out) >= chunk_size:
                yield np.array(out, dtype=np.int32)
                out = []
    if state in (2, 3):
        exception(-1)
    elif state in (1, 4):
        out.append(EXC)
    if out:
        yield np.array(out, dtype=np.int32)


def measure_regeneration(events_chunks: Iterable[np.ndarray], plans: dict[int, Plan]) -> RegenStats:
    """Regenerate a stream, discarding the output; count events and blocks and time it."""
    chunks = list(events_chunks)
    stats = RegenStats(events_in=sum(len(c) for c in chunks))
    t0 = time.perf_counter()
    for block in regenerate_stream(chunks, plans):
        stats.events_out += len(block)
        # B events: non-negative values, less the statement id that follows each EXC
        stats.blocks_out += int(np.count_nonzero(block >= 0)) - int(np.count_nonzero(block == EXC))
    stats.seconds = time.perf_counter() - t0
    return stats


def recording_plans(rec: Any, kind: str | None = None) -> dict[int, Plan]:
    """Plans for every function of an open recording (``kind``: "witness" or "branches", by
    default the recording's mode).  Functions whose stored plan has strategy ``trace``
    recorded block ids and get ``None`` (passed through); the witnessed edges are the stored
    ones where the recording has them (as ``trace.tables`` reads them: the placement a CFG read
    back gives may differ, e.g. ``instrument.witnesses.drop_edges`` needs the source)."""
    from wholetrace.instrument.witnesses import make_plans

    kind = kind or str(rec.meta.get("mode"))
    cfgs, fallback, stored = {}, set(), {}
    for f in rec.functions():
        desc = f.cfg
        cfgs[f.fid] = CFG.from_json(desc)
        plan = desc.get("plan") if isinstance(desc, dict) else None
        if isinstance(plan, dict) and plan.get("mode") == kind and plan.get("strategy") == "trace":
            fallback.add(f.fid)
        elif isinstance(plan, dict) and plan.get("mode") == kind and isinstance(plan.get("witnessed"), list):
            stored[f.fid] = WitnessPlacement(tuple(int(e) for e in plan["witnessed"]))
    plans = make_plans({fid: c for fid, c in cfgs.items() if fid not in stored}, kind, fallback=fallback)
    plans.update({fid: (cfgs[fid], p) for fid, p in stored.items()})
    return plans
