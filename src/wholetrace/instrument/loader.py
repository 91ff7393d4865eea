"""Import hook and compiler: instruments the target script, modules under its directory and --include packages."""

from __future__ import annotations

import _imp
import _thread
import _weakref
import codecs
import os
import sys
from io import IncrementalNewlineDecoder
from _frozen_importlib import BuiltinImporter, FrozenImporter, ModuleSpec   # importlib.machinery's classes; the importlib package (with warnings, ~2 M instructions) is not imported at start-up
from _frozen_importlib_external import PathFinder, SourceFileLoader
from types import CodeType, ModuleType

from wholetrace.errors import InstrumentError, short_message
from wholetrace.instrument import misspath
from wholetrace.instrument.loaderframes import as_importlib, untraced
from wholetrace.instrument.cache import COUNTER_ORIGIN, FID_ORIGIN, InstrumentCache, relocate
from wholetrace.plain import Record
from wholetrace.runtime.collector import containers, held
from wholetrace.store.registry import encode_registry

_SKIP_DIRS = ("site-packages", "dist-packages")
#: Held around the miss path's ``ast`` work: 3.11's ``ast`` keeps its conversion depth per
#: interpreter, and a collection inside one thread's ``ast.parse`` may run Python code (a ``gc``
#: callback, a ``__del__``) that lets another thread's parse run in the middle ("SystemError:
#: AST constructor recursion depth mismatch").  Reentrant: that code may import in this thread.
_AST_LOCK = _thread.RLock()
_OWN_PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover (types only: no class of them exists at run time)
    import ast
    from typing import Any, Callable, Iterator, Protocol, Sequence, TypedDict

    from wholetrace.instrument.cfg import CFG
    from wholetrace.instrument.modes import ProbePlan

    class FileEntry(TypedDict):
        """What registering one instrumented file needs, built with its code and cached beside it
        (core types only: the cache marshals it).  The ``i``-th function of the file gets fid
        ``fid_base + i``; everything per function is in lists indexed by ``i``."""

        registry: bytes                   # store.registry blob: source and CFG/plan JSON, stored as is
        qualnames: list[str]
        offsets: list[int]                # first counter of each function, from the file's first
        counters: int                     # counters of the whole file
        suspendable: bool                 # holds a generator or coroutine
        spans: list[list[tuple[int, int, int, int, int]]]   # statement spans, innermost first
        facts: bytes                      # instrument.facts: what reports list for functions that never ran
        left_out: list[tuple[str, str]]   # (qualname, why) of the bodies left as written (instrument.compiled)

    class Registry(Protocol):
        """What the instrumenter needs from a recording (implemented by runtime.recorder.Recorder)."""

        mode: str

        def plan(self, file: str, cfg: CFG, base: int) -> ProbePlan:
            """The probe plan of one function, its counters numbered from ``base``."""

        def weights_token(self, file: str) -> str:
            """A text that changes whenever the plans of ``file`` would (for the cache key)."""

        def register_file(self, file: str, entry: FileEntry) -> tuple[int, int]:
            """Give the functions of ``file`` ids and counters; returns (first fid, first counter id)."""

        @property
        def constants(self) -> dict[str, object]:
            """The run-time objects instrumented code gets as constants (``runtime.probes``)."""

    class TreeTransform(Protocol):
        """A rewrite applied to a module's tree after instrumentation (pytest's assertion rewriting):
        it may add statements, but must keep the probes' constants."""

        key: str   # changes whenever the transform's output would (part of the cache key)

        def __call__(self, tree: ast.Module, source: str, filename: str) -> None:
            """Rewrite ``tree`` in place."""


def decode_source(data: bytes) -> str:
    """``importlib.util.decode_source(data)`` (the text of a source file, newlines translated),
    without ``tokenize``: it is not imported at start-up, and importing it while the program
    runs would go through the finder (the program would see ``tokenize``, ``re``, ``token``
    appear, and under ``--include re`` its trace would hold ``re``'s functions).  Files that
    declare no encoding, carry no BOM and do not end in a lone CR are decoded directly; the
    others through :func:`_source_encoding` (``tokenize.detect_encoding``'s rules)."""
    first = data.find(b"\n")
    second = data.find(b"\n", first + 1) if first >= 0 else -1
    head = data if second < 0 else data[:second]
    if b"coding" not in head and not data.startswith(_BOM) and not data.endswith(b"\r"):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
    encoding = _source_encoding(data)
    # utf-8-sig, latin-1 and utf-8 without a codec lookup (which imports encodings.utf_8_sig, ...)
    text = data[3:].decode("utf-8") if encoding == "utf-8-sig" else data.decode(encoding)
    return IncrementalNewlineDecoder(None, True).decode(text)


