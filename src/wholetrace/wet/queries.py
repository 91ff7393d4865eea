"""WET queries: criteria (FILE:LINE[#K], the last output), values, dependences of an instance, dynamic slices."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from wholetrace.errors import UsageError
from wholetrace.store import Recording
from wholetrace.wet.capture import CaptureLog
from wholetrace.wet.graph import WET, wet_of
from wholetrace.wet.static import function_facts


@dataclass
class Session:
    """A recording opened for queries: its WET, capture log, files and statement lines."""

    wet: WET
    log: CaptureLog
    files: dict[int, str]                   # fid -> file
    lines: dict[int, list[int]]             # fid -> statement id -> line
    sources: dict[str, str]
    prints: set[tuple[int, int]]            # (fid, sid) of statements calling print()
    inst_line: np.ndarray                   # instance -> global line key (file index << 32 | line)
    file_index: dict[str, int]
    inst_print: np.ndarray                  # instance -> is it a statement calling print()

    def where(self, inst: int) -> str:
        """``file:line#k`` of an instance (k: its ordinal among the instances of that line)."""
        fid, sid = int(self.wet.fid[inst]), int(self.wet.sid[inst])
        line = self.lines[fid][sid]
        key = self.inst_line[inst]
        k = int(np.count_nonzero(self.inst_line[:inst + 1] == key))
        return f"{os.path.basename(self.files[fid])}:{line}#{k}"


def open_session(path: str) -> Session:
    if not os.path.exists(path):
        raise UsageError(f"no such recording: {path}")
    wet, log = wet_of(path)
    with Recording(path) as rec:
        fns = rec.functions()
        facts = function_facts(rec, log)
    files = {f.fid: f.file for f in fns}
    lines = {f.fid: [s[2] for s in f.cfg["stmts"]] for f in fns}
    sources: dict[str, str] = {}
    for f in fns:
        if len(f.source) > len(sources.get(f.file, "")):
            sources[f.file] = f.source
    file_index = {name: i for i, name in enumerate(sorted(set(files.values())))}
    n = wet.n_inst
    prints = {(fid, sid) for fid, ff in facts.items() for sid in ff.prints}
    # one table row per (function, statement): its line key and whether it calls print()
    base = np.zeros(max(files, default=-1) + 2, np.int64)
    for fid in files:
        base[fid + 1] = len(lines[fid])
    base = np.cumsum(base)
    row_key = np.full(int(base[-1]) + 1, -1, np.int64)     # the last row: unknown functions
    row_print = np.zeros(row_key.size, bool)
    for fid in files:
        row_key[base[fid]:base[fid + 1]] = (file_index[files[fid]] << 32) | np.array(lines[fid], np.int64)
    for fid, sid in prints:
        if fid in files and 0 <= sid < len(lines[fid]):
            row_print[base[fid] + sid] = True
    fid, sid = wet.fid[:n], wet.sid[:n]
    known = (fid >= 0) & (fid < base.size - 1) & (sid >= 0)
    known[known] = sid[known] < (base[fid[known] + 1] - base[fid[known]])
    rows = np.where(known, base[np.where(known, fid, 0)] + sid, row_key.size - 1)
    key = np.full(wet.fid.shape[0], -1, np.int64)
    key[:n] = row_key[rows]
    return Session(wet, log, files, lines, sources, prints, key, file_index, row_print[rows])


def line_instances(s: Session, criterion: str) -> tuple[str, int, np.ndarray]:
    """(file, line, instances in time order) of ``FILE:LINE``; UsageError if nothing matches."""
    file, sep, line_text = criterion.rpartition(":")
    if not sep or not file or not line_text.isdigit():
        raise UsageError(f"bad criterion {criterion!r}: expected FILE:LINE[#K]")
    line = int(line_text)
    matches = [f for f in s.file_index if f == file or os.path.abspath(f) == os.path.abspath(file)
               or f.endswith(os.sep + file) or os.path.basename(f) == file]
    if not matches:
        raise UsageError(f"{file}: not a file of this recording")
    if len(matches) > 1:
        raise UsageError(f"{file}: ambiguous, it names {len(matches)} recorded files")
    key = (s.file_index[matches[0]] << 32) | line
    insts = np.nonzero(s.inst_line == key)[0]
    if insts.size == 0:
        raise UsageError(f"{file}:{line}: no statement on this line ran")
    return matches[0], line, insts


def instance(s: Session, criterion: str) -> tuple[str, int]:
    """(label, instance) of ``FILE:LINE[#K]`` (K-th instance from 1; default the last)."""
    base, hash_, k_text = criterion.partition("#")
    _f, _l, insts = line_instances(s, base)
    if not hash_:
        return f"{base}#{insts.size}", int(insts[-1])
    if not k_text.isdigit() or not 1 <= int(k_text) <= insts.size:
        raise UsageError(f"{criterion}: instance #{k_text} does not exist (1..{insts.size})")
    return criterion, int(insts[int(k_text) - 1])


