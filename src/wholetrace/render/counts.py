"""Count reports of `wholetrace counts` / `profile`: annotated source text, JSON and lcov (DA/BRDA/FN).

Each renderer takes a `Trace` and asks ``profile.counted`` for its counts; the ``report_*``
functions format a list of profiles directly.  Line and branch rules are those of
``profile.model``.  A function that never ran (an ``Idle`` summary, or a profile of zero
counts) is one line of the text report (its CFG is not read: docs/design.md, "Reports:
functions that never ran"); JSON and lcov list its lines and branches at zero.
"""

from __future__ import annotations

import json
from collections import Counter, deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TextIO

import numpy as np

from wholetrace.lines import source_lines, without_end
from wholetrace.profile import gc_paused
from wholetrace.profile.model import FunctionProfile, Idle, hottest, ran, summary
from wholetrace.profile.rows import branch_rows, report_rows, take
from wholetrace.render.base import Renderer

if TYPE_CHECKING:
    from wholetrace.trace.session import Trace


Entries = Sequence["FunctionProfile | Idle"]


def split(entries: Entries) -> tuple[list[FunctionProfile], list[Idle]]:
    """(the profiles of functions that ran, summaries of those that did not), in the given order."""
    done: list[FunctionProfile] = []
    idle: list[Idle] = []
    for p in entries:
        if ran(p):
            done.append(p)  # type: ignore[arg-type]
        else:
            idle.append(summary(p))
    return done, idle


@gc_paused()
def report_json(entries: Entries) -> dict[str, Any]:
    """``{"lines": {path: {line: n}}, "branches": {path: {line: {name: n}}}, "functions": [...]}``:
    every function, those that never ran with zero counts (a coverage tool must see their lines
    as code that did not run, not as no code; from the stored facts, or their CFGs parsed in
    one batch: ``profile.rows``)."""
    lines, brs, funcs = _json_parts(entries)
    return {
        "lines": {f: {str(ln): c for ln, c in zip(lno, cnt)} for f, lno, cnt in lines},
        "branches": {f: {str(ln): d for ln, d in per.items()} for f, per in brs.items()},
        "functions": [dict(zip(_FUNCTION_KEYS, row)) for row in funcs],
    }


_FUNCTION_KEYS = ("name", "file", "firstline", "lastline", "kind", "calls", "blocks")
LineRows = list[tuple[str, list[int], list[int]]]


def _json_parts(entries: Entries) -> tuple[LineRows, dict[str, dict[int, dict[str, int]]], list[tuple[Any, ...]]]:
    """((file, its lines, their counts) by file, file -> line -> branch -> count, one row per
    function hottest first), files sorted."""
    rows = report_rows(entries)
    files = rows.files
    order = sorted(range(len(files)), key=files.__getitem__)
    bounds = np.searchsorted(rows.line_file, np.arange(len(files) + 1)).tolist()
    lno, cnt = rows.line_no.tolist(), rows.line_count.tolist()
    lines = [(files[k], lno[bounds[k]:bounds[k + 1]], cnt[bounds[k]:bounds[k + 1]]) for k in order]
    per_file: dict[int, dict[int, dict[str, int]]] = {}
    qual = [e.qualname for e in entries]
    for fi, pos, ln, name, taken in zip(rows.br_file.tolist(), rows.br_pos.tolist(), rows.br_line.tolist(),
                                        rows.names, rows.br_taken.tolist()):
        slot = per_file.setdefault(fi, {}).setdefault(ln, {})
        if name in slot:
            name = f"{name}@{qual[pos]}"
        slot[name] = taken if taken > 0 else 0
    brs = {files[k]: dict(sorted(per_file[k].items())) for k in order if k in per_file}
    funcs = [(p.qualname, p.file, p.firstline, p.lastline, p.kind, p.calls, p.weight) for p in hottest(entries)]
    return lines, brs, funcs


