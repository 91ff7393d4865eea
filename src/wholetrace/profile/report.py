"""Profile reports from per-function counts: annotated source text, JSON and lcov (DA/BRDA/FN).

Inputs are :class:`FunctionProfile` records: a function's CFG with its block, statement and
static edge counts (edge ``i`` is ``cfg.edges[i]``), from ``propagate_counts`` in `count`
mode or from a `blocks` trace (:func:`trace_edge_counts`, :func:`profiles_from_recording`).

Rules.  A line's count is the count of the first statement starting on it (within a
function the lowest statement id; across functions sharing a line, the statement with the
smallest column).  A *predicate* is a block with two or more static out-edges; its line is
the line of its last statement, and each out-edge is one branch, named by its edge kind,
or by its target's first line when kinds repeat (``"exit"`` for EXIT).  Dynamic exception
edges are not branches.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from wholetrace.ids import ENTRY, EXIT
from wholetrace.instrument.cfg import CFG
from wholetrace.events import ENTER_BASE, EXC, LEAVE


@dataclass
class FunctionProfile:
    """Counts of one function (one code body)."""

    fid: int
    file: str
    qualname: str
    cfg: CFG
    blocks: Sequence[int]
    stmts: Sequence[int]
    edges: Sequence[int]
    source: str = ""                      # the function's source lines from ``cfg.firstline``
    activations: int | None = None        # ENTER events (generator resumptions included)

    @property
    def calls(self) -> int:
        """Activations started: executions of ENTRY's out-edges (or ENTER events if none)."""
        out = [i for i, e in enumerate(self.cfg.edges) if e.src == ENTRY]
        started = sum(int(self.edges[i]) for i in out)
        return started if started or self.activations is None else int(self.activations)

    @property
    def weight(self) -> int:
        """Total block executions: how hot the function is."""
        return int(sum(int(c) for c in self.blocks))


@dataclass(frozen=True)
class Branch:
    """One static out-edge of a predicate block with its count (``taken`` None: block never ran)."""

    line: int
    block: int
    index: int
    name: str
    taken: int | None


# ----------------------------------------------------------------------------- counting

def trace_edge_counts(streams: Iterable[np.ndarray], cfgs: dict[int, CFG]) -> dict[int, np.ndarray]:
    """Static edge counts implied by `blocks` event streams (EXC edges excluded).

    A resumed generator continues from one of its suspended ``yield`` blocks that has an
    edge to the block it records next (or, thrown into, from the block of the EXC record's
    statement); a resumption that leaves without a block and without
    a nested activation took the ``yield`` block's edge to EXIT (one without an edge to EXIT
    re-suspended, as ``yield from`` does).
    """
    index = {f: {(int(e.src), int(e.dst)): i for i, e in enumerate(c.edges)} for f, c in cfgs.items()}
    susp = {f: {b.id for b in c.blocks if any(c.stmts[s].suspends for s in b.stmts)} for f, c in cfgs.items()}
    counts = {f: np.zeros(len(c.edges), np.int64) for f, c in cfgs.items()}
    suspended: dict[int, Counter[int]] = {}
    for ev in streams:
        stack: list[list[Any]] = []       # [fid, last block | None, after EXC, had a child]
        vals = np.asarray(ev).tolist()
        i = 0
        while i < len(vals):
            v = vals[i]
            i += 1
            if v <= -ENTER_BASE:
                if stack:
                    stack[-1][3] = True
                stack.append([-v - ENTER_BASE, None, False, False])
            elif v == EXC:
                sid = vals[i] if i < len(vals) else -1
                i += 1
                if stack:
                    fr = stack[-1]
                    if fr[1] is None and cfgs[fr[0]].is_generator and sid >= 0:
                        # thrown in at a suspended yield: that suspension is used up
                        pool = suspended.get(fr[0], Counter())
                        y = cfgs[fr[0]].stmts[sid].block
                        if pool[y]:
                            pool[y] -= 1
                    fr[2] = True
            elif not stack:
                continue
            elif v == LEAVE:
                f, last, exc, child = stack.pop()
                if exc:
                    continue
                if last is None:
                    ys = [y for y, n in suspended.get(f, {}).items() if n and (y, EXIT) in index[f]]
                    if cfgs[f].is_generator and ys and not child:
                        counts[f][index[f][(ys[0], EXIT)]] += 1
                    elif (ENTRY, EXIT) in index[f] and not cfgs[f].is_generator:
                        counts[f][index[f][(ENTRY, EXIT)]] += 1
                elif last in susp[f]:
                    suspended.setdefault(f, Counter())[last] += 1
                elif (last, EXIT) in index[f]:
                    counts[f][index[f][(last, EXIT)]] += 1
            elif v >= 0:
                fr = stack[-1]
                f, last = fr[0], fr[1]
                if fr[2]:
                    fr[2] = False
                else:
                    src = ENTRY if last is None else last
                    if last is None and cfgs[f].is_generator:
                        pool = suspended.get(f, {})
                        ys = [y for y, n in pool.items() if n and (y, v) in index[f]]
                        if ys:
                            pool[ys[0]] -= 1
                            src = ys[0]
                    e = index[f].get((src, v))
                    if e is not None:
                        counts[f][e] += 1
                fr[1] = v
    return counts


