"""The processes of a recording: the root file and the parts its child processes wrote beside it.

A recording ``OUT.wt`` whose program started Python processes names the directory of their
recordings in its meta (``children``: ``OUT.wt.parts``); each part is a complete recording
whose meta ``process`` says who wrote it (``runtime/children.py``).  Processes are numbered
in the order they started: 0 is the root.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Iterator
from typing import Any

import numpy as np

from wholetrace.errors import UsageError
from wholetrace.store.reader import Recording
from wholetrace.store.schema import BASE_PREFIX, CHILDREN_KEY, PROCESS_KEY, UNRECORDED_PREFIX  # noqa: F401 (readers' names)


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
        info = m.get(PROCESS_KEY)
        if not isinstance(info, dict):      # killed before it wrote who it is: it holds nothing
            continue
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


def unrecorded(root: str | os.PathLike[str], meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The child interpreters of the recording ``root`` that ran code without recording it
    (``-i``, ``-x``, a zip application, ...): ``{"pid", "argv", "why"}`` each, by pid."""
    where = parts_path(root, meta)
    if where is None or not where.is_dir():
        return []
    out = []
    for p in where.glob(UNRECORDED_PREFIX + "*.json"):
        try:
            note = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(note, dict) and isinstance(note.get("argv"), list) and isinstance(note.get("why"), str):
            out.append({"pid": _int(note.get("pid")), "argv": [str(a) for a in note["argv"]], "why": note["why"],
                        **({"partial": True} if note.get("partial") is True else {})})
    return sorted(out, key=lambda n: n["pid"] or 0)


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


class Lineage:
    """A part read from the program's start: each stream of a fork child is the stored events
    of its ancestors' streams up to the fork (``process.base[sid].chain``: [part, stream,
    events] from the root down) followed by its own chunks.  Everything else is the part's own
    (``Recording`` passes through)."""

    def __init__(self, rec: Recording) -> None:
        self.rec = rec
        info = rec.meta.get(PROCESS_KEY)
        fork = isinstance(info, dict) and info.get("start") == "fork" and isinstance(info.get("base"), dict)
        self._base: dict[str, Any] = info["base"] if fork else {}   # type: ignore[index]
        self._open: dict[str, Recording] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.rec, name)

    def _part(self, name: str) -> Recording:
        if name not in self._open:
            where = Path(self.rec.path).parent
            path = where / name if name else _root_of(where)
            if path is None or not path.is_file():
                raise UsageError(f"{self.rec.path}: the recording of an ancestor process ({name or 'the root'}) "
                                 "is missing")
            rec = Recording(path, check=False)
            if isinstance(rec.meta.get("wpp"), dict):   # record --wpp: the events are in its grammars
                from wholetrace.wpp.stored import readable   # (as trace.Trace.open reads them)
                rec = readable(rec)
            self._open[name] = rec
        return self._open[name]

    def iter_chunks(self, sid: int) -> Iterator[np.ndarray]:
        spec = self._base.get(str(sid))
        for name, psid, n in (spec or {}).get("chain", []):
            left = int(n)
            if left <= 0:
                continue
            for chunk in self._part(str(name)).iter_chunks(int(psid)):
                if left <= 0:
                    break
                yield chunk[:left]
                left -= len(chunk)
            if left > 0:
                raise UsageError(f"{self.rec.path}: the recording of an ancestor process ({name or 'the root'}) "
                                 "is shorter than when this process forked")
        yield from self.rec.iter_chunks(sid)

    def events(self, sid: int) -> np.ndarray:
        parts = list(self.iter_chunks(sid))
        return np.concatenate(parts) if parts else np.zeros(0, np.int32)

    def close(self) -> None:
        for rec in self._open.values():
            rec.close()
        self.rec.close()

    def __enter__(self) -> Lineage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _root_of(parts: Path) -> Path | None:
    """The root recording of a parts directory (``OUT.wt.parts`` -> ``OUT.wt``)."""
    return parts.with_name(parts.name[:-len(".parts")]) if parts.name.endswith(".parts") else None
