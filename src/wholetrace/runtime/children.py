"""Child processes of a recording: every forked or spawned Python process records into a part file.

A recording ``OUT.wt`` whose program starts Python processes gets a directory
``OUT.wt.parts/`` holding one complete recording per child process (``<pid>-<hex>.wt``); the
root names it in its meta (``children``), and each part says who it is in its meta
(``process``: pid, parent pid, the part of the process that started it, how it started).

- **fork** (``os.fork``, ``multiprocessing`` fork pools): ``os.register_at_fork`` hooks.  In
  the child the recorder gets a new file, new locks and a new flusher thread, and drops the
  streams of the parent's other threads; the parent's SQLite connection is left untouched
  (never used, never closed: closing it could roll back the parent's open transaction).  A
  fork child's streams continue the parent's: the child stores the buffer it inherited and
  what it runs, and its meta names, for each ancestor from the root down, the part, the
  stream and how many of its stored events come first; the reader joins them
  (``store.parts.Lineage``), so a part decodes from the program's start.  (The child does
  not copy them: SQLite must not be used on a file the parent holds open.)  What the child
  itself ran is that whole minus its *base*: the prefix up to the fork, closed there like an
  early exit (``EXC s`` LEAVE per open activation; count modes: the counters at the fork,
  with the statement in flight of each open frame as an early exit).  Count modes keep
  counting from the parent's values.
- **spawn and forkserver** (``multiprocessing``): as coverage.py does, the parent adds an
  object to the data ``multiprocessing`` pickles for the child
  (``spawn.get_preparation_data``); unpickling it in the child starts a recording there
  before the child imports the program's main module (which is then instrumented too).
- ``multiprocessing`` children end with ``os._exit``: a finaliser registered through
  ``multiprocessing.util.register_after_fork`` stops the child's recording when its
  ``_bootstrap`` runs the exit finalisers.  A child killed or ending with ``os._exit``
  elsewhere keeps what its flusher stored (every 0.25 s).
"""

from __future__ import annotations

import _thread
import os
import _signal as signal   # the C module ``signal`` wraps: ``signal.py`` builds enums (imports enum, ~1.5 ms)
import sys
import time
import types

from wholetrace import jsontext
from wholetrace.events import EXC, LEAVE
from wholetrace.plain import Record
from wholetrace.runtime import forkwarn
from wholetrace.runtime.recorder import Flag
from wholetrace.store import cmods
from wholetrace.store.schema import BASE_PREFIX, CHILDREN_KEY, PROCESS_KEY, UNRECORDED_PREFIX

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any

#: ``OUT.wt`` -> ``OUT.wt.parts``: where the child processes' recordings go.
PARTS_SUFFIX = ".parts"
#: Priority of the ``multiprocessing`` finaliser that ends a child's recording (runs last).
_LAST = -(2 ** 30)
#: The environment variable Python subprocesses find (``runtime.subprocs``).
ENV = "WHOLETRACE_CHILD"
#: How long a child killed by SIGTERM waits for its recording to be stored.
TERM_SECONDS = 5.0


def parts_dir(out: str | os.PathLike[str]) -> str:
    """``OUT.wt.parts`` (a path string: pathlib is not imported at start-up, nor later here:
    this module also runs in forked children, while the finder is installed)."""
    return os.fspath(out) + PARTS_SUFFIX


class Config(Record):
    """What a child needs to record like its parent (pickled into spawned children).
    ``parent``: part name of the process that started this one ("": the root)."""

    __slots__ = ("parts", "mode", "roots", "include", "cache", "meta", "parent")

    def __init__(self, parts: str, mode: str, roots: list[str], include: list[str], cache: bool,
                 meta: dict[str, Any], parent: str = "") -> None:
        self.parts = parts
        self.mode = mode
        self.roots = roots
        self.include = include
        self.cache = cache
        self.meta = meta
        self.parent = parent


