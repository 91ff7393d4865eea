"""The ``wholetrace wpp`` subcommand (Larus Table 1 per stream, the grammar, its DAG) and the WPP options of ``record``."""

from __future__ import annotations

import sys

from wholetrace.errors import UsageError
from wholetrace.runtime.cli import WPP_DEFAULTS

TYPE_CHECKING = False   # record's start-up imports this module: no argparse, json or typing (runtime.cli)
if TYPE_CHECKING:   # pragma: no cover
    import argparse
    from typing import Any

PRINT_LIMIT = 2000   # --print / --dot refuse grammars with more rules than this


# -- record --------------------------------------------------------------------------------
#: The defaults of the options :func:`add_record_options` adds (``record`` parses its usual
#: command lines without argparse: ``runtime.cli.fast_record_args``); kept in ``runtime.cli``
#: so that a recording without ``--wpp`` does not import this package.
RECORD_DEFAULTS = WPP_DEFAULTS
#: SEQUITUR(1) by default (measured: benchmarks/wpp.py, docs/design.md "The WPP built online")
DEFAULT_LOOKAHEAD = RECORD_DEFAULTS["lookahead"]


def add_record_options(p: argparse.ArgumentParser) -> None:
    """The ``record`` options of the online WPP."""
    import argparse

    p.add_argument("--wpp", action=argparse.BooleanOptionalAction, default=RECORD_DEFAULTS["wpp"],
                   help="build the whole program path (one SEQUITUR grammar per stream) while the "
                        "program runs, in a helper process; the raw stream is then not stored "
                        "unless --keep-raw; off by default in every mode")
    p.add_argument("--keep-raw", action="store_true", default=RECORD_DEFAULTS["keep_raw"],
                   help="with --wpp: store the raw stream too")
    p.add_argument("--lookahead", action=argparse.BooleanOptionalAction, default=RECORD_DEFAULTS["lookahead"],
                   help="with --wpp: SEQUITUR(1), one symbol of look-ahead (Larus 1999 §3.2)")
    p.add_argument("--wpp-queue", type=int, default=RECORD_DEFAULTS["wpp_queue"], metavar="EVENTS",
                   help="with --wpp: events waiting for the builder in memory before chunks are "
                        "spilled to a temporary file and built later (default 4194304)")


def start_builder(args: argparse.Namespace) -> Any:
    """The WPP builder process when ``args`` ask for ``--wpp`` (else None), started at once so
    that it loads numba while ``record`` imports the rest and instruments the program."""
    if not args.wpp:
        if args.keep_raw:
            raise UsageError("--keep-raw needs --wpp")
        return None
    # wpp.spawn, not wpp.online: the builder starts before pickle, threading and co. are imported
    from wholetrace.wpp.spawn import QUEUE_EVENTS, BuilderProcess

    return BuilderProcess(args.mode, lookahead=args.lookahead,
                          queue_events=QUEUE_EVENTS if args.wpp_queue is None else args.wpp_queue)


def record_writer(writer: Any, args: argparse.Namespace, process: Any = None) -> Any:
    """``writer``, wrapped by the online WPP builder when ``args`` ask for it (``process``: the
    builder :func:`start_builder` started, else one is started here)."""
    if process is None:
        process = start_builder(args)
        if process is None:
            return writer
    from wholetrace.wpp.online import OnlineWpp

    return OnlineWpp(writer, args.mode, keep_raw=args.keep_raw, process=process)


def readable(rec: Any) -> Any:
    """``rec``, read through its grammars when it stores no raw streams (``wpp.stored.readable``)."""
    if not isinstance(rec.meta.get("wpp"), dict):
        return rec
    from wholetrace.wpp.stored import readable as expanded

    return expanded(rec)


# -- wholetrace wpp ------------------------------------------------------------------------------
def add_parser(subparsers: Any) -> None:
    """Add the ``wpp`` subcommand to an argparse subparsers object."""
    p = subparsers.add_parser(
        "wpp", help="the whole program path of a recording made with --wpp",
        description="Per stream: events, distinct paths and symbols, raw bytes (4 per event), rules, "
                    "right-hand-side symbols, start rule length, encoded bytes, trace/WPP ratio, "
                    "rules per path (Larus 1999 Table 1), build time and how far the builder lagged. "
                    "A stream's bytes and ratio count its grammar; the total's count the grammars and "
                    "the terminal table they share (stored size).")
    p.add_argument("file", metavar="OUT.wt")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--print", dest="print_rules", action="store_true",
                   help=f"print each grammar with terminals named (at most {PRINT_LIMIT} rules)")
    p.add_argument("--dot", action="store_true", help="print each grammar's DAG as graphviz DOT")
    p.add_argument("--stream", type=int, metavar="SID", help="only this stream")
    p.set_defaults(func=run)


