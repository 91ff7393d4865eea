"""Full mode's split server: a process forked before the program starts that splits chunks with numpy, so the program's process never imports it.

The recorder forks it while it is still single-threaded (a double fork: the server is no child
of the program's process, which may wait for every child; in a session of its own, so a
terminal's signals miss it; its standard descriptors on /dev/null and every other descriptor
closed but its two pipes).  It inherits wholetrace's modules and imports numpy itself.  The
flusher thread sends one request (``splitwire``; marshal's are audit events) and blocks in
``os.read`` (the GIL released) while the server works on the other core.  The pipes are at
numbers >= ``HIGH_FD``, close-on-exec; a pipe the program closed or replaced (its inode
changed) or a dead server make the flusher split in-process instead (``runtime.splitcore``, as
before this server).  A fork child of the program cannot share its parent's pipes: its flusher
asks the server, through a third pipe (one small write: atomic between processes), for a
*sibling*, a fork of the server (numpy already imported) that it joins through two FIFOs
(``ask``).  The server ends at EOF, when every copy of the request pipe's write end is
closed; a sibling when its child's ends are (docs/design.md, "Full mode's split server, wave 18",
"Full mode in fork children, wave 22").
"""

from __future__ import annotations

import _signal   # the C module: signal.py builds enums
import os
import time

from wholetrace.runtime import splitwire
from wholetrace.store.cmods import ArrayType as array

TYPE_CHECKING = False
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any

#: ``WHOLETRACE_SPLIT_SERVER=0``: split in the flusher thread (numpy in the program's process).
ENV = "WHOLETRACE_SPLIT_SERVER"
_HEAD = 8
#: How long a fork child waits for its sibling server to open its FIFOs (then: in-process).
SIBLING_SECONDS = 5.0
#: The FIFOs' names in the parts directory (a child killed while asking leaves them).
SIBLING_PREFIX = ".split-"
_BUFFERS = (bytes, bytearray, memoryview, array)


