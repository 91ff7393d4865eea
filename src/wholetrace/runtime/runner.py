"""Runs a script or module under instrumentation exactly as ``python`` would, and records it."""

from __future__ import annotations

import _thread
import atexit
import builtins
import os
import sys
import time
import types
from types import CodeType
from _frozen_importlib import BuiltinImporter   # importlib.machinery's classes; the importlib package (with warnings, ~2 M instructions) is not imported at start-up
from _frozen_importlib_external import PathFinder, SourceFileLoader

from wholetrace.errors import UsageError
from wholetrace.plain import Record
from wholetrace.instrument import misspath
from wholetrace.instrument.cache import InstrumentCache
from wholetrace.instrument.modes import MODES
from wholetrace.instrument.loader import (InstrumentingFinder, InstrumentingLoader, Instrumenter, Scope,
                                          install, purge_modules, uninstall)
from wholetrace.instrument.emit import C_CALLS_COUNT
from wholetrace.runtime import collector, recursion, shipped
from wholetrace.runtime.gil import require_gil
from wholetrace.runtime.recorder import Recorder
from wholetrace.runtime.shutdown import _daemon_threads, _shut_down, _wait_for_threads, flush_io

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from collections.abc import Callable
    from typing import Any

_OWN = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


class Target(Record):
    """What to run: a script path, a module name, a command (``python -c``) or a program read
    from standard input (``stdin``: the interpreter's ``sys.argv[0]``, ``-`` or ``""``, and the
    source; both only in the child processes of ``runtime.subprocs``), with the program's own
    arguments."""

    __slots__ = ("script", "module", "args", "command", "stdin")

    def __init__(self, script: str | None = None, module: str | None = None, args: list[str] | None = None,
                 command: str | None = None, stdin: tuple[str, bytes] | None = None) -> None:
        self.script = script
        self.module = module
        self.args: list[str] = [] if args is None else args
        self.command = command
        self.stdin = stdin

    @property
    def label(self) -> str:
        if self.command is not None:
            return "-c " + short_command(self.command)
        if self.stdin is not None:
            return "- (stdin)"
        return f"-m {self.module}" if self.module else str(self.script)


#: The file name of a ``python -c`` command's code (its main module), as the interpreter names it.
COMMAND_FILE = "<string>"
#: The file name of a program read from standard input, as the interpreter names it.
STDIN_FILE = "<stdin>"


def short_command(code: str, width: int = 40) -> str:
    """A ``-c`` command on one line, cut to ``width`` characters."""
    line = " ".join(code.split())
    return line if len(line) <= width else line[:width - 3] + "..."


class Outcome(Record):
    """How the program ended: ``ended`` is "exit" | "sys.exit" | "exception" | "keyboard-interrupt"."""

    __slots__ = ("ended", "exit_code", "exception", "events", "daemon_threads", "left_out")

    def __init__(self, ended: str, exit_code: int, exception: BaseException | None = None, events: int = 0,
                 daemon_threads: list[str] | None = None) -> None:
        self.ended = ended
        self.exit_code = exit_code
        self.exception = exception
        self.events = events
        self.daemon_threads: list[str] = [] if daemon_threads is None else daemon_threads
        self.left_out = 0   # functions and modules the recording notes as not instrumented


#: ``runpy``'s file once a ``-m`` target needs runpy (:func:`_as_main_frame`): runpy is not
#: imported for a script (with ``importlib.util`` and ``contextlib``, ~6 M instructions of
#: the console script's start-up; docs/design.md, "Record's fixed cost, wave 14").
_RUNPY_FILE: str | None = None


def _trim(tb: types.TracebackType | None) -> types.TracebackType | None:
    """Drop the leading traceback entries that belong to wholetrace or runpy."""
    while tb is not None and (tb.tb_frame.f_code.co_filename.startswith(_OWN)
                              or tb.tb_frame.f_code.co_filename == _RUNPY_FILE):
        tb = tb.tb_next
    return tb


def _report(exc: BaseException) -> None:
    """Print an uncaught exception as the interpreter would, without wholetrace's own frames,
    and keep it where the interpreter does (``sys.last_exc`` from 3.12, ``sys.last_type``,
    ``last_value``, ``last_traceback``): ``atexit`` handlers see it, and what it holds lives
    until the interpreter shuts down."""
    exc.__traceback__ = _trim(exc.__traceback__)
    sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, exc.__traceback__
    if sys.version_info >= (3, 12):
        sys.last_exc = exc
    sys.excepthook(type(exc), exc, exc.__traceback__)


