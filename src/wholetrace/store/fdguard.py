"""The recorder's descriptors recognised by (st_dev, st_ino) before each use: a program may close them and reuse their numbers."""

# A program can close descriptors it did not open (``os.closerange(3, 1024)`` in a daemon, a
# test harness, a guessed ``os.close(n)``); the next file it opens takes the number, and a write
# through our old number lands in the program's file.  Moving our descriptors elsewhere does not
# help (closerange reaches the soft RLIMIT_NOFILE, which the program must see unchanged), so each
# owner checks its descriptors with one ``os.fstat`` before using them: per flush or store call,
# never per event (docs/design.md, "Descriptors the program closes, wave 13").

from __future__ import annotations

import os
import sys
from itertools import repeat as _repeat

from wholetrace.errors import InternalError

TYPE_CHECKING = False   # typing is not imported at start-up
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any

__all__ = ["FcntlUnseen", "FdGuard", "GuardedFile", "HIGH_FD", "Lost", "UNLOCKED", "descriptors_of", "descriptors_of_each", "high",
           "high_pipe", "leak", "named", "uri", "LowTaken"]

#: the lowest number of the recorder's own long-lived descriptors (the store's database and journal,
#: the WPP builder's pipes and files), all close-on-exec: the program's files take the low numbers
#: they take in a plain run (docs/design.md, "wave 15, builder start-up" and "The program cannot
#: tell, wave 16": descriptors)
HIGH_FD = 256

#: what :func:`leak` keeps alive (and the interpreter's shutdown never reaches: see there)
_KEEP: list[Any] = []

#: real paths of databases whose leaked connection keeps its locks in SQLite's per-process lock
#: table (a renew with a transaction open): every later connection to them in this process
#: goes through :func:`uri`'s ``unix-none`` VFS, a plain one would get "database is locked"
UNLOCKED: set[str] = set()


def uri(path: str, mode: str = "rw") -> str:
    """SQLite URI opening ``path`` (``mode`` ro/rw), with the lock-free VFS if it is in :data:`UNLOCKED`."""
    from pathlib import Path     # not at start-up: only reconnects and readers build URIs

    real = os.path.realpath(path)
    return f"{Path(real).as_uri()}?mode={mode}" + ("&vfs=unix-none" if real in UNLOCKED else "")


class Lost(InternalError):
    """A descriptor of the recorder's was closed (or replaced) by the program."""


class FdGuard:
    """Descriptor ``fd`` and the identity (st_dev, st_ino) of the file it had when the guard was made."""

    __slots__ = ("fd", "key")

    def __init__(self, fd: int) -> None:
        st = os.fstat(fd)
        self.fd = fd
        self.key = (st.st_dev, st.st_ino)

    def intact(self) -> bool:
        """True while ``fd`` still refers to the file it referred to (one ``fstat``)."""
        try:
            st = os.fstat(self.fd)
        except (OSError, ValueError):
            return False
        return (st.st_dev, st.st_ino) == self.key

    def __repr__(self) -> str:
        return f"FdGuard({self.fd}, dev={self.key[0]}, ino={self.key[1]})"


def descriptors_of(path: str) -> list[int] | None:
    """This process's descriptors on ``path``'s file, increasing; [] if it does not exist; None if unlistable."""
    found = descriptors_of_each((path,))
    return None if found is None else found[0]


def descriptors_of_each(paths: tuple[str, ...]) -> list[list[int]] | None:
    """:func:`descriptors_of` for each of ``paths``, from one listing; None if unlistable."""
    # matched by (st_dev, st_ino); None: no /proc/self/fd nor /dev/fd, then nothing can be guarded
    keys: dict[tuple[int, int], list[int]] = {}
    out: list[list[int]] = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            out.append([])
            continue
        out.append(keys.setdefault((st.st_dev, st.st_ino), []))
    if not keys:
        return out
    return out if _collect(keys) else None


def _collect(keys: dict[tuple[int, int], list[int]]) -> bool:
    """Append each of this process's descriptors on the file (st_dev, st_ino) to ``keys[that]``,
    increasing; False if the descriptors cannot be listed (no /proc/self/fd nor /dev/fd)."""
    for where in ("/proc/self/fd", "/dev/fd"):
        try:
            names = os.listdir(where)
        except OSError:
            continue
        for name in names:
            try:
                fd = int(name)
                s = os.fstat(fd)
            except (OSError, ValueError):
                continue        # the listing's own descriptor, closed since
            found = keys.get((s.st_dev, s.st_ino))
            if found is not None:
                found.append(fd)
        for found in keys.values():
            found.sort()
        return True
    return False


def high(fd: int) -> int:
    """``fd`` moved to the lowest free number >= ``HIGH_FD``, close-on-exec (``fd`` closed), or
    ``fd`` itself where that fails (a ``RLIMIT_NOFILE`` below ``HIGH_FD``: the low number, as before)."""
    try:
        import fcntl

        moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, HIGH_FD)
    except Exception:   # noqa: BLE001 - no fcntl, or a program's module of that name in sys.modules
        return fd
    os.close(fd)
    return moved


class FcntlUnseen:
    """While entered, the recorder may import ``fcntl`` (:func:`high`, the WPP builder's spawn); on
    leaving, ``fcntl`` is dropped from ``sys.modules`` again if the program had not imported it:
    as in a plain run, a program's own ``fcntl.py`` is then the one its import finds."""

    __slots__ = ("had",)

    def __enter__(self) -> FcntlUnseen:
        self.had = "fcntl" in sys.modules
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.had:
            sys.modules.pop("fcntl", None)


