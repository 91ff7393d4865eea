"""Python subprocesses of a recording: ``zz_wholetrace.pth`` hands the interpreter to the runner.

A recording with children sets ``WHOLETRACE_CHILD`` in its environment (``runtime.children``):
what to record and where (JSON).  Every Python interpreter of the same installation started
from it (``subprocess`` of ``sys.executable``, ``os.exec*``, a shell running ``python``) finds
it while ``site`` processes ``.pth`` files, the way coverage.py's ``COVERAGE_PROCESS_START``
works.  If the interpreter is about to run a script (``python [-options] SCRIPT ...``) or a
module (``python -m MOD ...``), :func:`startup` finishes ``site``'s own work
(``sitecustomize``, ``usercustomize``), runs the program through the runner into a part of
the recording, and ends the process with the program's exit status (``os._exit``, after the
program's ``atexit`` handlers and threads, as ``wholetrace record`` does).  Anything else
(``-c``, the interactive prompt, ``multiprocessing``'s own children, which record through
``runtime.children``) runs as it would, unrecorded.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

from wholetrace.runtime.children import ENV

#: Interpreter options that take no value and change nothing the runner reproduces.
_FLAGS = frozenset("BdEsuvqObRIPX")


def target_of(argv: list[str]) -> tuple[str, str, list[str]] | None:
    """("script", path, args) or ("module", name, args) from the interpreter's own argv
    (``sys.orig_argv``), None for anything the runner does not reproduce."""
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "-m" and i + 1 < len(argv):
            return "module", argv[i + 1], argv[i + 2:]
        if a.startswith("-m") and len(a) > 2:
            return "module", a[2:], argv[i + 1:]
        if a in ("-W", "-X") and i + 1 < len(argv):
            i += 2
            continue
        if a.startswith(("-W", "-X")):
            i += 1
            continue
        if a.startswith("-") and len(a) > 1 and a != "--" and all(c in _FLAGS for c in a[1:]):
            i += 1
            continue
        if a == "--":
            i += 1
            continue
        if a.startswith("-"):
            return None          # -c, -i, -: not a program the runner runs
        return "script", a, argv[i + 1:]
    return None


def startup() -> None:
    """Run from ``zz_wholetrace.pth``: record this interpreter's program if it runs one."""
    try:
        config = json.loads(os.environ[ENV])
        target = target_of(list(getattr(sys, "orig_argv", [])))
    except (KeyError, ValueError, TypeError):
        return
    if target is None or not isinstance(config, dict) or "multiprocessing" in sys.modules:
        return
    _take_over(config, target)


def _take_over(config: dict[str, Any], target: tuple[str, str, list[str]]) -> None:
    import site

    from wholetrace.runtime import children, runner

    site.execsitecustomize()
    if site.ENABLE_USER_SITE:
        site.execusercustomize()
    kind, what, args = target
    cfg = children.Config(str(config["parts"]), str(config["mode"]), [], list(config.get("include", [])),
                          bool(config.get("cache", True)), dict(config.get("meta", {})), str(config.get("parent", "")))
    name = children.part_name()
    sys.path.insert(0, "")               # the runner sets sys.path[0], as the interpreter would have
    tgt = runner.Target(script=what, args=args) if kind == "script" else runner.Target(module=what, args=args)
    writer = children.new_part(os.path.join(cfg.parts, name))
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
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed stream, as at interpreter exit
            pass
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code & 0xFF if code >= 0 else 1)
