"""Text, Graphviz dot and JSON views of CFGs for `wholetrace cfg`."""

from __future__ import annotations

import json
from typing import Sequence

from wholetrace.ids import ENTRY, EXIT
from wholetrace.instrument.cfg import CFG


def block_name(b: int) -> str:
    return "ENTRY" if b == ENTRY else "EXIT" if b == EXIT else f"B{b}"


def _stmt_text(cfg: CFG, sid: int, lines: Sequence[str]) -> str:
    s = cfg.stmts[sid]
    text = lines[s.line - 1].strip() if 0 < s.line <= len(lines) else ""
    if s.kind in ("with-exit", "finally-end"):
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


def to_json(cfgs: Sequence[CFG]) -> str:
    return json.dumps([c.to_json() for c in cfgs], indent=1)


def _esc(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')