def last_output(s: Session) -> tuple[str, int]:
    """The instance of the ``print()`` statement that ran last."""
    got = np.flatnonzero(s.inst_print)
    best = int(got[-1]) if got.size else -1
    if best < 0:
        raise UsageError("no print() call ran in this recording: give FILE:LINE instead of --output")
    return s.where(best), best


def defs_of(s: Session, insts: np.ndarray) -> dict[int, dict[str, str]]:
    """Values each instance defined (from its value records), rendered."""
    out: dict[int, dict[str, str]] = {int(i): {} for i in insts}
    w, log = s.wet, s.log
    slot = np.concatenate([st.slot for st in log.streams.values()]) if log.streams else np.zeros(0, np.int64)
    tag = np.concatenate([st.tag for st in log.streams.values()]) if log.streams else np.zeros(0, np.uint8)
    val = np.concatenate([st.val for st in log.streams.values()]) if log.streams else np.zeros(0, np.int64)
    for r in np.nonzero(np.isin(w.rec_inst, insts))[0].tolist():
        info = log.slots.get(int(slot[r]))
        if info is None or info.kind != "def":
            continue
        for name in info.what.split(",") if info.what.isidentifier() or "," in info.what else [info.what]:
            out[int(w.rec_inst[r])][name] = log.render(int(tag[r]), int(val[r]))
    return out


def values(s: Session, criterion: str, var: str | None, first: int | None, last: int | None) -> dict[str, Any]:
    file, line, insts = line_instances(s, criterion)
    ordinals = np.arange(1, insts.size + 1)
    if first is not None:
        insts, ordinals = insts[:first], ordinals[:first]
    elif last is not None:
        insts, ordinals = insts[max(0, insts.size - last):], ordinals[max(0, insts.size - last):]
    defs = defs_of(s, insts)
    rows = []
    for k, i in zip(ordinals.tolist(), insts.tolist()):
        d = defs[i] if var is None else {n: v for n, v in defs[i].items() if n == var}
        if var is not None and not d:
            continue
        rows.append({"instance": k, "time": i, "defs": d})
    return {"criterion": f"{os.path.basename(file)}:{line}", "instances": rows}


def deps(s: Session, criterion: str) -> dict[str, Any]:
    label, i = instance(s, criterion)
    w = s.wet
    lo, hi = np.searchsorted(w.d_use, [i, i + 1])
    used = [{"location": w.loc_name(int(loc), s.log), "from": s.where(int(d)) if d < w.n_inst else "<merge>",
             "time": int(d)} for d, loc in zip(w.d_def[lo:hi].tolist(), w.d_loc[lo:hi].tolist())]
    for u in used:
        if u["from"] == "<merge>":
            u["from"] = "element writes since the last whole write"
    cd = int(w.cd[i])
    calls = [s.where(int(d)) for d in w.c_dst[w.c_src == i].tolist()]
    return {"criterion": label, "time": i, "defs": defs_of(s, np.array([i]))[i], "uses": used,
            "control": {"from": s.where(cd), "time": cd} if cd >= 0 else None, "calls": calls}


def slice_(s: Session, start: list[int], forward: bool) -> dict[str, Any]:
    w = s.wet
    insts = w.slice(np.array(start, np.int64), forward=forward)
    lines: dict[str, dict[int, int]] = {}
    names = {i: f for f, i in s.file_index.items()}
    keys, counts = np.unique(s.inst_line[insts], return_counts=True)
    for key, count in zip(keys.tolist(), counts.tolist()):
        if key >= 0:
            lines.setdefault(names[key >> 32], {})[key & 0xFFFFFFFF] = count
    notes = []
    if w.meta.get("unknown_calls"):
        notes.append(f"over-approximate: {w.meta['unknown_calls']} calls of unknown C functions on mutable "
                     "objects count as whole-object uses and defs")
    if w.meta.get("n_streams", 1) > 1:
        notes.append("approximate across threads: threads are ordered where a value record saw a thread "
                     "switch, not at every statement" if w.meta.get("interleaved") else
                     "approximate across threads: shared locations are replayed thread after thread")
    return {"lines": lines, "instances": int(insts.size), "notes": notes}


def var_start(s: Session, i: int, var: str) -> list[int]:
    """Where the criterion's ``var`` came from: the instances that defined what it used of it."""
    w = s.wet
    lo, hi = np.searchsorted(w.d_use, [i, i + 1])
    got = [int(d) for d, loc in zip(w.d_def[lo:hi].tolist(), w.d_loc[lo:hi].tolist())
           if w.loc_name(int(loc), s.log) == var]
    if not got and var in defs_of(s, np.array([i]))[i]:
        got = [i]
    if not got:
        raise UsageError(f"the criterion neither uses nor defines {var!r}")
    return got
