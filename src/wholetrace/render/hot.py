"""Text of `wholetrace hot` and `wholetrace paths`: subpaths as indented acyclic paths with repeats collapsed, path profiles per function."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wholetrace.wpp.hotreport import HotReport
    from wholetrace.wpp.meaning import Piece
    from wholetrace.wpp.view import WppView

INDENT = "  "
#: Longest period of a repeat collapsed into one ``× n`` group.
MAX_PERIOD = 8


def short_file(name: str) -> str:
    """``name`` relative to the working directory when it lies under it, else its base name
    (``--json`` gives full names)."""
    try:
        rel = os.path.relpath(name)
    except ValueError:
        return os.path.basename(name)
    return os.path.basename(name) if rel.startswith("..") else rel


def line_ranges(lines: Sequence[int]) -> str:
    """``3-5,9`` for lines 3 4 5 9 (sorted, distinct)."""
    xs = sorted(set(lines))
    parts: list[str] = []
    i = 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        parts.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ",".join(parts)


def piece_text(view: WppView, p: Piece) -> str:
    """One reader's line: function, file:lines, blocks (or the raise)."""
    from wholetrace.wpp.meaning import statement_lines

    if not p.blocks:
        if p.fid not in view.cfgs:
            return "! exception re-raised"
        where = f"{short_file(view.files.get(p.fid, ''))}:{p.raise_line}" if p.raise_line > 0 else "?"
        return f"! exception in {view.cfgs[p.fid].qualname} at {where}"
    cfg = view.cfgs[p.fid]
    lines = line_ranges(statement_lines(view, p.fid, p.blocks))
    ids = " ".join(map(str, p.blocks))
    tag = f"  path {p.path_id}" if p.path_id >= 0 else ""
    cut = "  (truncated)" if p.truncated else ""
    return f"{cfg.qualname}  {short_file(view.files.get(p.fid, ''))}:{lines}  blocks {ids}{tag}{cut}"


def collapse(keys: Sequence[object], max_period: int = MAX_PERIOD) -> list[tuple[int, int, int]]:
    """Greedy runs of repeats: (start, period, times) covering ``keys`` in order; ``times`` 1
    where nothing repeats.  At each position the period covering most items wins (the shorter on ties)."""
    out: list[tuple[int, int, int]] = []
    i, n = 0, len(keys)
    while i < n:
        best_p, best_k = 1, 1
        for p in range(1, min(max_period, (n - i) // 2) + 1):
            k = 1
            while i + (k + 1) * p <= n and keys[i + k * p:i + (k + 1) * p] == keys[i:i + p]:
                k += 1
            if k > 1 and p * k > best_p * best_k:
                best_p, best_k = p, k
        out.append((i, best_p, best_k))
        i += best_p * best_k
    return out


def render_pieces(view: WppView, ps: Sequence[Piece], margin: str = "    ") -> list[str]:
    """Lines for a subpath's pieces: call depth as indentation, repeats as ``× n`` groups."""
    keys = [(p.depth,) + p.key() for p in ps]
    lines: list[str] = []
    for start, period, times in collapse(keys):
        group = ps[start:start + period]
        if times == 1:
            lines.extend(margin + INDENT * p.depth + piece_text(view, p) for p in group)
        elif period == 1:
            p = group[0]
            lines.append(margin + INDENT * p.depth + piece_text(view, p) + f"  × {times}")
        else:
            low = min(p.depth for p in group)
            lines.append(margin + INDENT * low + f"× {times}:")
            lines.extend(margin + INDENT * (p.depth + 1) + "| " + piece_text(view, p) for p in group)
    return lines


def hot_text(report: HotReport) -> str:
    """The text of ``wholetrace hot``."""
    v, o = report.view, report.options
    unit = o.cost
    src = "stored WPP" if v.source == "stored" else f"block grammar built from the {v.mode} trace"
    thr = sorted(set(report.thresholds.values()))
    thr_txt = f"{thr[0]:,}" if len(thr) == 1 else "/".join(f"{t:,}" for t in thr)
    how = "" if o.min_cost is not None else " (1% of the stream's total)"
    head = [f"{short_file(v.path)}: {report.found} minimal hot subpaths of {o.min_length}-{o.max_length} "
            f"{v.symbol_kind}s costing >= {thr_txt} {unit}{how}; {src}"
            + (f"; the {len(report.entries)} costliest:" if len(report.entries) < report.found else ":")]
    body: list[str] = []
    for i, e in enumerate(report.entries, 1):
        total = report.totals.get(e.stream, 0)
        share = f", {100 * e.cost / total:.1f}% of the stream" if total else ""
        body.append("")
        body.append(f"#{i}  cost {e.cost:,} {unit} = {e.frequency:,} times x {e.unit_cost:,}{share}; "
                    f"{e.length} symbols; stream {e.stream} ({e.stream_name})")
        body.extend(render_pieces(v, e.pieces))
    return "\n".join(head + body)


def paths_text(functions: list[dict[str, Any]], total_paths: int, kind: str) -> str:
    """The text of ``wholetrace paths`` (``functions`` as ``wpp.paths.paths_json`` gives them)."""
    out = []
    for fn in functions:
        shown = fn["paths"]
        more = fn["distinct"] - len(shown)
        out.append(f"{fn['function']}  {short_file(fn['file'])}  ({fn['count']:,} paths run, "
                   f"{fn['distinct']} distinct{'' if not more else f', {more} not shown'})")
        w = max((len(f"{p['count']:,}") for p in shown), default=1)
        for p in shown:
            cut = ("  (truncated by an exception)" if p["truncated"] else
                   f"  -> block {p['next']}" if p.get("next") is not None else "  -> return")
            out.append(f"  {p['count']:>{w},}  path {p['id']:<4} lines {line_ranges(p['lines'])}  "
                       f"blocks {' '.join(map(str, p['blocks']))}{cut}")
    if not out:
        return f"no {kind} paths"
    return "\n".join(out)
