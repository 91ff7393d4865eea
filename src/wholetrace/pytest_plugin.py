"""pytest plugin (entry point ``pytest11``): ``pytest --wholetrace[=OUT.wt]`` records the test run.

The test modules, conftests and sources are instrumented; pytest still rewrites their
asserts.  Its rewriting import hook would load the test modules itself, so a finder placed
in front of it asks the hook which modules it rewrites and loads those here: instrumented
first, then rewritten by pytest's own ``rewrite_asserts`` (the probes are statements and
expressions pytest leaves alone, so both apply; the CFG is the one of the source as
written, and assertion messages are pytest's).  The result is cached like any
instrumented file, never in pytest's ``.pyc`` files.

The same finder joins a recording already running in the process (``wholetrace record -m
pytest``), so that one records the tests too.  One recording per pytest process: under
pytest-xdist each worker writes ``OUT-<worker>.wt``.
"""

from __future__ import annotations

import ast
import importlib.abc
import importlib.machinery
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Sequence

import pytest

from wholetrace.errors import WholetraceError, short_message

if TYPE_CHECKING:
    from wholetrace.instrument.loader import Instrumenter, Scope
    from wholetrace.runtime.runner import Live

DEFAULT_OUTPUT = "pytest.wt"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("wholetrace", "recording with wholetrace")
    group.addoption("--wholetrace", nargs="?", const=DEFAULT_OUTPUT, default=None, metavar="OUT.wt",
                    help=f"record the whole test run into OUT.wt (default {DEFAULT_OUTPUT})")
    group.addoption("--wholetrace-mode", default="blocks", metavar="MODE",
                    help="what to record: blocks (default), count, count-naive, witness, branches")
    group.addoption("--wholetrace-source", action="append", default=[], metavar="PKG_OR_DIR",
                    help="instrument this package or directory (repeatable; default: the rootdir)")
    group.addoption("--wholetrace-no-cache", action="store_true", default=False,
                    help="instrument every module afresh (no cached instrumented code)")


class _Rewrite:
    """pytest's assertion rewriting, applied after instrumentation (a loader TreeTransform)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.key = f"pytest {pytest.__version__} assert-rewrite pass-hook={config.getini('enable_assertion_pass_hook')}"

    def __call__(self, tree: ast.Module, source: str, filename: str) -> None:
        from _pytest.assertion.rewrite import rewrite_asserts
        rewrite_asserts(tree, source.encode("utf-8", "surrogateescape"), filename, self.config)


class _RewriteLoader(importlib.machinery.SourceFileLoader):
    """Loads a module pytest would rewrite: instrumented, then assertion-rewritten."""

    def __init__(self, fullname: str, path: str, instrumenter: Instrumenter, rewrite: _Rewrite,
                 hook: Any) -> None:
        super().__init__(fullname, path)
        self.instrumenter, self.rewrite, self.hook = instrumenter, rewrite, hook

    def get_code(self, fullname: str) -> Any:
        path = self.get_filename(fullname)
        self.hook._rewritten_names[fullname] = Path(path)   # what pytest's own loader notes
        return self.instrumenter.compile(self.get_data(path), path, self.rewrite)

    def set_data(self, path: str, data: bytes, *, _mode: int = 0o666) -> None:  # never a .pyc
        return None


class _RewriteFinder(importlib.abc.MetaPathFinder):
    """In front of pytest's rewriting hook: takes the modules it would rewrite that ``scope`` wants."""

    def __init__(self, hook: Any, scope: Scope, instrumenter: Instrumenter, config: pytest.Config) -> None:
        self.hook, self.scope, self.instrumenter = hook, scope, instrumenter
        self.rewrite = _Rewrite(config)

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        spec = self.hook.find_spec(fullname, path, target)
        if spec is None or spec.loader is not self.hook or not self.scope.wants(fullname, spec.origin):
            return None
        spec.loader = _RewriteLoader(fullname, spec.origin, self.instrumenter, self.rewrite, self.hook)
        return spec