@gc_paused()
def write_json(entries: Entries) -> str:
    """:func:`report_json` as ``json.dumps(..., indent=1)`` writes it (byte for byte), made in bulk."""
    lines, brs, funcs = _json_parts(entries)
    enc = _encode
    out = ["{\n \"lines\": "]
    if lines:                              # file -> {line: count}, at indents 2 and 3
        parts = [f"{enc(f)}: {{\n   " + ",\n   ".join(map('"{}": {}'.format, lno, cnt)) + "\n  }" if lno
                 else f"{enc(f)}: {{}}" for f, lno, cnt in lines]
        out.append("{\n  " + ",\n  ".join(parts) + "\n }")
    else:
        out.append("{}")
    out.append(",\n \"branches\": ")
    if brs:                                # file -> {line: {name: count}}, at indents 2, 3 and 4
        parts = []
        for f, per in brs.items():
            slots = [f'"{ln}": {{\n    ' + ",\n    ".join(f"{enc(n)}: {c}" for n, c in d.items()) + "\n   }"
                     for ln, d in per.items()]
            parts.append(f"{enc(f)}: {{\n   " + ",\n   ".join(slots) + "\n  }")
        out.append("{\n  " + ",\n  ".join(parts) + "\n }")
    else:
        out.append("{}")
    out.append(",\n \"functions\": ")
    if funcs:
        out.append("[\n" + ",\n".join(
            f'  {{\n   "name": {enc(q)},\n   "file": {enc(f)},\n   "firstline": {a},\n   "lastline": {b},\n'
            f'   "kind": {enc(k)},\n   "calls": {c},\n   "blocks": {w}\n  }}'
            for q, f, a, b, k, c, w in funcs) + "\n ]")
    else:
        out.append("[]")
    out.append("\n}\n")
    return "".join(out)


def dump_json(value: Any, indent: str = "") -> str:
    """``json.dumps(value, indent=1)``, byte for byte, for what reports hold (dicts, lists, text,
    numbers, booleans, None), with dicts of numbers written in one step: the standard
    library writes indented JSON with its pure-Python encoder, several times slower."""
    inner = indent + " "
    if isinstance(value, dict):
        if not value:
            return "{}"
        if all(type(v) is int for v in value.values()):
            body = f",\n{inner}".join(f"{_key(k)}: {v}" for k, v in value.items())
        else:
            body = f",\n{inner}".join(f"{_key(k)}: {dump_json(v, inner)}" for k, v in value.items())
        return f"{{\n{inner}{body}\n{indent}}}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        return f"[\n{inner}" + f",\n{inner}".join(dump_json(v, inner) for v in value) + f"\n{indent}]"
    if type(value) is int:
        return str(value)
    if type(value) is str:
        return _encode(value)        # what json.dumps writes for text (ensure_ascii)
    return json.dumps(value)


def _key(k: object) -> str:
    return _encode(k if isinstance(k, str) else json.dumps(k).strip('"'))


_encode = json.encoder.encode_basestring_ascii  # type: ignore[attr-defined]


