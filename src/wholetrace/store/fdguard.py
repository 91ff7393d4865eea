"""The recorder's descriptors recognised by (st_dev, st_ino) before each use: a program may close them and reuse their numbers."""

# A program can close descriptors it did not open (``os.closerange(3, 1024)`` in a daemon, a
# test harness, a guessed ``os.close(n)``); the next file it opens takes the number, and a write
# through our old number lands in the program's file.  Moving our descriptors elsewhere does not
# help (closerange reaches the soft RLIMIT_NOFILE, which the program must see unchanged), so each
# owner checks its descriptors with one ``os.fstat`` before using them: per flush or store call,
# never per event (docs/design.md, "Descriptors the program closes, wave 13").

from __future__ import annotations

import os

from wholetrace.errors import InternalError

TYPE_CHECKING = False   # typing is not imported at start-up
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any

__all__ = ["FdGuard", "GuardedFile", "Lost", "UNLOCKED", "descriptors_of", "leak", "named", "uri"]

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
    # matched by (st_dev, st_ino); None: no /proc/self/fd nor /dev/fd, then nothing can be guarded
    try:
        st = os.stat(path)
    except OSError:
        return []
    key = (st.st_dev, st.st_ino)
    for where in ("/proc/self/fd", "/dev/fd"):
        try:
            names = os.listdir(where)
        except OSError:
            continue
        found = []
        for name in names:
            try:
                fd = int(name)
                s = os.fstat(fd)
            except (OSError, ValueError):
                continue        # the listing's own descriptor, closed since
            if (s.st_dev, s.st_ino) == key:
                found.append(fd)
        return sorted(found)
    return None


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
