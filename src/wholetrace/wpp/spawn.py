"""Starting the WPP builder process with nothing but ``os``: ``record --wpp`` spawns it before importing anything else.

Split from ``wpp.online`` (wave 10): that module imports ``pickle``, ``subprocess``, ``tempfile``,
``threading`` and ``pathlib`` (9-22 ms under load), all of which the spawn itself does without;
the builder's own start-up (~0.1 s of CPU) decides how much of a short program is left to build
when it ends, so every millisecond before its spawn is on the recording's tail
(docs/design.md, "The builder's start-up, wave 10").  The rules of "The WPP builder process"
hold unchanged: the builder is not a child of the program's process (``/bin/sh`` starts it in
the background and exits; reaped by :meth:`BuilderProcess.reap` before the program runs), it
runs in its own session, without ``WHOLETRACE_CHILD``, its standard input a pipe of ours; what
``subprocess.Popen(close_fds=True)`` closed, the builder closes itself (``wpp.builder``:
every inheritable descriptor above 2).

With ``WHOLETRACE_WPP_START=fork`` (wave 23) the builder is, where it can be, **forked** from this
process instead (:func:`forkable`, :func:`_fork`): an intermediate child starts the session and
exits, as the shell did; the builder needs no new interpreter and finds ``os``, ``importlib``,
``warnings``, ... loaded (32 M fewer instructions in it), but this process pays ~955 more
copy-on-write page faults on its own path; not the default until a quiet benchmark says which
costs more (docs/design.md, "The builder forked, wave 23").
"""

from __future__ import annotations

import _signal   # signal's numbers without signal.py (enum, functools, collections: ~6 ms before the spawn)
import _thread
import os
import sys
import time

from wholetrace.errors import UsageError
# HIGH_FD: the lowest number of the recorder's own descriptors to the builder (its pipe, the result
# pipe, the stderr file, the progress memfd), all close-on-exec, as the store's (one helper, _high):
# the program's files take the low numbers they take in a plain run (docs/design.md, "wave 15,
# builder start-up" and "The program cannot tell, wave 16")
from wholetrace.store.fdguard import HIGH_FD, FcntlUnseen, widen_pipe
from wholetrace.store.fdguard import high as _high

TYPE_CHECKING = False   # no typing at record's start-up
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any

#: Default bound of the events waiting in memory for the builder (4 bytes each).
QUEUE_EVENTS = 1 << 22
#: The modes whose streams can be interned (``wpp.intern.INTERNERS``; a test keeps them equal).
INTERNED_MODES = ("blocks", "witness", "branches", "path")
#: the builder's descriptor of the progress file (the spawn's ``dup2`` puts the memfd there; inherited,
#: never looked up through /proc: docs/design.md, "The recorder-to-builder handoff, wave 12", review fixes)
PROGRESS_ENV = "WHOLETRACE_WPP_PROGRESS"
PROGRESS_FD = 4     # not 0-2 (the pipes), not 3 (``_SCRIPT`` saves its stdin there)
PROGRESS_BYTES = 64
#: the progress memfd's name (its /proc/self/fd link reads ``/memfd:`` + this; ``wpp.online`` finds the mapping's descriptor by it)
PROGRESS_NAME = "wholetrace-wpp-progress"
#: the seals the progress memfd carries (fcntl F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW): only a memfd
#: made by ``_progress_file`` has exactly these, the builder checks them before mapping it
PROGRESS_SEALS = 1 | 2 | 4
#: the value the recorder writes before the spawn: the builder writes 0 (then its events built) once mapped
PROGRESS_UNMAPPED = -1
_SH = "/bin/sh"
# the shell saves our pipe (its stdin) to fd 3 before the `&`: a background job's stdin is /dev/null
_SCRIPT = 'exec 3<&0; "$@" 0<&3 3<&- &'
# = wholetrace.wpp.startup.CODE (a test keeps them equal)
_CODE = "import gc; gc.disable(); import wholetrace.wpp.startup as s; s.run()"
#: ``fork``: the builder is forked from the recorder where :func:`forkable` allows it; else (the
#: default) it is started as a new interpreter
START_ENV = "WHOLETRACE_WPP_START"
# meta-path finders a .pth file installs that the builder does without (module, class): setuptools'
# distutils shim only serves ``import distutils``; virtualenv's (tox, poetry, hatch venvs) only
# patches ``distutils.dist``/``setuptools.dist`` when they are imported; the builder imports neither
_SITE_FINDERS = (("_distutils_hack", "DistutilsMetaFinder"), ("_virtualenv", "_Finder"))


