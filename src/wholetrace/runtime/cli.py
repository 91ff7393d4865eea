"""`wholetrace record`: run a program and record it (parses its own argv: the program's follow SCRIPT)."""

from __future__ import annotations

import os
import _signal as signal   # the C module ``signal`` wraps: ``signal.py`` builds enums (imports enum, ~1.5 ms)
import sys
from types import SimpleNamespace

from wholetrace.errors import UsageError

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    import argparse
    from collections.abc import Callable, Mapping, Sequence   # (not imported at start-up)
    from typing import Any

def split_args(argv: Sequence[str], options: Mapping[str, bool],
               negative: Callable[[str], object] | None = None) -> tuple[list[str], list[str]]:
    """Split ``record``/``profile`` arguments into wholetrace's own and the program's (after
    SCRIPT or ``-m MODULE``; ``-- SCRIPT`` for a script named like an option).  ``options``: every
    option string of the command's parser -> whether it takes a value; ``negative``: the parser's
    negative-number test (default :func:`_negative_number`).  Each word is read as argparse reads
    it, so the split ends where argparse finds SCRIPT: a long option abbreviated to a unique prefix
    (``--mo path``), short options run together (``-qo OUT``, ``-qmjson``), a value glued on
    (``-oOUT``, ``--mode=path``), a negative number or a word with a space taken as a positional."""
    own: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":   # argparse: every later word is a positional, the first one SCRIPT
            return own + list(argv[i:i + 2]), list(argv[i + 2:])
        reading = _reading(a, options, negative or _negative_number)
        if reading is None:   # SCRIPT
            return own + [a], list(argv[i + 1:])
        takes_value, module = reading
        own += argv[i:i + 2] if takes_value else [a]
        i += 2 if takes_value else 1
        if module:
            return own, list(argv[i:])
    return own, []


def _reading(word: str, options: Mapping[str, bool], negative: Callable[[str], object]) -> tuple[bool, bool] | None:
    """How argparse (``_parse_optional``, ``consume_optional``) reads ``word``: None for a
    positional, else (the next word is an option's value, the option is ``-m``, whose value ends
    wholetrace's words).  Unknown and ambiguous options are (False, False): argparse rejects them."""
    if word[:1] != "-" or word == "-":
        return None
    if word in options:
        return options[word], word == "-m"
    head = word.split("=", 1)[0]
    if word.startswith("--"):
        found = [o for o in options if o.startswith(head)]
        if head in options or found:   # --opt=value, --prefix=value: the value is in the word
            return (options[found[0]], False) if head == word and len(found) == 1 else (False, False)
        return None if " " in word else (False, False)   # no option: argparse's space rule
    if head != word and head in options:   # -o=OUT
        return False, head == "-m"
    if word[:2] in options:   # -qo OUT: flags run together, then maybe an option taking a value
        for j in range(1, len(word)):
            takes = options.get("-" + word[j])
            if takes is None:
                return False, False
            if takes:
                return j == len(word) - 1, word[j] == "m"
        return False, False
    if negative(word) or " " in word:
        return None
    return False, False


def _negative_number(word: str) -> bool:
    """argparse's ``_negative_number_matcher``, ``^-\\d+$|^-\\d*\\.\\d+$`` (``re`` is not
    imported at start-up; ``\\d`` is a decimal digit, ``$`` also matches before a final newline)."""
    body = word[1:-1] if word.endswith("\n") else word[1:]
    whole, dot, frac = body.partition(".")
    return body.isdecimal() or (bool(dot) and (whole == "" or whole.isdecimal()) and frac.isdecimal())


def parser_options(parser: argparse.ArgumentParser) -> dict[str, bool]:
    """Every option string of ``parser`` -> whether it takes a value (for :func:`split_args`)."""
    assert all(a.nargs in (None, 0) for a in parser._actions if a.option_strings), "an option of optional arity"
    return {s: a.nargs != 0 for a in parser._actions for s in a.option_strings}


def target_options(p: argparse.ArgumentParser) -> None:
    """The options ``record`` and ``profile`` share: what to run and what to instrument."""
    p.add_argument("--include", action="append", default=[], metavar="PKG",
                   help="also instrument this package or module (stdlib and site-packages too)")
    p.add_argument("--no-cache", action="store_true",
                   help="instrument every module afresh (default: reuse instrumented code cached in "
                        "$WHOLETRACE_CACHE_DIR or ~/.cache/wholetrace)")
    p.add_argument("--cf-grammar", action="store_true",
                   help="at the end, also build the compressed control-flow trace (as `wholetrace compress`)")
    p.add_argument("--no-children", action="store_true",
                   help="do not record child processes (default: every Python child process started by fork, "
                        "multiprocessing or subprocess records into OUT.wt.parts/)")
    p.add_argument("-m", dest="module", metavar="MODULE", help="run a library module as a script")
    p.add_argument("script", nargs="?", help="the program to run")


