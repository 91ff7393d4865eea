"""Full mode's split server: a process forked before the program starts that splits chunks with numpy, so the program's process never imports it.

The recorder forks it while it is still single-threaded (a double fork: the server is no child
of the program's process, which may wait for every child; in a session of its own, so a
terminal's signals miss it; its standard descriptors on /dev/null and every other descriptor
closed but its two pipes).  It inherits wholetrace's modules and imports numpy itself.  The
flusher thread sends one request (``marshal``: loaded in every interpreter) and blocks in
``os.read`` (the GIL released) while the server works on the other core.  The pipes are at
numbers >= ``HIGH_FD``, close-on-exec; a pipe the program closed or replaced (its inode
changed), a dead server, or a fork child of the program (the pipes are its parent's) make the
flusher split in-process instead (``runtime.splitcore``, as before this server).  The server
ends at EOF, when every copy of the request pipe's write end is closed (docs/design.md, "Full
mode's split server, wave 18").
"""

from __future__ import annotations

import _signal   # the C module: signal.py builds enums
import marshal
import os

from wholetrace.store.cmods import ArrayType as array

TYPE_CHECKING = False
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any

#: ``WHOLETRACE_SPLIT_SERVER=0``: split in the flusher thread (numpy in the program's process).
ENV = "WHOLETRACE_SPLIT_SERVER"
_HEAD = 8
_BUFFERS = (bytes, bytearray, memoryview, array)


class SplitServer:
    """The recorder's end of the server: ``call`` sends a request and returns its reply, or None
    when the server cannot be used (then the caller splits in-process)."""

    def __init__(self, pid: int, req: int, rep: int) -> None:
        self.owner = pid          # the process whose pipes these are (not a fork child of it)
        self.req, self.rep = req, rep
        self.ids = (_ident(req), _ident(rep))
        self.broken = False

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
        for fd in (self.req, self.rep):
            try:
                os.close(fd)
            except OSError:
                pass

    def forked(self) -> None:
        """In a fork child, before its program code runs: close the inherited copies of the pipes
        (unless the program already put other files at those numbers), so that the server ends with
        the recording, not with the last fork child (review18a MED 3)."""
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
    widen_pipe(w1, w2)
    try:
        pid = _fork()
    except OSError:
        for fd in (r1, w1, r2, w2):
            os.close(fd)
        return None
    if pid == 0:                   # the intermediate child: the server's parent, gone at once
        try:
            os.setsid()
            spid = _fork()
            if spid == 0:
                _serve(r1, w2)
            else:                  # the server's pid, for the adoption check below
                os.write(w2, spid.to_bytes(_HEAD, "little"))
        finally:
            os._exit(0)
    os.close(r1)
    os.close(w2)
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:      # pragma: no cover - reaped elsewhere
        pass
    server = SplitServer(os.getpid(), w1, r2)
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


def _serve(rfd: int, wfd: int) -> None:
    """The server's loop: requests until EOF (never returns normally: the caller ``os._exit``s)."""
    try:
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        keep = sorted({rfd, wfd})
        os.closerange(3, keep[0])
        os.closerange(keep[0] + 1, keep[1])
        os.closerange(keep[1] + 1, 1 << 20)
        import gc
        gc.disable()
        from wholetrace.instrument import misspath
        if misspath.program_shadows_stdlib():   # an enum.py beside the script (review15c)
            misspath.import_past_program("numpy")
        from wholetrace.runtime import splitcore
        while True:
            try:
                request = _receive(rfd)
            except EOFError:
                return
            _send(wfd, splitcore.handle(request))
    except BaseException:   # noqa: BLE001 - nothing of the server may reach the program's streams
        return


def _ident(fd: int) -> tuple[int, int] | None:
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _send(fd: int, msg: tuple[Any, ...]) -> None:
    """One message: its small items marshalled in a head, its buffers (bytes, bytearray, arrays:
    ``_BUFFERS``) written after it as they are, with no copy on this side."""
    bufs = [j for j, x in enumerate(msg) if isinstance(x, _BUFFERS)]
    views = [memoryview(msg[j]).cast("B") for j in bufs]
    head = marshal.dumps((tuple(None if j in bufs else x for j, x in enumerate(msg)), bufs, [v.nbytes for v in views]))
    for part in (memoryview(len(head).to_bytes(_HEAD, "little") + head), *views):
        while part:
            part = part[os.write(fd, part):]


def _receive(fd: int) -> tuple[Any, ...]:
    """A message of :func:`_send`: its buffers as bytearrays."""
    size = int.from_bytes(_read(fd, _HEAD), "little")
    items, bufs, sizes = marshal.loads(_read(fd, size))
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
