"""The `wholetrace` command line: a thin layer that parses arguments and returns exit codes."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from wholetrace import __version__
from wholetrace.errors import MAX_MESSAGE, StoreError, UsageError, WholetraceError, short_message

if TYPE_CHECKING:
    from wholetrace.store import Recording

Handler = Callable[[argparse.Namespace], int]


# --------------------------------------------------------------------------- record

def _split_record_args(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split ``record`` arguments into wholetrace's own and the program's (after SCRIPT or -m MOD)."""
    own: list[str] = []
    i = 0
    takes_value = {"--mode", "--include", "-o", "--output", "-m", "--weights", "--format", "--limit"}
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return own, list(argv[i + 1:])
        if a in takes_value:
            own += argv[i:i + 2]
            i += 2
            if a == "-m":
                return own, list(argv[i:])
            continue
        if a.startswith("-") and a != "-":
            own.append(a)
            i += 1
            continue
        return own + [a], list(argv[i + 1:])
    return own, []


def _record_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="wholetrace record",
                                description="Run a Python program and record its whole control flow.")
    p.add_argument("--mode", default="blocks", help="what to record: blocks (the block trace), witness (few witnesses, the block "
                        "trace is regenerated), branches (every predicate's outcome), count, count-naive, "
                        "full (the block trace plus every value and location statements define and read)")
    p.add_argument("--include", action="append", default=[], metavar="PKG",
                   help="also instrument this package or module (stdlib and site-packages too)")
    p.add_argument("-o", "--output", metavar="OUT.wt", help="recording file (default: <program>.wt)")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary line on stderr")
    p.add_argument("--weights", metavar="OLD.wt", help="count mode: place counters by the edge counts of OLD.wt")
    p.add_argument("--no-cache", action="store_true",
                   help="instrument every module afresh (default: reuse instrumented code cached in "
                        "$WHOLETRACE_CACHE_DIR or ~/.cache/wholetrace)")
    p.add_argument("--cf-grammar", action="store_true",
                   help="at the end, also build the compressed control-flow trace (as `wholetrace compress`)")
    p.add_argument("-m", dest="module", metavar="MODULE", help="run a library module as a script")
    p.add_argument("script", nargs="?", help="the program to run")
    return p


def _profile_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="wholetrace profile",
                                description="Run a program and print exact line and branch counts (count mode).")
    p.add_argument("--naive", action="store_true", help="a counter in every block (count-naive), for comparison")
    p.add_argument("--weights", metavar="OLD.wt", help="place counters by the edge counts of an earlier recording")
    p.add_argument("--no-cache", action="store_true", help="instrument every module afresh (no cached code)")
    p.add_argument("--format", choices=("text", "json", "lcov"), default="text")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="text: only the N hottest functions")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE (default: stdout)")
    p.add_argument("--include", action="append", default=[], metavar="PKG",
                   help="also instrument this package or module (stdlib and site-packages too)")
    p.add_argument("-m", dest="module", metavar="MODULE", help="run a library module as a script")
    p.add_argument("script", nargs="?", help="the program to run")
    return p


def _load_weights(path: str | None) -> dict[tuple[str, str, str], list[int]] | None:
    """Edge counts of an earlier recording, by (file, qualname, CFG fingerprint)."""
    if path is None:
        return None
    from wholetrace.store import Recording
    with Recording(path) as rec:
        profiles = load_profiles(rec, path)
        prints = {f.fid: f.fingerprint for f in rec.functions()}
    return {(p.file, p.qualname, prints[p.fid]): [max(int(c), 0) for c in p.edges] for p in profiles}


def cmd_profile(raw: Sequence[str]) -> int:
    import shutil
    import tempfile
    own, prog_args = _split_record_args(raw)
    args = _profile_parser().parse_args(own)
    if (args.script is None) == (args.module is None):
        raise UsageError("profile needs exactly one of SCRIPT or -m MODULE")
    from wholetrace.runtime.runner import Target, record
    from wholetrace.store import Recording, RecordingWriter
    weights = _load_weights(args.weights)
    mode = "count-naive" if args.naive else "count"
    # not TemporaryDirectory: the run ends with the program's atexit handlers, which would remove it
    tmp = tempfile.mkdtemp(prefix="wholetrace-")
    try:
        out = Path(tmp) / "profile.wt"
        outcome = record(Target(script=args.script, module=args.module, args=prog_args), RecordingWriter(out),
                         mode=mode, include=args.include, weights=weights, cache=not args.no_cache)
        with Recording(out) as rec:
            profiles = load_profiles(rec, str(out))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.stdout.flush()
    _write_report(profiles, args)
    return outcome.exit_code