def high_pipe() -> tuple[int, int]:
    """``os.pipe()`` with both ends at numbers >= ``HIGH_FD`` (:func:`high`): the program's next
    files take the numbers they take in a plain run; ``fcntl`` is left out of ``sys.modules`` if
    the program has not imported it (:class:`FcntlUnseen`)."""
    with FcntlUnseen():
        r, w = os.pipe()
        return high(r), high(w)


def widen_pipe(*fds: int) -> None:
    """Make pipes 1 MiB (Linux; 64 KiB by default): the WPP builder's and the split server's
    chunks are megabytes, and each pipe-full is a switch between the two processes."""
    with FcntlUnseen():
        try:
            import fcntl
            for fd in fds:
                fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
        except (ImportError, OSError):
            pass        # elsewhere, or above /proc/sys/fs/pipe-max-size: the default pipe works


class LowTaken:
    """While entered, every free descriptor number below ``HIGH_FD`` is taken (pipes, close-on-exec),
    so what opens files meanwhile gets numbers >= ``HIGH_FD``: SQLite, which opens the store's
    database and journal itself (no way to hand it a number).  Nothing is taken where the soft
    ``RLIMIT_NOFILE`` leaves too little room above ``HIGH_FD``: the low numbers then, as before.
    Only for what runs before the program (``RecordingWriter(high=True)``): a thread of the
    program opening a file meanwhile would get a high number, one closing a range would close
    held numbers that the program's next files then take, and ``__exit__`` would close those."""

    # One pipe, then copies of its read end made by ``map`` (a C loop: each call's cost is the
    # release and retaking of the GIL, ~0.2 M instructions for all; a Python loop of pipes took
    # ~0.35 M).  Copies past the holes (the process had descriptors below HIGH_FD) land at
    # >= HIGH_FD: closed at once, so what opens next gets the lowest free number >= HIGH_FD.
    __slots__ = ("held", "take")

    def __init__(self, take: bool = True) -> None:
        """``take``: False takes nothing (the writer's ``high=False``)."""
        self.take = take

    def __enter__(self) -> LowTaken:
        self.held: list[int] = []
        if not self.take:
            return self
        try:
            if os.sysconf("SC_OPEN_MAX") < HIGH_FD + 16:
                return self
            r, w = os.pipe()
        except (OSError, ValueError):
            return self
        try:
            held = self.held = [r, w, *map(os.dup, _repeat(r, HIGH_FD - 5))]
            while len(held) > 2 and held[-1] >= HIGH_FD:    # copies past the holes (increasing): not needed
                os.close(held.pop())
        except OSError:             # out of descriptors (the soft limit): every copy made given back at
            os.close(w)             # once, found by its inode (w first: the listing needs a free number),
            self.held = _copies_of(r)   # so what runs inside gets the low numbers, as below the limit
            self.__exit__()
        return self

    def __exit__(self, *exc: object) -> None:
        held, self.held = sorted(self.held), []
        if not held:
            return
        if held[-1] - held[0] + 1 == len(held):
            os.closerange(held[0], held[-1] + 1)    # one run of consecutive numbers (the usual case)
            return
        start = end = held[0]
        for fd in held:             # a descriptor of the process's own in between: one closerange per run
            if fd > end + 1:
                os.closerange(start, end + 1)
                start = fd
            end = fd
        os.closerange(start, end + 1)


def _copies_of(fd: int) -> list[int]:
    """``fd`` and this process's other descriptors on its file (matched by (st_dev, st_ino))."""
    st = os.fstat(fd)
    found: list[int] = []
    _collect({(st.st_dev, st.st_ino): found})
    return found or [fd]


def named(prefix: str) -> FdGuard | None:
    """A guard of the one descriptor whose /proc/self/fd link starts with ``prefix`` (a memfd), else None."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return None
    found = []
    for name in names:
        try:
            if os.readlink(f"/proc/self/fd/{name}").startswith(prefix):
                found.append(FdGuard(int(name)))
        except (OSError, ValueError):
            continue
    return found[0] if len(found) == 1 else None


def leak(obj: object) -> None:
    """Keep ``obj`` alive for good, never finalized: it owns a descriptor number the program now uses."""
    # The interpreter's shutdown clears module globals: a reference there is not enough, hence
    # one reference that nothing gives back.
    _KEEP.append(obj)
    from wholetrace.capi import keep_alive     # _ctypes: no ``ctypes`` in the program's sys.modules

    keep_alive(obj)


class GuardedFile:
    """A file of the recorder's checked before each use: once lost, ``read``/``seek`` raise :class:`Lost`, ``close`` leaks."""

    __slots__ = ("file", "guard", "what")

    def __init__(self, file: Any, what: str) -> None:
        self.file = file
        self.guard = FdGuard(file.fileno())
        self.what = what

    def lost(self) -> Lost:
        """The error saying this descriptor is gone."""
        return Lost(f"the program closed the recorder's descriptor {self.guard.fd} ({self.what})")

    def read(self, *n: int) -> bytes:
        """The file's ``read``, if its descriptor is still ours."""
        if not self.guard.intact():
            raise self.lost()
        data: bytes = self.file.read(*n)
        return data

    def seek(self, *where: int) -> int:
        """The file's ``seek``, if its descriptor is still ours."""
        if not self.guard.intact():
            raise self.lost()
        pos: int = self.file.seek(*where)
        return pos

    def close(self) -> None:
        """Close the file, or leak it if the program took its descriptor."""
        if self.guard.intact():
            self.file.close()
        else:
            leak(self.file)
