"""Slow reference twin of ``kernels/wetdecode.py``: the decoding pass with dicts and objects.

It was the production decoder before the kernel; the tests check that the kernel produces
the same instances, access log, calls and record attribution on golden and corpus programs.

One pass per stream over the blocks trace with the capture log interleaved by position
(docs/design.md "WET dependences").  Statements of a block are materialised lazily, in
order: a statement *starts* (its instance exists, its static uses are logged) when a value
record of it arrives, when it makes a call, or when its block ends; it *finishes* (its
static defs are logged) when a later statement starts or the block ends.  A statement where
an exception left the block finishes without its static defs (partial defs: only what its
records saw).  The access log is what the data-dependence kernel replays.

Invariant: instance ids increase with the start of the statement instances in one stream,
so within a thread they are the execution order (the ``time`` of the queries).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wholetrace.events import ENTER_BASE, EXC, LEAVE
from wholetrace.ids import ENTRY
from wholetrace.wet.static import BUILTIN_MUTABLE, KNOWN_EFFECTS, PURE_CALLS, FunctionFacts

from wholetrace.runtime.values import OBJ
from wholetrace.wet.decode import ATTR, DEF, ELEM, GLOBAL, LOCAL, NS, RESUME, RET, STMT, USE, WDEF, WHOLE, WUSE  # noqa: F401


@dataclass
class Frame:
    fid: int
    id: int
    entry: int                                          # instance that created it (-1: none)
    last_pred: dict[int, int] = field(default_factory=dict)
    last_inst: dict[int, int] = field(default_factory=dict)   # statement -> its last instance
    suspended: int = -1                                 # statement it is suspended in


@dataclass
class Act:
    """One activation record (a frame between ENTER and LEAVE)."""

    frame: Frame
    ar: int
    entry: int
    ff: FunctionFacts
    block: int = -1
    stmts: list[int] = field(default_factory=list)
    nxt: int = 0                     # index of the next statement to start
    cur: int = -1                    # instance of the started, unfinished statement
    cur_sid: int = -1
    binds: dict[str, tuple[int, int]] = field(default_factory=dict)
    precise: set[int] = field(default_factory=set)
    implied: list[int] = field(default_factory=list)   # serials named by the statement's uses
    sub: tuple[int, str] | None = None                 # an object of [] waiting for its key
    exc: int = -1                                      # raising instance of the last EXC
    first: bool = True
    calls: bool = False                                # the started statement entered Python code
    class_defs: dict[int, None] = field(default_factory=dict)   # class body: locations it defined


class Decoder:
    """Builds the instance table and access log; ``finish`` returns numpy arrays."""

    def __init__(self, facts: dict[int, FunctionFacts], log: Any) -> None:
        self.facts = facts
        self.log = log
        self.py_names = {q.rsplit(".", 1)[-1] for q in (f.qualname for f in facts.values())}
        self.pos_in_block = {fid: {s: i for b in ff.block_stmts for i, s in enumerate(b)}
                             for fid, ff in facts.items()}
        self.i_fid: list[int] = []
        self.i_sid: list[int] = []
        self.i_frame: list[int] = []
        self.i_stream: list[int] = []
        self.i_kind: list[int] = []
        self.i_cd: list[int] = []
        self.a_inst: list[int] = []
        self.a_op: list[int] = []
        self.a_loc: list[int] = []
        self.a_fb: list[int] = []
        self.locs: dict[tuple[int, int, int], int] = {}
        self.names: dict[str, int] = {}
        self.keys: dict[tuple[int, int], int] = {}
        self.value_of: dict[int, tuple[int, int]] = {}
        self.calls: list[tuple[int, int]] = []
        self.rec_inst: list[np.ndarray] = []
        self.unknown_calls = 0
        self.n_frames = 0
        self.n_acts = 0
        self.last_frame: dict[int, int] = {}        # fid -> its most recent frame id
        self.suspended: dict[int, list[Frame]] = {}
        self.stream = 0

    # ------------------------------------------------------------------ locations and log

    def loc(self, k: int, a: int, b: int = 0) -> int:
        return self.locs.setdefault((k, a, b), len(self.locs))

    def name(self, n: str) -> int:
        return self.names.setdefault(n, len(self.names))

    def access(self, inst: int, op: int, loc: int, fb: int = -1) -> None:
        self.a_inst.append(inst)
        self.a_op.append(op)
        self.a_loc.append(loc)
        self.a_fb.append(fb)

    def name_loc(self, act: Act, name: str, scope: str) -> tuple[int, int]:
        """(location, fallback instance) of a name used or defined by a statement of ``act``."""
        ff = act.ff
        if scope in ("local", "class"):
            return self.loc(LOCAL, act.frame.id, self.name(name)), act.frame.entry
        if scope in ("free", "outer") and name in ff.closure:
            fr = self.last_frame.get(ff.closure[name], -1)
            return self.loc(LOCAL, fr, self.name(name)), -1
        return self.loc(GLOBAL, ff.module, self.name(name)), -1

    # ------------------------------------------------------------------ instances

    def new_inst(self, act: Act | None, fid: int, sid: int, frame: int, kind: int, cd: int) -> int:
        i = len(self.i_fid)
        self.i_fid.append(fid)
        self.i_sid.append(sid)
        self.i_frame.append(frame)
        self.i_stream.append(self.stream)
        self.i_kind.append(kind)
        self.i_cd.append(cd)
        if act is not None and act.first:
            act.first = False
            if act.entry >= 0:
                self.calls.append((act.entry, i))
        return i

    def start(self, act: Act) -> int:
        """Start the next statement of the current block; its instance."""
        self.finish(act)
        ff, fr = act.ff, act.frame
        sid = act.stmts[act.nxt]
        act.nxt += 1
        cd = -1
        for p in ff.cd[act.block]:
            c = act.entry if p == ENTRY else fr.last_pred.get(p, -1)
            cd = max(cd, c)
        inst = self.new_inst(act, ff.fid, sid, fr.id, STMT, cd)
        act.cur, act.cur_sid = inst, sid
        fr.last_inst[sid] = inst
        for name, scope in ff.uses.get(sid, ()):
            loc, fb = self.name_loc(act, name, scope)
            self.access(inst, USE, loc, fb)
            v = self.value_of.get(loc)
            if v is not None and v[0] == OBJ:
                act.implied.append(v[1])
        return inst

    def finish(self, act: Act, partial: bool = False) -> None:
        """Finish the started statement: whole-object effects of calls, then its static defs."""
        inst = act.cur
        if inst < 0:
            return
        ff, sid = act.ff, act.cur_sid
        self.flush_sub(act, inst)
        callees = ff.callees.get(sid, set())
        unknown = bool(callees - PURE_CALLS - self.py_names)
        for serial in dict.fromkeys(act.implied):
            if serial in act.precise:
                continue
            w = self.loc(WHOLE, serial)
            self.access(inst, WUSE, w)
            if ff.stmt_label[sid] == "AugAssign":            # x += y mutates a mutable x in place
                self.access(inst, WDEF, w)
            elif unknown:
                self.access(inst, WDEF, w)
                self.unknown_calls += 1
        if not partial:
            for name, scope in ff.defs.get(sid, ()):
                loc, _fb = self.name_loc(act, name, scope)
                self.access(inst, DEF, loc)
                if ff.kind == "class":
                    act.class_defs[loc] = None
                v = act.binds.get(name)
                if v is None:
                    self.value_of.pop(loc, None)
                else:
                    self.value_of[loc] = v
            for name, scope in ff.kills.get(sid, ()):
                loc, _fb = self.name_loc(act, name, scope)
                self.access(inst, DEF, loc)
                self.value_of.pop(loc, None)
        if act.stmts and sid == act.stmts[-1] and act.nxt == len(act.stmts):
            act.frame.last_pred[act.block] = inst
        act.cur, act.cur_sid = -1, -1
        act.binds, act.precise, act.implied = {}, set(), []

    def end_block(self, act: Act, upto: int | None = None) -> None:
        """Run the rest of the block (to statement index ``upto`` exclusive, if given)."""
        stop = len(act.stmts) if upto is None else upto
        while act.nxt < stop:
            self.start(act)
        self.finish(act)

    # ------------------------------------------------------------------ records

    def flush_sub(self, act: Act, inst: int) -> None:
        if act.sub is not None:
            serial, op = act.sub
            act.sub = None
            w = self.loc(WHOLE, serial)
            self.access(inst, WUSE, w)
            if op != "read":
                self.access(inst, WDEF, w)

    def record(self, act: Act, slot: Any, tag: int, val: int) -> int:
        """Attribute one value record to an instance of ``act``; the instance."""
        ff = act.ff
        if slot.sid < 0:                                   # except ... as name
            inst = act.exc if act.exc >= 0 else act.cur
            if inst >= 0:
                loc, _fb = self.name_loc(act, slot.what, slot.scope or "local")
                self.access(inst, DEF, loc)
                self.value_of[loc] = (tag, val)
            return inst
        j = self.pos_in_block[ff.fid].get(slot.sid, -1)
        in_block = j >= 0 and ff.stmt_block[slot.sid] == act.block
        if in_block and slot.sid != act.cur_sid and j >= act.nxt:
            while act.nxt <= j:
                self.start(act)
        elif not (in_block and slot.sid == act.cur_sid):
            inst = act.frame.last_inst.get(slot.sid, -1)    # a read-back after the block (for, with)
            if slot.kind == "def" and slot.op == "readback" and inst >= 0:
                loc, _fb = self.name_loc(act, slot.what, slot.scope or "local")
                self.value_of[loc] = (tag, val)
            return inst
        inst = act.cur
        if slot.kind == "def":
            if slot.what in ("<return>", "<yield>"):
                self.access(inst, DEF, self.loc(RET, act.ar))
            else:
                for name in slot.what.split(","):
                    act.binds[name] = (tag, val)
            return inst
        if slot.kind == "key":
            if act.sub is not None:
                serial, op = act.sub
                act.sub = None
                loc = self.loc(ELEM, serial, self.keys.setdefault((tag, val), len(self.keys)))
                self.heap(inst, op, loc)
            return inst
        self.flush_sub(act, inst)
        if tag != OBJ:
            return inst
        act.precise.add(val)
        if slot.what == "[]":
            act.sub = (val, slot.op)
            return inst
        typ = self.log.object_types.get(val, "").removeprefix("builtins.")
        if typ in BUILTIN_MUTABLE:
            w = self.loc(WHOLE, val)
            effect = KNOWN_EFFECTS.get((typ, slot.what))
            self.access(inst, WUSE, w)
            if effect != "use":
                self.access(inst, WDEF, w)
                if effect is None:
                    self.unknown_calls += 1
            return inst
        self.heap(inst, slot.op, self.loc(ATTR, val, self.name(slot.what)))
        return inst

    def heap(self, inst: int, op: str, loc: int) -> None:
        if op in ("read", "rw"):
            self.access(inst, USE, loc)
        if op in ("write", "rw", "del"):
            self.access(inst, DEF, loc)

    # ------------------------------------------------------------------ the stream

    def caller_inst(self, act: Act) -> int:
        if act.cur >= 0:
            return act.cur
        if act.nxt < len(act.stmts):
            return self.start(act)
        return act.frame.last_inst.get(act.stmts[-1], act.entry) if act.stmts else act.entry

    def enter(self, stack: list[Act], fid: int, nxt_event: int) -> None:
        ff = self.facts[fid]
        caller = self.caller_inst(stack[-1]) if stack else -1
        if stack:
            stack[-1].calls = True
        frame = None
        if ff.is_generator and self.suspended.get(fid) and nxt_event != ff.entry_block:
            frame = self.suspended[fid].pop()
        self.n_acts += 1
        if frame is None:
            frame = Frame(fid, self.n_frames, caller)
            self.n_frames += 1
            self.last_frame[fid] = frame.id
            act = Act(frame, self.n_acts, caller, ff)
        else:
            act = Act(frame, self.n_acts, caller, ff)
            sid = frame.suspended
            frame.suspended = -1
            if sid >= 0:                                   # the suspended statement resumes
                inst = self.new_inst(act, fid, sid, frame.id, RESUME, caller)
                act.cur, act.cur_sid = inst, sid
                frame.last_inst[sid] = inst
        stack.append(act)

    def leave(self, stack: list[Act]) -> None:
        act = stack.pop()
        ff = act.ff
        last = act.stmts[-1] if act.stmts else -1
        suspends = ff.is_generator and last >= 0 and act.nxt >= len(act.stmts) - 1 and \
            ff.stmt_label[last] != "Return" and self._suspends(ff, last)
        if suspends:
            while act.nxt < len(act.stmts):
                self.start(act)
            self.access(act.cur, DEF, self.loc(RET, act.ar))      # the value yielded
            self.finish(act, partial=True)
            act.frame.suspended = last
            self.suspended.setdefault(ff.fid, []).append(act.frame)
        else:
            self.end_block(act)
        if stack:
            caller = stack[-1]
            inst = caller.cur if caller.cur >= 0 else act.entry
            if inst >= 0:
                self.access(inst, USE, self.loc(RET, act.ar))
                for loc in act.class_defs:                 # a class is built from its namespace
                    if self.value_of.get(loc, (OBJ, 0))[0] == OBJ:       # def statements record no value
                        self.access(inst, USE, loc)
                    self.access(inst, NS, loc)

    def _suspends(self, ff: FunctionFacts, sid: int) -> bool:
        return sid in ff.suspends

    def exc(self, act: Act, sid: int) -> None:
        if not act.stmts:
            return
        j = act.stmts.index(sid) if sid in act.stmts else len(act.stmts) - 1
        if act.cur_sid != act.stmts[j]:
            if act.nxt > j:                    # already finished: it re-raised
                self.finish(act)
                act.exc = act.frame.last_inst.get(act.stmts[j], -1)
                act.nxt = len(act.stmts)
                return
            while act.nxt <= j:
                self.start(act)
        act.exc = act.cur
        self.finish(act, partial=True)
        act.nxt = len(act.stmts)

    def block(self, act: Act, b: int) -> None:
        self.end_block(act)
        act.block, act.stmts, act.nxt = b, act.ff.block_stmts[b], 0
        p = act.ff.dyn_entries.get(b)
        if p is not None and act.exc >= 0:
            act.frame.last_pred[p] = act.exc

    def stream_pass(self, sid: int, events: np.ndarray, pos: np.ndarray, slot: np.ndarray,
                    tag: np.ndarray, val: np.ndarray) -> None:
        self.stream = sid
        ev = events.tolist()
        pos_l, slot_l, tag_l, val_l = pos.tolist(), slot.tolist(), tag.tolist(), val.tolist()
        rec_inst = np.full(len(pos_l), -1, np.int64)
        slots = self.log.slots
        stack: list[Act] = []
        r, n_rec, n = 0, len(pos_l), len(ev)
        i = 0
        while i <= n:
            while r < n_rec and pos_l[r] <= i:
                info = slots.get(slot_l[r])
                if stack and info is not None and info.fid == stack[-1].ff.fid:
                    rec_inst[r] = self.record(stack[-1], info, tag_l[r], val_l[r])
                r += 1
            if i == n:
                break
            e = ev[i]
            if e >= 0:
                if stack:
                    self.block(stack[-1], e)
            elif e == LEAVE:
                if stack:
                    self.leave(stack)
            elif e == EXC:
                i += 1
                if stack and i < n:
                    self.exc(stack[-1], ev[i])
            elif e <= -ENTER_BASE:
                self.enter(stack, -e - ENTER_BASE, ev[i + 1] if i + 1 < n else -1)
            i += 1
        while stack:
            self.leave(stack)
        self.rec_inst.append(rec_inst)