def cmd_record(raw: Sequence[str]) -> int:
    own, prog_args = _split_record_args(raw)
    args = _record_parser().parse_args(own)
    if (args.script is None) == (args.module is None):
        raise UsageError("record needs exactly one of SCRIPT or -m MODULE")
    from wholetrace.runtime.runner import Target, record
    from wholetrace.store import RecordingWriter
    if args.cf_grammar and args.mode not in ("blocks", "witness", "branches"):
        raise UsageError(f"--cf-grammar needs a trace mode (blocks, witness, branches), not {args.mode!r}")
    target = Target(script=args.script, module=args.module, args=prog_args)
    stem = Path(args.script).stem if args.script else args.module.split(".")[-1]
    out = Path(args.output or f"{stem}.wt")
    weights = _load_weights(args.weights)
    writer = RecordingWriter(out)
    outcome = record(target, writer, mode=args.mode, include=args.include, weights=weights,
                     cache=not args.no_cache)
    if args.cf_grammar and out.exists():
        from wholetrace.match.compress import compress_file
        compress_file(out)
    if not args.quiet:
        size = out.stat().st_size if out.exists() else 0
        extra = f", {len(outcome.daemon_threads)} daemon thread(s) still running" if outcome.daemon_threads else ""
        print(f"wholetrace: recorded {outcome.events:,} events ({args.mode}), {size:,} bytes -> {out} "
              f"[{outcome.ended}, exit {outcome.exit_code}{extra}]", file=sys.stderr)
    if outcome.ended == "keyboard-interrupt":
        sys.stdout.flush()
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return outcome.exit_code


# --------------------------------------------------------------------------- info / trace / cfg

def _open(args: argparse.Namespace) -> "Recording":
    """The recording named by ``args.file``; with ``--salvage`` its intact part, after one
    stderr line per loss (a SalvagedRecording, which reads like a Recording)."""
    from wholetrace.store import Recording
    if not getattr(args, "salvage", False):
        return Recording(args.file)
    from wholetrace.store.salvage import SalvagedRecording
    rec = SalvagedRecording(args.file)
    for line in rec.lost.lines() or ["nothing lost"]:
        print(f"wholetrace: salvage: {line}", file=sys.stderr)
    return rec  # type: ignore[return-value]


def cmd_info(args: argparse.Namespace) -> int:
    from wholetrace.analysis.info import info_dict, info_text
    with _open(args) as rec:
        d = info_dict(rec)
        if args.salvage:
            d["salvage"] = rec.lost.to_json()  # type: ignore[attr-defined]
    print(json.dumps(d, indent=1) if args.json else info_text(d))
    return 0


def cmd_trace(args: argparse.Namespace) -> int:
    from wholetrace.analysis.traceview import write_trace
    from wholetrace.regen.recording import RegeneratedRecording, as_blocks, is_regenerated
    with _open(args) as rec:
        view: Any = rec
        if args.salvage and is_regenerated(rec):   # regenerate each run of intact chunks on its own
            from wholetrace.store.segments import JoinedSegments, SegmentView
            segs = SegmentView(rec)  # type: ignore[arg-type]
            view = JoinedSegments(segs, RegeneratedRecording(segs))
        write_trace(view if args.salvage else as_blocks(rec), sys.stdout, fmt=args.format,
                    stream=args.thread, limit=args.limit)
    return 0


def cmd_counts(args: argparse.Namespace) -> int:
    with _open(args) as rec:
        if args.salvage:
            from wholetrace.store.segments import SegmentView
            rec = SegmentView(rec)  # type: ignore[arg-type]
        profiles = load_profiles(rec, args.file)
    return _write_report(profiles, args)


def load_profiles(rec: "Recording", name: str) -> list:  # type: ignore[type-arg]
    """Per-function counts of any recording: from its trace (blocks) or its counters (count modes)."""
    from wholetrace.profile.counting import profiles_from_count_recording
    from wholetrace.profile.report import profiles_from_recording
    mode = rec.meta.get("mode")
    if mode == "blocks":
        return profiles_from_recording(rec)
    if mode in ("witness", "branches"):
        from wholetrace.regen.recording import RegeneratedRecording
        return profiles_from_recording(RegeneratedRecording(rec))
    if mode in ("count", "count-naive"):
        return profiles_from_count_recording(rec)
    raise UsageError(f"{name}: no counts in a {mode!r} recording")


