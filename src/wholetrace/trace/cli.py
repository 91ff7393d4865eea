"""`wholetrace info` (what a recording holds) and `wholetrace trace` (its block trace)."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def run_info(args: argparse.Namespace) -> int:
    from wholetrace.render.info import InfoJson, InfoText
    from wholetrace.trace.session import Trace

    with Trace.open(args.file) as trace:
        (InfoJson() if args.json else InfoText()).render(trace, sys.stdout)
    return 0


def run_trace(args: argparse.Namespace) -> int:
    from wholetrace.render.trace import TraceFbe, TraceJson
    from wholetrace.trace.session import Trace

    with Trace.open(args.file) as trace:
        if args.thread is not None and args.thread not in {s.sid for s in trace.streams()}:
            from wholetrace.errors import UsageError
            raise UsageError(f"{args.file}: no stream {args.thread}")
        renderer = (TraceJson if args.format == "json" else TraceFbe)(stream=args.thread, limit=args.limit)
        renderer.render(trace, sys.stdout)
    return 0


def add_parser(sub: Any) -> None:
    s = sub.add_parser("info", help="summarise a recording")
    s.add_argument("file", metavar="OUT.wt")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=run_info)

    s = sub.add_parser("trace", help="print the F/B/E block trace of a recording")
    s.add_argument("file", metavar="OUT.wt")
    s.add_argument("--format", choices=("fbe", "json"), default="fbe")
    s.add_argument("--thread", type=int, default=None, metavar="N", help="only stream N")
    s.add_argument("--limit", type=int, default=None, metavar="N", help="at most N events")
    s.set_defaults(func=run_trace)
