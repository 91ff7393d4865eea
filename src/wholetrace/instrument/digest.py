"""SHA-256 from the interpreter's built-in module (``hashlib`` would load OpenSSL at every `record`'s start-up), and digests memoised in files."""

from __future__ import annotations

import os

try:                                    # 3.12 and later
    from _sha2 import sha256
except ImportError:                     # pragma: no cover - by interpreter version
    try:                                # 3.11
        from _sha256 import sha256     # type: ignore[no-redef]
    except ImportError:                 # a build without the built-in modules
        from hashlib import sha256     # type: ignore[no-redef]

__all__ = ["sha256", "read_memo", "write_memo"]


def read_memo(path: str, length: int) -> str | None:
    """The hex digest of ``length`` characters kept in file ``path`` (None: absent or damaged)."""
    try:
        with open(path, "rb") as fh:   # bytes: no text codec to import
            text = fh.read().decode("ascii")
    except (OSError, ValueError):
        return None
    return text if len(text) == length and all(c in "0123456789abcdef" for c in text) else None


def write_memo(path: str, text: str) -> None:
    """Keep ``text`` in file ``path`` (renamed into place: a reader never sees half of it); best effort."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}-{os.urandom(4).hex()}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(text.encode("ascii"))
        os.replace(tmp, path)
    except OSError:
        pass