_BOM = b"\xef\xbb\xbf"
_COOKIE_NAME = frozenset("-.0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz")   # [-\w.], ASCII


def _source_encoding(data: bytes) -> str:
    """``tokenize.detect_encoding(io.BytesIO(data).readline)[0]`` (PEP 263: a BOM, a cookie on
    line 1, or on line 2 after a blank or comment line), same SyntaxErrors, without ``re``."""
    end = data.find(b"\n") + 1 or len(data)
    first, rest = data[:end], data[end:]
    bom = first.startswith(_BOM)
    default = "utf-8-sig" if bom else "utf-8"
    if bom:
        first = first[3:]
    if not first:
        return default
    encoding = _cookie(first, bom)
    if encoding:
        return encoding
    if first.lstrip(b" \t\f")[:1] not in (b"", b"#", b"\r", b"\n"):   # tokenize.blank_re
        return default
    second = rest[:rest.find(b"\n") + 1 or len(rest)]
    if not second:
        return default
    return _cookie(second, bom) or default


def _cookie(line: bytes, bom: bool) -> str | None:
    """``find_cookie`` of ``tokenize.detect_encoding``: the encoding a line declares
    (``cookie_re``: ``^[ \\t\\f]*#.*?coding[:=][ \\t]*([-\\w.]+)``, ASCII), None if none."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise SyntaxError("invalid or missing encoding declaration")
    body = text.lstrip(" \t\f")
    if not body.startswith("#"):
        return None
    at = body.find("coding", 1)
    while at >= 0:
        i = at + 6
        if i < len(body) and body[i] in ":=":
            i += 1
            while i < len(body) and body[i] in " \t":
                i += 1
            j = i
            while j < len(body) and body[j] in _COOKIE_NAME:
                j += 1
            if j > i:
                return _checked_encoding(body[i:j], bom)
        at = body.find("coding", at + 1)
    return None


def _checked_encoding(name: str, bom: bool) -> str:
    """``tokenize._get_normal_name`` and the checks ``find_cookie`` makes of a cookie's name."""
    enc = name[:12].lower().replace("_", "-")
    if enc == "utf-8" or enc.startswith("utf-8-"):
        name = "utf-8"
    elif enc in ("latin-1", "iso-8859-1", "iso-latin-1") or enc.startswith(("latin-1-", "iso-8859-1-",
                                                                             "iso-latin-1-")):
        name = "iso-8859-1"
    try:
        if name not in ("utf-8", "iso-8859-1"):   # decoded without a lookup, which would import a codec
            codecs.lookup(name)
    except LookupError:
        raise SyntaxError("unknown encoding: " + name)
    if bom:
        if name != "utf-8":
            raise SyntaxError("encoding problem: utf-8")
        name += "-sig"
    return name