@gc_paused()
def report_text(entries: Entries, *, limit: int | None = None) -> str:
    """Annotated source, hottest functions first: count beside each line, branches beside
    predicates; then one line per function that never ran.  Each line is listed once: in the
    section of a module, class or function, the body of a nested function is folded to one
    line (``... lines A-B: NAME``, which has its own section, or ``NAME never ran``)."""
    out: list[str] = []
    profiles, idle = split(entries)
    folds = _nested(profiles, idle)
    shown = hottest([*profiles, *idle])[:limit]
    ran_shown = [p for p in shown if not isinstance(p, Idle)]
    tails = _branch_tails(ran_shown)
    offsets, columns, bounds = _counted_lines(ran_shown)
    plain = _plain_prefixes(max((p.lastline for p in ran_shown), default=0) + 1)
    k = -1
    for p in shown:
        if isinstance(p, Idle):
            info = p.info
            lines = info.lastline - info.firstline + 1
            out.append(f"== {info.qualname}  ({info.file}:{info.firstline}-{info.lastline})  never ran, "
                       f"{lines} line{'s' if lines != 1 else ''}")
            continue
        k += 1
        first, last = p.firstline, p.lastline
        n = last - first + 1
        src = _source_lines(p, n)
        if len(src) < n:
            src += [""] * (n - len(src))
        pre = plain[first:last + 1]                 # line offset -> count and number columns
        lo, hi = bounds[k], bounds[k + 1]
        if hi > lo:
            deque(map(pre.__setitem__, offsets[lo:hi], columns[lo:hi]), 0)
        for i, items in tails.get(id(p), {}).items():
            if 0 <= i - first < n:
                src[i - first] = f"{without_end(src[i - first])}    [{', '.join(items)}]"

        out.append(f"== {p.qualname}  ({p.file}:{first}-{last})  calls {p.calls}, blocks {p.weight}")
        at = 0
        for q_first, q_last, name, q_ran in folds.get(id(p), ()):
            head = q_first - first              # the child's header lines are the parent's statements
            while head + 1 <= q_last - first and pre[head + 1] is not plain[first + head + 1]:
                head += 1
            if at < head + 1:
                out += map(str.rstrip, map(str.__add__, pre[at:head + 1], src[at:head + 1]))
                at = head + 1
            if head + 1 < q_last - first:         # two lines or more: folded (one is listed)
                following = without_end(src[head + 1])
                indent = following[:len(following) - len(following.lstrip())]
                out.append(f"{_BLANK} {'':>6}  {indent}... lines {first + head + 1}-{q_last}: {name}"
                           f"{'' if q_ran else ' never ran'}")
                at = q_last - first + 1
        if at < n:
            out += map(str.rstrip, map(str.__add__, pre[at:], src[at:]))
        out.append("")
    return "\n".join(out)


def _counted_lines(profiles: list[FunctionProfile]) -> tuple[list[int], list[str], list[int]]:
    """For every line of ``profiles`` with a statement (its first statement's count; lines
    outside the function's lines left out): its offset in the function and its count and
    number columns; profile ``k``'s rows are ``bounds[k]:bounds[k + 1]``."""
    if not profiles:
        return [], [], [0]
    rows = [p.shape.line_first for p in profiles]
    sizes = np.array([r.shape[1] for r in rows], np.int64)
    counts = take([np.asarray(p.stmts) for p in profiles], np.concatenate([r[1] for r in rows]), sizes.tolist())
    lines = np.concatenate([r[0] for r in rows]).astype(np.int64)
    owner = np.repeat(np.arange(len(profiles)), sizes)
    first = np.array([p.firstline for p in profiles], np.int64)[owner]
    last = np.array([p.lastline for p in profiles], np.int64)[owner]
    keep = (lines >= first) & (lines <= last)
    if not keep.all():
        lines, counts, first, owner = lines[keep], counts[keep], first[keep], owner[keep]
    bounds = np.searchsorted(owner, np.arange(len(profiles) + 1)).tolist()
    values, which = np.unique(counts, return_inverse=True)      # counts repeat: each formatted once
    column = list(map("{:>10}".format, values.tolist()))
    nums = _number_columns(int(lines.max()) + 1 if len(lines) else 1)
    columns = list(map(str.__add__, map(column.__getitem__, which.tolist()), map(nums.__getitem__, lines.tolist())))
    return (lines - first).tolist(), columns, bounds


def _source_lines(p: FunctionProfile, n: int) -> list[str]:
    """The first ``n`` lines of ``p.source``: sliced from its file's lines (their line ends
    kept: a report line is right-stripped, and :func:`~wholetrace.lines.without_end` drops them where text follows)
    when the registry shares them, else split."""
    shared = p.source_lines
    if shared is None or shared[1] < 0:
        return source_lines(p.source)[:n]
    lines, start, stop = shared
    return lines[start:min(stop, start + n)]


