"""Python subprocesses of a recording: ``zz_wholetrace.pth`` hands the interpreter to the runner.

A recording with children sets ``WHOLETRACE_CHILD`` in its environment (``runtime.children``):
what to record and where (JSON).  Every Python interpreter of the same installation started
from it (``subprocess`` of ``sys.executable``, ``os.exec*``, a shell running ``python``) finds
it while ``site`` processes ``.pth`` files, the way coverage.py's ``COVERAGE_PROCESS_START``
works.  If the interpreter is about to run a script (``python [-options] SCRIPT ...``), a
module (``python -m MOD ...``), a command (``python -c CODE ...``: its code is the main
module ``<string>``, instrumented like a script) or a program on its standard input
(``python - ...``, or ``python`` with a stdin that is not a terminal: the main module
``<stdin>``), :func:`startup` installs an audit hook and lets ``site`` finish; at the
interpreter's ``cpython.run_*`` event for the target the hook runs the program through the
runner into a part of the recording, then raises ``SystemExit`` with the program's exit
status, and the interpreter finalises as after a plain run (docs/design.md, "A recorded
subprocess finalises as plain, wave 22").  ``multiprocessing``'s own
children record through ``runtime.children``.  An interpreter that runs code the runner
does not reproduce (``-i``, ``-x``, a directory or zip application, the interactive prompt)
runs as it would, unrecorded, and leaves a note saying so in the parts directory
(:func:`unrecorded`), which ``record`` and ``info`` report: nothing is left out silently.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

from wholetrace.runtime.children import ENV
from wholetrace.store.schema import UNRECORDED_PREFIX

#: Interpreter options that take no value and change nothing the runner reproduces.
_FLAGS = frozenset("BdEsuvqObRIP")
#: Interpreter options whose value follows (in the same argument or the next one).
_VALUED = frozenset("WX")
#: How ``multiprocessing`` starts its own interpreters with ``-c`` (spawned children,
#: the fork server, the resource tracker): they record through ``runtime.children`` or not at all.
_MULTIPROCESSING = ("from multiprocessing.spawn import", "from multiprocessing.forkserver import",
                    "from multiprocessing.resource_tracker import")


def target_of(argv: list[str]) -> tuple[str, str, list[str]] | None:
    """("script", path, args), ("module", name, args), ("command", code, args) or ("stdin",
    argv0, args) from the interpreter's own argv (``sys.orig_argv``), parsed as the interpreter
    parses it (short options may share an argument: ``-uc CODE``, ``-Xdev``, ``-um MOD``);
    "stdin" means the program comes from standard input (``python - ARGS``: argv0 ``-``, or
    no program at all: argv0 ``""``, which runs stdin only when it is not a terminal, see
    :func:`startup`).  None for anything the runner does not reproduce (``-i``, ``-x``,
    ``--help``, ``multiprocessing``'s own interpreters)."""
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--":
            i += 1
            break
        if a == "--check-hash-based-pycs":
            i += 2
            continue
        if not a.startswith("-") or a == "-":
            break
        if a.startswith("--"):
            return None                      # --help, --version, ...
        j = 1
        while j < len(a):
            c = a[j]
            if c in "cm":
                if j + 1 < len(a):
                    value, rest = a[j + 1:], argv[i + 1:]
                elif i + 1 < len(argv):
                    value, rest = argv[i + 1], argv[i + 2:]
                else:
                    return None
                if c == "m":
                    return "module", value, rest
                if value.startswith(_MULTIPROCESSING):
                    return None
                return "command", value, rest
            if c in _VALUED:
                if j + 1 == len(a):
                    i += 1                   # the value is the next argument
                break
            if c not in _FLAGS:
                return None                  # -i, -x, -h, -V, ...
            j += 1
        i += 1
    if i == len(argv):
        return "stdin", "", []
    if argv[i] == "-":
        return "stdin", "-", argv[i + 1:]
    return "script", argv[i], argv[i + 1:]


def why_unrecorded(argv: list[str], stdin_is_tty: bool) -> str | None:
    """Why an interpreter with this argv runs code that is not recorded (a few words), or None
    when it is recorded or runs no program code (``--version``, ``-h``, a missing script, ...)."""
    target = target_of(argv)
    if target is not None:
        kind, what, _args = target
        if kind == "stdin" and what == "" and stdin_is_tty:
            return "the interactive prompt"
        if kind == "script" and os.path.isdir(what):
            return "a directory's __main__"
        if kind == "script" and os.path.isfile(what) and not _runs(target, stdin_is_tty):
            return "a zip application"
        return None
    skip = False
    for a in argv[1:]:
        if skip:
            skip = False
            continue
        if a == "--" or not a.startswith("-") or a.startswith("--") or a == "-":
            return None
        for j, c in enumerate(a[1:], 1):
            if c == "i":
                return "-i (a prompt after the program)"
            if c == "x":
                return "-x (the first line skipped)"
            if c in "cm":
                return None
            if c in _VALUED:
                skip = j + 1 == len(a)
                break
    return None


def startup() -> None:
    """Run from ``zz_wholetrace.pth``: record this interpreter's program if it runs one."""
    try:
        config = json.loads(os.environ[ENV])
        target = target_of(list(getattr(sys, "orig_argv", [])))
    except (KeyError, ValueError, TypeError):
        return
    if not isinstance(config, dict) or "multiprocessing" in sys.modules:
        return
    if target is not None and sys.flags.inspect:   # PYTHONINSPECT: the interpreter's own end (a prompt
        _note_unrecorded(config, "PYTHONINSPECT (a prompt after the program)")   # after the program)
        return
    stdin_tty = _stdin_is_tty()
    if target is None or not _runs(target, stdin_tty):
        _note_unrecorded(config, why_unrecorded(list(getattr(sys, "orig_argv", [])), stdin_tty))
        return
    _take_over(config, target)


def _stdin_is_tty() -> bool:
    try:
        return os.isatty(0)
    except OSError:
        return False


def _note_unrecorded(config: dict[str, Any], why: str | None, partial: bool = False) -> None:
    """Leave ``unrecorded-PID.json`` in the parts directory: this interpreter's argv and why
    it is not recorded (``store.parts.unrecorded`` reads the notes); ``partial``: the process
    is recorded, only some of what it runs is not (``unrecorded-partial-PID.json``)."""
    parts = config.get("parts")
    if why is None or not isinstance(parts, str):
        return
    try:
        os.makedirs(parts, exist_ok=True)
        path = os.path.join(parts, f"{UNRECORDED_PREFIX}{'partial-' if partial else ''}{os.getpid()}.json")
        with open(path + ".tmp", "w", encoding="utf-8") as fh:
            json.dump({"pid": os.getpid(), "argv": list(getattr(sys, "orig_argv", [])), "why": why,
                       **({"partial": True} if partial else {})}, fh)
        os.replace(path + ".tmp", path)
    except OSError:          # the program runs as it would whatever happens to the note
        pass


def _runs(target: tuple[str, str, list[str]], stdin_is_tty: bool) -> bool:
    """False when the interpreter would not run the target's code at all (no such script or
    module: it says so itself), or runs a directory or zip file's ``__main__`` or, for no
    program and a terminal on stdin, the interactive prompt: left to it."""
    kind, what, _args = target
    if kind == "stdin":
        return what == "-" or not stdin_is_tty
    if kind == "script":
        if not os.path.isfile(what):
            return False
        with open(what, "rb") as fh:
            head = fh.read(4096)
        return b"PK\x03\x04" not in head and b"PK\x05\x06" not in head      # not a zip application
    if kind == "module":                 # the top package, where the interpreter will look for it
        import importlib.machinery

        search = sys.path if sys.flags.safe_path else [os.getcwd()] + sys.path
        return importlib.machinery.PathFinder.find_spec(what.split(".")[0], search) is not None
    return True


#: The audit event the interpreter raises just before it runs each kind of target, once ``site``
#: (and ``sitecustomize``, ``usercustomize``) is done.
_EVENTS = {"script": "cpython.run_file", "module": "cpython.run_module", "command": "cpython.run_command",
           "stdin": "cpython.run_stdin"}


#: [event, config, target] until the target's event arrives (:func:`_at_run`), then empty.
_PENDING: list[Any] = []


def _at_run(event: str, args: tuple[Any, ...]) -> None:
    """The audit hook that runs the program in place of the interpreter: at the target's
    ``cpython.run_*`` event it records the program (:func:`_run`), then raises ``SystemExit``
    with its exit status, which the interpreter takes without a traceback before it finalises
    as in a plain run (``Py_FinalizeEx``: streams flushed, collections, ``__del__``, exit status
    120 on a failed flush).  Every later event of the process (an audit hook cannot be removed)
    costs a call that tests an empty list: ~2,000 instructions an audited call with the
    interpreter's own work for any hook (a C hook, ``dict.get``, measured dearer)."""
    if _PENDING and event == _PENDING[0]:
        _event, config, target = _PENDING
        _PENDING.clear()
        # The interpreter reads ``__cantrace__`` at each call of a hook: this call (the program
        # runs inside it) stays traceable, the later ones (every audited call of the program)
        # run with tracing paused, so a program's tracer never sees this function.
        _at_run.__cantrace__ = False   # type: ignore[attr-defined]
        _run(config, target)


_at_run.__cantrace__ = True   # type: ignore[attr-defined]   # the program's tracers see the program, run inside the hook (its one traceable call)


def _take_over(config: dict[str, Any], target: tuple[str, str, list[str]]) -> None:
    """Leave the program to the audit hook: ``site`` goes on as in a plain run (the later site
    directories, ``sitecustomize``, the ``.pth`` file closed) and the interpreter sets
    ``sys.path[0]`` before it raises the event."""
    _PENDING[:] = [_EVENTS[target[0]], config, target]
    sys.addaudithook(_at_run)


def _run(config: dict[str, Any], target: tuple[str, str, list[str]]) -> None:
    from wholetrace.runtime import children, runner

    kind, what, args = target
    cfg = children.Config(str(config["parts"]), str(config["mode"]), [], list(config.get("include", [])),
                          bool(config.get("cache", True)), dict(config.get("meta", {})), str(config.get("parent", "")))
    name = children.part_name()
    if kind == "stdin":                  # the interpreter would read its program from there
        stdin = sys.stdin
        tgt = runner.Target(stdin=(what, stdin.buffer.read() if stdin is not None else b""), args=args)
    else:
        tgt = runner.Target(**{kind: what}, args=args)
    writer = children.new_part(os.path.join(cfg.parts, name))
    if cfg.mode == "full":               # a fresh interpreter, as under ``record`` (runtime.splitserver.WANTED)
        from wholetrace.runtime import splitserver
        splitserver.WANTED = True
    code = 1
    try:
        outcome = runner.record(tgt, writer, mode=cfg.mode, include=cfg.include, cache=cfg.cache,
                                children=children.Spawned(cfg, name, "subprocess"))
        code = outcome.exit_code
        interrupted = outcome.ended == "keyboard-interrupt"
    except BaseException:  # noqa: BLE001 - as the interpreter: report, exit 1
        import traceback
        traceback.print_exc()
        interrupted = False
    if interrupted:                      # plain dies of SIGINT after its finalisation: here before it
        flushed = flush_std_files()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        os._exit(130 if flushed else 120)
    raise SystemExit(code)               # the interpreter makes it a status as plain's (C long, low byte)


def _closed(stream: Any) -> bool:
    """CPython's ``file_is_closed``: ``stream.closed`` is true (an error reading or testing it: not closed)."""
    try:
        return bool(stream.closed)
    except BaseException:  # noqa: BLE001 - as the interpreter: cleared
        return False


def flush_std_files() -> bool:
    """What the interpreter's finalisation does to the program's streams once ``atexit`` has run
    (CPython's ``flush_std_files``), for a child that ends with ``os._exit`` (a KeyboardInterrupt's end): ``sys.stdout``'s
    ``flush`` (unless it is gone, None or closed; its exception reported as unraisable: 3.11/3.12
    ``Exception ignored in: <stdout>``, 3.13 ``Exception ignored on flushing sys.stdout``), then
    ``sys.stderr``'s (its exception dropped); then ``sys.__stdout__``'s and ``sys.__stderr__``'s
    when not flushed already, as their dealloc does in plain (review22c HIGH-1).  False when one
    of the first two failed: the process then exits with status 120, as ``Py_FinalizeEx``
    failing makes the interpreter do."""
    from wholetrace.runtime.shutdown import report_unraisable

    ok = True
    flushed = []
    for name in ("stdout", "stderr"):
        stream = sys.__dict__.get(name)            # _PySys_GetAttr: the attribute itself
        if stream is None or _closed(stream):
            continue
        flushed.append(stream)
        try:
            stream.flush()
        except BaseException as exc:  # noqa: BLE001 - as the interpreter: reported or cleared
            ok = False
            if name == "stdout":
                tb = _TRACEBACK.__get__(exc)     # not through the program's __getattribute__
                exc = _WITH_TRACEBACK(exc, tb.tb_next if tb is not None else None)   # from flush down
                how = (None, stream) if sys.version_info < (3, 13) else ("Exception ignored on flushing sys.stdout", None)
                report_unraisable(exc, *how)
    for name in ("__stdout__", "__stderr__"):   # what their dealloc does in plain (iobase_finalize: close)
        stream = sys.__dict__.get(name)
        if stream is None or any(stream is s for s in flushed) or _finalize_skips(stream):
            continue
        flushed.append(stream)
        try:
            stream.flush()
        except BaseException as exc:  # noqa: BLE001 - iobase_finalize: reported in dev mode, else cleared
            if sys.flags.dev_mode:
                report_unraisable(exc, None, stream)
    return ok


_TRACEBACK = BaseException.__traceback__
_WITH_TRACEBACK = BaseException.with_traceback


def _finalize_skips(stream: Any) -> bool:
    """``iobase_finalize``'s test: it closes (so flushes) the stream only when ``closed`` reads false
    (an error reading or testing it: left alone)."""
    try:
        return bool(stream.closed)
    except BaseException:  # noqa: BLE001 - as the interpreter: cleared
        return True
