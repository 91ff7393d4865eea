"""What a run of WPP terminals means to a reader: acyclic paths (function, blocks, lines) with call nesting, and terminal costs.

Blocks-kind terminals are one block each; a reader sees a run of consecutive blocks of one
activation, cut where the run takes a back edge, as one piece (so loop iterations repeat).
Path-kind terminals of a function that `path` mode records with path ids are Ball-Larus path
ids (``instrument.pathnum``: ``p``, or ``events.LEAVE_PATH + p`` when the path returns); in the
records after an exception (``EXC s r [H]``, ``RERAISE s x r [H]``, ``events``) the values are
operands: the register ``r`` is decoded as the truncated path, the rest are not paths.
Functions recorded with block ids in a `path` recording are read as blocks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wholetrace.errors import InternalError
from wholetrace.events import LEAVE_PATH
from wholetrace.wpp.symbols import BLOCK, ENTER, EXC, FUSED, LEAVE, PATH
from wholetrace.wpp.view import WppView

#: Path mode's RERAISE and START codes, interned as values of function -1.
RERAISE_CODE, START_CODE = -4, -5
COSTS = ("statements", "instructions")


@dataclass(frozen=True)
class Piece:
    """One acyclic path (or run of blocks) of a function at call depth ``depth``; ``truncated``:
    an exception cut it short; ``raised``: a statement raised after it (``raise_line``)."""

    depth: int
    fid: int
    blocks: tuple[int, ...]
    truncated: bool = False
    path_id: int = -1
    raise_line: int = 0

    def key(self) -> tuple[object, ...]:
        return (self.fid, self.blocks, self.truncated, self.path_id, self.raise_line)


def statement_lines(view: WppView, fid: int, blocks: tuple[int, ...] | list[int]) -> list[int]:
    """The source line of every statement on ``blocks`` of function ``fid``, in order."""
    cfg = view.cfgs[fid]
    return [cfg.stmts[s].line for b in blocks for s in cfg.blocks[b].stmts]


def path_blocks(view: WppView, fid: int, value: int) -> tuple[tuple[int, ...], int] | None:
    """(blocks, path id) of a path-kind value read as a path (-1 id for a block id), or None."""
    num = view.numbering(fid) if fid in view.cfgs else None
    if num is None:
        nb = len(view.cfgs[fid].blocks) if fid in view.cfgs else 0
        return ((value,), -1) if 0 <= value < nb else None
    pid = value - LEAVE_PATH if value >= LEAVE_PATH else value
    if not 0 <= pid < num.num_paths:
        return None
    return tuple(num.blocks(num.decode(pid))), pid


def truncated_blocks(view: WppView, fid: int, register: int, stmt: int,
                     raised: int = -1) -> tuple[tuple[int, ...], int] | None:
    """(blocks, id of the full path it began) of the path an exception cut short: register
    ``register`` as it left, decoded at the block the exception left from if it names a path
    through it, else at the first block that does.  That block is the one of ``raised``, the
    re-raise site of a ``RERAISE s x r`` record (its ``x``), else of ``stmt`` (``s``), as in the
    decoding kernel: a register names a prefix through several blocks (an edge without an
    increment keeps it), so ``s``, which a re-raise does not leave from, named the wrong one."""
    num = view.numbering(fid)
    if num is None:
        return None
    cfg = view.cfgs[fid]
    q = raised if raised >= 0 else stmt
    origin = int(cfg.stmts[q].block) if 0 <= q < len(cfg.stmts) else -1
    for b in [origin] + list(range(2, len(cfg.blocks))):
        if b < 2:
            continue
        try:
            return tuple(num.blocks(num.decode_truncated(register, b))), register + num.completion[b]
        except InternalError:
            continue
    return None


def terminal_costs(view: WppView, unit: str = "statements") -> np.ndarray:
    """Cost of every terminal: statements (or bytecode instructions) on its block or path; 0 for
    markers.  A path-kind value is costed as the path it names (in an exception record it is an
    operand, which this context-free cost cannot tell); a fused ENTER_PATH/ENTER_CHAIN as its path,
    a SEQ (wave 12) as the paths and blocks it joins."""
    if unit not in COSTS:
        raise ValueError(unit)
    weights = _stmt_weights(view, unit)
    t = view.terminals
    out = np.zeros(len(t), np.int64)
    for i in np.flatnonzero(np.isin(t.kind, (BLOCK, PATH) + FUSED)):
        for k, f, v in t.parts(int(i)):      # a fused terminal costs its paths (its ENTERs cost 0)
            if f not in view.cfgs or k not in (BLOCK, PATH):
                continue
            if k == BLOCK:
                blocks: tuple[int, ...] = (v,) if 0 <= v < len(view.cfgs[f].blocks) else ()
            else:
                found = path_blocks(view, f, v)
                blocks = found[0] if found else ()
            w = weights[f]
            out[i] += sum(w[s] for b in blocks for s in view.cfgs[f].blocks[b].stmts)
    return out


def _stmt_weights(view: WppView, unit: str) -> dict[int, list[int]]:
    if unit == "statements":
        return {f: [1] * len(c.stmts) for f, c in view.cfgs.items()}
    from wholetrace.wpp.instructions import statement_instructions

    return statement_instructions(view.cfgs, view.files)


def pieces(view: WppView, symbols: list[int] | np.ndarray) -> list[Piece]:
    """The acyclic paths a run of terminals covers, with call depth (0 = the shallowest level
    reached); see the module doc."""
    t = view.terminals
    out: list[Piece] = []
    depth = 0
    run: list[int] = []          # blocks of the open run (blocks-kind terminals)
    run_fid = -1
    ops: list[str] = []          # operands still expected after EXC / RERAISE: "s", "x", "r", "H"
    exc_stmt = -1
    exc_raised = -1              # a RERAISE record's re-raise site (its block is where the exception left)
    exc_fid = -1

    def flush() -> None:
        nonlocal run
        if run:
            out.append(Piece(depth, run_fid, tuple(run)))
            run = []

    def back_edge(fid: int, a: int, b: int) -> bool:
        return any(e.dst == b and e.back for e in view.cfgs[fid].succs(a))  # type: ignore[arg-type]

    items: list[tuple[int, int, int]] = []
    for x in np.asarray(symbols).tolist():
        items += t.parts(x)      # a fused terminal (wave 10): its ENTERs and its path, as one terminal each
    for k, f, v in items:
        if ops:
            what = ops.pop(0)
            if exc_fid == -2 and f >= 0:
                exc_fid = f
            if what == "s":
                exc_stmt = v
            elif what == "x":
                exc_raised = v
            elif what == "r":
                cut = truncated_blocks(view, f, v, exc_stmt, exc_raised) if f in view.cfgs else None
                if cut:
                    out.insert(len(out) - 1 if out and out[-1].raise_line else len(out),
                               Piece(depth, f, cut[0], truncated=True, path_id=cut[1]))
            elif what == "H" and k == PATH and f == exc_fid and v < LEAVE_PATH:
                continue     # the handler block: the next path starts there
            if what != "H":
                continue
        if k == ENTER:
            flush()
            depth += 1
        elif k == LEAVE:
            flush()
            depth -= 1
        elif k == EXC:
            flush()
            line = view.cfgs[f].stmts[v].line if f in view.cfgs and 0 <= v < len(view.cfgs[f].stmts) else 0
            out.append(Piece(depth, f, (), raise_line=line or -1))
            if view.symbol_kind == "path" and f in view.cfgs and view.numbering(f) is not None:
                ops, exc_stmt, exc_raised, exc_fid = ["r", "H"], v, -1, f
        elif f < 0 and v in (RERAISE_CODE, START_CODE):
            flush()
            if v == RERAISE_CODE:
                out.append(Piece(depth, -1, (), raise_line=-1))
                ops, exc_raised, exc_fid = ["s", "x", "r", "H"], -1, -2   # exc_fid: the operands' function
        elif f not in view.cfgs:
            flush()      # a value outside any known activation: nothing to show
        elif k == BLOCK or (k == PATH and view.numbering(f) is None):
            if run and (f != run_fid or back_edge(f, run[-1], v)):
                flush()
            run_fid = f
            run.append(v)
        elif k == PATH:
            flush()
            found = path_blocks(view, f, v)
            if found:
                out.append(Piece(depth, f, found[0], path_id=found[1]))
            if v >= LEAVE_PATH:
                depth -= 1
    flush()
    if out:
        low = min(p.depth for p in out)
        out = [Piece(p.depth - low, p.fid, p.blocks, p.truncated, p.path_id, p.raise_line) for p in out]
    return out