def _columns() -> int:
    """``shutil.get_terminal_size().columns``, without importing shutil (and its bz2, lzma)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def _formatter() -> type[argparse.HelpFormatter]:
    """argparse's formatter with the width argparse computes, found without ``import shutil``
    (argparse imports it for every formatter it makes, and ``record`` is started often)."""
    import argparse

    class _Formatter(argparse.HelpFormatter):
        def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                     width: int | None = None) -> None:
            super().__init__(prog, indent_increment, max_help_position, _columns() - 2 if width is None else width)

    return _Formatter


def record_parser() -> argparse.ArgumentParser:
    import argparse

    p = argparse.ArgumentParser(prog="wholetrace record", formatter_class=_formatter(),
                                description="Run a Python program and record its whole control flow.")
    p.add_argument("--mode", default="blocks", help="what to record: blocks (the block trace), witness (few witnesses, "
                   "the block trace is regenerated), branches (every predicate's outcome), path (Ball-Larus path ids, "
                   "the block trace is regenerated; the WPP is built online with --wpp), count, count-naive, "
                   "full (the block trace plus every value and location statements define and read)")
    p.add_argument("-o", "--output", metavar="OUT.wt", help="recording file (default: <program>.wt)")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary line on stderr")
    p.add_argument("--weights", metavar="OLD.wt", help="count mode: place counters by the edge counts of OLD.wt")
    target_options(p)
    from wholetrace.wpp.cli import add_record_options   # the online WPP (--wpp, --keep-raw, ...)
    add_record_options(p)
    return p


def parse_target(parser: argparse.ArgumentParser, argv: Sequence[str], what: str) -> tuple[argparse.Namespace, Any]:
    """Parse ``argv`` of a command that runs a program; returns (options, runner.Target)."""
    args = parse_own(parser, argv, what)
    from wholetrace.runtime.runner import Target

    return args, Target(script=args.script, module=args.module, args=args.program_args)


def parse_own(parser: argparse.ArgumentParser, argv: Sequence[str], what: str) -> argparse.Namespace:
    """The options of a command that runs a program (the program's own in ``program_args``),
    without importing the runner (the instrumenter and recorder: `record --wpp` starts its
    builder process first)."""
    # the parser's own negative-number test: it changed within 3.11-3.14 (``-1_000``, ``-1e3``)
    own, prog_args = split_args(argv, parser_options(parser), getattr(parser, "_negative_number_matcher", None)
                                and parser._negative_number_matcher.match)
    if own and own[0] in ("-h", "--help"):
        parser.print_help()
        raise SystemExit(0)
    args = parser.parse_args(own)
    if (args.script is None) == (args.module is None):
        raise UsageError(f"{what} needs exactly one of SCRIPT or -m MODULE")
    args.program_args = prog_args
    return args


#: ``record``'s own options as :func:`fast_record_args` knows them: option -> (dest, how), how
#: one of "value" (the next word), "append" (the next word, added to a list), "int" (the next
#: word as an int), "flag" (True), "yes"/"no" (a ``--x``/``--no-x`` pair: True/False).
_FAST_OPTIONS: dict[str, tuple[str, str]] = {
    "--mode": ("mode", "value"), "-o": ("output", "value"), "--output": ("output", "value"),
    "-q": ("quiet", "flag"), "--quiet": ("quiet", "flag"), "--weights": ("weights", "value"),
    "--include": ("include", "append"), "--no-cache": ("no_cache", "flag"),
    "--cf-grammar": ("cf_grammar", "flag"), "--no-children": ("no_children", "flag"), "-m": ("module", "value"),
    "--wpp": ("wpp", "yes"), "--no-wpp": ("wpp", "no"), "--keep-raw": ("keep_raw", "flag"),
    "--lookahead": ("lookahead", "yes"), "--no-lookahead": ("lookahead", "no"), "--wpp-queue": ("wpp_queue", "int")}
#: Every option string of :func:`record_parser` -> whether it takes a value (:func:`split_args`).
RECORD_OPTIONS: dict[str, bool] = {**{o: how in ("value", "append", "int") for o, (_d, how) in _FAST_OPTIONS.items()},
                                   "-h": False, "--help": False}
#: The defaults of the online WPP's options of ``record`` (``wpp.cli.add_record_options``, which
#: reads them here as ``wpp.cli.RECORD_DEFAULTS``): SEQUITUR(1) by default (measured:
#: benchmarks/wpp.py, docs/design.md "The WPP built online").  Here, not in ``wpp.cli``: a
#: recording without ``--wpp`` does not import the ``wpp`` package (~1 M instructions).
WPP_DEFAULTS: dict[str, object] = {"wpp": None, "keep_raw": False, "lookahead": True, "wpp_queue": None}
#: Their defaults, as :func:`record_parser` gives them (the WPP options': :data:`WPP_DEFAULTS`).
_FAST_DEFAULTS: dict[str, object] = {"mode": "blocks", "output": None, "quiet": False, "weights": None,
                                     "no_cache": False, "cf_grammar": False, "no_children": False,
                                     "module": None, "script": None}


def fast_record_args(argv: Sequence[str]) -> SimpleNamespace | None:
    """``record``'s options as :func:`record_parser` parses them, without argparse (whose
    import, parser and translations cost ~4 ms of every recording's start-up), when every
    option is one of ``_FAST_OPTIONS`` spelled out in full, each value in the next word and not
    starting with ``-`` (an int for ``--wpp-queue``); None for anything else (help,
    abbreviations, ``--opt=value``, joined short options, whatever argparse would reject): the
    caller then parses with argparse, which answers and fails exactly as before.
    ``tests/test_cli_record_fast.py`` checks both parsers agree."""
    own, prog_args = split_args(argv, RECORD_OPTIONS)
    values: dict[str, object] = {**_FAST_DEFAULTS, **WPP_DEFAULTS, "include": []}
    i = 0
    while i < len(own):
        word = own[i]
        spec = _FAST_OPTIONS.get(word)
        if spec is None:
            if i == len(own) - 1 and (word == "-" or not word.startswith("-")):   # (a "-1" SCRIPT: argparse's)
                values["script"] = word
                break
            return None
        dest, how = spec
        if how in ("flag", "yes", "no"):
            values[dest] = how != "no"
            i += 1
            continue
        if i + 1 >= len(own) or own[i + 1].startswith("-"):
            return None
        value: object = own[i + 1]
        if how == "int":
            try:
                value = int(own[i + 1])   # what argparse's type=int calls
            except ValueError:
                return None   # argparse's error
        if how == "append":
            values[dest].append(value)  # type: ignore[attr-defined]
        else:
            values[dest] = value
        i += 2
    args = SimpleNamespace(**values)
    if (args.script is None) == (args.module is None):
        raise UsageError("record needs exactly one of SCRIPT or -m MODULE")
    args.program_args = prog_args
    return args


def run_record(argv: Sequence[str]) -> int:
    held = _hold_collections()
    try:
        return _run_record(argv, held)
    finally:
        held()


def _hold_collections() -> Callable[[], None]:
    """Stop the cyclic garbage collector's automatic collections while record starts up (its
    imports make ~18 collections, ~5 M instructions, each walking every object made so far);
    the function returned turns them back on, once, if they were on, with the objects made so
    far moved to the oldest generation as ``gc.freeze(); gc.unfreeze()`` moves them (unless
    something froze objects before: then they stay where they are): the runner calls it just
    before the program's first line (``record(before_program=...)``), so the program starts
    with the collector as it was.  Later calls do nothing (the program may have turned it off
    since).  docs/design.md, "Record's fixed cost, wave 14"."""
    import gc

    held = [gc.isenabled()]
    gc.disable()

    def resume() -> None:
        from wholetrace.runtime import collector   # (loaded by the runner: no import)
        from wholetrace.store import cmods   # (loaded by the writer: no import)

        cmods.hide()   # the program loads its own array and _sqlite3, as a plain run does
        if held.pop() if held else False:
            try:   # (a KeyboardInterrupt may land in restart: the collector is on again all the same)
                collector.restart()   # start-up's objects to the oldest generation, unscanned (else the
            finally:                  # first young collection walks them all: ~2.4 M); counts (0, 0, 0)
                gc.enable()

    return resume


def _run_record(argv: Sequence[str], held: Callable[[], None]) -> int:
    args = fast_record_args(argv) or parse_own(record_parser(), argv, "record")
    if args.cf_grammar:   # imported only then: it brings numba, a second of start-up
        from wholetrace.match.compress import TRACE_MODES as CF_MODES
        if args.mode not in CF_MODES:
            raise UsageError(f"--cf-grammar needs a trace mode ({', '.join(CF_MODES)}), not {args.mode!r}")
    wpp = builder = None
    if args.wpp or args.keep_raw:   # the online WPP (wpp.cli checks its options; not imported without them)
        from wholetrace.wpp import cli as wpp
        builder = wpp.start_builder(args)    # --wpp: loads numba in its own process while we import the runner
    from wholetrace.runtime.runner import Target, record
    target = Target(script=args.script, module=args.module, args=args.program_args)
    from wholetrace.store import RecordingWriter

    stem = _stem(args.script) if args.script else args.module.split(".")[-1]
    out = _pure(args.output or f"{stem}.wt")
    where = os.path.abspath(out)   # the end's file checks: the program may have changed directory
    weights = None
    if args.weights is not None:
        from wholetrace.profile import edge_weights
        weights = edge_weights(args.weights)
    writer = RecordingWriter(out, high=True)     # before the program: its descriptors >= fdguard.HIGH_FD
    if wpp is not None:
        writer = wpp.record_writer(writer, args, builder)
    children = None if args.no_children else out
    if args.mode == "full":   # the split server: only here, not in a host process (runtime.splitserver.WANTED)
        from wholetrace.runtime import splitserver
        splitserver.WANTED = True
    pid = os.getpid()
    outcome = record(target, writer, mode=args.mode, include=args.include, weights=weights,
                     cache=not args.no_cache, children=children, before_program=held)
    if os.getpid() != pid:       # a forked child of the program ends here: it prints nothing of its own
        return outcome.exit_code
    if args.cf_grammar and os.path.exists(where):
        from wholetrace.match.compress import compress_file
        compress_file(where)
    if not args.quiet:
        size = os.stat(where).st_size if os.path.exists(where) else 0
        extra = f", {len(outcome.daemon_threads)} daemon thread(s) still running" if outcome.daemon_threads else ""
        if children is not None:
            extra += _unrecorded_note(where)
        if outcome.left_out:
            extra += f", {outcome.left_out} not instrumented (`wholetrace info` lists them)"
        _summary(f"wholetrace: recorded {outcome.events:,} events ({args.mode}), {size:,} bytes -> {out} "
                 f"[{outcome.ended}, exit {outcome.exit_code}{extra}]")
    if outcome.ended == "keyboard-interrupt":
        for stream in (sys.stdout, sys.stderr):   # as the interpreter's exit would (a closed one: nothing)
            try:
                stream.flush()
            except Exception:   # noqa: BLE001 - as plain: the signal decides the exit status
                pass
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return outcome.exit_code


def _summary(line: str) -> None:
    """Print record's summary line on the program's ``sys.stderr``, after what the program
    wrote to the interpreter's own stdout (flushed: a C ``flush`` the program cannot see; a
    stdout of the program's own is flushed only at exit, once, as plain's).  Nothing when the
    program left stderr closed or None, or its stdout failing (plain reports that at exit)."""
    out, err = sys.stdout, sys.stderr
    if out is sys.__stdout__ and out is not None and not out.closed:
        try:
            out.flush()
        except Exception:   # noqa: BLE001 - a broken pipe: reported at exit, as plain
            return
    if err is None or getattr(err, "closed", False) is True:
        return
    try:
        print(line, file=err)
    except Exception:   # noqa: BLE001 - a stderr of the program's own that fails
        pass


def _stem(path: str) -> str:
    """``pathlib.PurePosixPath(path).stem`` (pathlib is not imported at start-up: it brings
    ``re``, ``fnmatch``, ``urllib.parse``, ``ipaddress``; ~5 ms)."""
    name = _pure(path).rsplit("/", 1)[-1]
    if name == ".":
        name = ""
    i = name.rfind(".")
    return name[:i] if 0 < i < len(name) - 1 else name


def _pure(path: str) -> str:
    """``str(pathlib.PurePosixPath(path))``: repeated slashes and ``.`` parts dropped (two
    leading slashes kept), no trailing slash, ``.`` for nothing."""
    if os.sep != "/":  # pragma: no cover - Windows: pathlib's rules differ
        from pathlib import PurePath

        return str(PurePath(path))
    lead = "//" if path.startswith("//") and not path.startswith("///") else "/" if path.startswith("/") else ""
    parts = [p for p in path.split("/") if p and p != "."]
    return lead + "/".join(parts) if lead or parts else "."


def _unrecorded_note(out: str) -> str:
    """``, N Python process(es) not recorded`` when child interpreters ran code unrecorded.
    Counts the notes' files; reading them (``store.parts.unrecorded``, for ``info``) would
    import numpy at the end of every recording."""
    from wholetrace.runtime.children import parts_dir
    from wholetrace.store.schema import UNRECORDED_PREFIX

    folder = parts_dir(out)
    n = sum(1 for name in os.listdir(folder) if name.startswith(UNRECORDED_PREFIX) and name.endswith(".json")
            and len(name) >= len(UNRECORDED_PREFIX) + 5 and not name.startswith(UNRECORDED_PREFIX + "partial-")
            ) if os.path.isdir(folder) else 0   # (a recorded process's partial note is no process unrecorded)
    return f", {n} Python process(es) not recorded (`wholetrace info` lists them)" if n else ""


def add_parser(sub: Any) -> None:
    sub.add_parser("record", help="run a program and record it (see `wholetrace record -h`)", add_help=False)


#: Commands that parse their own argv (the program's arguments follow SCRIPT).
RAW_COMMANDS = {"record": run_record}
