"""SHA-256 from the interpreter's built-in module (``hashlib`` would load OpenSSL at every `record`'s start-up), and digests memoised in files."""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from typing import Callable

try:   # by its name in this version: a failed import searches sys.path (~0.8 M instructions)
    if sys.version_info >= (3, 12):
        from _sha2 import sha256
    else:
        from _sha256 import sha256     # type: ignore[no-redef]
except ImportError:                     # pragma: no cover - a build without the built-in modules
    from hashlib import sha256     # type: ignore[no-redef]

__all__ = ["sha256", "read_memo", "write_memo", "write_atomic", "memoised", "RACY_NS"]

#: Files changed this recently (ns) are not memoised by :func:`memoised` (FAT: 2 s ticks).
RACY_NS = 3_000_000_000


def read_memo(path: str, length: int) -> str | None:
    """The hex digest of ``length`` characters kept in file ``path`` (None: absent or damaged)."""
    try:
        with open(path, "rb") as fh:   # bytes: no text codec to import
            text = fh.read().decode("ascii")
    except (OSError, ValueError):
        return None
    return text if len(text) == length and all(c in "0123456789abcdef" for c in text) else None


def write_memo(path: str, text: str) -> None:
    """Keep ``text`` in file ``path`` (:func:`write_atomic`)."""
    write_atomic(path, text.encode("ascii"))


def write_atomic(path: str, data: bytes) -> None:
    """``data`` as file ``path``, written under a private temporary name (as ``tempfile.mkstemp``
    makes; tempfile is not imported at start-up) and renamed into place: a reader never sees half
    of it, and another process may write the same path.  Best effort: errors are ignored, no
    temporary file is left."""
    try:
        directory = os.path.dirname(path)
        os.makedirs(directory, exist_ok=True)
        tmp = os.path.join(directory, f".tmp-{os.getpid()}-{os.urandom(6).hex()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass


def memoised(directory: str, prefix: str, paths: list[str], compute: Callable[[], str], length: int, *,
             extra: bytes = b"", optional: frozenset[str] = frozenset()) -> str:
    """``compute()`` (a hex text of ``length`` characters) about the files ``paths``, kept in
    ``directory`` in a file named ``prefix-`` + a hash of their paths, sizes, inode numbers,
    modification and change times (and ``extra``), and read back while none of them changed (a
    write changes ``st_ctime_ns``, which no program can set back).  A missing file of
    ``optional`` stamps as absent; any other stat error computes without a memo.  Not memoised
    while a file's times are within ``RACY_NS`` of now: on a file system with coarse timestamps
    a second same-size write in the same tick would keep the stamp (git's "racily clean")."""
    h = sha256()
    newest = 0
    try:
        for f in paths:
            try:
                st = os.stat(f)
            except FileNotFoundError:
                if f not in optional:
                    raise
                line = f"{f}\0-\n"
            else:
                line = f"{f}\0{st.st_size}\0{st.st_ino}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\n"
                newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
            h.update(line.encode("utf-8", "surrogateescape"))
    except OSError:
        return compute()
    h.update(extra)
    memo = os.path.join(directory, f"{prefix}-{h.hexdigest()[:40]}")
    value = read_memo(memo, length)
    if value is None:
        value = compute()
        if newest < time.time_ns() - RACY_NS:
            write_memo(memo, value)
    return value
