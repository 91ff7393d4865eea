"""The statement graph of ``instrument.cfg``'s builder cut into basic blocks: reachability, leaders, block edges."""

from __future__ import annotations

from wholetrace.ids import ENTRY, EXIT, FIRST_BLOCK, BlockId, StmtId
from wholetrace.instrument.cfgmodel import Block, Edge, Stmt

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from wholetrace.instrument.cfg import _Builder

_EXIT_NODE = -1          # statement-graph stand-in for EXIT
_ENTRY_NODE = -2         # statement-graph stand-in for ENTRY


def _ends_block(st: Stmt) -> bool:
    """Yields suspend the activation; finally ends, with exits and except* ends may re-raise: all end a block,
    so that where an activation stops, its block stops too."""
    return st.suspends or st.kind in ("finally-end", "with-exit", "star-end")


def _live_statements(b: "_Builder") -> set[int]:
    """The statements reachable from ENTRY in the statement graph built so far (the finished
    one, or a part while ``_Builder.live`` asks)."""
    seen: set[int] = set()

    def visit(roots: list[int]) -> None:
        stack = list(roots)
        while stack:
            n = stack.pop()
            if n in seen or n < 0:
                continue
            seen.add(n)
            stack.extend(d for d, _ in b.succ.get(n, ()))

    visit([dst for dst, _ in b.succ[_ENTRY_NODE]])
    # A dynamic entry is live when a live statement can raise into it (to a fixpoint: a
    # handler may guard statements that are themselves reached only through a handler).
    pending = dict(b.dynamic_roots)
    changed = True
    while changed:
        changed = False
        for root, guards in sorted(pending.items()):
            if any(g in seen for g in guards):
                del pending[root]
                visit([root])
                changed = True
    return seen


def _cut_blocks(b: "_Builder") -> tuple[list[Block], list[Edge], dict[int, int]]:
    """Group reachable statements into blocks; return blocks, block edges, stmt -> block map."""
    preds: dict[int, list[int]] = {}
    for src, outs in b.succ.items():
        for dst, _k in outs:
            preds.setdefault(dst, []).append(src)
    seen = _live_statements(b)

    def leader(n: int) -> bool:
        st = b.stmts[n]
        p = [q for q in preds.get(n, []) if q == _ENTRY_NODE or q in seen]
        if n in b.dynamic_roots or st.calls or n in b.loop_headers or len(p) != 1:
            return True
        q = p[0]
        return q == _ENTRY_NODE or len(b.succ[q]) != 1 or _ends_block(b.stmts[q])

    order = sorted(seen)  # statement ids are already in source order
    block_of: dict[int, int] = {}
    blocks = [Block(ENTRY, []), Block(EXIT, [])]
    for n in order:
        if n in block_of or not leader(n):
            continue
        blk = Block(BlockId(len(blocks)), [], dynamic_entry=n in b.dynamic_roots)
        blocks.append(blk)
        cur = n
        while True:
            blk.stmts.append(cur)
            block_of[cur] = blk.id
            outs = b.succ[cur]
            if len(outs) != 1 or _ends_block(b.stmts[cur]):
                break
            nxt = outs[0][0]
            if nxt < 0 or nxt in block_of or leader(nxt):
                break
            cur = nxt
    edges: dict[tuple[int, int], Edge] = {}
    for src in [_ENTRY_NODE] + [blk.stmts[-1] for blk in blocks[FIRST_BLOCK:]]:
        sb = ENTRY if src == _ENTRY_NODE else block_of[src]
        for dst, kind in b.succ[src]:
            db = EXIT if dst == _EXIT_NODE else block_of[dst]
            key = (sb, db)
            if key not in edges:
                edges[key] = Edge(BlockId(sb), BlockId(db), kind, back=(src, dst) in b.back)
    if not b.succ[_ENTRY_NODE]:
        edges[(ENTRY, EXIT)] = Edge(ENTRY, EXIT, "fall")
    return blocks, list(edges.values()), block_of


def _renumber(b: "_Builder") -> None:
    """Make statement ids dense and in source order."""
    order = sorted(range(len(b.stmts)), key=lambda i: (b.keys[i], i))
    new = {old: i for i, old in enumerate(order)}
    new[_EXIT_NODE], new[_ENTRY_NODE] = _EXIT_NODE, _ENTRY_NODE
    b.stmts = [b.stmts[o] for o in order]
    for i, st in enumerate(b.stmts):
        st.id = StmtId(i)
    b.succ = {new[s]: [(new[d], k) for d, k in outs] for s, outs in b.succ.items()}
    b.dynamic_roots = {new[r]: [new[g] for g in gs] for r, gs in b.dynamic_roots.items()}
    b.loop_headers = {new[h] for h in b.loop_headers}
    b.back = {(new[s], new[d]) for s, d in b.back}
    b.anchors = {k: new[v] for k, v in b.anchors.items()}