class Instrumenter(Record):
    """Turns source into instrumented code objects, registering every function it instruments.

    Code is built as a position-independent template (``instrument.cache``), cached on disk
    when ``cache`` is given, and relocated to the ids the registry hands out.  What a cache
    miss needs is imported on the first one (``instrument.misspath``); ``unrecorded``: the
    files compiled plain because their thread was loading it (stored in the recording's meta).
    """

    _fields = ("registry", "cache", "instrumented_files")

    def __init__(self, registry: Registry, cache: InstrumentCache | None = None,
                 instrumented_files: list[str] | None = None) -> None:
        self.registry = registry
        self.cache = cache
        self.instrumented_files: list[str] = [] if instrumented_files is None else instrumented_files
        self.unrecorded: list[str] = []
        self.left_out: list[tuple[str, str]] = []   # (what, why) not instrumented: the recording's notes

    def compile(self, source: str | bytes, filename: str, transform: TreeTransform | None = None) -> CodeType:
        """Instrumented code for ``source`` (then ``transform``-ed); falls back to plain
        (transformed) code with a warning."""
        if isinstance(source, bytes):
            source = decode_source(source)
        key = None
        hit = None
        if self.cache is not None:
            token = self.registry.weights_token(filename) + ("\0" + transform.key if transform else "")
            key = self.cache.key(source, filename, self.registry.mode, token)
            hit = self.cache.load(key)
        if hit is None and misspath.loading_here():   # re-entered (gc callback, signal handler): plain
            self.unrecorded.append(filename)
            return compile(source, filename, "exec", dont_inherit=True)
        if hit is None:
            ast = misspath.load()
            with _AST_LOCK:   # one thread's ast work at a time (_AST_LOCK)
                try:
                    tree = ast.parse(source, filename)
                except SyntaxError:
                    tree = None
                if tree is None:         # raises the real error (outside the handler: no chained context)
                    return compile(source, filename, "exec", dont_inherit=True)
                try:
                    hit = self.template(tree, source, filename, transform)
                except (InstrumentError, SyntaxError, RecursionError, ValueError, TypeError, AssertionError) as exc:
                    print("wholetrace: warning: " + short_message(f"{filename}: left uninstrumented "
                                                                   f"({type(exc).__name__}: {exc})", 179), file=sys.stderr)
                    tree = ast.parse(source, filename)
                    if transform is not None:
                        transform(tree, source, filename)
                    return compile(tree, filename, "exec", dont_inherit=True)
            if self.cache is not None and key is not None:
                self.cache.store(key, *hit)
        template, entry = hit
        if entry.get("left_out"):   # (once per body: a module reloaded compiles again, review24a LOW-2)
            self.left_out += [n for n in ((f"{filename}:{q}", why) for q, why in entry["left_out"]) if n not in self.left_out]
        fid_base, counter_base = self.registry.register_file(filename, entry)
        self.instrumented_files.append(filename)
        return relocate(template, fid_base, counter_base, self.registry.constants)

    def template(self, tree: ast.Module, source: str, filename: str,
                 transform: TreeTransform | None = None) -> tuple[CodeType, FileEntry]:
        """Instrument ``tree`` with placeholder ids: the code and the file's registry entry."""
        ast = misspath.load()
        from wholetrace.instrument.cfg import build_cfg, iter_functions
        from wholetrace.instrument.compiled import compiled, outermost
        from wholetrace.instrument.facts import file_facts
        from wholetrace.instrument.rewrite import compile_tree, rewrite_tree, statement_spans

        numba = compiled(tree)   # left as written, with what they hold (noted: ``left_out``)
        functions = [(fn, build_cfg(fn, q)) for fn, q in iter_functions(tree) if id(fn) not in numba]
        items = []
        descs: list[dict[str, Any]] = []
        offsets: list[int] = []
        offset = 0
        for i, (fn, cfg) in enumerate(functions):
            plan = self.registry.plan(filename, cfg, COUNTER_ORIGIN + offset)
            items.append((fn, cfg, FID_ORIGIN + i, plan))
            descs.append(dict(cfg.to_json(), plan=plan.to_json()))
            offsets.append(offset)
            offset += plan.counters
        rewrite_tree(tree, items)
        if transform is not None:
            transform(tree, source, filename)
        entry: FileEntry = {
            "registry": encode_registry(source, descs, offsets),
            "qualnames": [cfg.qualname for _fn, cfg in functions], "offsets": offsets, "counters": offset,
            "suspendable": any(cfg.is_generator or isinstance(fn, ast.AsyncFunctionDef) for fn, cfg in functions),
            "spans": [statement_spans(cfg) for _fn, cfg in functions],
            "facts": file_facts([cfg for _fn, cfg in functions]),
            "left_out": outermost(iter_functions(tree), numba) if numba else []}
        return compile_tree(tree, filename, items), entry


class InstrumentingLoader(SourceFileLoader):
    """A source loader that compiles through the instrumenter and never reads or writes .pyc files."""

    instrumenter: Instrumenter

    def get_code(self, fullname: str) -> CodeType:
        path = self.get_filename(fullname)
        module = sys.modules.get(fullname)
        if getattr(module, "__loader__", None) is self:   # exec_module's: the module sees plain's loader
            module.__loader__ = module.__spec__.loader = SourceFileLoader(fullname, path)  # type: ignore[union-attr]
        data = self.get_data(path)
        with untraced(), held() as gc_held:   # no collection in it (runtime.collector)
            try:
                code = self.instrumenter.compile(data, path)
            except Exception as exc:  # noqa: BLE001 - the source's own error is raised as plain raises it, below
                error = exc
            else:
                gc_held.extra = containers(code)   # the collector's count as a .pyc load leaves it
                return code
        self.source_to_code(data, path)   # plain's error and frames (importframes), outside the handler
        raise error

    as_importlib(get_code, SourceFileLoader.get_code, "source_to_code")  # type: ignore[arg-type]

    def set_data(self, path: str, data: bytes, *, _mode: int = 0o666) -> None:  # no bytecode cache
        return None