def _write_report(profiles: list, args: argparse.Namespace) -> int:  # type: ignore[type-arg]
    from wholetrace.profile.report import report_lcov, report_text, write_json
    text = (write_json(profiles) if args.format == "json" else report_lcov(profiles) if args.format == "lcov"
            else report_text(profiles, limit=args.limit))
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def cmd_cfg(args: argparse.Namespace) -> int:
    from wholetrace.instrument import render
    from wholetrace.instrument.cfg import build_module
    spec = args.target
    file, _, qual = spec.partition(":") if not os.path.exists(spec) else (spec, "", "")
    path = Path(file)
    if not path.is_file():
        raise UsageError(f"no such file: {file}")
    source = path.read_text(encoding="utf-8", errors="surrogateescape")
    cfgs = build_module(source, str(path))
    if qual:
        cfgs = [c for c in cfgs if c.qualname == qual]
        if not cfgs:
            raise UsageError(f"no function {qual!r} in {file}")
    lines = source.splitlines()
    nums = None
    if args.paths is not None:
        from wholetrace.instrument.pathnum import number_cfg
        nums = [number_cfg(c) for c in cfgs]
    if args.format == "dot":
        print(render.to_dot(cfgs, lines))
    elif args.format == "json":
        print(render.to_json(cfgs, None if nums is None else [render.paths_json(n, args.paths) for n in nums]))
    else:
        print("\n\n".join(render.to_text(c, lines) + ("" if nums is None else "\n" + render.paths_text(c, n, args.paths))
                          for c, n in zip(cfgs, nums or [None] * len(cfgs))))
    return 0


# --------------------------------------------------------------------------- main

SALVAGE_HELP = "read a damaged file: use every intact chunk and function, report what was lost on stderr"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="wholetrace", description="Record whole executions of Python programs and query them.")
    p.add_argument("--version", action="version", version=f"wholetrace {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("record", help="run a program and record it (see `wholetrace record -h`)", add_help=False)
    sub.add_parser("profile", help="run a program, print exact counts (see `wholetrace profile -h`)", add_help=False)

    s = sub.add_parser("info", help="summarise a recording")
    s.add_argument("file", metavar="OUT.wt")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.add_argument("--salvage", action="store_true", help=SALVAGE_HELP)
    s.set_defaults(func=cmd_info)

    s = sub.add_parser("trace", help="print the F/B/E block trace of a recording")
    s.add_argument("file", metavar="OUT.wt")
    s.add_argument("--format", choices=("fbe", "json"), default="fbe")
    s.add_argument("--thread", type=int, default=None, metavar="N", help="only stream N")
    s.add_argument("--limit", type=int, default=None, metavar="N", help="at most N events")
    s.add_argument("--salvage", action="store_true", help=SALVAGE_HELP)
    s.set_defaults(func=cmd_trace)

    s = sub.add_parser("counts", help="exact block, branch and line counts of a recording")
    s.add_argument("file", metavar="OUT.wt")
    s.add_argument("--format", choices=("text", "json", "lcov"), default="text")
    s.add_argument("--limit", type=int, default=None, metavar="N", help="text: only the N hottest functions")
    s.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE")
    s.add_argument("--salvage", action="store_true", help=SALVAGE_HELP)
    s.set_defaults(func=cmd_counts)

    s = sub.add_parser("cfg", help="show the control-flow graphs of a source file")
    s.add_argument("target", metavar="FILE[:QUALNAME]")
    s.add_argument("--format", choices=("text", "dot", "json"), default="text")
    s.add_argument("--paths", type=int, nargs="?", const=50, default=None, metavar="N",
                   help="also show the Ball-Larus path numbering and the first N paths (default 50, 0: all)")
    s.set_defaults(func=cmd_cfg)

    from wholetrace.match import cli as match_cli
    match_cli.add_parser(sub)
    try:
        from wholetrace.grammar import cli as grammar_cli
    except ImportError:  # pragma: no cover - grammar engine not built
        grammar_cli = None
    if grammar_cli is not None and hasattr(grammar_cli, "add_parser"):
        grammar_cli.add_parser(sub)
        sub.choices["sequitur"].set_defaults(func=grammar_cli.run)
    from wholetrace.wet import cli as wet_cli
    wet_cli.add_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in ("record", "profile"):
            parser_for = _record_parser if argv[0] == "record" else _profile_parser
            if len(argv) > 1 and argv[1] in ("-h", "--help"):
                parser_for().print_help()
                return 0
            return (cmd_record if argv[0] == "record" else cmd_profile)(argv[1:])
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        return int(args.func(args))
    except WholetraceError as exc:
        hint = ""
        if isinstance(exc, StoreError) and argv[:1] in (["info"], ["trace"], ["counts"]) \
                and "--salvage" not in argv and any(w in str(exc) for w in ("corrupt", "truncated", "damaged", "missing")):
            hint = " (--salvage reads what is intact)"
        print(f"wholetrace: error: {short_message(exc, MAX_MESSAGE - 19 - len(hint))}{hint}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        sys.stderr.close()
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