class Children:
    """The child-process side of the recording running in this process (``runner.Live.children``)."""

    def __init__(self, live: Any, config: Config, name: str = "") -> None:
        self.live = live
        self.config = config
        self.name = name                    # this process's part name ("" for the root)
        self.forking = False
        self.mp_hooked = False
        self.finishing = False
        self.term_pending = False
        self.term_seen = False              # _terminated has run (the SIGTERM watcher stops re-sending)
        self._held: Any = None              # the writer's lock, held while the process forks
        self._env_before: Any = False       # WHOLETRACE_CHILD before the recording set it (False: not set)
        #: Trace modes, per stream of this process: [part name ("": the root), stream, events] of
        #: each ancestor whose stored events precede this process's own, from the root down.
        self.chains: dict[int, list[list[Any]]] = {}
        self._spawn_patched: list[Any] = []

    def __repr__(self) -> str:
        return f"Children(name={self.name!r}, parts={self.config.parts!r})"

    # -- fork
    def before_fork(self) -> None:
        # no thread of ours is inside SQLite while the process forks (its locks would stay held)
        self.live.recorder._flush_lock.acquire()
        self._held = _writer_lock(self.live.writer)
        self._held.acquire()
        self.forking = True
        forkwarn.before_fork(self.live.recorder._thread is not None and self.live.recorder._running.locked())
        util = sys.modules.get("multiprocessing.util")
        if util is not None and not self.mp_hooked:
            util.register_after_fork(self, Children._mp_child)
            self.mp_hooked = True

    def after_fork_parent(self) -> None:
        if self.forking:
            self.forking = False
            self._held.release()
            self.live.recorder._flush_lock.release()
            forkwarn.after_fork_parent()

    def after_fork_child(self) -> None:
        """Runs in the new child: move the recorder onto a part file of its own.  Nothing here
        touches a file (the part is made by the child's flusher, or when it ends): a child
        killed at once costs nothing, and forking stays cheap."""
        self.forking = False
        forkwarn.drop_due(force=True)
        live, rec = self.live, self.live.recorder
        _leak(live.writer)                          # the parent's connection: never used, never closed here
        parent_name = self.name
        self.name = part_name()
        self.config.parent = self.name
        rec.lock, rec._flush_lock, rec._stop, rec._thread = _thread.allocate_lock(), _thread.allocate_lock(), Flag(), None
        rec.events, rec.registered = 0, set()
        me = _thread.get_ident()
        rec.headroom_threads = {me}
        streams = rec.state.streams
        streams.lock, streams.main_ident = _thread.allocate_lock(), me   # (threading's _after_fork: the forking thread is the main one)
        kept = [st for st in streams.all if st.thread_ident == me]
        streams.all[:] = kept
        streams.by_buffer = {st.buf.append: st for st in kept}
        meta = dict(self.config.meta, cwd=os.getcwd(), mode=rec.mode, include=self.config.include,
                    python=sys.version.split()[0], start_time=time.time())
        files = list(rec.files)
        process: dict[str, Any] = {"pid": os.getpid(), "ppid": os.getppid(), "parent": parent_name, "start": "fork"}
        frames = _my_frames(rec)
        arrays: dict[str, tuple[Any, tuple[int, ...] | None]] = {}
        renumbered: dict[int, int] = {}             # a kept stream's id in the parent -> its id here
        if rec.traces:
            base: dict[str, Any] = {}
            chains: dict[int, list[list[Any]]] = {}
            for new, st in enumerate(kept):
                old, st.sid = st.sid, new
                renumbered[old] = new
                # the parts (and their streams) whose stored events come first, from the root down
                chain = chains[new] = self.chains.get(old, []) + [[parent_name, old, st.flushed]]
                inherited = sum(n for _name, _sid, n in chain)
                st.flushed = 0
                own = len(st.buf) if rec.values is None else rec.values.events_in(old, st.buf)   # full: less records
                base[str(new)] = {"chain": chain, "events": inherited + own, "tail": []}
            self.chains = chains
            mine = _stream_of(streams, streams.current.get())
            if mine is not None and str(mine) in base:
                base[str(mine)]["tail"] = [v for fid, f in frames
                                           for v in (EXC, rec.state.sites.resolve(fid, f.f_code, f.f_lasti), LEAVE)]
            process["base"] = base
        else:
            arrays = _count_base(rec, frames)

        def setup(writer: Any) -> None:
            writer.set_meta(**meta, **{PROCESS_KEY: process})
            for file, fid_base, counter_base, entry in files:
                writer.add_file(fid_base, path=file, n_functions=len(entry["qualnames"]), counter_base=counter_base,
                                registry=entry["registry"])
            for name, (data, shape) in arrays.items():
                writer.put_array(name, data, shape=shape)
            writer.commit()

        live.writer = rec.writer = _LazyWriter(os.path.join(self.config.parts, self.name), setup)
        if rec.values is not None:                  # full mode: the value log writes to the part too
            rec.values.forked(live.writer, renumbered)
        self.set_environment()
        rec.ends_inside = _in_multiprocessing()
        rec.start()

    # -- multiprocessing children (fork, spawn, forkserver) end with os._exit
    def _mp_child(self) -> None:
        """In a ``multiprocessing`` child, as its ``_bootstrap`` starts: end the recording with
        the exit finalisers, or when SIGTERM arrives (``Pool.terminate``, ``Process.terminate``)."""
        util = sys.modules["multiprocessing.util"]
        util.Finalize(None, self.finish, exitpriority=_LAST)
        if _thread.get_ident() == self.live.recorder.state.streams.main_ident \
                and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, self._terminated)
            from wholetrace.runtime.sigterm import watch    # only in multiprocessing children

            watch(self)

    def _terminated(self, signum: int, frame: Any) -> None:
        """SIGTERM in a ``multiprocessing`` child: store the recording, then die of the signal
        as the child would have.  If this thread is storing it already (the signal came during
        the exit finalisers), it dies when that is done.  Else the store is written from
        another thread, waited for a few seconds: the signal may have interrupted this
        thread holding a lock the writer needs."""
        self.term_seen = True
        if self.finishing:
            self.term_pending = True
            return
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        try:
            done = _thread.allocate_lock()     # a bare thread, joined through this lock: not in threading.enumerate()
            done.acquire()

            def run() -> None:
                try:
                    self.finish()
                finally:
                    done.release()

            _thread.start_new_thread(run, ())
            done.acquire(True, TERM_SECONDS)
        finally:
            os.kill(os.getpid(), signal.SIGTERM)

    def finish(self) -> None:
        """End this process's recording (a ``multiprocessing`` child about to ``os._exit``)."""
        from wholetrace.runtime import runner

        if self.finishing or runner.LIVE is not self.live:
            return
        self.finishing = True
        try:   # the program's stdout is flushed by its _bootstrap next (spawn: and at exit), as plain's
            self.live.stop("exit", None)
        finally:
            if signal.getsignal(signal.SIGTERM) == self._terminated:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
            if self.term_pending:
                os.kill(os.getpid(), signal.SIGTERM)

    # -- spawn and forkserver
    def patch_spawn(self, spawn: types.ModuleType) -> None:
        """Add a ``runtime.spawned.Stowaway`` to what ``multiprocessing`` sends a spawned child."""
        if getattr(spawn.get_preparation_data, "__wholetrace__", False):
            return
        original = spawn.get_preparation_data

        def get_preparation_data(name: str) -> dict[str, Any]:
            data = original(name)
            from wholetrace.runtime import runner
            live = runner.LIVE
            if live is not None and live.children is not None:
                cfg = live.children.config
                from wholetrace.runtime.spawned import Stowaway     # not imported at start-up

                data["wholetrace"] = Stowaway(Config(cfg.parts, cfg.mode, cfg.roots, cfg.include, cfg.cache,
                                                      cfg.meta, live.children.name))
            return data

        get_preparation_data.__wrapped__ = original          # type: ignore[attr-defined]
        get_preparation_data.__name__ = original.__name__
        get_preparation_data.__qualname__ = original.__qualname__
        get_preparation_data.__doc__ = original.__doc__
        get_preparation_data.__wholetrace__ = True           # type: ignore[attr-defined]
        spawn.get_preparation_data = get_preparation_data
        self._spawn_patched.append((spawn, original))

    def unpatch(self) -> None:
        for spawn, original in self._spawn_patched:
            spawn.get_preparation_data = original
        self._spawn_patched.clear()
        if self._env_before is not False:                  # the environment as the recording found it
            if self._env_before is None:
                os.environ.pop(ENV, None)
            else:
                os.environ[ENV] = self._env_before
            self._env_before = False

    # -- Python subprocesses (runtime.subprocs)
    def set_environment(self) -> None:
        """Tell Python subprocesses started from now on to record into this recording's parts,
        as children of this process (``WHOLETRACE_CHILD``, read by ``zz_wholetrace.pth``)."""
        if self._env_before is False:
            self._env_before = os.environ.get(ENV)
        c = self.config
        os.environ[ENV] = jsontext.dumps({"parts": c.parts, "mode": c.mode, "include": c.include, "cache": c.cache,
                                      "meta": c.meta, "parent": self.name})


