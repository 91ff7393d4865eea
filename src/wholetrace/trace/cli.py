"""`wholetrace info` (what a recording holds) and `wholetrace trace` (its block trace), with `--salvage`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from wholetrace.trace.session import Trace

PROCESS_HELP = ("only process P of a recording with child processes (numbers as `info` shows them; 0: the "
                "root; a forked child's streams begin with its parent's events up to the fork)")
SALVAGE_HELP = "read a damaged file: use every intact chunk and function, report what was lost on stderr"


def open_trace(args: argparse.Namespace, *, segments: bool = False) -> Trace:
    """The recording named by ``args.file`` as a Trace; with ``--salvage`` its intact part,
    after one stderr line per loss (``segments``: each run of intact chunks as a stream of
    its own, cut to the activations it holds, as counting and regeneration need)."""
    from wholetrace.trace.session import Trace

    if getattr(args, "process", None) is not None:      # a recording with child processes: one of them
        from wholetrace.profile.processes import one_process
        return one_process(args.file, args.process, salvage=getattr(args, "salvage", False), segments=segments)
    if not getattr(args, "salvage", False):
        from wholetrace.store import Recording
        from wholetrace.wpp.cli import readable   # a --wpp recording: streams expanded from its grammars

        return Trace(readable(Recording(args.file)), owns=True)
    from wholetrace.store.salvage import SalvagedRecording
    from wholetrace.store.segments import SegmentView

    from wholetrace.wpp.stored import salvaged

    rec = SalvagedRecording(args.file)
    view, lost_grammars = salvaged(rec)   # a --wpp recording without raw streams: read through its grammars
    rec.lost.arrays += lost_grammars
    for line in rec.lost.lines() or ["nothing lost"]:
        print(f"wholetrace: salvage: {line}", file=sys.stderr)
    if view is not rec:   # whole streams, each from an intact grammar or lost: no chunk runs to cut apart
        return Trace(view, owns=True)
    return Trace(SegmentView(rec) if segments else rec, owns=True)  # type: ignore[arg-type]


def run_info(args: argparse.Namespace) -> int:
    import json

    from wholetrace.render.info import InfoText, info_dict

    with open_trace(args) as trace:
        if args.json:
            d = info_dict(trace)
            if args.salvage:
                d["salvage"] = trace.recording.lost.to_json()  # type: ignore[attr-defined]
            print(json.dumps(d, indent=1))
        else:
            InfoText().render(trace, sys.stdout)
    return 0


def _salvaged_events(trace: Trace) -> Callable[[int], Iterator[np.ndarray]] | None:
    """Per real stream of a salvaged recording, what `trace` prints: the intact chunks as they
    are (blocks), or each run of intact chunks regenerated on its own (reduced modes); None (read
    as usual) for streams expanded whole from their grammars."""
    from wholetrace.wpp.stored import ExpandedRecording

    if isinstance(trace.recording, ExpandedRecording):
        return None
    if trace.mode == "blocks":
        return trace.recording.iter_chunks
    from wholetrace.store.segments import SegmentView
    from wholetrace.trace.session import Trace

    view = SegmentView(trace.recording)  # type: ignore[arg-type]
    segments = Trace(view)  # type: ignore[arg-type]

    def events(sid: int) -> Iterator[np.ndarray]:
        for i in view.segments_of(sid):
            yield from segments.blocks(i)
    return events


def run_trace(args: argparse.Namespace) -> int:
    from wholetrace.errors import UsageError
    from wholetrace.render.trace import TraceFbe, TraceJson

    with open_trace(args) as trace:
        if args.thread is not None and args.thread not in {s.sid for s in trace.streams()}:
            raise UsageError(f"{args.file}: no stream {args.thread}")
        if trace.mode == "path":   # an old recording is refused before any output (not at its first path function)
            from wholetrace.trace.tables import check_path_base
            check_path_base(trace.functions.values())
        events = _salvaged_events(trace) if args.salvage else None
        renderer = (TraceJson if args.format == "json" else TraceFbe)(stream=args.thread, limit=args.limit,
                                                                      events=events)
        renderer.render(trace, sys.stdout)
    return 0


def add_parser(sub: Any) -> None:
    s = sub.add_parser("info", help="summarise a recording")
    s.add_argument("file", metavar="OUT.wt")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.add_argument("--salvage", action="store_true", help=SALVAGE_HELP)
    s.set_defaults(func=run_info)

    s = sub.add_parser("trace", help="print the F/B/E block trace of a recording")
    s.add_argument("file", metavar="OUT.wt")
    s.add_argument("--format", choices=("fbe", "json"), default="fbe")
    s.add_argument("--thread", type=int, default=None, metavar="N", help="only stream N")
    s.add_argument("--limit", type=int, default=None, metavar="N", help="at most N events")
    s.add_argument("--salvage", action="store_true", help=SALVAGE_HELP)
    s.add_argument("--process", type=int, default=None, metavar="P", help=PROCESS_HELP)
    s.set_defaults(func=run_trace)