class BuilderProcess:
    """The builder process, started (``python [-S] -c`` running ``wpp.startup``) as soon as the mode
    is known: ``record`` starts it before importing the rest of wholetrace, so it loads meanwhile.
    ``fd``: the pipe its chunks go to; ``out``: its result, read to EOF; ``stderr``: a file."""

    def __init__(self, mode: str, *, lookahead: bool = False, queue_events: int = QUEUE_EVENTS) -> None:
        if mode not in INTERNED_MODES:
            raise UsageError(f"--wpp needs a trace mode ({', '.join(INTERNED_MODES)}), not {mode!r}")
        # as without --wpp: a program's own fcntl.py is the one its import finds (fdguard.FcntlUnseen)
        with FcntlUnseen():
            self.mode = mode
            self.lookahead = bool(lookahead)
            self.queue_events = max(0, int(queue_events))
            env = dict(os.environ)
            env.pop("WHOLETRACE_CHILD", None)           # runtime.children.ENV: the builder is not recorded
            # numpy's OpenBLAS starts a thread per core at import, which the builder never uses:
            # 0.02-0.03 s of CPU per recording, a fifth of the builder's start-up (docs/design.md, wave 9)
            env["OPENBLAS_NUM_THREADS"] = "1"
            root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
            # without the current directory (an empty item is one): its typing.py would be the builder's
            env["PYTHONPATH"] = os.pathsep.join(
                [root] + (builder_entries(env["PYTHONPATH"].split(os.pathsep), root) if env.get("PYTHONPATH") else []))
            #: the builder's progress (events built, int64 at offset 0; wpp.online.OnlineWpp.flush_interval):
            #: a memfd mapped here, handed to the builder as its descriptor PROGRESS_FD; None where there
            #: is none (a fixed interval then)
            made = _progress_file()
            self.progress: Progress | None = made[1] if made else None
            env.pop(PROGRESS_ENV, None)
            if made:
                env[PROGRESS_ENV] = str(PROGRESS_FD)
            self.spawned = time.time()
            # wpp.startup.CODE, not imported here (the spawn imports nothing but os, _signal, sys, time, store.fdguard)
            args = [mode, "1" if self.lookahead else "0", str(self.queue_events), repr(self.spawned)]
            fork = forkable()
            path = None if fork else site_free_path(root)
            # -P: ``-c`` does not put '' (the current directory) first on the builder's path
            if path is None:
                cmd = [sys.executable, "-P", "-c", _CODE, *args]
            else:
                cmd = [sys.executable, "-P", "-S", "-c", _CODE, *args, *path]
            err = _high(_anonymous_file())
            r, w = os.pipe()
            self.fd = _high(w)
            widen_pipe(self.fd)
            out_r, out_w = os.pipe()
            out_r = _high(out_r)
            # the result pipe stays 64 KiB here: the builder widens it when its result is larger
            # (wpp.builder.widen_result_pipe; docs/design.md, wave 19)
            # the memfd (>= HIGH_FD, see _progress_file) last: the dup2s before it cannot clobber it,
            # and a dup2 to another number leaves the copy inheritable (the shell and builder keep it)
            dups = [(r, 0), (out_w, 1), (err, 2)] + ([(made[0], PROGRESS_FD)] if made else [])
            #: how the builder was started: "fork" (:func:`_fork`) or "exec" (``/bin/sh`` and ``python -c``)
            self.start = "fork" if fork else "exec"
            try:
                if fork:
                    # sys.path as the exec'd builder's (site_free_path's entries; the finders are inherited)
                    self._sh: int | None = _fork(dups, env, args + [root] + [
                        p for p in builder_entries(sys.path, root, script=True) if p != root])
                else:
                    self._sh = os.posix_spawn(
                        _SH, [_SH, "-c", _SCRIPT, "sh", *cmd], env,
                        file_actions=[(os.POSIX_SPAWN_DUP2, a, b) for a, b in dups],
                        setsid=True, setsigdef=(_signal.SIGPIPE, _signal.SIGXFSZ))   # as Popen's restore_signals
            finally:
                os.close(r)
                os.close(out_w)
            self.stderr = os.fdopen(err, "w+b")
            self.out = os.fdopen(out_r, "rb")

    def reap(self) -> None:
        """Wait for the shell or the intermediate child (it exits as soon as the builder is started
        in the background): before the program runs, or a program reaping every child would see it."""
        if self._sh is not None:
            pid, self._sh = self._sh, None
            os.waitpid(pid, 0)