# -- the root ------------------------------------------------------------------------------------
_HOOKED = False


class Spawned(Record):
    """What ``runner.record(children=...)`` gets in a child process that records into a part
    (``runtime.subprocs``): the parent's configuration, this part's name, how it started."""

    __slots__ = ("config", "name", "start")

    def __init__(self, config: Config, name: str, start: str) -> None:
        self.config = config
        self.name = name
        self.start = start


def _remove_flat(folder: str) -> None:
    """``shutil.rmtree(folder, ignore_errors=True)`` for a folder of files (shutil is not
    imported at start-up: it brings bz2 and lzma)."""
    for name in os.listdir(folder):
        try:
            os.unlink(os.path.join(folder, name))
        except OSError:
            pass
    try:
        os.rmdir(folder)
    except OSError:
        pass


def _suffix(name: str) -> str:
    """``PurePath(name).suffix``."""
    i = name.rfind(".")
    return name[i:] if 0 < i < len(name) - 1 else ""


def enable(live: Any, out: str | os.PathLike[str] | Spawned, meta: dict[str, Any], cache: bool) -> Children:
    """Record the child processes of the recording ``live``: the root, writing ``out``, or a
    child process itself (``out`` a :class:`Spawned`)."""
    if isinstance(out, Spawned):
        c = out.config
        cfg = Config(c.parts, c.mode, [str(r) for r in live.finder.scope.roots], c.include, c.cache, c.meta, out.name)
        ch = Children(live, cfg, out.name)
        process = {"pid": os.getpid(), "ppid": os.getppid(), "parent": c.parent, "start": out.start}
        live.writer.set_meta(**{PROCESS_KEY: process})
    else:
        parts = parts_dir(out)           # made by the first child that stores something
        if os.path.isdir(parts) and all(_suffix(n) == ".wt" or n.endswith(("-journal", "-wal", "-shm"))
                                        or n.startswith((UNRECORDED_PREFIX, ".split-"))   # (splitserver.SIBLING_PREFIX)
                                        for n in os.listdir(parts)):
            _remove_flat(parts)
        scope = live.finder.scope
        cfg = Config(os.path.realpath(parts), live.recorder.mode, [os.fspath(r) for r in scope.roots],
                     list(scope.packages), cache, dict(meta))
        ch = Children(live, cfg)
        if live.recorder.values is not None:       # full mode: fork children's FIFOs swept at the end
            live.recorder.values.parts = cfg.parts
        root = {"pid": os.getpid(), "ppid": os.getppid(), "parent": None, "start": "root"}
        live.writer.set_meta(**{CHILDREN_KEY: os.path.basename(parts), PROCESS_KEY: root})
    live.children = ch
    hook()
    live.finder.on_import["multiprocessing.spawn"] = ch.patch_spawn
    if "multiprocessing.spawn" in sys.modules:
        ch.patch_spawn(sys.modules["multiprocessing.spawn"])
    ch.set_environment()
    return ch


