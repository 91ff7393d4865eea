"""`wholetrace cfg`: the control-flow graphs of a source file (text, dot or JSON)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from wholetrace.errors import UsageError
from wholetrace.lines import source_lines


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
    lines = source_lines(source)
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


def add_parser(sub: Any) -> None:
    s = sub.add_parser("cfg", help="show the control-flow graphs of a source file")
    s.add_argument("target", metavar="FILE[:QUALNAME]")
    s.add_argument("--format", choices=("text", "dot", "json"), default="text")
    s.add_argument("--paths", type=int, nargs="?", const=50, default=None, metavar="N",
                   help="also show the Ball-Larus path numbering and the first N paths (default 50, 0: all)")
    s.set_defaults(func=run_cfg)
