"""Regenerate one activation's block sequence from its witnesses (Ball & Larus, Figure 7), lazily."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

from wholetrace.errors import InternalError
from wholetrace.instrument.flowgraph import FlowGraph
from wholetrace.instrument.placement import EOF, WitnessPlacement, witness_sets


class FunctionRegenerator:
    """Regenerates one activation of one function, driven event by event.

    The state is the last block emitted (``pc``).  Blocks are emitted lazily — only as far
    as the events prove — so that a caller holding a stack of active functions can place
    nested activations and exception edges exactly:

    - ``start()`` emits ENTRY;
    - ``feed(w)`` emits the blocks up to and including the target of the edge that wrote
      witness ``w`` (the branch choices come from the witness sets, as in the paper);
    - ``to_call()`` emits the branch-free, witness-free blocks up to the next call block
      (call it when an ENTER arrives; the child belongs to ``pc`` afterwards);
    - ``jump(src, dst)`` follows a dynamic edge: the unique witness-free path to the
      raising block ``src``, then ``dst`` (a handler, or EXIT);
    - ``finish()`` emits the witness-free path to EXIT (LEAVE or the paper's EOF).

    With ``track_edges`` the static edge ids taken are appended to ``edges`` (dynamic edges
    appear as ``None``).
    """

    def __init__(self, graph: FlowGraph, placement: WitnessPlacement, *, track_edges: bool = False,
                 tables: RegenTables | None = None) -> None:
        self.graph = graph
        self.tables = tables if tables is not None else RegenTables(graph, placement)
        self.pc: int | None = None
        self.done = False
        self.edges: list[int | None] | None = [] if track_edges else None

    def start(self) -> list[int]:
        """Begin the activation at ENTRY."""
        if self.pc is not None:
            raise InternalError("regenerate: activation started twice")
        self.pc = self.graph.entry
        return [self.pc]

    def _take(self, e: int, out: list[int]) -> int:
        v = self.graph.edges[e][1]
        if self.edges is not None:
            self.edges.append(e)
        out.append(v)
        self.pc = v
        if v == self.graph.exit:
            self.done = True
        return v

    def _live(self) -> int:
        if self.pc is None or self.done:
            raise InternalError("regenerate: event outside an activation")
        return self.pc

    def feed(self, witness: int) -> list[int]:
        """Consume one witness; return the blocks it proves (ending at its edge's target)."""
        return self._route(witness)

    def finish(self) -> list[int]:
        """The activation left normally: emit the witness-free path to EXIT."""
        if self.done:
            return []
        return self._route(EOF)

    def _route(self, witness: int) -> list[int]:
        v = self._live()
        t = self.tables
        out: list[int] = []
        for _ in range(len(self.graph.edges) + 1):
            if witness == EOF and v == self.graph.exit:
                return out
            outs = self.graph.out_edges[v]
            if not outs:
                raise InternalError(f"regenerate: witness {witness} read at a block without successors")
            if len(outs) == 1:
                e = outs[0]
            else:
                choice = t.choose[v].get(witness)
                if choice is None:
                    raise InternalError(f"regenerate: witness {witness} is not in any witness set of block {v}")
                e = choice
            w = t.witness_of_edge.get(e)
            if w is not None and w != witness:
                raise InternalError(f"regenerate: expected witness {w}, trace has {witness}")
            v = self._take(e, out)
            if w is not None:
                return out
        raise InternalError("regenerate: witness-free cycle")  # pragma: no cover - verified placement

    def to_call(self) -> list[int]:
        """Advance without reading a witness to the next call block, if the way is certain."""
        v = self._live()
        out: list[int] = []
        g = self.graph
        seen = {v}
        while v not in g.call_nodes:
            outs = g.out_edges[v]
            if len(outs) != 1 or outs[0] in self.tables.witness_of_edge:
                return out
            nxt = g.edges[outs[0]][1]
            if nxt in seen:
                return out
            seen.add(nxt)
            if not self.tables.reaches_call(nxt):
                return out
            v = self._take(outs[0], out)
        return out

    def jump(self, src: int, dst: int) -> list[int]:
        """Follow a dynamic edge: walk the witness-free path to ``src``, then go to ``dst``."""
        v = self._live()
        out: list[int] = []
        for e in self.tables.path(v, src):
            self._take(e, out)
        if self.edges is not None:
            self.edges.append(None)
        out.append(dst)
        self.pc = dst
        self.done = dst == self.graph.exit
        return out


class RegenTables:
    """Per-function lookup tables for regeneration, shareable by all its activations."""

    def __init__(self, graph: FlowGraph, placement: WitnessPlacement) -> None:
        self.graph = graph
        self.witness_of_edge = placement.witness_of_edge
        sets = witness_sets(graph, placement)
        self.choose: list[dict[int, int]] = [{} for _ in range(graph.num_nodes)]
        for e, ws in sets.items():
            table = self.choose[graph.edges[e][0]]
            for w in ws:
                if w in table:
                    raise InternalError(f"regenerate: witness {w} ambiguous at block {graph.edges[e][0]}")
                table[w] = e
        self._free = frozenset(range(len(graph.edges))) - frozenset(self.witness_of_edge)
        self._paths: dict[tuple[int, int], tuple[int, ...]] = {}
        self._call_reach: dict[int, bool] = {}

    def path(self, a: int, b: int) -> tuple[int, ...]:
        """The unique witness-free edge path from ``a`` to ``b`` (cached)."""
        key = (a, b)
        hit = self._paths.get(key)
        if hit is not None:
            return hit
        parent: dict[int, int] = {}
        seen = {a}
        todo = deque([a])
        while todo and b not in seen:
            v = todo.popleft()
            for e in self.graph.out_edges[v]:
                w = self.graph.edges[e][1]
                if e in self._free and w not in seen:
                    seen.add(w)
                    parent[w] = e
                    todo.append(w)
        if b not in seen:
            raise InternalError(f"regenerate: no witness-free path from block {a} to block {b}")
        edges: list[int] = []
        v = b
        while v != a:
            e = parent[v]
            edges.append(e)
            v = self.graph.edges[e][0]
        found = tuple(reversed(edges))
        self._paths[key] = found
        return found

    def reaches_call(self, node: int) -> bool:
        """True if the branch-free, witness-free chain from ``node`` ends at a call block (cached)."""
        hit = self._call_reach.get(node)
        if hit is not None:
            return hit
        g = self.graph
        v, seen, result = node, {node}, False
        while True:
            if v in g.call_nodes:
                result = True
                break
            outs = g.out_edges[v]
            if len(outs) != 1 or outs[0] in self.witness_of_edge:
                break
            v = g.edges[outs[0]][1]
            if v in seen:
                break
            seen.add(v)
        self._call_reach[node] = result
        return result


def regenerate(graph: FlowGraph, placement: WitnessPlacement, witnesses: Iterable[int]) -> Iterator[int]:
    """The block sequence of one activation from its witness trace (EOF implied at the end)."""
    regen = FunctionRegenerator(graph, placement)
    yield from regen.start()
    for w in witnesses:
        yield from regen.feed(w)
    yield from regen.finish()


def witnesses_of_edges(placement: WitnessPlacement, edges: Iterable[int]) -> list[int]:
    """The witness trace written by an execution given as its edge ids (for oracles and tests)."""
    wid = placement.witness_of_edge
    return [wid[e] for e in edges if e in wid]
