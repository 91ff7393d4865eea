"""On-disk cache of instrumented code: position-independent templates, relocated when loaded.

Instrumenting a module (parse, CFGs, placement, rewrite, compile) costs 5-10 times
compiling it, and a recording pays it on every run for every module it instruments.  So
the instrumented code object of a file is cached, keyed by everything it depends on: the
source text, the file name (tracebacks name it), the mode, the earlier recording's counts
for the file (``--weights``), the Python version and the source of the instrumenter itself.

Function ids and counter ids differ from run to run (they are handed out in import order),
so templates are built with *placeholders*: the ``i``-th function of the file has id
``FID_ORIGIN + i`` and the file's ``j``-th counter ``COUNTER_ORIGIN + j`` (ENTER codes are
derived from the placeholder fid).  :func:`relocate` rewrites those constants into the
real ids, and the run-time object placeholders into the recording's objects (the counter
list, the stream's ``ContextVar.get``, ...: ``runtime.probes.runtime_objects``); every
other constant stays as it is.  The placeholders sit in windows near
3.1e15 and 2.7e15, far from the numbers programs write (a constant inside a window would
be relocated too: a program would have to spell one of those 16-digit numbers).
"""

from __future__ import annotations

import marshal
import os
import sys
from types import CodeType

from wholetrace.events import ENTER_BASE, enter_code
from wholetrace.instrument.digest import memoised, sha256, write_atomic
from wholetrace.instrument.emit import COUNTER_ORIGIN, COUNTS, FID_ORIGIN, MARK

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any, Callable, Mapping

WINDOW = 1_000_000_000
FORMAT = 2

if TYPE_CHECKING:   # pragma: no cover
    #: What a cached file holds besides its code: its registry entry (``instrument.loader.FileEntry``,
    #: core types only).
    Entry = dict[str, Any]


def relocate(code: CodeType, fid_base: int, counter_base: int,
             objects: Mapping[str, object] | None = None) -> CodeType:
    """``code`` with placeholder ids replaced: fids from ``fid_base``, counters from
    ``counter_base``; and run-time object placeholders (``emit.runtime_constant``) by
    ``objects[name]``, the recording's own objects (the file's counter object is
    ``objects[emit.COUNTS](counter_base)``)."""
    resolved: dict[str, object] = {}

    def runtime(name: str) -> object:
        if name not in resolved:
            if objects is None:
                raise ValueError("instrumented code needs the recording's run-time objects")
            obj = objects[name]
            resolved[name] = obj(counter_base) if name == COUNTS else obj  # type: ignore[operator]
        return resolved[name]

    return _relocate(code, fid_base, counter_base, runtime)


_FID_END = FID_ORIGIN + WINDOW
_COUNTER_END = COUNTER_ORIGIN + WINDOW
_ENTER_LOW, _ENTER_HIGH = -(ENTER_BASE + FID_ORIGIN + WINDOW), -(ENTER_BASE + FID_ORIGIN)


def _relocate(code: CodeType, fid_base: int, counter_base: int, runtime: Callable[[str], object]) -> CodeType:
    consts = code.co_consts
    new = _fixed(consts, fid_base, counter_base, runtime)
    return code if new is consts else code.replace(co_consts=new)


def _fixed(items: tuple[object, ...], fid_base: int, counter_base: int,
           runtime: Callable[[str], object]) -> tuple[object, ...]:
    """``items`` with the placeholders in it (and in its tuples and code objects) replaced;
    ``items`` itself when it holds none (a loaded module's 8,000 constants are mostly not:
    one pass, no copy of what stays, ~2x faster than rebuilding every tuple and code object)."""
    out: list[object] | None = None
    for i, c in enumerate(items):
        t = type(c)
        if t is int:
            if FID_ORIGIN <= c < _FID_END:  # type: ignore[operator]
                v: object = fid_base + c - FID_ORIGIN  # type: ignore[operator]
            elif COUNTER_ORIGIN <= c < _COUNTER_END:  # type: ignore[operator]
                v = counter_base + c - COUNTER_ORIGIN  # type: ignore[operator]
            elif _ENTER_LOW < c <= _ENTER_HIGH:  # type: ignore[operator]
                v = enter_code(fid_base + (-c - ENTER_BASE - FID_ORIGIN))  # type: ignore[operator]
            else:
                continue
        elif t is CodeType:
            v = _relocate(c, fid_base, counter_base, runtime)  # type: ignore[arg-type]
            if v is c:
                continue
        elif t is tuple:
            v = _fixed(c, fid_base, counter_base, runtime)  # type: ignore[arg-type]
            if v is c:
                continue
        elif t is frozenset and MARK in c:  # type: ignore[operator]
            v = runtime(next(x for x in c if x != MARK))  # type: ignore[attr-defined]
        else:
            continue
        if out is None:
            out = list(items)
        out[i] = v
    return items if out is None else tuple(out)


