"""The ``wholetrace sequitur`` subcommand: build a grammar for a symbol file and report on it."""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from wholetrace.errors import UsageError
from wholetrace.grammar.builder import MAX_SYMBOL, GrammarBuilder

FORMATS = ("txt", "u16", "u32")
PRINT_LIMIT = 2000  # --print refuses grammars with more rules than this
_CHUNK = 1 << 20


def add_parser(subparsers: Any) -> None:
    """Add the ``sequitur`` subcommand to an argparse subparsers object."""
    p = subparsers.add_parser(
        "sequitur",
        help="build the SEQUITUR grammar of a symbol file",
        description="Build the SEQUITUR (or SEQUITUR(1)) grammar of a file of integer symbols "
                    "and print its size, speed, peak memory and encoded size.")
    p.add_argument("input", metavar="INPUT", help="symbol file (.txt one id per line, .u16, .u32)")
    p.add_argument("--input-format", choices=FORMATS, default=None,
                   help="txt: decimal ids, one per line; u16/u32: little-endian unsigned "
                        "(default: from the file extension)")
    p.add_argument("--lookahead", action="store_true", help="use SEQUITUR(1) (one-symbol look-ahead)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.add_argument("--print", dest="print_rules", action="store_true",
                   help=f"also print the rules (grammars of at most {PRINT_LIMIT} rules)")
    p.add_argument("-o", "--output", metavar="OUT", help="write the encoded grammar to OUT")
    p.add_argument("--compact", action="store_true",
                   help="encode compactly (the input through a context-mixing coder, smaller than "
                        "xz -9; decoding rebuilds the grammar) instead of the explicit rules")
    p.set_defaults(func=run)


def read_symbols(path: str, fmt: str | None) -> np.ndarray:
    """Symbols of a .txt/.u16/.u32 file; UsageError with a one-line message if unreadable."""
    p = Path(path)
    if fmt is None:
        fmt = p.suffix.lstrip(".").lower()
        if fmt not in FORMATS:
            raise UsageError(f"{path}: cannot tell the format from the extension; use --input-format")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None
    if fmt == "u16" or fmt == "u32":
        width = 2 if fmt == "u16" else 4
        if len(data) % width:
            raise UsageError(f"{path}: size {len(data)} is not a multiple of {width} bytes ({fmt})")
        return np.frombuffer(data, "<u2" if width == 2 else "<u4")
    try:
        arr = np.array(data.split(), dtype=np.int64)
    except (ValueError, OverflowError):
        bad = next((t for t in data.split() if not t.isdigit()), b"?")
        raise UsageError(f"{path}: {bad[:40].decode(errors='replace')!r} is not a non-negative integer") from None
    return arr


def _jit_seconds() -> float:
    t = time.perf_counter()
    for la in (False, True):
        b = GrammarBuilder(lookahead=la)
        b.feed(np.array([1, 2, 1, 2, 1, 2, 3], np.int64))
        g = b.finish()
        g.to_bytes()
        g.to_bytes(compact=True)
    return time.perf_counter() - t


def run(args: argparse.Namespace) -> int:
    """Run the subcommand; returns the exit status."""
    symbols = read_symbols(args.input, args.input_format)
    if symbols.size and (int(symbols.min()) < 0 or int(symbols.max()) > MAX_SYMBOL):
        raise UsageError(f"{args.input}: symbols must lie in 0..{MAX_SYMBOL}")
    jit = _jit_seconds()
    t = time.perf_counter()
    b = GrammarBuilder(lookahead=args.lookahead, expected_symbols=int(symbols.size))
    for i in range(0, symbols.size, _CHUNK):
        b.feed(symbols[i : i + _CHUNK])
    g = b.finish()
    secs = time.perf_counter() - t
    enc = g.to_bytes(compact=args.compact)
    if args.output:
        try:
            Path(args.output).write_bytes(enc)
        except OSError as exc:
            raise UsageError(f"{args.output}: {exc.strerror or exc}") from None
    report = {
        "input": args.input, "symbols": int(symbols.size), "lookahead": bool(args.lookahead),
        "rules": g.num_rules, "rhs": g.num_symbols, "len_S": g.start_length,
        "max_rule_length": g.max_rule_length, "seconds": round(secs, 3),
        "jit_seconds": round(jit, 3),
        "symbols_per_second": round(symbols.size / secs) if secs > 0 else None,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "encoded_bytes": len(enc),
    }
    if args.print_rules and g.num_rules > PRINT_LIMIT:
        raise UsageError(f"--print: grammar has {g.num_rules} rules (limit {PRINT_LIMIT})")
    out = sys.stdout
    if args.json:
        if args.print_rules:
            report["grammar"] = [g.rule(i).tolist() for i in range(g.num_rules + 1)]
        out.write(json.dumps(report) + "\n")
    else:
        width = max(len(k) for k in report)
        for k, v in report.items():
            out.write(f"{k:<{width}}  {v}\n")
        if args.print_rules:
            out.write(g.format_rules() + "\n")
    return 0