def profiles_from_recording(rec: Any) -> list[FunctionProfile]:
    """Profiles of every function of an open `blocks` recording."""
    from wholetrace.analysis.blockcounts import recording_counts

    tc, cfgs = recording_counts(rec)
    edges = trace_edge_counts((rec.events(s.sid) for s in rec.streams()), cfgs)
    return [FunctionProfile(f.fid, f.file, f.qualname, cfgs[f.fid], tc.blocks[f.fid], tc.stmts[f.fid],
                            edges[f.fid], f.source, tc.activations.get(f.fid))
            for f in rec.functions()]


# ----------------------------------------------------------------------------- lines and branches

def _first_stmts(p: FunctionProfile) -> dict[int, tuple[int, int]]:
    """line -> (column, statement id) of the function's first statement starting there."""
    first: dict[int, tuple[int, int]] = {}
    for st in p.cfg.stmts:
        if st.line not in first:
            first[st.line] = (st.col, st.id)
    return first


def line_counts(profiles: Iterable[FunctionProfile]) -> dict[str, dict[int, int]]:
    """file -> line -> count (the first statement starting on the line)."""
    best: dict[str, dict[int, tuple[int, int, int]]] = {}
    for p in profiles:
        per = best.setdefault(p.file, {})
        for line, (col, sid) in _first_stmts(p).items():
            cand = (col, p.fid, int(p.stmts[sid]))
            if line not in per or cand[:2] < per[line][:2]:
                per[line] = cand
    return {f: {ln: c for ln, (_col, _fid, c) in sorted(per.items())} for f, per in best.items()}


def branches(p: FunctionProfile) -> list[Branch]:
    """Every branch of the function's predicate blocks, in block then edge order."""
    cfg = p.cfg
    out_edges: dict[int, list[int]] = {}
    for i, e in enumerate(cfg.edges):
        out_edges.setdefault(int(e.src), []).append(i)
    found: list[Branch] = []
    for b in sorted(out_edges):
        outs = out_edges[b]
        if len(outs) < 2 or b == ENTRY or not cfg.blocks[b].stmts:
            continue
        line = cfg.stmts[cfg.blocks[b].stmts[-1]].line
        kinds = Counter(cfg.edges[i].kind for i in outs)
        names: Counter[str] = Counter()
        ran = int(p.blocks[b]) > 0
        for k, i in enumerate(outs):
            e = cfg.edges[i]
            name = e.kind
            if kinds[e.kind] > 1:
                dst = cfg.blocks[e.dst]
                name = "exit" if e.dst == EXIT else str(cfg.stmts[dst.stmts[0]].line) if dst.stmts else str(e.dst)
            if int(p.edges[i]) < 0:
                continue   # not measured (count-naive counts blocks only)
            names[name] += 1
            if names[name] > 1:
                name = f"{name}#{names[name]}"
            found.append(Branch(line, b, k, name, int(p.edges[i]) if ran else None))
    return found


def branch_counts(profiles: Iterable[FunctionProfile]) -> dict[str, dict[int, dict[str, int]]]:
    """file -> predicate line -> branch name -> count."""
    out: dict[str, dict[int, dict[str, int]]] = {}
    for p in profiles:
        per = out.setdefault(p.file, {})
        for br in branches(p):
            slot = per.setdefault(br.line, {})
            name = br.name if br.name not in slot else f"{br.name}@{p.qualname}"
            slot[name] = br.taken or 0
    return {f: dict(sorted(per.items())) for f, per in out.items() if per}


def _hottest(profiles: Iterable[FunctionProfile]) -> list[FunctionProfile]:
    return sorted(profiles, key=lambda p: (-p.weight, p.file, p.cfg.firstline, p.qualname))


