"""The control-flow graph of one function as data: statements, blocks, edges, their JSON form in the .wt registry and the fingerprint (built by ``instrument.cfg``)."""

from __future__ import annotations

import ast

from wholetrace import jsontext
from wholetrace.plain import FrozenRecord, Record
from wholetrace.ids import BlockId, StmtId
from wholetrace.instrument.digest import sha256

#: Statement kinds: simple statements and the headers of compound statements.
STMT_KINDS = ("simple", "if", "while", "for-iter", "for-next", "with-enter", "with-exit",
              "match", "case", "finally-end", "star-end")
#: Static edge kinds.
EDGE_KINDS = ("fall", "true", "false", "next", "exhausted", "back", "break", "continue",
              "return", "finally-dispatch")

FunctionNode = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


class Stmt(Record):
    """One statement: its kind, ``label`` (AST class name: "Assign", "If", ...), source span
    (1-based lines, 0-based columns) and flags: ``calls`` (call-capable: starts a block),
    ``suspends`` (holds yield / yield from: ends a block, a generator suspension).  ``node``
    is neither compared nor shown."""

    __slots__ = ("id", "kind", "label", "line", "col", "end_line", "end_col", "calls", "suspends", "block", "node")
    _fields = __slots__[:-1]

    def __init__(self, id: StmtId, kind: str, label: str, line: int, col: int, end_line: int, end_col: int,
                 calls: bool, suspends: bool = False, block: BlockId = BlockId(-1),
                 node: ast.AST | None = None) -> None:
        self.id = id
        self.kind = kind
        self.label = label
        self.line = line
        self.col = col
        self.end_line = end_line
        self.end_col = end_col
        self.calls = calls
        self.suspends = suspends
        self.block = block
        self.node = node


class Edge(FrozenRecord):
    """A CFG edge (frozen, hashable)."""

    __slots__ = ("src", "dst", "kind", "back")

    def __init__(self, src: BlockId, dst: BlockId, kind: str, back: bool = False) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "src", src)
        setattr_(self, "dst", dst)
        setattr_(self, "kind", kind)
        setattr_(self, "back", back)


class Block(Record):
    """A block: its statements; ``dynamic_entry``: first block of an except handler or finally body."""

    __slots__ = ("id", "stmts", "dynamic_entry")

    def __init__(self, id: BlockId, stmts: list[StmtId], dynamic_entry: bool = False) -> None:
        self.id = id
        self.stmts = stmts
        self.dynamic_entry = dynamic_entry


class CFG(Record):
    """The CFG of one function; ``blocks[i].id == i`` and blocks 0/1 are ENTRY/EXIT.  ``kind``:
    "module" | "function" | "class"; ``anchors``: AST anchors for the rewriter, (id(node),
    kind) -> statement id (``node`` and ``anchors`` are neither compared nor shown)."""

    __slots__ = ("qualname", "kind", "firstline", "lastline", "is_generator", "blocks", "edges", "stmts",
                 "loop_headers", "node", "fingerprint", "anchors", "with_items")
    _fields = ("qualname", "kind", "firstline", "lastline", "is_generator", "blocks", "edges", "stmts",
               "loop_headers", "fingerprint")

    def __init__(self, qualname: str, kind: str, firstline: int, lastline: int, is_generator: bool,
                 blocks: list[Block], edges: list[Edge], stmts: list[Stmt], loop_headers: frozenset[BlockId],
                 node: FunctionNode | None = None, fingerprint: str = "",
                 anchors: dict[tuple[int, str], StmtId] | None = None) -> None:
        self.qualname = qualname
        self.kind = kind
        self.firstline = firstline
        self.lastline = lastline
        self.is_generator = is_generator
        self.blocks = blocks
        self.edges = edges
        self.stmts = stmts
        self.loop_headers = loop_headers
        self.node = node
        self.fingerprint = fingerprint
        self.anchors: dict[tuple[int, str], StmtId] = {} if anchors is None else anchors
        #: id(item) -> (a ``with`` item, its index in the statement): the items as parsed (the
        #: rewriter splits a ``with`` of several items; ``cleanup.with_exit_spans``)
        self.with_items: dict[int, tuple[ast.withitem, int]] = {}

    def succs(self, b: BlockId) -> list[Edge]:
        return [e for e in self.edges if e.src == b]

    def preds(self, b: BlockId) -> list[Edge]:
        return [e for e in self.edges if e.dst == b]

    def stmt_at(self, node: ast.AST, kind: str) -> Stmt | None:
        sid = self.anchors.get((id(node), kind))
        return None if sid is None else self.stmts[sid]

    def to_json(self) -> dict[str, object]:
        """A JSON-able description (stored in the .wt function registry)."""
        return {
            "qualname": self.qualname, "kind": self.kind, "firstline": self.firstline,
            "lastline": self.lastline, "is_generator": self.is_generator,
            "blocks": [{"id": b.id, "stmts": b.stmts, "dynamic_entry": b.dynamic_entry}
                       for b in self.blocks],
            "edges": [[e.src, e.dst, e.kind, e.back] for e in self.edges],
            "stmts": [[s.kind, s.label, s.line, s.col, s.end_line, s.end_col, s.calls, s.block,
                       s.suspends] for s in self.stmts],
            "loop_headers": sorted(self.loop_headers),
            "fingerprint": self.fingerprint,
        }

    @classmethod
    def from_json(cls, d: dict) -> "CFG":  # type: ignore[type-arg]
        # stmts rows: kind, label, line, col, end_line, end_col, calls, block[, suspends]
        stmts = [Stmt(StmtId(i), k, lab, l, c, el, ec, bool(calls), bool(rest[0]) if rest else False,
                      block=BlockId(b))
                 for i, (k, lab, l, c, el, ec, calls, b, *rest) in enumerate(d["stmts"])]
        blocks = [Block(BlockId(b["id"]), list(b["stmts"]), bool(b["dynamic_entry"]))
                  for b in d["blocks"]]
        edges = [Edge(BlockId(s), BlockId(t), k, bool(bk)) for s, t, k, bk in d["edges"]]
        return cls(d["qualname"], d["kind"], d["firstline"], d["lastline"], d["is_generator"],
                   blocks, edges, stmts, frozenset(d["loop_headers"]), fingerprint=d["fingerprint"])


def fingerprint(cfg: CFG) -> str:
    """Hash of the CFG shape and statement spans relative to the function's first line."""
    base = cfg.firstline
    canon = {
        "k": cfg.kind, "q": cfg.qualname,
        "b": [b.stmts for b in cfg.blocks],
        "e": [[e.src, e.dst, e.kind] for e in cfg.edges],
        "s": [[s.kind, s.label, s.line - base, s.col, s.end_line - base, s.end_col, s.calls, s.suspends]
              for s in cfg.stmts],
    }
    return sha256(jsontext.dumps(canon, separators=(",", ":")).encode()).hexdigest()[:16]
