"""SHA-256 from the interpreter's built-in module: ``hashlib`` would load OpenSSL at every `record`'s start-up."""

from __future__ import annotations

try:                                    # 3.12 and later
    from _sha2 import sha256
except ImportError:                     # pragma: no cover - by interpreter version
    try:                                # 3.11
        from _sha256 import sha256     # type: ignore[no-redef]
    except ImportError:                 # a build without the built-in modules
        from hashlib import sha256     # type: ignore[no-redef]

__all__ = ["sha256"]
