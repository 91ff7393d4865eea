"""The store writer's connection kept through descriptors the program closes: guard, statement log, renew."""

# docs/design.md, "Descriptors the program closes, wave 13".

from __future__ import annotations

import os

try:   # as in writer.py: ``sqlite3.dbapi2`` imports datetime (record's start-up)
    import _sqlite3 as sqlite3
except ImportError:  # pragma: no cover - a build without it
    import sqlite3  # type: ignore[no-redef]

from wholetrace.store import fdguard

TYPE_CHECKING = False   # typing is not imported at start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Renewing"]


class Renewing:
    """Mixin of RecordingWriter: its write statements (``_x``) and commits, renewed if the program took a descriptor."""

    _conn: sqlite3.Connection
    _abs: str
    #: the database's descriptor, checked before each write (None: cannot be guarded here;
    #: docs/design.md, "Descriptors the program closes, wave 13"); the journal's, found once per
    #: transaction left open between calls; the statements of the open transaction (replayed
    #: on a new connection if the program closed the descriptor); how many times that happened
    _fds: "fdguard.FdGuard | None" = None
    _journal: "fdguard.FdGuard | None" = None
    _log: "list[tuple[str, Any, bool]] | None" = None
    _renewed = 0

    def _watch(self) -> None:
        """Guard the database's descriptor (the file's highest: ours, opened last); log each transaction."""
        fds = fdguard.descriptors_of(self._abs)
        self._fds = fdguard.FdGuard(fds[-1]) if fds else None
        self._journal = None
        self._log = []

    def _check(self) -> None:
        """Before a write: a new connection if the program closed or replaced a descriptor of ours."""
        if self._fds is None:
            return
        if self._fds.intact() and (not self._log or self._journal_intact()):
            return
        self._renew()

    def _journal_intact(self) -> bool:
        """False if the open transaction's journal descriptor was closed or replaced."""
        if self._journal is not None:
            return self._journal.intact()
        fds = fdguard.descriptors_of(self._abs + "-journal")
        if fds is None:
            return True
        if not fds:     # no journal file (nothing written yet) or it exists and we lost its descriptor
            return not os.path.lexists(self._abs + "-journal")
        self._journal = fdguard.FdGuard(fds[-1])
        return True

    def _renew(self, failed: bool = False) -> None:
        """Carry on through a new connection, replaying the open transaction; the old one is leaked."""
        # Never used nor closed again: closing it would close the program's descriptor.  With a
        # transaction open (or after a statement ``failed`` on it: closed in the middle of a
        # commit) the old connection holds its locks in SQLite's per-process table for good: the
        # file goes to fdguard.UNLOCKED and the new one uses the ``unix-none`` VFS (no locks; its
        # first read rolls the old journal back as a crash's).  A replayed INSERT whose row is
        # there already (the old commit got past its commit point before failing) is skipped.
        old = self._conn
        fdguard.leak(old)
        before = set(fdguard.descriptors_of(self._abs) or ())
        if failed or old.in_transaction:
            fdguard.UNLOCKED.add(self._abs)
        self._fds = self._journal = None
        conn = sqlite3.connect(fdguard.uri(self._abs), isolation_level=None, check_same_thread=False, uri=True)
        self._conn = conn
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("PRAGMA synchronous=NORMAL")
        log, self._log = self._log, []
        for sql, params, many in log or ():
            try:
                self._x(sql, params, many, retry=False)
            except sqlite3.IntegrityError:
                pass
        fds = [fd for fd in fdguard.descriptors_of(self._abs) or () if fd not in before]
        self._fds = fdguard.FdGuard(fds[-1]) if fds else None
        self._renewed += 1

    def _x(self, sql: str, params: Any, many: bool = False, retry: bool = True) -> None:
        """Run one write statement in the open transaction (begun if none), logged for :meth:`_renew`."""
        try:
            self._begin()
            if many:
                self._conn.executemany(sql, params)
            else:
                self._conn.execute(sql, params)
        except sqlite3.Error:
            if not retry or not self._lost():
                raise
            self._renew(failed=True)    # closed by another thread of the program meanwhile: once
            self._x(sql, params, many, retry=False)
            return
        if self._log is not None:
            self._log.append((sql, params, many))

    def _lost(self) -> bool:
        """True if the program closed or replaced a descriptor the connection uses."""
        return self._fds is not None and not (self._fds.intact() and self._journal_intact())

    def _commit(self) -> None:
        """COMMIT, once more on a new connection if the program closed ours meanwhile."""
        try:
            self._conn.execute("COMMIT")
        except sqlite3.Error:
            if not self._lost():
                raise
            self._renew(failed=True)
            self._conn.execute("COMMIT")
        if self._log is not None:
            self._log.clear()
            self._journal = None

    def _begin(self) -> None:
        """BEGIN unless a transaction is open."""
        if not self._conn.in_transaction:
            self._conn.execute("BEGIN")