def _exit_code(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _depth_probe() -> None:
    """Run by ``exec`` from the runner (its code, with ``out`` and ``depth`` as globals), as
    the program's module code is: measures how deep that frame is.  Not ``compile``d from a
    string: the first ``compile`` of a process builds ``_ast``'s ~120 node classes (9.5 M
    instructions, ``PyAST_Check``), which a recording from the code cache never needs."""
    out.append(depth() - 1)  # type: ignore[name-defined]  # noqa: F821


_DEPTH_PROBE = _depth_probe.__code__


def _main_module() -> types.ModuleType:
    """A ``__main__`` module as the interpreter makes it at start-up (same names, same order:
    ``__annotations__`` and the ``builtins`` module included)."""
    main = types.ModuleType("__main__")
    main.__dict__.update(__loader__=BuiltinImporter, __annotations__={},
                         __builtins__=builtins)
    return main


def _run_script(path: str, instrumenter: Instrumenter, headroom: int, before: list[Callable[[], None]]) -> None:
    with open(path, "rb") as fh:
        source = fh.read()
    code = instrumenter.compile(source, str(path))
    main = _main_module()
    main.__dict__.update(__loader__=SourceFileLoader("__main__", str(path)),
                         __file__=str(path), __cached__=None)
    sys.modules["__main__"] = main
    try:
        _exec_main(code, main, headroom, before)
    finally:    # as python SCRIPT and python < SCRIPT (not -c, -m): CPython's flush_io
        flush_io()


def _exec_main(code: CodeType, main: types.ModuleType, headroom: int, before: list[Callable[[], None]]) -> None:
    """Run the main module's code in ``main`` as ``python SCRIPT`` and ``python -c`` do;
    ``before``'s callable (``record``'s ``before_program``) runs just before its first line,
    after everything wholetrace does for it (instrumenting, which the code cache may spare)."""
    here: list[int] = []
    exec(_DEPTH_PROBE, {"out": here, "depth": recursion.depth})
    below = here[0] + headroom - 1     # the interpreter runs <module> at depth 1
    recursion.shift(below)
    try:
        if before:
            before.pop()()
        exec(code, main.__dict__)
    finally:
        recursion.shift(-below)


def _run_module(name: str, instrumenter: Instrumenter, headroom: int, as_main: types.FunctionType) -> None:
    # runpy's (``as_main`` runs in its namespace: runpy is imported only for -m, _as_main_frame);
    # its imports (the module's packages) run the program's code, with collections on
    mod_name, spec, code = as_main.__globals__["_get_module_details"](name)
    assert spec.origin is not None
    with collector.held():   # wholetrace's work: the collector's counts as before it
        if not isinstance(spec.loader, InstrumentingLoader):   # (its get_code instrumented it: not twice)
            code = instrumenter.compile(spec.loader.get_source(mod_name), spec.origin)
        else:   # the main module's __loader__ and __spec__.loader: plain's
            spec.loader = SourceFileLoader(mod_name, spec.origin)
        sys.argv[0] = spec.origin
        main = _main_module()
        sys.modules["__main__"] = main
    # runpy._run_module_as_main (called from C by ``python -m``) is the frame under _run_code
    below = recursion.depth() + headroom - 1
    recursion.shift(below)
    try:
        as_main(code, main.__dict__, spec)
    finally:
        recursion.shift(-below)


def _run_module_as_main(code, main_globals, mod_spec):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202
    return _run_code(code, main_globals, None, '__main__', mod_spec)  # type: ignore[name-defined]  # noqa: F821


#: ``co_flags`` of ``from __future__ import annotations`` (this module's), which runpy's code has not.
_CO_FUTURE_ANNOTATIONS = 0x1000000


def _as_main_frame() -> types.FunctionType:
    """A function standing for ``runpy._run_module_as_main`` (same file, name, globals, and
    line of its ``_run_code`` call): tracebacks and ``f_back`` show the frame ``python -m``
    runs the module under.  Its code is :func:`_run_module_as_main`'s moved to runpy's file
    and line (``compile`` would build ``_ast``'s node classes: ``_depth_probe``)."""
    import runpy
    with collector.held():   # wholetrace's own imports and work (runpy's imports are plain -m's too)
        return _frame_in(runpy)


def _frame_in(runpy: types.ModuleType) -> types.FunctionType:
    global _RUNPY_FILE
    before = set(sys.modules)
    dis = misspath.stdlib_import()   # the standard library's, whatever sys.path[0] (the cwd) holds
    for name in set(sys.modules) - before:   # as plain -m: no dis or opcode in sys.modules
        del sys.modules[name]

    _RUNPY_FILE = runpy.__file__
    real = runpy._run_module_as_main.__code__  # type: ignore[attr-defined]
    line = next((pos[0] for ins, pos in ((i, i.positions) for i in dis.get_instructions(real))
                 if ins.argval == "_run_code" and pos is not None and pos.lineno), real.co_firstlineno + 1)
    mine = _run_module_as_main.__code__
    code = mine.replace(co_filename=real.co_filename, co_firstlineno=max(line - 1, 1),
                        co_flags=mine.co_flags & ~_CO_FUTURE_ANNOTATIONS)
    return types.FunctionType(code, runpy.__dict__, "_run_module_as_main")


def _run_command(code_text: str, instrumenter: Instrumenter, headroom: int, before: list[Callable[[], None]]) -> None:
    """Run a ``python -c`` command as the interpreter does: its code is the main module
    ``<string>`` (no ``__file__``; 3.13 puts its lines in ``linecache`` for tracebacks)."""
    code = instrumenter.compile(code_text, COMMAND_FILE)
    if sys.version_info >= (3, 13):
        import linecache
        register = getattr(linecache, "_register_code", None)
        if register is not None:
            register(COMMAND_FILE, code_text, COMMAND_FILE)
    main = _main_module()
    sys.modules["__main__"] = main
    _exec_main(code, main, headroom, before)


def _run_stdin(source: bytes, instrumenter: Instrumenter, headroom: int, before: list[Callable[[], None]]) -> None:
    """Run a program read from standard input as the interpreter does: the main module
    ``<stdin>``, with ``__file__`` set to that name and the builtin loader."""
    code = instrumenter.compile(source, STDIN_FILE)
    main = _main_module()
    main.__dict__.update(__file__=STDIN_FILE, __cached__=None)
    sys.modules["__main__"] = main
    try:
        _exec_main(code, main, headroom, before)
    finally:    # as python SCRIPT and python < SCRIPT (not -c, -m): CPython's flush_io
        flush_io()


def script_file(typed: str) -> str:
    """The main script's ``__file__`` and code file name as the interpreter makes them from the
    path as typed: made absolute by joining the current directory, neither normalised nor
    resolved (a symlinked script keeps the link's name; ``./a/../b.py`` stays so)."""
    return typed if os.path.isabs(typed) else os.path.join(os.getcwd(), typed)


def _main_path(entry: str) -> None:
    """Put the main module's directory first on ``sys.path``, as the interpreter does (not
    under ``-P`` or ``-I``: ``sys.flags.safe_path``)."""
    if not sys.flags.safe_path:
        sys.path[0] = entry


def module_search_path() -> list[str]:
    """Where ``python -m`` looks for the module (``sys.path`` with the current directory first)."""
    return list(sys.path) if sys.flags.safe_path else [os.getcwd()] + sys.path[1:]


def _module_root(name: str) -> str:
    top = name.split(".")[0]
    spec = PathFinder.find_spec(top, module_search_path())
    if spec is None or spec.origin is None:
        raise UsageError(f"No module named {top!r}")
    return os.path.dirname(os.path.realpath(spec.origin))


class Live(Record):
    """A recording in progress in this process: what :func:`start` installed.  ``headroom``:
    calls of recursion headroom given to the thread that started it; ``children``:
    ``runtime.children.Children`` when child processes record into parts."""

    _fields = ("writer", "recorder", "instrumenter", "finder", "headroom", "children")

    def __init__(self, writer: Any, recorder: Recorder, instrumenter: Instrumenter, finder: InstrumentingFinder,
                 headroom: int = 0, children: Any = None) -> None:
        self.writer = writer
        self.recorder = recorder
        self.instrumenter = instrumenter
        self.finder = finder
        self.headroom = headroom
        self.children = children

    def stop(self, ended: str, exit_code: int | None) -> int:
        """Uninstall, flush and close the file; returns the number of events recorded."""
        global LIVE
        try:
            uninstall(self.finder)
            if self.children is not None:
                self.children.unpatch()
            self.recorder.state.streams.unpatch_asyncio()
            recursion.shift(-self.headroom)   # (the program's stdout is flushed at exit, as plain's)
            self.recorder.hand_over()   # the WPP builder builds meanwhile (docs/design.md, wave 24)
            from wholetrace.store.writer import RecordingWriter   # imported by now (no hook installed)
            if isinstance(self.writer, RecordingWriter):
                self.writer.hold_commits()   # the last flush commits with the end meta (store.writer)
            if self.instrumenter.unrecorded:   # imported while the miss path loaded (instrument.misspath)
                self.writer.set_meta(unrecorded_modules=self.instrumenter.unrecorded)
            from wholetrace.instrument.bypass import end_notes   # (the finder is uninstalled by now)
            from wholetrace.instrument.emit import NO_TB
            ins = self.instrumenter
            ins.left_out += end_notes(self.finder.scope, ins.instrumented_files, ins.unrecorded,
                                      ins.registry.constants[NO_TB], ins.left_out, self.finder.preloaded,
                                      self.finder.declined)
            if self.instrumenter.left_out:   # code the program runs through another compiler or loader
                self.writer.set_meta(not_instrumented=self.instrumenter.left_out)
            self.recorder.stop()
        finally:
            LIVE = None
            self.writer.close(ended=ended, exit_code=exit_code, end_time=time.time())
            collector.release()
        return self.recorder.events


class _StdlibDis:
    """``runtime.unfinished.DIS`` until it is used: the first attribute read loads the standard
    library's ``dis`` (``misspath.stdlib_import``: not a program's ``opcode.py`` or ``dis.py``
    found through ``sys.path`` at stop) and binds it there in its place."""

    def __init__(self, namespace: dict[str, object]) -> None:
        self._namespace = namespace

    def __getattr__(self, attr: str) -> object:
        module = misspath.stdlib_import()
        self._namespace["DIS"] = module
        return getattr(module, attr)


#: The recording running in this process, if any (the pytest plugin joins it).
LIVE: Live | None = None


def eager_miss_path(scope: Scope) -> bool:
    """Whether the instrumenter's miss path must be imported before the finder is installed
    (``instrument.misspath``): the scope names a standard-library module that path imports
    (``--include enum``: purged, the program's instrumented copy would build ``ast``'s enums)
    or has a root inside the Python installation (the finder would instrument them)."""
    return any(p.split(".")[0] in misspath.CLOSURE for p in scope.packages) \
        or any(installed for _root, installed in scope._roots)


def start(writer: Any, scope: Scope, *, mode: str = "blocks", weights: dict[tuple[str, str, str], Any] | None = None,
          cache: bool = True, **meta: object) -> Live:
    """Start recording this process into ``writer``: modules ``scope`` wants are instrumented
    from now on.  ``meta``: what to store about the run (command, argv, ...)."""
    global LIVE
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r} (choose from {', '.join(MODES)})")
    require_gil()                                   # free-threaded builds (runtime.gil)
    recorder = Recorder(writer, mode, weights)
    streams = recorder.state.streams
    instrumenter = Instrumenter(recorder, InstrumentCache() if cache else None)
    finder = InstrumentingFinder(scope, instrumenter,
                                 on_import={"asyncio": streams.patch_asyncio, **dict.fromkeys(shipped.PICKLERS, shipped.install)})
    if "asyncio" in sys.modules:
        streams.patch_asyncio(sys.modules["asyncio"])
    if eager_miss_path(scope):   # bound to the recording's own modules, before the purge (as before wave 13)
        misspath.load()
    from wholetrace.runtime import unfinished   # (imported by the recorder)
    if "dis" in scope.packages:   # runtime.unfinished reads instructions at stop: with its own dis
        unfinished.DIS = __import__("dis")
    elif unfinished.DIS is None:   # the standard library's, on first use (opcode is not imported at start-up)
        unfinished.DIS = _StdlibDis(unfinished.__dict__)
    purge_modules(scope.packages)
    writer.set_meta(**meta, cwd=os.getcwd(), mode=mode, include=scope.packages, python=sys.version.split()[0],
                    start_time=time.time())
    install(finder)
    # trace probes are C calls, which count towards the limit in 3.11 (runtime.recursion)
    headroom = 1 if recorder.traces and C_CALLS_COUNT else 0
    recursion.shift(headroom)
    recorder.headroom_threads.add(_thread.get_ident())
    streams.new()
    recorder.start()
    shipped.install()   # (if a pickler of code is imported already; later imports: the finder's on_import)
    LIVE = Live(writer, recorder, instrumenter, finder, headroom)
    return LIVE