def _report(path: str, sid: int | None) -> tuple[Any, dict[str, Any]]:
    from wholetrace.store import open_recording
    from wholetrace.wpp.stored import StoredWpp

    with open_recording(path) as rec:
        wpp = StoredWpp(rec)
    streams = [s for s in wpp.streams if sid is None or s.sid == sid]
    if sid is not None and not streams:
        raise UsageError(f"{path}: no WPP for stream {sid}")
    rows = [s.table1(wpp.terminals) for s in streams]
    m = wpp.meta
    out = {"file": path, "mode": m.get("mode"), "lookahead": m.get("lookahead"),
           "keep_raw": m.get("keep_raw"), "streams": rows,
           "symbols": len(wpp.terminals),
           "builder": {k: m.get(k) for k in ("events", "max_backlog_events", "backlog_at_end_events",
                                              "tail_seconds", "jit_seconds", "spilled_events",
                                              "spilled_chunks", "queue_events", "ready_seconds", "kernels")}}
    raw = sum(r["raw_bytes"] for r in rows)
    gram = sum(r["encoded_bytes"] for r in rows)
    enc = gram + wpp.symbols_bytes     # the terminal table holds part of the trace too (SEQ groups)
    out["total"] = {"events": sum(r["events"] for r in rows), "raw_bytes": raw, "grammar_bytes": gram,
                    "symbols_bytes": wpp.symbols_bytes, "encoded_bytes": enc,
                    "ratio": round(raw / enc, 2) if enc else None,
                    "build_seconds": round(sum(r["build_seconds"] or 0 for r in rows), 4)}
    return (wpp, streams), out


_COLUMNS = (("stream", "sid"), ("events", "events"), ("distinct_paths", "paths"),
            ("distinct_symbols", "symbols"), ("raw_bytes", "raw B"), ("rules", "rules"),
            ("rhs", "rhs"), ("len_S", "|S|"), ("encoded_bytes", "WPP B"), ("ratio", "ratio"),
            ("rules_per_path", "rules/path"), ("build_seconds", "build s"))


def _table(out: dict[str, Any]) -> str:
    rows = [[str(r[k]) for k, _ in _COLUMNS] for r in out["streams"]]
    heads = [h for _, h in _COLUMNS]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(heads)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(heads, widths))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
    t, b = out["total"], out["builder"]
    la = "SEQUITUR(1)" if out["lookahead"] else "SEQUITUR"
    lines.append(f"total: {t['events']:,} events, {t['raw_bytes']:,} raw bytes -> {t['encoded_bytes']:,} "
                 f"WPP bytes ({t['grammar_bytes']:,} grammars + {t['symbols_bytes']:,} for the table of "
                 f"{out['symbols']:,} terminals; ratio {t['ratio']}), {la}, "
                 f"build {t['build_seconds']} s CPU")
    lines.append(f"builder lag: at most {b['max_backlog_events']:,} events queued, "
                 f"{b['backlog_at_end_events']:,} left when the program ended, finished "
                 f"{b['tail_seconds']} s after it; {b['spilled_events']:,} events spilled; "
                 f"kernels {str(b.get('kernels') or 'jit').split(':')[0]} (loaded in {b['jit_seconds']} s)"
                 + (f"; builder ready {b['ready_seconds']} s after it started" if b.get("ready_seconds") is not None else ""))
    return "\n".join(lines)


def _named_rules(grammar: Any, wpp: Any) -> str:
    def name(x: int) -> str:
        return wpp.terminals.label(int(x)) if x >= 0 else f"R{-int(x)}"
    return "\n".join(("S" if i == 0 else f"R{i}") + " -> " + " ".join(name(x) for x in grammar.rule(i))
                     for i in range(grammar.num_rules + 1))


def run(args: argparse.Namespace) -> int:
    """Run the subcommand; returns the exit status."""
    import json

    (wpp, streams), out = _report(args.file, args.stream)
    if args.print_rules or args.dot:
        big = [s.sid for s in streams if s.grammar.num_rules + 1 > PRINT_LIMIT]
        if big:
            raise UsageError(f"stream {big[0]}: grammar has more than {PRINT_LIMIT} rules; "
                             "choose a smaller stream with --stream or drop --print/--dot")
    w = sys.stdout.write
    if args.json:
        if args.print_rules:
            for row, s in zip(out["streams"], streams):
                row["grammar"] = [s.grammar.rule(i).tolist() for i in range(s.grammar.num_rules + 1)]
            out["terminals"] = [wpp.terminals.label(t) for t in range(len(wpp.terminals))]
        w(json.dumps(out) + "\n")
    elif not args.dot:
        w(_table(out) + "\n")
        if args.print_rules:
            for s in streams:
                w(f"\nstream {s.sid} ({s.name}):\n{_named_rules(s.grammar, wpp)}\n")
    if args.dot:
        for s in streams:
            w(s.grammar.to_dot(max_rules=PRINT_LIMIT).replace("digraph grammar", f"digraph stream{s.sid}", 1))
    return 0