def _python_install() -> tuple[str, ...]:
    """The trees of the running Python (standard library, venv): never "the program" by location."""
    return tuple({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})


def _within(path: str, tree: str) -> bool:
    """``PurePath(path).is_relative_to(tree)`` for absolute normalised paths (pathlib is not
    imported at start-up: docs/design.md, "Start-up of record, wave 10")."""
    return path == tree or path.startswith(tree.rstrip("/") + "/")


class Scope(Record):
    """Which modules to instrument: files under ``roots`` and the packages named in ``packages``.

    Files in site-packages, or in the Python installation under a root that is not itself
    inside it (``record -m`` from a home directory holding pyenv), need ``packages``.  The roots
    (strings or path objects) are read when the scope is made.
    """

    _fields = ("roots", "packages")

    def __init__(self, roots: list[str] | list[os.PathLike[str]], packages: list[str],
                 _install: tuple[str, ...] | None = None) -> None:
        self.roots = roots
        self.packages = packages
        self._install = _python_install() if _install is None else _install
        # (root as a string, whether it lies in the Python installation), once: ``wants`` runs at every import
        self._roots = tuple([(r, any(_within(r, p) for p in self._install)) for r in map(os.fspath, roots)])
        self._dirs: dict[str, str] = {}   # directory -> its realpath (``_real``)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            theirs = (other.roots, other.packages, other._install)  # type: ignore[attr-defined]
            return (self.roots, self.packages, self._install) == theirs
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def wants(self, fullname: str, origin: str | None) -> bool:
        if origin is None or not origin.endswith(".py"):
            return False
        if origin.startswith(_OWN_PACKAGE):
            return False
        if any(fullname == p or fullname.startswith(p + ".") for p in self.packages):
            return True
        path = self._real(origin)
        if any(part in _SKIP_DIRS for part in path.split(os.sep)):
            return False
        installed = any(_within(path, p) for p in self._install)
        return any(_within(path, r) and (not installed or r_installed) for r, r_installed in self._roots)


    def _real(self, origin: str) -> str:
        """``os.path.realpath(origin)``, with the realpath of each directory worked out once:
        ``wants`` runs for every module the program imports, and ``realpath`` (an ``lstat`` and
        Python code per path component) was most of a small program's import overhead
        (wave 13).  The file itself is resolved afresh when it is a symlink; a directory whose
        symlinks change while the program runs keeps its first answer."""
        head, tail = os.path.split(origin)
        if not os.path.isabs(head) or not tail:
            return os.path.realpath(origin)
        real = self._dirs.get(head)
        if real is None:
            real = self._dirs[head] = os.path.realpath(head)
        return os.path.realpath(origin) if os.path.islink(origin) else os.path.join(real, tail)