_PLAIN: list[str] = []
_NUMBERS: list[str] = []


def _plain_prefixes(upto: int) -> list[str]:
    """The columns of a line without a count, ``BLANK NUMBER  ``, for lines 0 .. ``upto - 1``
    (formatted once, shared by every report)."""
    if len(_PLAIN) < upto:
        _PLAIN.extend(_BLANK + k for k in _number_columns(upto)[len(_PLAIN):])
    return _PLAIN


def _number_columns(upto: int) -> list[str]:
    """`` NUMBER  `` (the number column between the count and the source) for lines 0 .. at
    least ``upto - 1`` (formatted once, shared by every report)."""
    if len(_NUMBERS) < upto:
        _NUMBERS.extend(f" {k:>6}  " for k in range(len(_NUMBERS), max(upto, 2 * len(_NUMBERS))))
    return _NUMBERS


def _branch_tails(profiles: list[FunctionProfile]) -> dict[int, dict[int, list[str]]]:
    """id(profile) -> line -> ``NAME: COUNT`` of each branch on it (``-``: its block never
    ran), in block and edge order: every profile's branches gathered as columns at once."""
    if not profiles:
        return {}
    rows = branch_rows(profiles)
    taken = [str(t) if t >= 0 else "-" for t in rows.taken.tolist()]
    keys = [id(p) for p in profiles]
    out: dict[int, dict[int, list[str]]] = {}
    for pos, line, item in zip(rows.pos.tolist(), rows.line.tolist(), map("{}: {}".format, rows.names, taken)):
        per = out.get(keys[pos])
        if per is None:
            per = out[keys[pos]] = {}
        slot = per.get(line)
        if slot is None:
            per[line] = [item]
        else:
            slot.append(item)
    return out


_BLANK = " " * 10


def _nested(profiles: list[FunctionProfile], idle: list[Idle]) -> dict[int, list[tuple[int, int, str, bool]]]:
    """id(profile) -> (firstline, lastline, qualname, ran) of the functions directly nested in
    it (same file, lines inside its lines), in line order."""
    out: dict[int, list[tuple[int, int, str, bool]]] = {}
    rows = sorted([(p.file, p.firstline, -p.lastline, p.qualname, True, id(p)) for p in profiles]
                  + [(p.file, p.firstline, -p.lastline, p.qualname, False, 0) for p in idle])
    stack: list[tuple[str, int, int, str, bool, int]] = []
    for row in rows:
        file, first, neg_last = row[0], row[1], row[2]
        while stack and not (stack[-1][0] == file and stack[-1][1] <= first and neg_last >= stack[-1][2]):
            stack.pop()
        if stack and (stack[-1][1], stack[-1][2]) != (first, neg_last) and stack[-1][4]:
            out.setdefault(stack[-1][5], []).append((first, -neg_last, row[3], row[4]))
        stack.append(row)
    return out