# ----------------------------------------------------------------------------- formats

def report_json(profiles: Sequence[FunctionProfile]) -> dict[str, Any]:
    """``{"lines": {path: {line: n}}, "branches": {path: {line: {name: n}}}, "functions": [...]}``."""
    lines = line_counts(profiles)
    brs = branch_counts(profiles)
    return {
        "lines": {f: {str(ln): c for ln, c in per.items()} for f, per in sorted(lines.items())},
        "branches": {f: {str(ln): d for ln, d in per.items()} for f, per in sorted(brs.items())},
        "functions": [{"name": p.qualname, "file": p.file, "firstline": p.cfg.firstline,
                       "lastline": p.cfg.lastline, "kind": p.cfg.kind, "calls": p.calls,
                       "blocks": p.weight} for p in _hottest(profiles)],
    }


def write_json(profiles: Sequence[FunctionProfile]) -> str:
    return json.dumps(report_json(profiles), indent=1) + "\n"


def report_text(profiles: Sequence[FunctionProfile], *, limit: int | None = None) -> str:
    """Annotated source, hottest functions first: count beside each line, branches beside predicates."""
    out: list[str] = []
    for p in _hottest(profiles)[:limit]:
        first = _first_stmts(p)
        per_line: dict[int, list[str]] = {}
        for br in branches(p):
            per_line.setdefault(br.line, []).append(f"{br.name}: {'-' if br.taken is None else br.taken}")
        out.append(f"== {p.qualname}  ({p.file}:{p.cfg.firstline}-{p.cfg.lastline})  "
                   f"calls {p.calls}, blocks {p.weight}")
        text = p.source.splitlines()
        for k in range(p.cfg.firstline, p.cfg.lastline + 1):
            src = text[k - p.cfg.firstline] if 0 <= k - p.cfg.firstline < len(text) else ""
            count = f"{int(p.stmts[first[k][1]]):>10}" if k in first else " " * 10
            tail = f"    [{', '.join(per_line[k])}]" if k in per_line else ""
            out.append(f"{count} {k:>6}  {src}{tail}".rstrip())
        out.append("")
    return "\n".join(out)


def report_lcov(profiles: Sequence[FunctionProfile], *, test_name: str = "") -> str:
    """lcov tracefile text: per file TN, SF, FN/FNDA/FNF/FNH, DA, BRDA/BRF/BRH, LF/LH, end_of_record."""
    lines = line_counts(profiles)
    by_file: dict[str, list[FunctionProfile]] = {}
    for p in profiles:
        by_file.setdefault(p.file, []).append(p)
    out: list[str] = []
    for file in sorted(by_file):
        funcs = sorted(by_file[file], key=lambda p: (p.cfg.firstline, p.qualname))
        out += [f"TN:{test_name}", f"SF:{file}"]
        names = _unique_names(funcs)
        for p, name in zip(funcs, names):
            out.append(f"FN:{p.cfg.firstline},{name}")
        for p, name in zip(funcs, names):
            out.append(f"FNDA:{p.calls},{name}")
        out += [f"FNF:{len(funcs)}", f"FNH:{sum(1 for p in funcs if p.calls > 0)}"]
        da = lines.get(file, {})
        for ln, c in da.items():
            out.append(f"DA:{ln},{c}")
        brs = sorted(((br.line, p.cfg.firstline, p.fid, br.block, br.index, br) for p in funcs
                      for br in branches(p)), key=lambda t: t[:5])
        block_no: dict[tuple[int, int], int] = {}
        for ln, _fl, fid, blk, idx, br in brs:
            no = block_no.setdefault((fid, blk), len(block_no))
            out.append(f"BRDA:{ln},{no},{idx},{'-' if br.taken is None else br.taken}")
        out += [f"BRF:{len(brs)}", f"BRH:{sum(1 for t in brs if t[5].taken)}"]
        out += [f"LF:{len(da)}", f"LH:{sum(1 for c in da.values() if c > 0)}", "end_of_record"]
    return "\n".join(out) + ("\n" if out else "")


def _unique_names(funcs: Sequence[FunctionProfile]) -> list[str]:
    """lcov function names: qualnames without commas or spaces, made unique within the file."""
    seen: Counter[str] = Counter()
    names = []
    for p in funcs:
        base = p.qualname.replace(",", "_").replace(" ", "_")
        seen[base] += 1
        names.append(base if seen[base] == 1 else f"{base}#{seen[base]}")
    return names
