"""The ``wholetrace match`` and ``wholetrace compress`` subcommands."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from wholetrace.errors import UsageError
from wholetrace.match import cftrace


def add_parser(sub: Any) -> None:
    """Add ``compress`` and ``match`` to an argparse subparsers object."""
    p = sub.add_parser("compress", help="add the compressed control-flow trace and its indexes to a recording",
                       description="Build the SEQUITUR grammar of every stream's F/B/E trace, the scheme-3 "
                                   "chunks and chunk index and the scheme-4 segment index, and store them in "
                                   "the recording (needed by `wholetrace match`).  Idempotent.")
    p.add_argument("file", metavar="OUT.wt")
    p.add_argument("--force", action="store_true", help="rebuild streams that are already compressed")
    p.add_argument("--chunk-events", type=int, default=cftrace.CHUNK_EVENTS, metavar="N",
                   help=f"symbols per scheme-3 chunk (default {cftrace.CHUNK_EVENTS})")
    p.add_argument("--segments", type=int, default=cftrace.SEGMENTS, metavar="K",
                   help=f"segments of the start rule for scheme 4 (default {cftrace.SEGMENTS}) ...")
    p.add_argument("--segment-items", type=int, default=cftrace.SEGMENT_ITEMS, metavar="N",
                   help=f"... of at least N items each (default {cftrace.SEGMENT_ITEMS})")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    p.set_defaults(func=run_compress)

    p = sub.add_parser("match", help="find an intraprocedural path of a function in a compressed recording",
                       description="Does PATH (blocks of FUNCTION, as `wholetrace cfg` numbers them) occur "
                                   "among the blocks of one invocation of FUNCTION (nested calls skipped), "
                                   "where first, and how often?  Answered on the compressed trace.")
    p.add_argument("file", metavar="OUT.wt")
    p.add_argument("function", metavar="FUNCTION", help="qualname, qualname@FILE:LINE or FILE:LINE of the def")
    p.add_argument("path", metavar="PATH", nargs="+", help="block ids (or source lines with --lines)")
    p.add_argument("--lines", action="store_true", help="PATH gives source lines; each maps to its block(s)")
    p.add_argument("--scheme", default="auto", choices=("1", "2", "3", "4", "auto"),
                   help="1: expand and scan; 2: rule summaries; 3: chunk index; 4: segment index "
                        "and summaries; auto (default): 4 if the function is rare, else 2")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--first", dest="mode", action="store_const", const="first",
                   help="stop at the first occurrence (no count)")
    g.add_argument("--count", dest="mode", action="store_const", const="count", help="only the count")
    g.add_argument("--all", dest="mode", action="store_const", const="all", help="list every occurrence")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="with --all: at most N occurrences")
    p.add_argument("--stream", type=int, default=None, metavar="S", help="only stream S")
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.set_defaults(func=run_match, mode="default")


def _ints(words: list[str], lines: bool) -> list[int]:
    try:
        return [int(w if lines else w.removeprefix("B")) for w in words]
    except ValueError:
        bad = next(w for w in words if not w.removeprefix("B").isdigit())
        raise UsageError(f"not a {'line number' if lines else 'block id'}: {bad!r}") from None


def run_compress(args: argparse.Namespace) -> int:
    from wholetrace.match.compress import compress_file
    from wholetrace.match.store import describe
    from wholetrace.store import Recording

    t = time.perf_counter()
    built = compress_file(args.file, force=args.force, chunk_events=args.chunk_events, segments=args.segments,
                          segment_items=args.segment_items)
    secs = time.perf_counter() - t
    if not args.quiet:
        new = [b for b in built if not b.skipped]
        if not new:
            print(f"wholetrace: {args.file} is already compressed ({len(built)} stream(s))", file=sys.stderr)
            return 0
        with Recording(args.file) as rec:
            d = describe(rec)
        sizes = d["bytes"] if d else {}
        events = sum(b.symbols for b in new)
        print(f"wholetrace: compressed {len(new)} stream(s), {events:,} F/B/E events in {secs:.2f} s "
              f"({events / max(secs, 1e-9) / 1e6:.3g} M events/s): grammar {sizes.get('grammar', 0):,} bytes, "
              f"chunks {sizes.get('chunks', 0):,}, chunk index {sizes.get('chunk_index', 0):,}, "
              f"segment index {sizes.get('segment_index', 0):,}, caller stacks {sizes.get('chunk_stacks', 0):,}",
              file=sys.stderr)
    return 0


def run_match(args: argparse.Namespace) -> int:
    from wholetrace.instrument.cfg import CFG
    from wholetrace.match import callers, engine, resolve
    from wholetrace.match.query import Query
    from wholetrace.match.store import load_stream
    from wholetrace.store import Recording

    if args.limit is not None and (args.mode != "all" or args.limit < 0):
        raise UsageError("--limit N (N >= 0) goes with --all")
    with Recording(args.file) as rec:
        functions = rec.functions()
        f = resolve.find_function(functions, args.function)
        name = resolve.label(f)
        cfg = CFG.from_json(f.cfg)
        words = _ints(args.path, args.lines)
        path = (resolve.blocks_of_lines(cfg, words, f.qualname) if args.lines
                else resolve.check_path(cfg, words, f.qualname))
        sids = [s.sid for s in rec.streams()]
        if args.stream is not None:
            if args.stream not in sids:
                raise UsageError(f"{args.file} has no stream {args.stream}")
            sids = [args.stream]
        streams = [load_stream(rec, sid) for sid in sids]
        q = Query(f.fid, path)
        answer = engine.match(streams, q, args.scheme, args.mode, args.limit)
        by_sid = {cs.sid: cs for cs in streams}
        chains: dict[tuple[int, int], list[int]] = {}
        for sid in sorted({s for s, _ in answer.occurrences}):
            pos = [p for s, p in answer.occurrences if s == sid]
            chains.update(zip(((sid, p) for p in pos), callers.chains(by_sid[sid], pos)))
    labels = {g.fid: resolve.label(g) for g in functions}
    occ = [{"stream": s, "position": p, "invocation": [labels.get(x, str(x)) for x in chains[(s, p)] if x >= 0]}
           for s, p in answer.occurrences]
    first = answer.first
    out = {"function": name, "path": list(path), "scheme": answer.scheme, "count": answer.count,
           "first": None if first is None else {"stream": first[0], "position": first[1]}, "occurrences": occ}
    if args.json:
        print(json.dumps(out))
    else:
        print(_text(out, args, {g.fid: g.qualname for g in functions}, chains, answer))
    return 0


def _text(out: dict[str, Any], args: argparse.Namespace, names: dict[int, str],
          chains: dict[tuple[int, int], list[int]], answer: Any) -> str:
    how = "auto" if args.scheme == "auto" else "asked"
    lines = [f"function   {out['function']}",
             f"path       {' '.join(f'B{b}' for b in out['path'])}",
             f"scheme     {out['scheme']} ({how})"]
    if out["count"] is not None:
        per = ", ".join(f"stream {r.sid}: {r.count:,}" for r in answer.streams if r.count)
        lines.append(f"count      {out['count']:,}" + (f"  ({per})" if len(answer.streams) > 1 and per else ""))
    if out["first"] is None:
        # --count finds no first occurrence: whether the path occurs is its count
        lines.append("occurs     " + ("yes" if out["count"] else "no"))
        return "\n".join(lines)
    lines.append("occurs     yes")
    for i, o in enumerate(out["occurrences"]):
        chain = " > ".join(names.get(x, "?") for x in chains[(o["stream"], o["position"])] if x >= 0)
        head = "first     " if i == 0 and args.mode != "all" else "at        "
        lines.append(f"{head} stream {o['stream']}, event {o['position']:,}  in {chain}")
    if args.mode == "all" and out["count"] is not None and len(out["occurrences"]) < out["count"]:
        lines.append(f"           ... {out['count'] - len(out['occurrences']):,} more (--limit)")
    return "\n".join(lines)
