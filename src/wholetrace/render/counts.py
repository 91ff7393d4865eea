"""Count reports of `wholetrace counts` / `profile`: annotated source text, JSON and lcov (DA/BRDA/FN).

Each renderer takes a `Trace` and asks ``profile.counted`` for its counts; the ``report_*``
functions format a list of profiles directly.  Line and branch rules are those of
``profile.model``.  A function that never ran (an ``Idle`` summary, or a profile of zero
counts) is one line of the text report (its CFG is not read: docs/design.md, "Reports:
functions that never ran"); JSON and lcov list its lines and branches at zero.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TextIO

import numpy as np

from wholetrace.profile import every_profile
from wholetrace.profile.model import FunctionProfile, Idle, branch_counts, branches, hottest, line_counts, ran, summary
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


def report_json(entries: Entries) -> dict[str, Any]:
    """``{"lines": {path: {line: n}}, "branches": {path: {line: {name: n}}}, "functions": [...]}``:
    every function, those that never ran with zero counts (a coverage tool must see their lines
    as code that did not run, not as no code; their CFGs are parsed here, in one batch)."""
    every = every_profile(list(entries))
    lines = line_counts(every)
    brs = branch_counts(every)
    return {
        "lines": {f: {str(ln): c for ln, c in per.items()} for f, per in sorted(lines.items())},
        "branches": {f: {str(ln): d for ln, d in per.items()} for f, per in sorted(brs.items())},
        "functions": [{"name": p.qualname, "file": p.file, "firstline": p.firstline,
                       "lastline": p.lastline, "kind": p.kind, "calls": p.calls,
                       "blocks": p.weight} for p in hottest(every)],
    }


def write_json(entries: Entries) -> str:
    return dump_json(report_json(entries)) + "\n"


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


def report_text(entries: Entries, *, limit: int | None = None) -> str:
    """Annotated source, hottest functions first: count beside each line, branches beside
    predicates; then one line per function that never ran."""
    out: list[str] = []
    blank = " " * 10
    profiles, idle = split(entries)
    for p in hottest([*profiles, *idle])[:limit]:
        if isinstance(p, Idle):
            out.append(f"== {p.qualname}  ({p.file}:{p.firstline}-{p.lastline})  never ran, "
                       f"{p.nlines} line{'s' if p.nlines != 1 else ''}")
            continue
        first, last = p.firstline, p.lastline
        n = last - first + 1
        lines, sids, _cols = p.shape.line_first
        col = [blank] * n                          # the count column, line by line
        for ln, c in zip((lines - first).tolist(), np.asarray(p.stmts)[sids].tolist()):
            if 0 <= ln < n:
                col[ln] = f"{c:>10}"
        per_line: dict[int, list[str]] = {}
        for br in branches(p):
            per_line.setdefault(br.line, []).append(f"{br.name}: {'-' if br.taken is None else br.taken}")
        out.append(f"== {p.qualname}  ({p.file}:{first}-{last})  calls {p.calls}, blocks {p.weight}")
        text = p.source.splitlines()[:n]
        text += [""] * (n - len(text))
        nums = _line_numbers(last + 1)[first:last + 1]
        body = [f"{c} {k}  {src}".rstrip() for c, k, src in zip(col, nums, text)]
        for ln, items in per_line.items():
            i = ln - first
            if 0 <= i < n:
                body[i] = f"{col[i]} {nums[i]}  {text[i]}    [{', '.join(items)}]".rstrip()
        out += body
        out.append("")
    return "\n".join(out)


_NUMBERS: list[str] = []


def _line_numbers(upto: int) -> list[str]:
    """Right-aligned line numbers 0 .. ``upto - 1`` (formatted once, shared by every report)."""
    if len(_NUMBERS) < upto:
        _NUMBERS.extend(f"{k:>6}" for k in range(len(_NUMBERS), max(upto, 2 * len(_NUMBERS))))
    return _NUMBERS


def report_lcov(entries: Entries, *, test_name: str = "") -> str:
    """lcov tracefile text: per file TN, SF, FN/FNDA/FNF/FNH, DA, BRDA/BRF/BRH, LF/LH, end_of_record
    (every function; those that never ran at zero, as in :func:`report_json`)."""
    every = every_profile(list(entries))
    lines = line_counts(every)
    by_file: dict[str, list[FunctionProfile]] = {}
    for p in every:
        by_file.setdefault(p.file, []).append(p)
    out: list[str] = []
    for file in sorted(by_file):
        funcs = sorted(by_file[file], key=lambda p: (p.firstline, p.qualname))
        out += [f"TN:{test_name}", f"SF:{file}"]
        names = _unique_names(funcs)
        for p, name in zip(funcs, names):
            out.append(f"FN:{p.firstline},{name}")
        for p, name in zip(funcs, names):
            out.append(f"FNDA:{p.calls},{name}")
        out += [f"FNF:{len(funcs)}", f"FNH:{sum(1 for p in funcs if p.calls > 0)}"]
        da = lines.get(file, {})
        for ln, c in da.items():
            out.append(f"DA:{ln},{c}")
        brs = sorted(((br.line, p.firstline, p.fid, br.block, br.index, br) for p in funcs
                      for br in branches(p)), key=lambda t: t[:5])
        block_no: dict[tuple[int, int], int] = {}
        for ln, _fl, fid, blk, idx, br in brs:
            no = block_no.setdefault((fid, blk), len(block_no))
            out.append(f"BRDA:{ln},{no},{idx},{'-' if br.taken is None else br.taken}")
        out += [f"BRF:{len(brs)}", f"BRH:{sum(1 for t in brs if t[5].taken)}"]
        out += [f"LF:{len(da)}", f"LH:{sum(1 for c in da.values() if c > 0)}", "end_of_record"]
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
