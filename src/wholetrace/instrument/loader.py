"""Import hook and compiler: instruments the target script, modules under its directory and --include packages."""

from __future__ import annotations

import ast
import importlib.abc
import importlib.machinery
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType, ModuleType
from typing import Callable, Sequence

from wholetrace.errors import InstrumentError
from wholetrace.instrument.cfg import CFG, build_cfg, iter_functions
from wholetrace.instrument.modes import ProbePlan
from wholetrace.instrument.rewrite import compile_tree, rewrite_tree

#: Called for every instrumented function: (file, cfg, source text) -> (fid, probe plan).
Register = Callable[[str, CFG, str], "tuple[int, ProbePlan | None]"]

_SKIP_DIRS = ("site-packages", "dist-packages")
_OWN_PACKAGE = str(Path(__file__).resolve().parent.parent)


def function_source(lines: Sequence[str], cfg: CFG) -> str:
    return "".join(lines[cfg.firstline - 1:cfg.lastline])


@dataclass
class Instrumenter:
    """Turns source into instrumented code objects, registering every function it instruments."""

    register: Register
    instrumented_files: list[str] = field(default_factory=list)

    def compile(self, source: str | bytes, filename: str) -> CodeType:
        """Instrumented code for ``source``; falls back to plain code with a warning."""
        if isinstance(source, bytes):
            source = importlib.util.decode_source(source)  # type: ignore[attr-defined]
        try:
            tree = ast.parse(source, filename)
        except SyntaxError:
            return compile(source, filename, "exec", dont_inherit=True)  # raises the real error
        try:
            functions = [(fn, build_cfg(fn, q)) for fn, q in iter_functions(tree)]
            lines = source.splitlines(keepends=True)
            regs = [self.register(filename, cfg, source if cfg.kind == "module" else function_source(lines, cfg))
                    for _fn, cfg in functions]
            rewrite_tree(tree, [(fn, cfg, fid, plan) for (fn, cfg), (fid, plan) in zip(functions, regs)])
            code = compile_tree(tree, filename)
        except (InstrumentError, SyntaxError, RecursionError, ValueError, TypeError, AssertionError) as exc:
            print(f"wholetrace: warning: {filename}: left uninstrumented ({type(exc).__name__}: {exc})",
                  file=sys.stderr)
            return compile(source, filename, "exec", dont_inherit=True)
        self.instrumented_files.append(filename)
        return code


class InstrumentingLoader(importlib.machinery.SourceFileLoader):
    """A source loader that compiles through the instrumenter and never reads or writes .pyc files."""

    instrumenter: Instrumenter

    def get_code(self, fullname: str) -> CodeType:
        path = self.get_filename(fullname)
        return self.instrumenter.compile(self.get_data(path), path)

    def set_data(self, path: str, data: bytes, *, _mode: int = 0o666) -> None:  # no bytecode cache
        return None


@dataclass
class Scope:
    """Which modules to instrument: files under ``roots`` and the packages named in ``packages``."""

    roots: list[Path]
    packages: list[str]

    def wants(self, fullname: str, origin: str | None) -> bool:
        if origin is None or not origin.endswith(".py"):
            return False
        if origin.startswith(_OWN_PACKAGE):
            return False
        if any(fullname == p or fullname.startswith(p + ".") for p in self.packages):
            return True
        path = Path(origin).resolve()
        if any(part in _SKIP_DIRS for part in path.parts):
            return False
        return any(path.is_relative_to(r) for r in self.roots)


class InstrumentingFinder(importlib.abc.MetaPathFinder):
    """Meta path finder that hands in-scope source modules to :class:`InstrumentingLoader`."""

    def __init__(self, scope: Scope, instrumenter: Instrumenter,
                 on_import: dict[str, Callable[[ModuleType], None]] | None = None) -> None:
        self.scope = scope
        self.instrumenter = instrumenter
        self.on_import = on_import or {}

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None:
            return None
        if fullname in self.on_import and spec.loader is not None:
            spec.loader = _PostImportLoader(spec.loader, self.on_import[fullname])
            return spec
        if not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return None
        if not self.scope.wants(fullname, spec.origin):
            return None
        loader = InstrumentingLoader(fullname, spec.origin)  # type: ignore[arg-type]
        loader.instrumenter = self.instrumenter
        spec.loader = loader
        return spec


class _PostImportLoader(importlib.abc.Loader):
    """Delegating loader that runs a hook after the module executed (used to patch asyncio)."""

    def __init__(self, inner: importlib.abc.Loader, hook: Callable[[ModuleType], None]) -> None:
        self.inner, self.hook = inner, hook

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        self.hook(module)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)




def purge_modules(packages: Sequence[str]) -> list[str]:
    """Forget already-imported modules of ``packages`` so the target imports instrumented copies."""
    gone = [m for m in list(sys.modules)
            if any(m == p or m.startswith(p + ".") for p in packages) and m != "__main__"]
    for m in gone:
        del sys.modules[m]
    return gone


def install(finder: InstrumentingFinder) -> None:
    sys.meta_path.insert(0, finder)


def uninstall(finder: InstrumentingFinder) -> None:
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)
