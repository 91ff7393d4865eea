"""The ``wholetrace hot`` (minimal hot subpaths) and ``wholetrace paths`` (path profile from the WPP) subcommands."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from wholetrace.errors import UsageError


def _positive(text: str) -> int:
    v = int(text)
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {v}")
    return v


def add_parser(subparsers: Any) -> None:
    """Add the ``hot`` and ``paths`` subcommands."""
    p = subparsers.add_parser(
        "hot", help="minimal hot subpaths: the costly repeated sequences of the whole program path",
        description="Larus's minimal hot subpaths (1999, §4), found on the grammar without expanding "
                    "it: the shortest runs of min-length..max-length blocks (paths in a path "
                    "recording) whose cost, frequency x statements on them, reaches --min-cost. "
                    "Reads the WPP of record --wpp; other trace recordings get a block grammar built "
                    "from their trace first. The first query on a record --mode path --wpp recording "
                    "stores the grammar it rebuilds in OUT.wt (arrays wpp.flat.*) for later queries; "
                    "--no-store (or WHOLETRACE_NO_STORE=1) leaves the file unchanged.")
    p.add_argument("file", metavar="OUT.wt")
    p.add_argument("--min-cost", type=int, metavar="C",
                   help="smallest cost reported (default: 1%% of each stream's total cost)")
    p.add_argument("--max-length", type=int, default=100, metavar="L", help="longest subpath, in symbols (100)")
    p.add_argument("--min-length", type=int, default=4, metavar="N", help="shortest subpath, in symbols (4)")
    p.add_argument("--limit", type=_positive, default=10, metavar="K", help="show the K costliest (10; 0: all)")
    p.add_argument("--stream", type=int, metavar="SID", help="only this stream")
    p.add_argument("--cost", choices=("statements", "instructions"), default="statements",
                   help="what a block or path costs: its statements, or its bytecode instructions")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--no-store", action="store_true",
                   help="do not store the rebuilt grammar in OUT.wt (a stored one is still read)")
    p.set_defaults(func=run_hot)

    q = subparsers.add_parser(
        "paths", help="path profile: per function, its most frequent acyclic paths, from the WPP",
        description="The Ball-Larus path profile of a path recording: per function the acyclic paths "
                    "that ran, how often (from the grammar's frequencies, without expanding it) and "
                    "the lines they run; paths cut short by an exception are marked truncated.")
    q.add_argument("file", metavar="OUT.wt")
    q.add_argument("--function", metavar="F", help="only functions whose qualified name contains F")
    q.add_argument("--limit", type=_positive, default=10, metavar="K", help="paths per function (10; 0: all)")
    q.add_argument("--json", action="store_true", help="print one JSON object")
    q.set_defaults(func=run_paths)


def run_hot(args: argparse.Namespace) -> int:
    """``wholetrace hot``; returns the exit status."""
    from wholetrace.render.hot import hot_text
    from wholetrace.wpp.hotreport import HotOptions, hot_json, hot_report
    from wholetrace.wpp.view import open_view

    if args.min_cost is not None and args.min_cost < 1:
        raise UsageError(f"--min-cost must be at least 1, got {args.min_cost}")
    if not 1 <= args.min_length <= args.max_length:
        raise UsageError(f"need 1 <= --min-length ({args.min_length}) <= --max-length ({args.max_length})")
    from wholetrace.wpp.flatcache import ENV_NO_STORE

    store = not args.no_store and os.environ.get(ENV_NO_STORE, "") in ("", "0")
    view = open_view(args.file, stream=args.stream, progress=not args.json, ungroup=True, store=store)
    report = hot_report(view, HotOptions(args.min_cost, args.max_length, args.min_length, args.limit, args.cost))
    sys.stdout.write((json.dumps(hot_json(report)) if args.json else hot_text(report)) + "\n")
    return 0


def run_paths(args: argparse.Namespace) -> int:
    """``wholetrace paths``; returns the exit status."""
    from wholetrace.render.hot import paths_text
    from wholetrace.wpp.paths import path_profile, paths_json
    from wholetrace.wpp.view import open_view

    view = open_view(args.file, progress=False)
    profile = path_profile(view)
    out = paths_json(view, profile, function=args.function, limit=args.limit)
    if args.json:
        keys = ("id", "count", "blocks", "lines", "truncated")
        sys.stdout.write(json.dumps({"functions": [{"function": fn["function"], "file": fn["file"],
                                                    "paths": [{k: p[k] for k in keys} for p in fn["paths"]]}
                                                   for fn in out]}) + "\n")
    else:
        sys.stdout.write(paths_text(out, sum(fn["count"] for fn in out), view.symbol_kind) + "\n")
    return 0
