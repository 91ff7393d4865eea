"""The processes of a recording: the root file and the parts its child processes wrote beside it.

A recording ``OUT.wt`` whose program started Python processes names the directory of their
recordings in its meta (``children``: ``OUT.wt.parts``); each part is a complete recording
whose meta ``process`` says who wrote it (``runtime/children.py``).  Processes are numbered
in the order they started: 0 is the root.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wholetrace.errors import UsageError
from wholetrace.store.reader import Recording

#: Meta keys (also written by ``runtime.children``): the root's parts directory, each file's identity.
CHILDREN_KEY = "children"
PROCESS_KEY = "process"
#: Arrays of a fork child in count modes: the counts at the fork (``counters``, ... under this prefix).
BASE_PREFIX = "process.base."


@dataclass
class Process:
    """One process of a recording."""

    number: int
    path: str
    pid: int | None
    start: str                       # "root", "fork" or "spawn"
    parent: int | None               # number of the process that started it
    ended: str | None
    exit_code: int | None
    events: int
    meta: dict[str, Any] = field(repr=False, default_factory=dict)
    children: list[int] = field(default_factory=list)


def parts_path(root: str | os.PathLike[str], meta: dict[str, Any]) -> Path | None:
    """The parts directory the root recording names (None if it records no children)."""
    name = meta.get(CHILDREN_KEY)
    if not isinstance(name, str) or "/" in name or os.sep in name or name in ("", ".", ".."):
        return None
    return Path(os.fspath(root)).parent / name


def processes(root: str | os.PathLike[str], meta: dict[str, Any], events: int) -> list[Process]:
    """Every process of the recording ``root`` (whose ``meta`` and event count the caller has):
    the root first, then the parts by start time.  Parts that cannot be read are skipped."""
    mine = meta.get(PROCESS_KEY) if isinstance(meta.get(PROCESS_KEY), dict) else {}
    out = [Process(0, os.fspath(root), mine.get("pid"), "root", None, _str(meta.get("ended")),
                   _int(meta.get("exit_code")), events, meta)]
    where = parts_path(root, meta)
    if where is None or not where.is_dir():
        return out
    found: list[tuple[float, str, Process, str]] = []
    for p in sorted(where.glob("*.wt")):
        try:
            with Recording(p, check=False) as rec:
                m = dict(rec.meta)
                n = sum(s.n_events for s in rec.streams())
        except Exception:  # noqa: BLE001 - an unreadable part is left out, not fatal
            continue
        info = m.get(PROCESS_KEY) if isinstance(m.get(PROCESS_KEY), dict) else {}
        start = m.get("start_time")
        proc = Process(0, str(p), _int(info.get("pid")), str(info.get("start", "?")), None,
                       _str(m.get("ended")), _int(m.get("exit_code")), n, m)
        found.append((float(start) if isinstance(start, (int, float)) else 0.0, p.name, proc,
                       str(info.get("parent") or "")))
    found.sort(key=lambda t: (t[0], t[1]))
    number = {"": 0}
    for i, (_t, name, proc, _parent) in enumerate(found, 1):
        proc.number = i
        number[name] = i
        out.append(proc)
    for _t, _name, proc, parent in found:
        proc.parent = number.get(parent, 0)
        out[proc.parent].children.append(proc.number)
    return out


def select(root: str | os.PathLike[str], number: int | None) -> str:
    """The file of process ``number`` of the recording ``root`` (the root itself for None or 0)."""
    if not number:
        return os.fspath(root)
    with Recording(root) as rec:
        procs = processes(root, dict(rec.meta), 0)
    for p in procs:
        if p.number == number:
            return p.path
    raise UsageError(f"{os.fspath(root)}: no process {number} (it has {len(procs)})")


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _str(v: object) -> str | None:
    return v if isinstance(v, str) else None
