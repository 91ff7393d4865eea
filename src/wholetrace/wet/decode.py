"""Statement instances, dynamic control parents, calls and the location access log of a ``full`` recording.

The Python layer of ``kernels/wetdecode.py``: it flattens the static facts of every function
(``wet/static.py``) and the capture log's slots into int64 tables, concatenates the streams,
runs the kernel once and wraps its arrays.  The rules of the pass are in docs/design.md
("WET dependences") and in the kernel's docstrings.

Invariant: instance ids increase with the start of the statement instances in one stream,
so within a thread they are the execution order (the ``time`` of the queries).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wholetrace.errors import StoreError, UsageError
from wholetrace.kernels import wetdecode as K
from wholetrace.wet.capture import CaptureLog
from wholetrace.wet.static import BUILTIN_MUTABLE, KNOWN_EFFECTS, PURE_CALLS, FunctionFacts

#: Access-log operations.
USE, DEF, WUSE, WDEF, NS = K.USE, K.DEF, K.WUSE, K.WDEF, K.NS
#: Location kinds: (kind, a, b).
LOCAL, GLOBAL, ATTR, ELEM, WHOLE, RET = K.LOCAL, K.GLOBAL, K.ATTR, K.ELEM, K.WHOLE, K.RET
#: Instance kinds.
STMT, RESUME, MERGE = K.STMT, K.RESUME, 2

_OPS = {"read": K.OP_READ, "write": K.OP_WRITE, "rw": K.OP_RW, "del": K.OP_DEL, "readback": K.OP_READBACK,
        "bind": K.OP_BIND}
_KINDS = {"def": K.K_DEF, "obj": K.K_OBJ, "key": K.K_KEY}
_MUTABLE = sorted(BUILTIN_MUTABLE)
_STATUS = {K.BAD_FUNCTION: "an ENTER of an unknown function", K.BAD_BLOCK: "a block id outside its function",
           K.BAD_STATEMENT: "a statement id outside its function"}


@dataclass
class Decoded:
    """What the pass produced: instances, access log, calls, locations, record attribution."""

    i_fid: np.ndarray
    i_sid: np.ndarray
    i_frame: np.ndarray
    i_stream: np.ndarray
    i_kind: np.ndarray
    i_cd: np.ndarray
    a_inst: np.ndarray
    a_op: np.ndarray
    a_loc: np.ndarray
    a_fb: np.ndarray
    calls: np.ndarray               # (n, 2): call instance, first instance of the callee
    locs: np.ndarray                # (n, 3): kind, a, b
    keys: list[tuple[int, int]]     # key id -> token (tag, val)
    names: list[str]
    rec_inst: np.ndarray            # records (streams in order) -> instance, -1 if none
    unknown_calls: int
    seconds: dict[str, float] = field(default_factory=dict)
    rec_slot: np.ndarray | None = None   # the records (streams in order) the pass read
    rec_tag: np.ndarray | None = None
    rec_val: np.ndarray | None = None
    rec_ptr: np.ndarray | None = None    # records of the i-th stream read: [rec_ptr[i], rec_ptr[i + 1])
    stream_sids: list[int] | None = None


@dataclass
class _Names:
    ids: dict[str, int] = field(default_factory=dict)

    def __call__(self, n: str) -> int:
        return self.ids.setdefault(n, len(self.ids))


def _mode(ff: FunctionFacts, name: str, scope: str) -> tuple[int, int]:
    """(name mode, closure function) of a name used or defined in ``ff`` (see ``Decoder.name_loc``)."""
    if scope in ("local", "class"):
        return K.M_LOCAL, -1
    if scope in ("free", "outer") and name in ff.closure:
        return K.M_CLOSURE, ff.closure[name]
    return K.M_GLOBAL, -1


def tables(facts: dict[int, FunctionFacts], log: CaptureLog) -> dict[str, Any]:
    """The static tables of the kernel (function, block, statement, name-entry, slot, effect tables)."""
    names = _Names()
    py_names = {q.rsplit(".", 1)[-1] for q in (f.qualname for f in facts.values())}
    n_fun = max(facts, default=-1) + 1
    ftab = np.zeros((n_fun, 8), np.int64)
    btab: list[list[int]] = []
    bs_stmt: list[int] = []
    cd_pred: list[int] = []
    stab: list[list[int]] = []
    ents: list[list[int]] = []
    room = 0

    def entries(ff: FunctionFacts, pairs: list[tuple[str, str]]) -> tuple[int, int]:
        lo = len(ents)
        for name, scope in pairs:
            mode, cfid = _mode(ff, name, scope)
            ents.append([names(name), mode, cfid])
        return lo, len(ents)

    for fid in sorted(facts):
        ff = facts[fid]
        ftab[fid] = [len(stab), len(btab), ff.n_blocks, ff.entry_block, ff.is_generator, ff.kind == "class",
                     ff.module, 1]
        for b in range(ff.n_blocks):
            stmts = ff.block_stmts[b]
            lo, clo = len(bs_stmt), len(cd_pred)
            bs_stmt.extend(stmts)
            cd_pred.extend(ff.cd[b])
            btab.append([lo, len(bs_stmt), clo, len(cd_pred), ff.dyn_entries.get(b, -1)])
        pos = {s: i for b in ff.block_stmts for i, s in enumerate(b)}
        cost = [0] * ff.n_blocks
        for sid in range(len(ff.stmt_block)):
            unknown = bool(ff.callees.get(sid, set()) - PURE_CALLS - py_names)
            u = entries(ff, ff.uses.get(sid, []))
            d = entries(ff, ff.defs.get(sid, []))
            k = entries(ff, ff.kills.get(sid, []))
            stab.append([ff.stmt_block[sid], pos.get(sid, -1), ff.stmt_label[sid] == "AugAssign",
                         ff.stmt_label[sid] == "Return", sid in ff.suspends, unknown, *u, *d, *k])
            b = ff.stmt_block[sid]
            if 0 <= b < ff.n_blocks:
                cost[b] += 3 * (u[1] - u[0]) + 2 * (d[1] - d[0]) + (k[1] - k[0]) + 4
        room = max(room, max(cost, default=0), max((len(s) for s in ff.block_stmts), default=0))
    n_slots = max(log.slots, default=-1) + 1
    sltab = np.zeros((n_slots, 9), np.int64)
    sltab[:, K.SL_FID] = -1
    sl_names: list[list[int]] = []
    for g, info in log.slots.items():
        ff = facts.get(info.fid)
        if ff is None:
            continue
        lo = len(sl_names)
        if info.kind == "def" and info.what not in ("<return>", "<yield>"):
            for name in info.what.split(","):
                mode, cfid = _mode(ff, name, info.scope or "local")
                sl_names.append([names(name), mode, cfid])
        sltab[g] = [info.fid, info.sid, _KINDS[info.kind], _OPS.get(info.op, K.OP_READ),
                    info.what in ("<return>", "<yield>"), info.what == "[]", names(info.what), lo, len(sl_names)]
        room = max(room, len(sl_names) - lo)
    effect = np.zeros((len(_MUTABLE), max(len(names.ids), 1)), np.int64)
    for m, typ in enumerate(_MUTABLE):
        for name, j in names.ids.items():
            eff = KNOWN_EFFECTS.get((typ, name))
            if eff is not None:
                effect[m, j] = K.E_DEF if eff == "def" else K.E_USE
    serials = np.array(sorted(log.object_types), np.int64)
    ser_mut = np.array([_MUTABLE.index(t) if t in BUILTIN_MUTABLE else -1
                        for t in (log.object_types[s].removeprefix("builtins.") for s in serials.tolist())],
                       np.int64)

    def arr(rows: list[list[int]], width: int) -> np.ndarray:
        return np.array(rows, np.int64).reshape(-1, width)

    return {"ftab": ftab, "btab": arr(btab, 5), "bs_stmt": np.array(bs_stmt, np.int64),
            "cd_pred": np.array(cd_pred, np.int64), "stab": arr(stab, 12), "ents": arr(ents, 3),
            "sltab": sltab, "sl_names": arr(sl_names, 3), "ser_sorted": serials, "ser_mut": ser_mut,
            "effect": effect, "room": 2 * room + 64, "names": list(names.ids)}


def decode(rec: Any, facts: dict[int, FunctionFacts], log: CaptureLog) -> Decoded:
    """Run the decoding pass over every stream of an open recording that has a capture log."""
    t0 = time.perf_counter()
    tab = tables(facts, log)
    evs, ev_ptr, recs, rec_ptr, sids = [], [0], [], [0], []
    for st in rec.streams():
        sl = log.streams.get(st.sid)
        if sl is None:
            continue
        ev = np.asarray(rec.events(st.sid), np.int64)
        if _outside(ev):
            _refuse_part(rec)
        evs.append(ev)
        ev_ptr.append(ev_ptr[-1] + ev.size)
        recs.append(sl)
        rec_ptr.append(rec_ptr[-1] + sl.pos.size)
        sids.append(st.sid)

    def cat(parts: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)

    t1 = time.perf_counter()
    r_slot, r_tag, r_val = cat([r.slot for r in recs]), cat([r.tag for r in recs]), cat([r.val for r in recs])
    status, cnt, insts, acc, calls, locs, keys, rec_inst = K.decode_streams(
        cat(evs), np.array(ev_ptr, np.int64), cat([r.pos for r in recs]), r_slot, r_tag, r_val,
        np.array(rec_ptr, np.int64),
        np.array(sids, np.int64), tab["ftab"], tab["btab"], tab["bs_stmt"], tab["cd_pred"], tab["stab"],
        tab["ents"], tab["sltab"], tab["sl_names"], tab["ser_sorted"], tab["ser_mut"], tab["effect"],
        tab["room"])
    t2 = time.perf_counter()
    if status != K.OK:
        raise StoreError(f"{rec.path}: damaged full-mode recording ({_STATUS.get(int(status), 'bad data')})")
    ni, na, nc, nl, nk = (int(cnt[c]) for c in (K.C_INST, K.C_ACC, K.C_CALLS, K.C_LOCS, K.C_KEYS))
    insts, acc = insts[:ni], acc[:na]
    return Decoded(*(insts[:, j].copy() for j in range(6)), *(acc[:, j].copy() for j in range(4)),
                   calls[:nc].copy(), locs[:nl, :3].copy(), [(int(t), int(v)) for t, v in keys[:nk, :2].tolist()],
                   tab["names"], rec_inst, int(cnt[K.C_UNKNOWN]),
                   {"tables_s": t1 - t0, "kernel_s": t2 - t1}, r_slot, r_tag, r_val,
                   np.array(rec_ptr, np.int64), sids)


def _outside(ev: np.ndarray) -> bool:
    """Whether a stream has events outside any activation (the pass would skip them: a block,
    LEAVE or EXC at depth 0).  An EXC's operand (a statement id or -1) is no event."""
    operand = np.zeros(ev.size, bool)
    operand[1:] = ev[:-1] == K.EXC
    enter = ev <= -K.ENTER_BASE
    step = enter.astype(np.int64) - ((ev == K.LEAVE) & ~operand)
    depth = np.cumsum(step) - step                 # before each event
    return bool(np.any((depth <= 0) & ~enter & ~operand))


def _refuse_part(rec: Any) -> None:
    """A stream that begins inside activations: a fork child's part whose parent had stored events
    before the fork (the part's streams go on from there); read alone, statements of those
    activations would answer "did not run" (review21f MED-2)."""
    process = rec.meta.get("process")              # (store.schema.PROCESS_KEY)
    if isinstance(process, dict) and process.get("start") == "fork":
        raise UsageError(f"{rec.path}: a fork child's part whose activations began in its parent: "
                         "values, deps and slice cannot read it alone")
    raise StoreError(f"{rec.path}: damaged full-mode recording (events outside any activation)")
