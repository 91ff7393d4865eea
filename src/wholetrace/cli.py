"""The `wholetrace` command line: a thin layer that dispatches to each package's commands.

Every command lives in its package's ``cli`` module, which provides ``add_parser(subparsers)``
(each parser sets ``func``: ``run(args) -> int``); commands that take a program and its
arguments (``record``, ``profile``) parse their own argv through ``RAW_COMMANDS``.  Errors
wholetrace reports are one line on stderr and exit status 2.
"""

from __future__ import annotations

import sys

from wholetrace import __version__
from wholetrace.errors import MAX_MESSAGE, StoreError, WholetraceError, short_message

TYPE_CHECKING = False   # argparse is imported only by the commands that use it (not `record`'s usual start)
if TYPE_CHECKING:   # pragma: no cover
    import argparse
    from collections.abc import Sequence   # (collections.abc is not imported at start-up)
    from types import ModuleType

#: Every command, in help order, with the module that defines it.
COMMANDS: list[tuple[str, str]] = [
    ("record", "wholetrace.runtime.cli"),
    ("profile", "wholetrace.profile.cli"),
    ("info", "wholetrace.trace.cli"),
    ("trace", "wholetrace.trace.cli"),
    ("counts", "wholetrace.profile.cli"),
    ("cfg", "wholetrace.instrument.cli"),
    ("sequitur", "wholetrace.grammar.cli"),
    ("compress", "wholetrace.match.cli"),
    ("match", "wholetrace.match.cli"),
    ("wpp", "wholetrace.wpp.cli"),
    ("hot", "wholetrace.wpp.hotcli"),
    ("paths", "wholetrace.wpp.hotcli"),
    ("values", "wholetrace.wet.cli"),
    ("deps", "wholetrace.wet.cli"),
    ("slice", "wholetrace.wet.cli"),
]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command (or only of the module defining ``only``)."""
    import argparse

    p = argparse.ArgumentParser(prog="wholetrace", description="Record whole executions of Python programs and query them.")
    p.add_argument("--version", action="version", version=f"wholetrace {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    done: set[str] = set()
    for name, module in COMMANDS:
        if (only is None or name == only) and module not in done:
            done.add(module)
            _import(module).add_parser(sub)
    return p


def _module(name: str) -> ModuleType | None:
    module = dict(COMMANDS).get(name)
    return _import(module) if module else None


def _import(name: str) -> ModuleType:
    """``importlib.import_module(name)`` for an absolute name (the importlib package, with
    ``warnings``, is not imported at record's start-up)."""
    __import__(name)
    return sys.modules[name]


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        module = _module(argv[0]) if argv else None
        raw = getattr(module, "RAW_COMMANDS", {}).get(argv[0]) if module else None
        if raw is not None:
            return int(raw(argv[1:]))
        parser = build_parser(argv[0] if module else None)
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