class SplitServer:
    """The recorder's end of the server: ``call`` sends a request and returns its reply, or None
    when the server cannot be used (then the caller splits in-process)."""

    def __init__(self, pid: int, req: int, rep: int, ctl: int | None = None) -> None:
        self.owner = pid          # the process whose pipes these are (not a fork child of it)
        self.req, self.rep = req, rep
        self.ids = (_ident(req), _ident(rep))
        self.broken = False
        #: the write end of the recording's server's sibling requests (shared with fork children)
        self.ctl, self.ctl_id = ctl, (None if ctl is None else _ident(ctl))

    def usable(self) -> bool:
        """The server is this process's and both pipes are still the ones made for it."""
        if self.broken or os.getpid() != self.owner:
            return False
        if (_ident(self.req), _ident(self.rep)) != self.ids:   # the program closed or reused them
            self.broken = True
            return False
        return True

    def call(self, request: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """The reply to ``request``, or None (no usable server: nothing was consumed)."""
        if not self.usable():
            return None
        # SIGPIPE blocked in this thread while it writes: a dead server must not kill a program
        # that set SIGPIPE to SIG_DFL (the write fails with EPIPE; the pending signal is taken)
        old = _signal.pthread_sigmask(_signal.SIG_BLOCK, [_signal.SIGPIPE])
        try:
            _send(self.req, request)
            return _receive(self.rep)
        except (OSError, EOFError, ValueError) as exc:
            self.broken = True
            if isinstance(exc, BrokenPipeError) and _signal.SIGPIPE not in old:
                _signal.sigtimedwait([_signal.SIGPIPE], 0)
            return None
        except BaseException:   # a KeyboardInterrupt, a signal handler's exception: mid-message,
            self.close()        # the pipes are out of step; in-process from now on (the server: EOF)
            raise
        finally:
            _signal.pthread_sigmask(_signal.SIG_SETMASK, old)

    def close(self) -> None:
        """Close this process's ends (the server exits at EOF)."""
        if os.getpid() != self.owner or self.broken:
            return
        self.broken = True
        for fd, ident in zip((self.req, self.rep), self.ids):
            if _ident(fd) == ident:   # not a file the program put at that number since
                try:
                    os.close(fd)
                except OSError:   # pragma: no cover
                    pass
        if self.ctl is not None and _ident(self.ctl) == self.ctl_id:
            os.close(self.ctl)

    def forked(self) -> None:
        """In a fork child, before its program code runs: close the inherited copies of the pipes
        (unless the program already put other files at those numbers), so that the server ends with
        the recording, not with the last fork child (review18a MED 3).  The sibling pipe (``ctl``)
        stays: the child's flusher asks for a server of its own through it (``ask``)."""
        if os.getpid() == self.owner:
            return
        ids, self.broken = self.ids, True
        for fd, ident in zip((self.req, self.rep), ids):
            if _ident(fd) == ident:
                try:
                    os.close(fd)
                except OSError:   # pragma: no cover
                    pass


#: Set by the ``record`` command (and a recorded subprocess's take-over) before the recorder is
#: made: only then does full mode start a server.  A recorder made in a running host (the pytest
#: plugin, library use) would run the host's at-fork hooks in the server's forks, and its process
#: may be a subreaper (review18a MED 2).
WANTED = False
_LIVE: list[SplitServer] = []       # the server of this process, for the at-fork hook


def start() -> SplitServer | None:
    """Fork the server (only while this process runs a single thread), or None."""
    import _thread
    if os.environ.get(ENV, "1") == "0" or not hasattr(os, "fork") or _thread._count() != 0:
        return None
    from wholetrace.store.fdguard import high_pipe, widen_pipe
    r1, w1 = high_pipe()           # requests
    r2, w2 = high_pipe()           # replies
    r3, w3 = high_pipe()           # fork children's requests for a sibling server
    widen_pipe(w1, w2)
    try:
        pid = _fork()
    except OSError:
        for fd in (r1, w1, r2, w2, r3, w3):
            os.close(fd)
        return None
    if pid == 0:                   # the intermediate child: the server's parent, gone at once
        try:
            os.setsid()
            spid = _fork()
            if spid == 0:
                _serve(r1, w2, r3)
            else:                  # the server's pid, for the adoption check below
                os.write(w2, spid.to_bytes(_HEAD, "little"))
        finally:
            os._exit(0)
    os.close(r1)
    os.close(w2)
    os.close(r3)
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:      # pragma: no cover - reaped elsewhere
        pass
    server = SplitServer(os.getpid(), w1, r2, w3)
    try:
        spid = int.from_bytes(_read(r2, _HEAD), "little")
    except (OSError, EOFError):    # the second fork failed
        server.close()
        return None
    if _reaped_if_adopted(spid):
        server.close()
        return None
    if not _LIVE:
        os.register_at_fork(after_in_child=_forked)
    _LIVE[:] = [server]
    return server


def _reaped_if_adopted(spid: int) -> bool:
    """Whether this process adopted the orphaned server (it is PID 1 of its namespace, a container's
    or ``unshare --pid``'s, or a child subreaper): the program would see it with ``os.waitpid(-1)``
    and hang in ``os.wait()`` (review18a HIGH 1).  Then the server is killed and reaped here, before
    the program's first line, and the flusher splits in-process.  The intermediate child has been
    reaped, so the kernel has re-parented the server already."""
    try:
        got, _status = os.waitpid(spid, os.WNOHANG)
    except ChildProcessError:      # no child of this process: the program cannot see it
        return False
    if got == 0:
        os.kill(spid, _signal.SIGKILL)
        os.waitpid(spid, 0)
    return True


def _forked() -> None:
    """``os.register_at_fork(after_in_child=...)``: registered after the server's fork, so it runs in
    the program's fork children (``multiprocessing``'s fork workers too), ahead of ``runtime.children``'s
    hook (registered later) and before the child's program code."""
    for server in _LIVE:
        server.forked()


def _fork() -> int:
    """``os.fork`` without the at-fork hooks' effects on a recording: the hooks act only while a
    recording's ``runtime.runner.LIVE`` has children, which the recorder being made has not yet."""
    return os.fork()


def _serve(rfd: int, wfd: int, cfd: int) -> None:
    """The server's loop: requests until EOF, and fork children's requests for a sibling (never
    returns normally: the caller ``os._exit``s)."""
    try:
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        last = 2
        for keep in sorted({rfd, wfd, cfd}):
            os.closerange(last + 1, keep)
            last = keep
        os.closerange(last + 1, 1 << 20)
        import gc
        gc.disable()
        from wholetrace.instrument import misspath
        if misspath.program_shadows_stdlib():   # an enum.py beside the script (review15c)
            misspath.import_past_program("numpy")
            misspath.import_past_program("select")
        import select

        from wholetrace.runtime import splitcore
        watch = [rfd, cfd]
        while True:
            ready = select.select(watch, [], [])[0]
            if cfd in ready:
                try:
                    _sibling(splitwire.loads(_read(cfd, int.from_bytes(_read(cfd, _HEAD), "little"))),
                             [rfd, wfd, *watch[1:]])
                except EOFError:       # no process of the recording can ask any more
                    watch = [rfd]
                continue
            try:
                request = _receive(rfd)
            except EOFError:
                break
            _send(wfd, splitcore.handle(request))
    except BaseException:   # noqa: BLE001 - nothing of the server may reach the program's streams
        pass
    # the recording has ended (EOF): its siblings end with it, those serving a fork child that
    # outlives it too (that child splits in-process from its next chunk) and those still waiting
    # for a child that ended before joining.  The session made at ``start`` holds this server and
    # its siblings only, so its group's SIGKILL ends them all, this server too.
    os.killpg(os.getpgrp(), _signal.SIGKILL)


def _sibling(fifos: tuple[str, str], inherited: list[int]) -> None:
    """In the server: fork a sibling (twice: no child of the server stays) that serves a fork
    child of the program through its FIFOs (``fifos``: requests, replies), until EOF.  A child
    that does not open its end in time leaves the sibling to SIGALRM (its default: the end)."""
    pid = os.fork()
    if pid == 0:
        try:
            if os.fork() == 0:
                from wholetrace.runtime import splitcore
                for fd in inherited:
                    os.close(fd)
                _signal.alarm(int(SIBLING_SECONDS) + 5)
                # the child opened its read end before asking (ENXIO: it has closed it, gone)
                wfd = os.open(fifos[1], os.O_WRONLY | os.O_NONBLOCK)
                os.set_blocking(wfd, True)
                rfd = os.open(fifos[0], os.O_RDONLY)    # until the child opens its write end
                _signal.alarm(0)
                while True:
                    try:
                        request = _receive(rfd)
                    except EOFError:
                        break
                    _send(wfd, splitcore.handle(request))
        except BaseException:   # noqa: BLE001
            pass
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


class Asked:
    """A fork child's request for a sibling server, not joined yet (``ask``)."""

    def __init__(self, paths: tuple[str, str], rep: int, ctl: int, ctl_id: tuple[int, int] | None = None) -> None:
        self.paths, self.rep, self.ctl, self.ctl_id = paths, rep, ctl, ctl_id
        self.rep_id = _ident(rep) if rep >= 0 else None   # a program may close it (a daemon's closerange)
        self.deadline = time.monotonic() + SIBLING_SECONDS

    def join(self) -> SplitServer | None | bool:
        """The child's own server once the sibling has opened its ends; False while it has not (the
        recording's server may still be importing numpy, or busy); None when it did not in
        ``SIBLING_SECONDS``, failed, or the program closed or replaced the reply end (then the
        child splits in-process; a descriptor no longer ours is never used nor closed)."""
        if _ident(self.rep) != self.rep_id:
            self.drop(keep=True)
            return None
        try:   # fails (ENXIO) until the sibling opens its read end
            req = os.open(self.paths[0], os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:   # (FileNotFoundError: the recording's end swept the FIFOs)
            if time.monotonic() <= self.deadline and not isinstance(exc, FileNotFoundError):
                return False
            self.drop()
            return None
        self.drop(keep=True)
        from wholetrace.store.fdguard import FcntlUnseen, high
        try:
            with FcntlUnseen():
                req = high(req)
            for fd in (req, self.rep):
                os.set_blocking(fd, True)
            own = SplitServer(os.getpid(), req, self.rep, self.ctl)
        except OSError:   # a program thread closed an end meanwhile (``req`` is left open: its
            return None   # number may be the program's by now; the sibling ends with the server)
        own.ids, own.ctl_id = (own.ids[0], self.rep_id), self.ctl_id   # as asked: not what is there now
        _LIVE[:] = [own]   # its fork children close these
        return own

    def drop(self, keep: bool = False) -> None:
        """Unlink the FIFOs (the open ends stay); close the reply end unless ``keep`` or it is no
        longer ours."""
        for path in self.paths:
            try:
                os.unlink(path)
            except OSError:
                pass
        if not keep and self.rep >= 0 and _ident(self.rep) == self.rep_id:
            try:
                os.close(self.rep)
            except OSError:   # pragma: no cover - closed by a program thread meanwhile
                pass


def ask(server: SplitServer, where: str) -> Asked | None:
    """In a fork child of the program (its flusher thread, before its first wait): ask the
    recording's server for a sibling, a fork of it (numpy imported there: nothing to import in
    the child), joined through two FIFOs made in ``where`` (the parts directory) and unlinked
    once open (``Asked.join``); None where the recording's server cannot be asked (none, its
    pipe closed by the program)."""
    ctl = server.ctl
    if ctl is None or _ident(ctl) != server.ctl_id:
        return None
    from wholetrace.store.fdguard import FcntlUnseen, high

    base = os.path.join(where, f"{SIBLING_PREFIX}{os.getpid()}-{os.urandom(4).hex()}")
    paths = (base + ".req", base + ".rep")
    try:
        os.makedirs(where, exist_ok=True)
        for path in paths:
            os.mkfifo(path, 0o600)
        rep = os.open(paths[1], os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with FcntlUnseen():                    # held while it waits: not at a number the program's files take
            rep = high(rep)
    except OSError:
        Asked(paths, -1, ctl).drop(keep=True)
        return None
    asked = Asked(paths, rep, ctl, server.ctl_id)
    msg = splitwire.dumps(paths)
    old = _signal.pthread_sigmask(_signal.SIG_BLOCK, [_signal.SIGPIPE])   # a dead server: as in ``call``
    try:
        os.write(ctl, len(msg).to_bytes(_HEAD, "little") + msg)   # < PIPE_BUF: one atomic write
    except OSError as exc:
        if isinstance(exc, BrokenPipeError) and _signal.SIGPIPE not in old:
            _signal.sigtimedwait([_signal.SIGPIPE], 0)
        asked.drop()
        return None
    finally:
        _signal.pthread_sigmask(_signal.SIG_SETMASK, old)
    return asked


def sweep(parts: str) -> None:
    """At the recording's end: remove the FIFOs of fork children that ended (or are still waiting)
    before their sibling opened them (a waiting child then splits in-process)."""
    if not os.path.isdir(parts):   # no fork child (``os.listdir`` is an audit event; ``stat`` is not)
        return
    try:
        names = os.listdir(parts)
    except OSError:
        return
    for name in names:
        if name.startswith(SIBLING_PREFIX):
            try:
                os.unlink(os.path.join(parts, name))
            except OSError:
                pass


def _ident(fd: int) -> tuple[int, int] | None:
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _send(fd: int, msg: tuple[Any, ...]) -> None:
    """One message: its small items encoded in a head (``splitwire``), its buffers (bytes, bytearray,
    arrays: ``_BUFFERS``) written after it as they are, with no copy on this side."""
    bufs = [j for j, x in enumerate(msg) if isinstance(x, _BUFFERS)]
    views = [memoryview(msg[j]).cast("B") for j in bufs]
    head = splitwire.dumps((tuple(None if j in bufs else x for j, x in enumerate(msg)), bufs, [v.nbytes for v in views]))
    for part in (memoryview(len(head).to_bytes(_HEAD, "little") + head), *views):
        while part:
            part = part[os.write(fd, part):]


def _receive(fd: int) -> tuple[Any, ...]:
    """A message of :func:`_send`: its buffers as bytearrays."""
    size = int.from_bytes(_read(fd, _HEAD), "little")
    items, bufs, sizes = splitwire.loads(_read(fd, size))
    msg = list(items)
    for j, n in zip(bufs, sizes):
        msg[j] = _read(fd, n)
    return tuple(msg)


def _read(fd: int, n: int) -> bytearray:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = os.readv(fd, [view[got:]])
        if k == 0:
            raise EOFError("split server pipe closed")
        got += k
    return buf