def hook() -> None:
    """Register the fork hooks once per process (they act only while a recording with
    children runs here)."""
    global _HOOKED
    if _HOOKED:
        return
    _HOOKED = True
    os.register_at_fork(before=lambda: _each("before_fork"), after_in_parent=lambda: _each("after_fork_parent"),
                        after_in_child=lambda: _each("after_fork_child"))


def _each(method: str) -> None:
    from wholetrace.runtime import runner

    live = runner.LIVE
    ch = getattr(live, "children", None)
    if ch is not None:
        getattr(ch, method)()


# -- helpers ---------------------------------------------------------------------------------------
def _leak(writer: Any) -> None:
    """Keep the parent's writer (and its SQLite connection) alive for good in this child."""
    if isinstance(writer, _LazyWriter):
        writer = writer._w
        if writer is None:
            return
    from wholetrace.store.fdguard import leak

    leak(writer)
    conn = getattr(writer, "_conn", None)
    if conn is not None:
        leak(conn)


def new_part(path: str | os.PathLike[str], high: bool = True) -> Any:
    """The writer of a new part file (its directory is made if it is the first); ``high``: its
    descriptors >= HIGH_FD (before the program runs: ``RecordingWriter``)."""
    from wholetrace.store import RecordingWriter

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    return RecordingWriter(path, high=high)


