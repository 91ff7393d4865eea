"""`wholetrace cfg`: the control-flow graphs of a source file (text, dot or JSON)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from wholetrace.errors import UsageError


def run_cfg(args: argparse.Namespace) -> int:
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
    if args.format == "dot":
        print(render.to_dot(cfgs, lines))
    elif args.format == "json":
        print(render.to_json(cfgs))
    else:
        print("\n\n".join(render.to_text(c, lines) for c in cfgs))
    return 0


def add_parser(sub: Any) -> None:
    s = sub.add_parser("cfg", help="show the control-flow graphs of a source file")
    s.add_argument("target", metavar="FILE[:QUALNAME]")
    s.add_argument("--format", choices=("text", "dot", "json"), default="text")
    s.set_defaults(func=run_cfg)