@gc_paused()
def report_lcov(entries: Entries, *, test_name: str = "") -> str:
    """lcov tracefile text: per file TN, SF, FN/FNDA/FNF/FNH, DA, BRDA/BRF/BRH, LF/LH, end_of_record
    (every function; those that never ran at zero, as in :func:`report_json`)."""
    rows = report_rows(entries)
    files = rows.files
    index = {f: k for k, f in enumerate(files)}
    by_file: dict[int, list[int]] = {}
    for i, e in enumerate(entries):
        by_file.setdefault(index[e.file], []).append(i)
    lbounds = np.searchsorted(rows.line_file, np.arange(len(files) + 1)).tolist()
    da_text = list(map("DA:{},{}".format, rows.line_no.tolist(), rows.line_count.tolist()))
    hit = np.concatenate([[0], np.cumsum(rows.line_count > 0)]).tolist()
    # branches by file, then line, the function's first line, function, block, index
    first = np.array([e.firstline for e in entries], np.int64)
    fid = np.array([e.fid for e in entries], np.int64)
    order = np.lexsort((rows.br_index, rows.br_block, fid[rows.br_pos], first[rows.br_pos], rows.br_line,
                       rows.br_file))
    bf = rows.br_file[order]
    bbounds = np.searchsorted(bf, np.arange(len(files) + 1)).tolist()
    key = fid[rows.br_pos[order]] * (int(rows.br_block.max()) + 1 if len(order) else 1) + rows.br_block[order]
    taken = rows.br_taken[order]
    brh = np.concatenate([[0], np.cumsum(taken > 0)]).tolist()
    line_l, idx_l = rows.br_line[order].tolist(), rows.br_index[order].tolist()
    taken_l = [str(t) if t >= 0 else "-" for t in taken.tolist()]
    out: list[str] = []
    for k in sorted(range(len(files)), key=files.__getitem__):
        file = files[k]
        funcs = sorted((entries[i] for i in by_file[k]), key=lambda p: (p.firstline, p.qualname))
        out += [f"TN:{test_name}", f"SF:{file}"]
        names = _unique_names(funcs)
        out += [f"FN:{p.firstline},{name}" for p, name in zip(funcs, names)]
        out += [f"FNDA:{p.calls},{name}" for p, name in zip(funcs, names)]
        out += [f"FNF:{len(funcs)}", f"FNH:{sum(1 for p in funcs if p.calls > 0)}"]
        lo, hi = lbounds[k], lbounds[k + 1]
        out += da_text[lo:hi]
        b0, b1 = bbounds[k], bbounds[k + 1]
        if b1 > b0:                 # blocks numbered by first appearance in the file
            _, first_at, inverse = np.unique(key[b0:b1], return_index=True, return_inverse=True)
            rank = np.empty(len(first_at), np.int64)
            rank[np.argsort(first_at, kind="stable")] = np.arange(len(first_at))
            nos = rank[inverse].tolist()
            out += list(map("BRDA:{},{},{},{}".format, line_l[b0:b1], nos, idx_l[b0:b1], taken_l[b0:b1]))
        out += [f"BRF:{b1 - b0}", f"BRH:{brh[b1] - brh[b0]}"]
        out += [f"LF:{hi - lo}", f"LH:{hit[hi] - hit[lo]}", "end_of_record"]
    return "\n".join(out) + ("\n" if out else "")


def _unique_names(funcs: Entries) -> list[str]:
    """lcov function names: qualnames without commas or spaces, made unique within the file."""
    seen: Counter[str] = Counter()
    names = []
    for p in funcs:
        base = p.qualname.replace(",", "_").replace(" ", "_")
        seen[base] += 1
        names.append(base if seen[base] == 1 else f"{base}#{seen[base]}")
    return names


class _CountsRenderer(Renderer):
    def _profiles(self, trace: Trace) -> list[FunctionProfile | Idle]:
        from wholetrace.profile import counted

        return counted(trace)


class CountsText(_CountsRenderer):
    """Annotated source of the hottest functions (``limit``: only that many)."""

    format: ClassVar[str] = "text"

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit

    def render(self, trace: Trace, out: TextIO) -> None:
        text = report_text(self._profiles(trace), limit=self.limit)
        out.write(text if text.endswith("\n") else text + "\n")


class CountsJson(_CountsRenderer):
    """Line, branch and function counts as one JSON document."""

    format: ClassVar[str] = "json"

    def render(self, trace: Trace, out: TextIO) -> None:
        out.write(write_json(self._profiles(trace)))


class CountsLcov(_CountsRenderer):
    """An lcov tracefile (for ``genhtml`` or an editor's coverage gutter)."""

    format: ClassVar[str] = "lcov"

    def __init__(self, test_name: str = "") -> None:
        self.test_name = test_name

    def render(self, trace: Trace, out: TextIO) -> None:
        out.write(report_lcov(self._profiles(trace), test_name=self.test_name))


RENDERERS: list[type[Renderer]] = [CountsText, CountsJson, CountsLcov]