def forkable() -> bool:
    """Whether the builder is forked from this process (:func:`_fork`): asked for
    (``WHOLETRACE_WPP_START=fork``), on Linux, with no thread but this one started through
    ``_thread``/``threading`` (a lock another thread holds would stay held in the child).
    ``record`` starts the builder before the program runs, so no handler of the program's
    ``os.register_at_fork`` can be registered yet."""
    return (os.environ.get(START_ENV) == "fork" and sys.platform == "linux" and hasattr(os, "fork")
            and _thread._count() == 0)


def _fork(dups: list[tuple[int, int]], env: dict[str, str], argv: list[str]) -> int:
    """Fork the builder: the child starts a session and forks the builder, then exits (the pid
    returned; :meth:`BuilderProcess.reap` waits for it, as for the shell).  The builder gets ``dups``
    (source, target descriptor: its pipes, stderr file, progress memfd) and closes every other
    descriptor (inherited or close-on-exec alike: there is no exec to close them), its signals as
    the exec'd builder's (``_be_builder``), no tracer or profiler, ``env`` as its environment,
    the collector's objects so far frozen (never scanned, so never copied), and runs
    ``wpp.startup.run`` with ``argv`` (the builder's arguments, then its ``sys.path``)."""
    pid = os.fork()
    if pid:
        return pid
    code = 70   # EX_SOFTWARE: anything unexpected before the builder's own main
    redirected: list[bool] = []
    try:
        os.setsid()
        if os.fork():
            code = 0
        else:
            code = _be_builder(dups, env, argv, redirected)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - the recorder reads no result then, and says so
        if redirected:     # descriptor 2 is the builder's stderr file, never the program's
            try:
                import traceback

                traceback.print_exc()
            except BaseException:  # noqa: BLE001
                pass
    finally:
        os._exit(code)
    return 0   # pragma: no cover - os._exit does not return


def _be_builder(dups: list[tuple[int, int]], env: dict[str, str], argv: list[str], redirected: list[bool]) -> int:
    """The forked builder's set-up (see :func:`_fork`; ``redirected`` gets an item once its
    descriptors are its own), then ``wpp.startup.run``."""
    for src, dst in dups:
        os.dup2(src, dst)
    redirected.append(True)
    keep = sorted({dst for _, dst in dups})
    low = 0
    for fd in keep + [os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1 << 20]:
        if fd > low:
            os.closerange(low, fd)
        low = fd + 1
    # signals as the exec'd builder has them: what this process catches back to the default (an exec
    # does that), what it ignores still ignored (an exec keeps that); SIGINT and SIGQUIT ignored (a
    # background job of ``sh -c`` has them so, and the interpreter then leaves SIGINT alone), SIGPIPE
    # and SIGXFSZ ignored (the interpreter's start-up does that)
    for n in range(1, _signal.NSIG):
        try:
            if callable(_signal.getsignal(n)):
                _signal.signal(n, _signal.SIG_DFL)
        except (OSError, ValueError):   # SIGKILL, SIGSTOP, numbers without a signal
            pass
    for n in (_signal.SIGINT, _signal.SIGQUIT, _signal.SIGPIPE, _signal.SIGXFSZ):
        _signal.signal(n, _signal.SIG_IGN)
    sys.settrace(None)
    sys.setprofile(None)
    os.environ.clear()
    os.environ.update(env)
    import gc

    gc.disable()
    gc.freeze()
    sys.argv[:] = ["-c", *argv]
    import wholetrace.wpp.startup as startup

    startup.run()
    return 0


def site_free_path(root: str) -> list[str] | None:
    """The ``sys.path`` a builder started without ``site`` (``python -S``) needs to import what
    this process can (wholetrace's ``root`` first, then this process's path, with its PYTHONPATH
    and ``.pth`` entries; ``.zip`` entries work as they are), or None when this process imports
    through anything but the path (an editable install's finder, an import hook, a custom path
    hook or loader): then the builder is started with ``site`` as before (docs/design.md, "The
    builder's start-up, wave 11").  The interpreter's finders and path hooks are recognised by
    identity (``importlib.machinery``'s classes, from the frozen modules it re-exports: loaded at
    start-up, no import here), the two finders of ``_SITE_FINDERS`` by their module and class, the
    ``FileFinder`` hook by its code object and what it closes over."""
    import _frozen_importlib as boot
    import _frozen_importlib_external as ext
    import zipimport

    plain = (boot.BuiltinImporter, boot.FrozenImporter, ext.PathFinder)
    for f in sys.meta_path:
        if not any(f is p for p in plain) and (type(f).__module__, type(f).__qualname__) not in _SITE_FINDERS:
            return None
    if len(sys.path_hooks) != 2 or sys.path_hooks[0] is not zipimport.zipimporter:
        return None
    # a closure made by FileFinder.path_hook(*loader_details) (its code object is a constant of
    # path_hook's) over FileFinder and the standard loaders
    hook = sys.path_hooks[1]
    code, cells = getattr(hook, "__code__", None), getattr(hook, "__closure__", None) or ()
    free = dict(zip(getattr(code, "co_freevars", ()), (c.cell_contents for c in cells)))
    details = free.get("loader_details")
    if not any(code is c for c in ext.FileFinder.path_hook.__code__.co_consts) \
            or free.get("cls") is not ext.FileFinder or not isinstance(details, tuple) or any(
                loader not in (ext.ExtensionFileLoader, ext.SourceFileLoader, ext.SourcelessFileLoader)
                for loader, _ in details):
        return None
    if any(not isinstance(p, str) or "\0" in p for p in sys.path):
        return None
    return [root] + [p for p in builder_entries(sys.path, root, script=True) if p != root]


