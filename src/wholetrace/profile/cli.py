"""`wholetrace profile` (run a program in count mode, print its counts) and `wholetrace counts` (of a recording)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wholetrace.errors import UsageError

if TYPE_CHECKING:
    from wholetrace.trace.session import Trace

FORMATS = ("text", "json", "lcov")


def report_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=FORMATS, default="text")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="text: only the N hottest functions")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE (default: stdout)")


def profile_parser() -> argparse.ArgumentParser:
    from wholetrace.runtime.cli import target_options

    p = argparse.ArgumentParser(prog="wholetrace profile",
                                description="Run a program and print exact line and branch counts (count mode).")
    p.add_argument("--naive", action="store_true", help="a counter in every block (count-naive), for comparison")
    p.add_argument("--weights", metavar="OLD.wt", help="place counters by the edge counts of an earlier recording")
    report_options(p)
    target_options(p)
    return p


def write_report(trace: Trace, args: argparse.Namespace) -> int:
    """Render the counts of ``trace`` as ``args.format`` to ``args.output`` or stdout."""
    from wholetrace.render.counts import CountsJson, CountsLcov, CountsText

    renderer = {"text": lambda: CountsText(limit=args.limit), "json": CountsJson, "lcov": CountsLcov}[args.format]()
    if args.output:
        try:
            out = open(args.output, "w")
        except OSError as exc:
            raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from None
        with out:
            renderer.render(trace, out)
    else:
        renderer.render(trace, sys.stdout)
    return 0


def run_profile(argv: Sequence[str]) -> int:
    import shutil
    import tempfile

    from wholetrace.runtime.cli import parse_target
    from wholetrace.runtime.runner import record
    from wholetrace.store import RecordingWriter
    from wholetrace.trace.session import Trace

    args, target = parse_target(profile_parser(), argv, "profile")
    weights = None
    if args.weights is not None:
        from wholetrace.profile import edge_weights
        weights = edge_weights(args.weights)
    # not TemporaryDirectory: the run ends with the program's atexit handlers, which would remove it
    tmp = tempfile.mkdtemp(prefix="wholetrace-")
    pid = os.getpid()
    try:
        out = Path(tmp) / "profile.wt"
        outcome = record(target, RecordingWriter(out, high=True), mode="count-naive" if args.naive else "count",
                         include=args.include, weights=weights, cache=not args.no_cache,
                         children=None if args.no_children else out)
        sys.stdout.flush()
        if os.getpid() != pid:   # a forked child of the program: the parent reports
            return outcome.exit_code
        with Trace.open(out) as trace:
            write_report(trace, args)
    finally:
        if os.getpid() == pid:
            shutil.rmtree(tmp, ignore_errors=True)
    return outcome.exit_code


def run_counts(args: argparse.Namespace) -> int:
    from wholetrace.trace.cli import open_trace

    with open_trace(args, segments=True) as trace:
        return write_report(trace, args)


def add_parser(sub: Any) -> None:
    from wholetrace.trace.cli import PROCESS_HELP, SALVAGE_HELP

    sub.add_parser("profile", help="run a program, print exact counts (see `wholetrace profile -h`)", add_help=False)
    s = sub.add_parser("counts", help="exact block, branch and line counts of a recording")
    s.add_argument("file", metavar="OUT.wt")
    report_options(s)
    s.add_argument("--salvage", action="store_true", help=SALVAGE_HELP)
    s.add_argument("--process", type=int, default=None, metavar="P", help=PROCESS_HELP)
    s.set_defaults(func=run_counts)


#: Commands that parse their own argv (the program's arguments follow SCRIPT).
RAW_COMMANDS = {"profile": run_profile}
