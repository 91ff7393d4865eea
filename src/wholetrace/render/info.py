"""The summary of a recording shown by `wholetrace info` (text or JSON)."""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any, ClassVar, TextIO

from wholetrace.render.base import Renderer

if TYPE_CHECKING:
    from wholetrace.trace.session import Trace


def info_dict(trace: Trace) -> dict[str, Any]:
    """What the recording holds: meta, files, functions, streams, sizes."""
    rec = trace.recording
    meta = dict(rec.meta)
    funcs = list(trace.functions.values())
    streams = rec.streams()
    files = sorted({f.file for f in funcs})
    return {
        "meta": meta,
        "files": files,
        "functions": [{"fid": f.fid, "qualname": f.qualname, "file": f.file, "firstline": f.firstline,
                       "lastline": f.lastline, "fingerprint": f.fingerprint} for f in funcs],
        "streams": [{"stream": s.sid, "kind": s.kind, "name": s.name, "events": s.n_events,
                     "chunks": s.n_chunks, "stored_bytes": s.stored_bytes} for s in streams],
        "events": sum(s.n_events for s in streams),
        "sizes": rec.sizes(),
        "cf_trace": _cf_trace(rec),
        "processes": _processes(trace, sum(s.n_events for s in streams)),
        "unrecorded": _unrecorded(trace),
    }


def _unrecorded(trace: Trace) -> list[dict[str, Any]]:
    """The child interpreters that ran code without recording it (``store.parts.unrecorded``)."""
    from wholetrace.store.parts import unrecorded

    return unrecorded(trace.path, trace.meta)


def _processes(trace: Trace, events: int) -> list[dict[str, Any]] | None:
    """The process tree of a recording with child processes (``store/parts.py``), else None."""
    from wholetrace.store.parts import CHILDREN_KEY, processes

    if not isinstance(trace.meta.get(CHILDREN_KEY), str):
        return None
    procs = processes(trace.path, trace.meta, events)
    if len(procs) < 2:                       # no child process stored anything
        return None
    return [{"process": p.number, "pid": p.pid, "start": p.start, "parent": p.parent, "children": p.children,
             "ended": p.ended, "exit_code": p.exit_code, "events": p.events, "file": p.path}
            for p in procs]


def _cf_trace(rec: Any) -> dict[str, Any] | None:
    from wholetrace.match.store import describe
    return describe(rec)


def _when(t: object) -> str:
    return dt.datetime.fromtimestamp(float(t)).isoformat(sep=" ", timespec="seconds") if isinstance(t, (int, float)) else "?"


def record_command(m: dict[str, Any]) -> str:
    """The ``record`` command line as far as the recording's meta knows it: mode, ``--include``,
    the WPP's options (``--weights``, ``-o`` and ``--no-cache`` are not kept)."""
    words = ["wholetrace record --mode", str(m.get("mode", "?"))]
    words += [f"--include {p}" for p in m.get("include") or ()]
    wpp = m.get("wpp")
    if isinstance(wpp, dict):
        words.append("--wpp")
        words += ["--keep-raw"] * bool(wpp.get("keep_raw"))
        words += ["--no-lookahead"] * (wpp.get("lookahead") is False)
    words.append(str(m.get("command", "?")))
    return " ".join(words)


def info_text(d: dict[str, Any]) -> str:
    m = d["meta"]
    start, end = m.get("start_time"), m.get("end_time")
    secs = f" ({float(end) - float(start):.2f} s)" if isinstance(start, (int, float)) and isinstance(end, (int, float)) else ""
    lines = [
        f"command:   {record_command(m)}",
        f"argv:      {m.get('argv')}",
        f"cwd:       {m.get('cwd')}",
        f"python:    {m.get('python')}",
        f"recorded:  {_when(start)} -> {_when(end)}{secs}",
        f"ended:     {m.get('ended', 'unknown (recording did not finish)')}, exit status {m.get('exit_code')}",
        f"functions: {len(d['functions'])} in {len(d['files'])} file(s)",
        f"events:    {d['events']:,} in {len(d['streams'])} stream(s)",
    ]
    for s in d["streams"]:
        lines.append(f"  T {s['stream']:<3} {s['kind']:<6} {s['name']:<24} {s['events']:>12,} events "
                     f"{s['stored_bytes']:>10,} bytes stored")
    cf = d.get("cf_trace")
    if cf:
        b = cf["bytes"]
        state = "" if cf["complete"] else " (incomplete: run `wholetrace compress` again)"
        lines.append(f"cf trace:  {len(cf['streams'])} stream(s){state}: grammar {b['grammar']:,} bytes, "
                     f"chunks {b['chunks']:,}, chunk index {b['chunk_index']:,}, segment index {b['segment_index']:,}, "
                     f"caller stacks {b['chunk_stacks']:,}")
        for sid, f in cf["streams"].items():
            if f:
                lines.append(f"  T {sid:<3} {f['symbols']:>12,} F/B/E events  {f['rules']:>9,} rules  "
                             f"{-(-f['symbols'] // f['chunk_events']):>5} chunks  {f['segments']:>4} segments  "
                             f"nesting {f['dmin']}..{f['dmax']}")
    procs = d.get("processes")
    if procs:
        lines.append(f"processes: {len(procs)} (`--process N` of trace and counts selects one)")
        lines += _tree(procs, 0, 1)
    for what, why in m.get("not_instrumented") or []:
        lines.append(f"not instrumented: {what}  ({why})")
    for n in d.get("unrecorded") or []:
        label = "partly recorded" if n.get("partial") else "not recorded"
        lines.append(f"{label}: pid {n['pid']} {' '.join(n['argv'])[:60]}  ({n['why']})")
    sizes = d["sizes"]
    lines.append("sizes:     " + ", ".join(f"{k} {v:,}" for k, v in sizes.items()))
    return "\n".join(lines)


def _tree(procs: list[dict[str, Any]], number: int, depth: int) -> list[str]:
    p = procs[number]
    ended = p["ended"] or "did not finish (killed?)"
    out = [f"  P {p['process']:<3}{'  ' * depth}pid {p['pid']} {p['start']:<6} {p['events']:>12,} events  "
           f"[{ended}, exit {p['exit_code']}]"]
    for c in p["children"]:
        out += _tree(procs, c, depth + 1)
    return out


class InfoText(Renderer):
    format: ClassVar[str] = "text"

    def render(self, trace: Trace, out: TextIO) -> None:
        out.write(info_text(info_dict(trace)) + "\n")


class InfoJson(Renderer):
    format: ClassVar[str] = "json"

    def render(self, trace: Trace, out: TextIO) -> None:
        out.write(json.dumps(info_dict(trace), indent=1) + "\n")
