"""Text, Graphviz dot and JSON views of CFGs for `wholetrace cfg`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Sequence

from wholetrace.ids import ENTRY, EXIT
from wholetrace.instrument.cfg import CFG

if TYPE_CHECKING:
    from wholetrace.instrument.pathnum import EdgeProbe, Path, PathNumbering


def block_name(b: int) -> str:
    return "ENTRY" if b == ENTRY else "EXIT" if b == EXIT else f"B{b}"


def _stmt_text(cfg: CFG, sid: int, lines: Sequence[str]) -> str:
    s = cfg.stmts[sid]
    text = lines[s.line - 1].strip() if 0 < s.line <= len(lines) else ""
    if s.kind in ("with-exit", "finally-end", "star-end"):
        text = f"<{s.kind}>"
    elif s.kind == "for-iter":
        text = f"<iter> {text}"
    flags = ("call " if s.calls else "") + ("yield " if s.suspends else "")
    return f"s{s.id:<3} {s.line:>4}  {s.kind:<10} {flags:<11}{text[:60]}"


def to_text(cfg: CFG, lines: Sequence[str]) -> str:
    out = [f"{cfg.qualname}  ({cfg.kind}, lines {cfg.firstline}-{cfg.lastline}, "
           f"{len(cfg.blocks) - 2} blocks, {len(cfg.edges)} edges, fingerprint {cfg.fingerprint})"]
    for b in cfg.blocks:
        succ = ", ".join(f"{block_name(e.dst)}:{e.kind}{'*' if e.back else ''}" for e in cfg.succs(b.id))
        tags = (" [loop header]" if b.id in cfg.loop_headers else "") + (" [dynamic entry]" if b.dynamic_entry else "")
        out.append(f"  {block_name(b.id)}{tags} -> {succ or '-'}")
        out.extend(f"      {_stmt_text(cfg, sid, lines)}" for sid in b.stmts)
    return "\n".join(out)


def to_dot(cfgs: Sequence[CFG], lines: Sequence[str]) -> str:
    out = ["digraph wholetrace {", '  node [shape=box, fontname="monospace", fontsize=10];']
    for i, cfg in enumerate(cfgs):
        out.append(f'  subgraph cluster_{i} {{ label="{_esc(cfg.qualname)}";')
        for b in cfg.blocks:
            label = block_name(b.id) + "".join(
                "\\l" + _esc(_stmt_text(cfg, s, lines)[5:].strip()) for s in b.stmts) + ("\\l" if b.stmts else "")
            shape = ', shape=ellipse' if b.id in (ENTRY, EXIT) else ''
            style = ', style=dashed' if b.dynamic_entry else ''
            out.append(f'    f{i}b{b.id} [label="{label}"{shape}{style}];')
        for e in cfg.edges:
            style = ", style=bold" if e.back else ""
            out.append(f'    f{i}b{e.src} -> f{i}b{e.dst} [label="{e.kind}"{style}];')
        out.append("  }")
    out.append("}")
    return "\n".join(out)


def to_json(cfgs: Sequence[CFG], paths: Sequence[dict[str, object]] | None = None) -> str:
    rows = [c.to_json() for c in cfgs]
    if paths is not None:
        for row, p in zip(rows, paths):
            row["paths"] = p
    return json.dumps(rows, indent=1)


def _esc(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')


# --------------------------------------------------------------------------- path numbering (`cfg --paths`)

def _edge_name(cfg: CFG, e: int) -> str:
    edge = cfg.edges[e]
    return f"{block_name(edge.src)}->{block_name(edge.dst)}{'*' if edge.back else ''}"


def _probe_text(probe: "EdgeProbe") -> str:
    k, v = probe.kind, probe.value
    return {"none": "-", "add": f"r += {v}", "init": f"r = {v}", "cut": f"record r+{v}; r = {probe.reset}",
            "exit": f"record r+{v}", "init-exit": f"record {v}"}[k]


def path_text(cfg: CFG, num: "PathNumbering", path: "Path") -> str:
    """One path as ``ENTRY B2 B3 -> cut B3->B5`` (start, blocks, end)."""
    from wholetrace.instrument.pathnum import END_DEAD, END_EXIT, END_TRUNCATED

    head = "ENTRY " if path.start == ENTRY else ""
    body = " ".join(block_name(b) for b in num.blocks(path))
    end = {END_EXIT: "EXIT", END_DEAD: "raise", END_TRUNCATED: "(truncated)"}.get(path.end)
    return f"{head}{body} -> {end if end else 'cut ' + _edge_name(cfg, path.end)}"


def paths_text(cfg: CFG, num: "PathNumbering", limit: int = 50) -> str:
    """The numbering of one function: cuts, the probe of every edge, and the first ``limit``
    paths by id (0: all)."""
    back = sum(1 for e in num.cuts if cfg.edges[e].back)
    probed = sum(1 for p in num.probes if p.kind != "none")
    out = [f"  paths: {num.num_paths:,}  (cuts: {len(num.cuts)} = {back} back, "
           f"{len(num.cuts) - back - len(num.overflow_cuts)} into call blocks, {len(num.overflow_cuts)} for the "
           f"{num.limit:,} limit; probes on {probed} of {len(cfg.edges)} edges)"]
    if num.fallback:
        out.append("  too many paths even after cutting: this function records block ids")
        return "\n".join(out)
    for e, probe in enumerate(num.probes):
        if probe.kind != "none":
            out.append(f"    {_edge_name(cfg, e):<16} {probe.kind:<9} {_probe_text(probe)}")
    for v in num.starts:
        if v not in {cfg.edges[e].dst for e in num.cuts}:
            out.append(f"    start {block_name(v):<10} r = {num.start_value[v]}  (dynamic entry)")
    shown = num.num_paths if limit <= 0 else min(limit, num.num_paths)
    width = len(str(max(shown - 1, 0)))
    for pid in range(shown):
        out.append(f"    {pid:>{width}}  {path_text(cfg, num, num.decode(pid))}")
    if shown < num.num_paths:
        out.append(f"    ... {num.num_paths - shown:,} more (--paths 0 lists all)")
    return "\n".join(out)


def paths_json(num: "PathNumbering", limit: int = 50) -> dict[str, object]:
    """The numbering as JSON: count, cuts, probes per edge, start values and the first paths."""
    d: dict[str, object] = {"num_paths": num.num_paths, "fallback": num.fallback, "cuts": sorted(num.cuts),
                            "overflow_cuts": sorted(num.overflow_cuts)}
    if num.fallback:
        return d
    d["probes"] = [[p.kind, p.value, p.reset] for p in num.probes]
    d["starts"] = {str(v): num.start_value[v] for v in num.starts}
    shown = num.num_paths if limit <= 0 else min(limit, num.num_paths)
    d["paths"] = [{"id": pid, "start": p.start, "edges": list(p.edges), "end": p.end, "blocks": num.blocks(p)}
                  for pid, p in ((i, num.decode(i)) for i in range(shown))]
    return d
