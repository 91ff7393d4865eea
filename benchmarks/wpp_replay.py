"""Replay a ``--keep-raw`` recording's streams through the WPP builder's own loop, offline: CPU per phase.

The builder process (``wpp/builder.py`` ``build``) interns each chunk (``EventInterner.codes``), feeds
the ids to ``GrammarBuilder``, and at the end finishes and encodes each grammar
(``encode_explicit(fast=True)``).  This runs the same calls on the raw streams of a recording made
with ``record --mode M --wpp --keep-raw`` (or without ``--wpp``), in chunks of ``--chunk`` events,
with the builder's compiled kernels (``wpp.aot.install``; the line says ``aot`` or why not), and
prints thread CPU seconds per phase (minimum of ``--runs``), the build rate in events per CPU
second, and the builder's working sizes at the end.  Nothing is written; to compare two trees run
it with each tree's ``src`` on ``PYTHONPATH``, alternately (docs/design.md, wave 11).

    python benchmarks/wpp_replay.py REC.wt [--chunk 400000] [--runs 3] [--limit EVENTS]
"""

from __future__ import annotations

import argparse
import inspect
import json
import time
from typing import Any

import numpy as np

from wholetrace.wpp.aot import install

KERNELS = install()   # before the grammar layer imports its kernels

from wholetrace.grammar import GrammarBuilder  # noqa: E402
from wholetrace.grammar.encoding import encode_explicit  # noqa: E402
from wholetrace.store import Recording  # noqa: E402
from wholetrace.wpp.intern import interner_for  # noqa: E402


def replay(streams: list[tuple[int, np.ndarray]], mode: str, fids: list[int], lookahead: bool,
           chunk: int) -> dict[str, Any]:
    """One replay of every stream (interleaved by chunk, as the flusher hands them over)."""
    clock = time.thread_time
    interner = interner_for(mode)
    interner.set_path_functions(fids)
    kw = {"scratch": True} if "scratch" in inspect.signature(interner.codes).parameters else {}
    builders = {sid: GrammarBuilder(lookahead=lookahead) for sid, _ in streams}
    t = {"intern": 0.0, "feed": 0.0, "finish": 0.0, "encode": 0.0}
    longest = max((len(ev) for _, ev in streams), default=0)
    for start in range(0, longest, chunk):
        for sid, ev in streams:
            part = ev[start:start + chunk]
            if not len(part):
                continue
            a = clock()
            codes = interner.codes(sid, part, **kw)
            b = clock()
            builders[sid].feed(codes)
            t["intern"] += b - a
            t["feed"] += clock() - b
    sizes: dict[str, int] = {"symbols": 0, "rules": 0, "bytes": 0, "node_capacity": 0, "table_slots": 0}
    for sid, _ in streams:
        a = clock()
        builders[sid].feed(interner.finish(sid))
        st = builders[sid].stats()
        g = builders[sid].finish()
        b = clock()
        enc = encode_explicit(g, fast=True)
        t["finish"] += b - a
        t["encode"] += clock() - b
        sizes["symbols"] += len(g)
        sizes["rules"] += g.num_rules
        sizes["bytes"] += len(enc)
        sizes["node_capacity"] += st["node_capacity"]
        sizes["table_slots"] += st["table_slots"]
    return t | sizes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("recording")
    ap.add_argument("--chunk", type=int, default=400_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--limit", type=int, default=0, help="replay only each stream's first EVENTS events")
    ap.add_argument("--no-lookahead", action="store_true")
    args = ap.parse_args(argv)
    with Recording(args.recording, check=False) as rec:
        mode = rec.meta.get("mode") or (rec.meta.get("wpp") or {}).get("mode") or "path"
        streams = [(s.sid, np.asarray(rec.events(s.sid), np.int32)) for s in rec.streams()]
        fids = [f.fid for f in rec.functions() if f.cfg.get("plan", {}).get("strategy") == "paths"]
    if args.limit:
        streams = [(sid, ev[:args.limit]) for sid, ev in streams]
    streams = [(sid, ev) for sid, ev in streams if len(ev)]
    if not streams:
        raise SystemExit("no raw events in this recording (record it with --keep-raw)")
    events = sum(len(ev) for _, ev in streams)
    replay([(sid, ev[:50_000]) for sid, ev in streams], mode, fids, not args.no_lookahead, args.chunk)  # warm
    runs = [replay(streams, mode, fids, not args.no_lookahead, args.chunk) for _ in range(max(1, args.runs))]
    best = {k: min(r[k] for r in runs) if isinstance(runs[0][k], float) else runs[0][k] for k in runs[0]}
    total = best["intern"] + best["feed"] + best["finish"] + best["encode"]
    out = {"kernels": KERNELS, "mode": mode, "events": events, **{k: round(v, 4) if isinstance(v, float) else v
                                                                  for k, v in best.items()},
           "M_events_per_cpu_s": round(events / total / 1e6, 2),
           "ns_per_symbol_feed": round(best["feed"] / max(1, best["symbols"]) * 1e9, 1)}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
