"""The store writer's connection kept through descriptors the program closes: guard, statement log, renew."""

# docs/design.md, "Descriptors the program closes, wave 13".

from __future__ import annotations


from wholetrace.store.cmods import sqlite3   # ``_sqlite3`` without functools (store/cmods.py)

from wholetrace.store import fdguard

TYPE_CHECKING = False   # typing is not imported at start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = ["HOLD", "Renewing", "pragmas"]


#: the read statement each recording connection keeps stepped (never finished) from its first
#: transaction to its close: its shared lock keeps the pager from unlocking between transactions,
#: so the journal's descriptor stays open (a journal opened per transaction takes the lowest free
#: number in the middle of the program's run); other connections still read (docs/design.md,
#: "The program cannot tell, wave 16": descriptors)
HOLD = "SELECT count(*) FROM sqlite_master /* wholetrace: keep the journal open */"

#: new connections :meth:`Renewing._renew` makes at most, one after another
RENEW_ATTEMPTS = 3


def pragmas(conn: sqlite3.Connection) -> None:
    """The recording connection's settings: a rollback journal kept (``PERSIST``: its header
    zeroed at each commit, the file removed by the writer's close; with :data:`HOLD`'s lock its
    descriptor stays open), ``synchronous=NORMAL``; temporary files (statement journals, sorts)
    in memory: a file opened mid-run would take the program's next low number."""
    conn.execute("PRAGMA journal_mode=PERSIST")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA temp_store=MEMORY")


class Renewing:
    """Mixin of RecordingWriter: its write statements (``_x``) and commits, renewed if the program took a descriptor."""

    _conn: sqlite3.Connection
    _abs: str
    #: the database's and the journal's descriptors, checked before each write (None: cannot be
    #: guarded here; docs/design.md, "Descriptors the program closes, wave 13"): both stay open from
    #: the first write to the close (:data:`HOLD`'s shared lock, wave 16); the statements of the open
    #: transaction (replayed on a new connection if the program closed a descriptor); how many
    #: times that happened
    _fds: "fdguard.FdGuard | None" = None
    _journal: "fdguard.FdGuard | None" = None
    _log: "list[tuple[str, Any, bool]] | None" = None
    _renewed = 0
    #: the cursor of :data:`HOLD` on ``_conn`` (None: not yet, or closed)
    _hold: "sqlite3.Cursor | None" = None
    #: True once every new connection failed: the old one is leaked (its descriptors may be the
    #: program's now), so every later write, commit or close raises StoreError
    _broken = False

    def _watch(self, before: "set[int] | frozenset[int]" = frozenset()) -> None:
        """Guard the database's and the journal's descriptors (each file's highest not in
        ``before``: ours, opened last); log each transaction."""
        found = fdguard.descriptors_of_each((self._abs, self._abs + "-journal")) or ([], [])
        fds, journal = ([fd for fd in each if fd not in before] for each in found)
        self._fds = fdguard.FdGuard(fds[-1]) if fds else None
        self._journal = fdguard.FdGuard(journal[-1]) if fds and journal else None
        self._log = []

    def _check(self) -> None:
        """Before a write: a new connection if the program closed or replaced a descriptor of ours."""
        if self._broken:
            raise sqlite3.OperationalError("the recorder lost its connection (the program closed its descriptors)")
        if not self._intact():
            self._renew()

    def _renew(self, failed: bool = False) -> None:
        """Carry on through a new connection, replaying the open transaction; the old one is leaked."""
        # Never used nor closed again: closing it would close the program's descriptor.  The old
        # connection holds its locks in SQLite's per-process table for good (HOLD's shared lock,
        # and more with a transaction open): the file goes to fdguard.UNLOCKED and the new one uses
        # the ``unix-none`` VFS (no locks; its first read rolls a journal the old one left hot back
        # as a crash's).  A replayed INSERT whose row is there already (the old commit got past its
        # commit point before failing) is skipped.  The new descriptors take the lowest free
        # numbers, as before wave 16: fdguard.LowTaken is for what runs before the program (here
        # its threads run: one opening a file meanwhile would get a high number, one closing a
        # range would close the held ones and the program's next files would take them).  The
        # journal is opened at once (a write of the schema version) and guarded with the database;
        # a ``closerange`` still running in another thread of the program (a loop of closes, not
        # one step) can close them again: then once more, on another new connection.
        # If every attempt fails the writer is broken (``_check`` raises): the old connection,
        # leaked, must never write again, its descriptors may be the program's files now.
        log = self._log
        for attempt in range(RENEW_ATTEMPTS):
            try:
                self._connect_again()
            except sqlite3.Error:
                if attempt == RENEW_ATTEMPTS - 1:
                    self._broken = True
                    raise
                continue
            try:
                for sql, params, many in log or ():
                    try:
                        self._x(sql, params, many, retry=False)
                    except sqlite3.IntegrityError:
                        pass
            except sqlite3.Error:
                if attempt == RENEW_ATTEMPTS - 1 or not self._lost():
                    self._broken = True
                    raise
                continue
            break
        self._renewed += 1

    def _connect_again(self) -> None:
        """A new connection (its descriptors guarded, an empty log), the old one leaked."""
        from wholetrace.store.schema import SCHEMA_VERSION

        old = self._conn
        fdguard.leak(old)
        if self._hold is not None:      # its cursor too: freed, it would reset the held statement,
            fdguard.leak(self._hold)    # and the pager's unlock closes the old journal's number
            self._hold = None
        fdguard.UNLOCKED.add(self._abs)
        before = {fd for each in fdguard.descriptors_of_each((self._abs, self._abs + "-journal")) or () for fd in each}
        self._fds = self._journal = None
        self._log = None
        conn = sqlite3.connect(fdguard.uri(self._abs), isolation_level=None, check_same_thread=False, uri=True)
        self._conn = conn
        pragmas(conn)
        conn.execute("BEGIN")
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")    # a write: the journal is opened now
        self._hold = conn.execute(HOLD)
        self._watch(before)
        if self._fds is not None and self._journal is None:     # closed again at once (see _renew)
            raise sqlite3.OperationalError("the new journal's descriptor is gone")

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

    def _intact(self) -> bool:
        """True unless the program closed or replaced a guarded descriptor (or the writer is broken)."""
        if self._broken:
            return False
        return self._fds is None or (self._fds.intact() and (self._journal is None or self._journal.intact()))

    def _lost(self) -> bool:
        """True if the program closed or replaced a descriptor the connection uses."""
        return self._fds is not None and not self._intact()     # as _check: a journal not guarded is not lost

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

    def _begin(self) -> None:
        """BEGIN unless a transaction is open."""
        if not self._conn.in_transaction:
            self._conn.execute("BEGIN")
