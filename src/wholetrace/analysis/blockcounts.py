"""Block and statement execution counts implied by an F/B/E block trace (the `blocks` ground truth)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from wholetrace.errors import InternalError
from wholetrace.instrument.cfg import CFG
from wholetrace.kernels.tracecount import count_blocks


@dataclass
class TraceCounts:
    """Per function: block execution counts, statement counts and exception-edge counts."""

    blocks: dict[int, np.ndarray] = field(default_factory=dict)      # fid -> count per block id
    stmts: dict[int, np.ndarray] = field(default_factory=dict)       # fid -> count per stmt id
    activations: dict[int, int] = field(default_factory=dict)        # fid -> ENTER events


def _stmt_tables(cfgs: dict[int, CFG]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Flattened (fid, stmt) -> block and (fid, stmt) -> next statement in its block tables."""
    nf = max(cfgs) + 1 if cfgs else 0
    base = np.zeros(nf + 1, np.int64)
    for f in range(nf):
        base[f + 1] = base[f] + (len(cfgs[f].stmts) if f in cfgs else 0)
    block_of = np.full(int(base[-1]), -1, np.int32)
    next_in_block = np.full(int(base[-1]), -1, np.int32)
    for f, cfg in cfgs.items():
        for s in cfg.stmts:
            block_of[base[f] + s.id] = s.block
        for blk in cfg.blocks:
            for a, b in zip(blk.stmts, blk.stmts[1:]):
                next_in_block[base[f] + a] = b
    nblocks = np.array([len(cfgs[f].blocks) if f in cfgs else 0 for f in range(nf)], np.int64)
    bbase = np.zeros(nf + 1, np.int64)
    bbase[1:] = np.cumsum(nblocks)
    return base, block_of, next_in_block, bbase, nblocks


def trace_counts(streams: Iterable[np.ndarray], cfgs: dict[int, CFG]) -> TraceCounts:
    """Count block, statement and activation events over whole streams (each an int32 array)."""
    base, block_of, next_in_block, bbase, nblocks = _stmt_tables(cfgs)
    nf = len(nblocks)
    bcount = np.zeros(int(bbase[-1]), np.int64)
    cut = np.zeros(int(base[-1]), np.int64)        # statements skipped because an exception left early
    enters = np.zeros(nf, np.int64)
    for ev in streams:
        if count_blocks(np.ascontiguousarray(ev, dtype=np.int32), base, block_of, next_in_block,
                        bbase, bcount, cut, enters) < 0:
            raise InternalError("block trace names a function or block that is not registered")
    out = TraceCounts()
    for f, cfg in cfgs.items():
        b = bcount[bbase[f]:bbase[f + 1]]
        out.blocks[f] = b.copy()
        s = np.array([b[st.block] if st.block >= 0 else 0 for st in cfg.stmts], np.int64)
        out.stmts[f] = s - cut[base[f]:base[f + 1]]
        out.activations[f] = int(enters[f])
    return out


def recording_counts(rec: Any) -> tuple[TraceCounts, dict[int, CFG]]:
    """Counts for every function of an open blocks-mode recording."""
    cfgs = {f.fid: CFG.from_json(f.cfg) for f in rec.functions()}
    streams = (rec.events(s.sid) for s in rec.streams())
    return trace_counts(streams, cfgs), cfgs