def _worker_path(path: Path, worker: str | None) -> Path:
    """``OUT.wt``, or ``OUT-<worker>.wt`` in an xdist worker."""
    return path.with_name(f"{path.stem}-{worker}{path.suffix}") if worker else path


def _rewrite_hook() -> Any:
    from _pytest.assertion.rewrite import AssertionRewritingHook
    return next((f for f in sys.meta_path if isinstance(f, AssertionRewritingHook)), None)


def _join(instrumenter: Instrumenter, scope: Scope, config: pytest.Config) -> _RewriteFinder | None:
    """Put the rewriting finder first on ``sys.meta_path`` (no-op with ``--assert=plain``)."""
    hook = _rewrite_hook()
    if hook is None:
        return None
    finder = _RewriteFinder(hook, scope, instrumenter, config)
    sys.meta_path.insert(0, finder)
    return finder


class WholetracePlugin:
    """The recording of one pytest process (registered as ``wholetrace-recording``)."""

    def __init__(self, config: pytest.Config, output: Path, mode: str) -> None:
        self.config, self.requested, self.mode = config, output, mode
        self.output = _worker_path(output, os.environ.get("PYTEST_XDIST_WORKER"))
        self.live: Live | None = None
        self.finder: _RewriteFinder | None = None
        self.summary = ""

    def start(self, sources: list[str], cache: bool) -> None:
        from wholetrace.instrument.loader import Scope
        from wholetrace.runtime import runner
        from wholetrace.store import RecordingWriter
        roots = [Path(s).resolve() for s in sources if os.path.isdir(s)]
        packages = [s for s in sources if not os.path.isdir(s)]
        if not sources:
            roots = [Path(self.config.rootpath).resolve()]
        scope = Scope(roots, packages)
        self.live = runner.start(RecordingWriter(self.output), scope, mode=self.mode, cache=cache,
                                 command=" ".join(["-m pytest", *self.config.invocation_params.args]),
                                 argv=list(sys.argv))
        self.finder = _join(self.live.instrumenter, scope, self.config)

    @pytest.hookimpl(trylast=True)   # after session-scoped fixtures are torn down
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.live is None:
            return
        if self.finder is not None and self.finder in sys.meta_path:
            sys.meta_path.remove(self.finder)
        live, self.live = self.live, None
        events = live.stop("exit", int(exitstatus))
        # The environment said xdist worker at the start; only xdist's own workers have
        # workerinput (a pytest started from inside a worker inherits the variable).
        worker = getattr(self.config, "workerinput", {}).get("workerid")
        final = _worker_path(self.requested, worker)
        if final != self.output and self.output.exists():
            os.replace(self.output, final)
            self.output = final
        size = self.output.stat().st_size if self.output.exists() else 0
        self.summary = (f"wholetrace: recorded {events:,} events ({self.mode}), {size:,} bytes -> "
                        f"{self.output}")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.summary:
            terminalreporter.write_line(self.summary)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """Start recording before conftests and test modules are imported (as pytest-cov does)."""
    runner = sys.modules.get("wholetrace.runtime.runner")
    live = getattr(runner, "LIVE", None)
    if live is not None:   # inside `wholetrace record -m pytest`: its scope, with assertion rewriting
        _join(live.instrumenter, live.finder.scope, early_config)
        return
    opts = early_config.known_args_namespace
    out = getattr(opts, "wholetrace", None)
    if out is None:
        return
    if not os.environ.get("PYTEST_XDIST_WORKER") and (
            getattr(opts, "numprocesses", None) or getattr(opts, "dist", "no") != "no"):
        return   # the xdist controller runs no tests: each worker records its own file
    plugin = WholetracePlugin(early_config, Path(out), opts.wholetrace_mode)
    try:
        plugin.start(list(opts.wholetrace_source), cache=not opts.wholetrace_no_cache)
    except WholetraceError as exc:
        raise pytest.UsageError(f"wholetrace: {short_message(exc)}") from None
    early_config.pluginmanager.register(plugin, "wholetrace-recording")