def builder_entries(entries: list[str], root: str, *, script: bool = False) -> list[str]:
    """``entries`` (this process's ``sys.path``, or PYTHONPATH's items) without those naming the
    current directory (``''`` is one) and, with ``script``, without the first entry when it names the
    directory of ``__main__``'s file (what the interpreter puts first for a script, and the runner for
    the recorded program; not under ``-P``): the builder imports wholetrace (``root``: an entry naming
    it stays, as in a checkout run from its ``src``), the standard library and site-packages, never
    the program's ``typing.py`` or ``inspect.py`` (docs/design.md, "The builder's path, wave 14").
    Directories are compared by ``os.stat`` (a name that cannot be stat'ed stays)."""
    def stat(p: str) -> os.stat_result | None:
        try:
            return os.stat(p or ".")
        except (OSError, ValueError):
            return None

    def same(a: os.stat_result | None, b: os.stat_result | None) -> bool:
        return a is not None and b is not None and (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)

    here, top, main = stat("."), stat(root), None
    if script and entries and not sys.flags.safe_path:
        f = getattr(sys.modules.get("__main__"), "__file__", None)
        main = stat(os.path.dirname(f)) if isinstance(f, str) else None
    kept = []
    for i, p in enumerate(entries):
        st = stat(p)
        if same(st, top) or not (p == "" or same(st, here) or (i == 0 and same(st, main))):
            kept.append(p)
    return kept


class Progress:
    """The recorder's side of the progress file: its memfd (at a high number, close-on-exec), read
    with ``os.pread`` once per flush.  Not an ``mmap``: the mapping keeps a ``dup`` of the
    descriptor, which takes the lowest free number, one the program's next file would have had."""

    __slots__ = ("fd", "closed")

    def __init__(self, fd: int) -> None:
        self.fd, self.closed = fd, False

    def built(self) -> int:
        """The events the builder has built (``PROGRESS_UNMAPPED`` until it has mapped the file)."""
        return int.from_bytes(os.pread(self.fd, 8, 0), "little", signed=True)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            os.close(self.fd)


def _progress_file() -> tuple[int, Progress] | None:
    """A 64-byte shared memory file (Linux ``memfd_create``) for the builder's progress: (its
    descriptor, >= ``HIGH_FD`` and close-on-exec; the recorder's :class:`Progress` on it, holding
    ``PROGRESS_UNMAPPED``), or None.  Sealed at its size (``PROGRESS_SEALS``): the builder
    recognises it by them."""
    try:
        import fcntl

        fd0 = os.memfd_create(PROGRESS_NAME, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except (AttributeError, ImportError, OSError):
        return None
    fd = -1
    try:
        fd = fcntl.fcntl(fd0, fcntl.F_DUPFD_CLOEXEC, HIGH_FD)
        os.ftruncate(fd, PROGRESS_BYTES)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, PROGRESS_SEALS)
        os.pwrite(fd, PROGRESS_UNMAPPED.to_bytes(8, "little", signed=True), 0)
        return fd, Progress(fd)
    except (AttributeError, OSError, ValueError):
        if fd >= 0:
            os.close(fd)
        return None
    finally:
        os.close(fd0)


def _anonymous_file() -> int:
    """A read-write descriptor of an unnamed file in the temporary directory (the builder's
    stderr): ``O_TMPFILE`` where the system has it, else ``tempfile``."""
    where = next((d for d in (os.environ.get(v) for v in ("TMPDIR", "TEMP", "TMP")) if d), "/tmp")
    try:
        return os.open(where, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)
    except (AttributeError, OSError):
        import tempfile

        f = tempfile.TemporaryFile(prefix="wholetrace-wpp-")
        fd = os.dup(f.fileno())
        f.close()
        return fd