def record(target: Target, writer: Any, *, mode: str = "blocks", include: list[str] | None = None,
           weights: dict[tuple[str, str, str], Any] | None = None, cache: bool = True,
           children: Any = None, before_program: Callable[[], None] | None = None) -> Outcome:
    """Run ``target`` instrumented in this process, writing to ``writer``; returns how it ended.

    ``cache``: reuse and keep instrumented code in the on-disk cache (``instrument.cache``).
    ``children``: the recording's path: child processes record into parts beside it
    (``runtime.children``), or, in such a child, its ``runtime.children.Spawned``; None:
    child processes are not recorded.
    A module run with ``-m`` also gets the sources under the current directory instrumented
    (``python -m`` puts it first on ``sys.path``): ``record -m pytest`` records the project.
    ``before_program``: called once the recording has started, just before the program's
    first line (``runtime.cli`` turns the garbage collector's collections back on there), after
    wholetrace's work for it (so the collector's counts there do not depend on the mode or the
    code cache); for ``-m``, before runpy's imports, which may run the program's files (the
    work after them is ``collector.held``).
    """
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r} (choose from {', '.join(MODES)})")
    if target.command is not None or target.stdin is not None:
        _main_path("")
        roots = [os.path.realpath(os.getcwd())]
        sys.argv = ["-c" if target.stdin is None else target.stdin[0], *target.args]
    elif target.script is not None:
        real = os.path.realpath(target.script)
        if not os.path.isfile(real):
            raise UsageError(f"can't open file {target.script!r}: no such file")
        path = script_file(target.script)
        roots = [os.path.dirname(real)]
        _main_path(os.path.dirname(real))   # the interpreter's sys.path[0]: the resolved script's directory
        sys.argv = [target.script, *target.args]   # as typed (plain's), ``__file__`` as script_file
    else:
        assert target.module is not None
        _main_path(os.getcwd())
        roots = [_module_root(target.module), os.path.realpath(os.getcwd())]
        sys.argv = [target.module, *target.args]
    if children is not None:   # imported before the recording starts: the program must not see its imports run
        from wholetrace.runtime.children import enable
    as_main = None
    before = [] if before_program is None else [before_program]   # popped when called (_exec_main)
    if target.command is None and target.stdin is None and target.script is None:
        if before:   # runpy's imports can run the program's files (the cwd is
            before.pop()()   # sys.path[0]): with the collector as plain ``python -m`` has it
        as_main = _as_main_frame()
    threads = _thread._count()
    with collector.held():
        live = start(writer, Scope(roots, list(include or [])), mode=mode, weights=weights, cache=cache,
                     command=target.label, argv=list(sys.argv))
        if children is not None:
            enable(live, children, {"command": target.label, "argv": list(sys.argv)}, cache)
        collector.own_threads(threads + 1)   # the recorder's flusher (runtime.recorder)
    instrumenter = live.instrumenter
    outcome = Outcome("exit", 0)
    try:
        if target.command is not None:
            _run_command(target.command, instrumenter, live.headroom, before)
        elif target.stdin is not None:
            _run_stdin(target.stdin[1], instrumenter, live.headroom, before)
        elif target.script is not None:
            _run_script(path, instrumenter, live.headroom, before)
        else:
            _run_module(target.module, instrumenter, live.headroom, as_main)  # type: ignore[arg-type]
    except SystemExit as exc:
        outcome = Outcome("sys.exit", _exit_code(exc), exc)
    except KeyboardInterrupt as exc:
        outcome = Outcome("keyboard-interrupt", 130, exc)
        _report(exc)
    except BaseException as exc:  # noqa: BLE001 - the program's own uncaught exception
        outcome = Outcome("exception", 1, exc)
        _report(exc)
    if before:   # the program never started (its SyntaxError): as it would have
        before.pop()()
    failed = _wait_for_threads()
    try:
        atexit._run_exitfuncs()
    finally:
        if failed:      # the interpreter calls threading._shutdown once: not again at finalisation
            failed._shutdown = _shut_down
        outcome.daemon_threads = _daemon_threads()
        outcome.events = live.stop(outcome.ended, outcome.exit_code)
        outcome.left_out = len(live.instrumenter.left_out)
        if live.recorder.values is not None or outcome.ended == "keyboard-interrupt":
            live.recorder.close_suspended()   # full mode; record's SIGINT exit (it kills the process
            #                                   before the interpreter's shutdown); a subprocess child
            #                                   finalises as plain (runtime.subprocs._at_run)
    return outcome
