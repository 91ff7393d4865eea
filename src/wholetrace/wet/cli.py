"""The ``values``, ``deps`` and ``slice`` subcommands over the WET of a ``full`` recording."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from wholetrace.errors import UsageError
from wholetrace.lines import source_lines
from wholetrace.wet import queries as q


def add_parser(sub: Any) -> None:
    """Add ``values``, ``deps`` and ``slice`` to an argparse subparsers object."""
    p = sub.add_parser("values", help="values a statement defined, by instance and time (full mode)")
    p.add_argument("recording")
    p.add_argument("criterion", metavar="FILE:LINE")
    p.add_argument("--var", metavar="NAME", help="only this name")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--first", type=int, metavar="N", help="the first N instances")
    g.add_argument("--last", type=int, metavar="N", help="the last N instances")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run, wet_cmd="values")
    p = sub.add_parser("deps", help="what one statement instance used, defined, and where each value came from")
    p.add_argument("recording")
    p.add_argument("criterion", metavar="FILE:LINE[#K]", help="K-th instance (from 1; default: the last)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run, wet_cmd="deps")
    p = sub.add_parser("slice", help="dynamic slice of a statement instance or of the last output")
    p.add_argument("recording")
    p.add_argument("criterion", metavar="FILE:LINE[#K]", nargs="?")
    p.add_argument("--output", action="store_true", help="criterion: the print() call that wrote last")
    p.add_argument("--var", metavar="NAME", help="slice the value of NAME the criterion used (or defined)")
    p.add_argument("--forward", action="store_true", help="what the criterion influenced, not what influenced it")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run, wet_cmd="slice")


def run(args: argparse.Namespace) -> int:
    cmd = args.wet_cmd
    if cmd == "slice" and bool(args.output) == bool(args.criterion):
        raise UsageError("slice needs exactly one of FILE:LINE[#K] or --output")
    for n in ("first", "last"):
        if getattr(args, n, None) is not None and getattr(args, n) < 1:
            raise UsageError(f"--{n} must be at least 1")
    s = q.open_session(args.recording)
    if cmd == "values":
        out = q.values(s, args.criterion, args.var, args.first, args.last)
        if args.json:
            print(json.dumps(out))
        else:
            print(f"{out['criterion']}: {len(out['instances'])} instances")
            for r in out["instances"]:
                d = ", ".join(f"{k} = {v}" for k, v in r["defs"].items()) or "(no value)"
                print(f"  #{r['instance']:<6} t={r['time']:<8} {d}")
        return 0
    if cmd == "deps":
        out = q.deps(s, args.criterion)
        if args.json:
            print(json.dumps(out))
            return 0
        print(f"{out['criterion']} (t={out['time']})")
        for k, v in out["defs"].items():
            print(f"  defines {k} = {v}")
        for u in out["uses"]:
            print(f"  uses    {u['location']:<24} from {u['from']} (t={u['time']})")
        if out["control"]:
            print(f"  control from {out['control']['from']} (t={out['control']['time']})")
        for c in out["calls"]:
            print(f"  calls   {c}")
        return 0
    label, inst = q.last_output(s) if args.output else q.instance(s, args.criterion)
    start = q.var_start(s, inst, args.var) if args.var else [inst]
    out = q.slice_(s, start, args.forward)
    if args.json:
        print(json.dumps({"criterion": label, "lines": {f: sorted(v) for f, v in out["lines"].items()},
                          "instances": out["instances"], "notes": out["notes"]}))
        return 0
    print(f"{'forward' if args.forward else 'backward'} slice of {label}"
          f"{' --var ' + args.var if args.var else ''}: {out['instances']} instances")
    for note in out["notes"]:
        print(f"note: {note}")
    for file, per in sorted(out["lines"].items()):
        print(f"--- {file}")
        text = source_lines(s.sources.get(file, ""))
        lo, hi = min(per), max(per)
        for ln in range(lo, hi + 1):
            mark = f"{per[ln]:>6}x" if ln in per else " " * 7
            code = text[ln - 1] if ln - 1 < len(text) else ""
            if ln in per or code.strip():
                print(f"{mark} {ln:>5} | {code}")
    sys.stdout.flush()
    return 0