def part_name() -> str:
    """A new part's file name: this process's pid and 8 random hex digits."""
    return f"{os.getpid()}-{os.urandom(4).hex()}.wt"


def _writer_lock(writer: Any) -> Any:
    """The lock a store writer holds while it uses SQLite (a writer not made yet has none)."""
    if isinstance(writer, _LazyWriter):
        writer = writer._w
    lock = getattr(writer, "_lock", None) if writer is not None else None
    return lock if lock is not None else _thread.allocate_lock()


def _in_multiprocessing() -> bool:
    """True when this fork was made by ``multiprocessing`` (its child ends with ``os._exit``)."""
    f = sys._getframe()
    while f is not None:
        if f.f_code.co_filename.endswith(os.path.join("multiprocessing", "popen_fork.py")):
            return True
        f = f.f_back
    return False


def _stream_of(streams: Any, append: Any) -> int | None:
    st = streams.by_buffer.get(append)
    return None if st is None else st.sid


def _my_frames(rec: Any) -> list[tuple[int, types.FrameType]]:
    """(fid, frame) of the instrumented frames open on this thread, innermost first."""
    by_code = rec.code_index()[0]
    out = []
    f: types.FrameType | None = sys._getframe(1)
    while f is not None:
        fid = by_code.get((f.f_code.co_filename, f.f_code.co_qualname))
        if fid is not None:
            out.append((fid, f))
        f = f.f_back
    return out


def _count_base(rec: Any, frames: list[tuple[int, types.FrameType]]) -> dict[str, tuple[Any, Any]]:
    """Count modes: the counts at the fork, as a run ending here would store them (the frames
    open on this thread end early at their statement in flight): arrays by name, with shapes."""
    array = cmods.ArrayType   # not ``import array`` after cmods.hide(): the program's (a script's array.py)
    counts, early = rec.counts_with(frames)
    edges = dict(rec.exc_edges)
    pending = list(rec.state.xedges)
    for p in range(0, len(pending) - len(pending) % 3, 3):
        key = (pending[p], pending[p + 1], pending[p + 2])
        edges[key] = edges.get(key, 0) + 1
    rows = [v for (f, s, d), c in sorted(edges.items()) for v in (f, s, d, c)]
    return {BASE_PREFIX + "counters": (counts, None),
            BASE_PREFIX + "exception_edges": (array("q", rows), (len(rows) // 4, 4)),
            BASE_PREFIX + "early_exits": (array("q", [v for pair in early for v in pair]), (len(early), 2))}


class _LazyWriter:
    """A fork child's part writer, made on first use (by its flusher, or when it ends)."""

    def __init__(self, path: str, setup: Any) -> None:
        self.path, self._setup, self._w, self._make = path, setup, None, _thread.allocate_lock()

    def _get(self) -> Any:
        if self._w is None:
            with self._make:
                if self._w is None:
                    w = new_part(self.path, high=False)     # the program runs: the lowest free numbers
                    self._setup(w)
                    self._w = w
        return self._w

    def __getattr__(self, name: str) -> Any:
        return getattr(self._get(), name)