class InstrumentingFinder:
    """Meta path finder that hands in-scope source modules to :class:`InstrumentingLoader`.

    Not a subclass of ``importlib.abc.MetaPathFinder``: the import system only calls
    ``find_spec`` (and ``invalidate_caches`` when present), and ``importlib.abc`` brings
    ``importlib.resources``, ``tempfile`` and ``shutil`` into every recording (a tenth of the
    start-up's imports; "Start-up of record, wave 9" in docs/design.md)."""

    def invalidate_caches(self) -> None:
        """Nothing cached here (``importlib.invalidate_caches`` calls it)."""

    def __init__(self, scope: Scope, instrumenter: Instrumenter,
                 on_import: dict[str, Callable[[ModuleType], None]] | None = None) -> None:
        self.scope = scope
        self.instrumenter = instrumenter
        self.on_import = on_import or {}
        #: the finders in ``sys.meta_path`` before the recording (``_as_without``)
        self.started_with: tuple[Any, ...] = (BuiltinImporter, FrozenImporter)
        self.preloaded: dict[str, Any] = {}   # sys.modules when installed: name -> weak reference
        self.declined: dict[str, str] = {}   # name -> origin of the .py modules out of scope (bypass.bypassed)

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if misspath.loading_here():   # this thread is loading the miss path: nothing instrumented
            return self._while_loading(fullname, path)
        if path is None and _imp.is_frozen(fullname):   # FrozenImporter's, as without this finder (runpy)
            return None
        spec = PathFinder.find_spec(fullname, path, target)
        if spec is None:
            return None
        if fullname in self.on_import and spec.loader is not None:
            spec.loader = _PostImportLoader(spec.loader, self.on_import[fullname])
            return spec
        if not isinstance(spec.loader, SourceFileLoader):
            return self._as_without(fullname, path, target, spec)
        if not self.scope.wants(fullname, spec.origin):
            self.declined[fullname] = spec.origin   # type: ignore[assignment]
            return self._as_without(fullname, path, target, spec)
        loader = InstrumentingLoader(fullname, spec.origin)  # type: ignore[arg-type]
        loader.instrumenter = self.instrumenter
        spec.loader = loader
        return spec

    def _while_loading(self, fullname: str, path: Sequence[str] | None) -> ModuleSpec | None:
        """A top-level import in the thread loading the miss path (``instrument.misspath``): the
        standard library's module (never the program's file of that name); any other module
        (the program's, imported by a ``gc`` callback or a signal handler meanwhile) is left to
        the import system, uninstrumented, and noted in the recording's meta."""
        if fullname.startswith("wholetrace"):
            return None
        if path is not None:   # a submodule: through its package's __path__, noted when in scope
            spec = PathFinder.find_spec(fullname, path)
            if spec is not None and self.scope.wants(fullname, spec.origin):
                self.instrumenter.unrecorded.append(fullname)
            return None
        spec = misspath.stdlib_spec(fullname)
        if spec is None or self.scope.wants(fullname, spec.origin):   # (an --include'd stdlib module)
            self.instrumenter.unrecorded.append(fullname)
        return spec

    def _as_without(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None,
                    spec: ModuleSpec) -> ModuleSpec | None:
        """The spec the import system would get without this finder, for a module out of scope,
        when the finders between this one and ``PathFinder`` in ``sys.meta_path`` are the
        built-in and frozen importers and those there before the recording started (a
        ``.pth`` file's, such as setuptools' ``DistutilsMetaFinder``): the first of them that
        finds it, else ``spec``, the one ``PathFinder`` has just found.  Returning None made
        ``PathFinder`` search ``sys.path`` a second time for every module the program imports
        (28 M instructions of nqueens' recording, wave 13).  None (the import system then asks
        the finders in order, as without wholetrace) when the program put a finder between,
        ``PathFinder`` does not follow this finder, or one of them raises (it raises again
        from the import system, so the program's traceback holds no frame of wholetrace's)."""
        meta = sys.meta_path
        try:
            mine = meta.index(self)
            last = meta.index(PathFinder, mine + 1)
        except ValueError:
            return None
        between = meta[mine + 1:last]
        known = self.started_with
        if not all(any(f is k for k in known) for f in between):
            return None
        for finder in between:
            try:
                found = finder.find_spec(fullname, path, target)
            except Exception:   # noqa: BLE001 (the import system asks it again, and reports it)
                return None
            if found is not None:
                return found
        return spec


class _PostImportLoader:
    """Delegating loader that runs a hook after the module executed (used to patch asyncio);
    everything else is the inner loader's (``__getattr__``)."""

    def __init__(self, inner: Any, hook: Callable[[ModuleType], None]) -> None:
        self.inner, self.hook = inner, hook

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        # the module's ``__loader__`` and ``__spec__.loader`` are plain's, even while it runs
        module.__loader__ = self.inner
        if module.__spec__ is not None and module.__spec__.loader is self:
            module.__spec__.loader = self.inner
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
    finder.started_with = tuple(f for f in sys.meta_path if hasattr(f, "find_spec"))
    finder.preloaded = {}   # name -> weak reference: no reference kept, no id() audit event at the end (bypass)
    for n, m in list(sys.modules.items()):
        try:
            finder.preloaded[n] = _weakref.ref(m)
        except TypeError:   # (None, objects without weak references: looked at as new ones)
            pass
    sys.meta_path.insert(0, finder)


def uninstall(finder: InstrumentingFinder) -> None:
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)
