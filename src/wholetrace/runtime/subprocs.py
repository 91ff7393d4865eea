"""Python subprocesses of a recording: ``zz_wholetrace.pth`` hands the interpreter to the runner.

A recording with children sets ``WHOLETRACE_CHILD`` in its environment (``runtime.children``):
what to record and where (JSON).  Every Python interpreter of the same installation started
from it (``subprocess`` of ``sys.executable``, ``os.exec*``, a shell running ``python``) finds
it while ``site`` processes ``.pth`` files, the way coverage.py's ``COVERAGE_PROCESS_START``
works.  If the interpreter is about to run a script (``python [-options] SCRIPT ...``), a
module (``python -m MOD ...``) or a command (``python -c CODE ...``: its code is the main
module ``<string>``, instrumented like a script), :func:`startup` finishes ``site``'s own work
(``sitecustomize``, ``usercustomize``), runs the program through the runner into a part of
the recording, and ends the process with the program's exit status (``os._exit``, after the
program's ``atexit`` handlers and threads, as ``wholetrace record`` does).  Anything else
(``-i``, ``-`` (stdin), the interactive prompt, ``multiprocessing``'s own children, which
record through ``runtime.children``) runs as it would, unrecorded.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

from wholetrace.runtime.children import ENV

#: Interpreter options that take no value and change nothing the runner reproduces.
_FLAGS = frozenset("BdEsuvqObRIP")
#: Interpreter options whose value follows (in the same argument or the next one).
_VALUED = frozenset("WX")
#: How ``multiprocessing`` starts its own interpreters with ``-c`` (spawned children,
#: the fork server, the resource tracker): they record through ``runtime.children`` or not at all.
_MULTIPROCESSING = ("from multiprocessing.spawn import", "from multiprocessing.forkserver import",
                    "from multiprocessing.resource_tracker import")


def target_of(argv: list[str]) -> tuple[str, str, list[str]] | None:
    """("script", path, args), ("module", name, args) or ("command", code, args) from the
    interpreter's own argv (``sys.orig_argv``), parsed as the interpreter parses it (short
    options may share an argument: ``-uc CODE``, ``-Xdev``, ``-um MOD``); None for anything
    the runner does not reproduce (``-i``, ``-x``, ``-`` (stdin), the interactive prompt,
    ``multiprocessing``'s own interpreters)."""
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
    if i < len(argv) and argv[i] != "-":
        return "script", argv[i], argv[i + 1:]
    return None


def startup() -> None:
    """Run from ``zz_wholetrace.pth``: record this interpreter's program if it runs one."""
    try:
        config = json.loads(os.environ[ENV])
        target = target_of(list(getattr(sys, "orig_argv", [])))
    except (KeyError, ValueError, TypeError):
        return
    if target is None or not isinstance(config, dict) or "multiprocessing" in sys.modules or not _runs(target):
        return
    _take_over(config, target)


def _runs(target: tuple[str, str, list[str]]) -> bool:
    """False when the interpreter would not run the target's code at all (no such script or
    module: it says so itself), or runs a directory or zip file's ``__main__``: left to it."""
    kind, what, _args = target
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


def _finish_site(site: Any) -> None:
    """What ``site.main`` does after the ``.pth`` files of this directory: the later site
    directories' ``.pth`` files, the ``exit``/``quit``/``help``/``copyright``/... builtins, the
    interactive hook, ``sitecustomize`` and ``usercustomize`` (the program must find them all)."""
    dirs = site.getsitepackages()
    mine = [i for i, d in enumerate(dirs) if os.path.isfile(os.path.join(d, "zz_wholetrace.pth"))]
    for later in dirs[mine[0] + 1:] if mine else []:
        if os.path.isdir(later):
            site.addsitedir(later)
    site.setquit()
    site.setcopyright()
    site.sethelper()
    if not sys.flags.isolated:
        site.enablerlcompleter()
    site.execsitecustomize()
    if site.ENABLE_USER_SITE:
        site.execusercustomize()


def _take_over(config: dict[str, Any], target: tuple[str, str, list[str]]) -> None:
    import site

    from wholetrace.runtime import children, runner

    _finish_site(site)
    kind, what, args = target
    cfg = children.Config(str(config["parts"]), str(config["mode"]), [], list(config.get("include", [])),
                          bool(config.get("cache", True)), dict(config.get("meta", {})), str(config.get("parent", "")))
    name = children.part_name()
    if not sys.flags.safe_path:          # the runner sets sys.path[0], as the interpreter would have
        sys.path.insert(0, "")
    tgt = runner.Target(**{kind: what}, args=args)
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