#: The code that decides what instrumented code looks like (registry: the cached blob's format).
DIGESTED = ("events.py", "ids.py", "instrument", "store/registry.py")


def digested_files() -> list[str]:
    """The files :func:`instrumenter_digest` hashes, in its order."""
    root = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    out: list[str] = []
    for rel in sorted(DIGESTED):
        p = os.path.join(root, rel)
        if os.path.isdir(p):
            out += sorted(_py_files(p))
        else:
            out.append(p)
    return out


def _py_files(folder: str) -> list[str]:
    """The ``.py`` files under ``folder``, as ``os.walk`` finds them, without walking
    ``__pycache__`` (byte code only; its ~50 entries were a third of the cache key's cost)."""
    out: list[str] = []
    with os.scandir(folder) as entries:
        for e in entries:
            if e.name.endswith(".py") and not e.is_dir():
                out.append(e.path)
            elif e.name != "__pycache__" and e.is_dir(follow_symlinks=False):
                out += _py_files(e.path)
    return out


def _content_digest(files: list[str]) -> str:
    h = sha256()
    for f in files:
        h.update(os.path.basename(f).encode())
        with open(f, "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()


_DIGESTS: dict[str | None, str] = {}   # a memo dict, not functools.lru_cache: no functools at start-up


def instrumenter_digest(memo: str | None = None) -> str:
    """Hash of the code that decides what instrumented code looks like (so a changed
    wholetrace never reuses an old template).

    Hashing those ~250 KB costs 1.5 ms of every start-up; with ``memo`` (a directory: the
    code cache's) the digest is kept there by the files' stat (``digest.memoised``)."""
    got = _DIGESTS.get(memo)
    if got is None:
        files = digested_files()
        got = _content_digest(files) if memo is None else memoised(memo, "digest", files, lambda: _content_digest(files), 64)
        if len(_DIGESTS) >= 4:
            _DIGESTS.clear()
        _DIGESTS[memo] = got
    return got


instrumenter_digest.cache_clear = _DIGESTS.clear   # type: ignore[attr-defined]  # (lru_cache's name, for tests)


def default_dir() -> str:
    """``$WHOLETRACE_CACHE_DIR``, else ``$XDG_CACHE_HOME/wholetrace``, else ``~/.cache/wholetrace``."""
    env = os.environ.get("WHOLETRACE_CACHE_DIR")
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "wholetrace")


class InstrumentCache:
    """Templates on disk, one file per key; unreadable or foreign files count as misses.

    Loading runs the stored code, so the directory must be as trusted as ``__pycache__``.
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.dir = os.fspath(directory) if directory else default_dir()
        self.hits = 0
        self.misses = 0

    def key(self, source: str, filename: str, mode: str, weights: str) -> str:
        h = sha256()
        for part in (str(FORMAT), sys.version, instrumenter_digest(self.dir), mode, filename, weights, source):
            h.update(part.encode("utf-8", "surrogatepass"))
            h.update(b"\0")
        return h.hexdigest()

    def load(self, key: str) -> tuple[CodeType, Entry] | None:
        try:
            with open(os.path.join(self.dir, f"{key}.wtc"), "rb") as fh:
                data = marshal.loads(fh.read())
            fmt, code, entries = data
            if fmt != FORMAT or type(code) is not CodeType or not isinstance(entries, dict):
                raise ValueError("not a template")
        except (OSError, EOFError, ValueError, TypeError):
            self.misses += 1
            return None
        self.hits += 1
        return code, entries

    def store(self, key: str, code: CodeType, entries: Entry) -> None:
        """Write atomically (another process may write the same key); failures are ignored."""
        try:
            data = marshal.dumps((FORMAT, code, entries))
        except ValueError:
            return
        write_atomic(os.path.join(self.dir, f"{key}.wtc"), data)
