"""``hot``'s wave-10 grammars of a grouped (version-3) WPP, kept in the recording by its first query (arrays ``wpp.flat.*``; docs/design.md, "The WPP read side, wave 13")."""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from wholetrace.errors import GrammarError, StoreError
from wholetrace.grammar import Grammar
from wholetrace.wpp.symbols import Terminals

#: Layout of the ``wpp.flat.*`` arrays (part of the key: another layout is not read).
FORMAT = 1
META = "wpp.flat.meta"        # uint8 JSON: {"key", "streams": [sid, ...], "terminals": n, "lookahead"}
GRAMMAR = "wpp.flat.grammar"  # per stream (key = sid): the grammar, ``encode_explicit(fast=True)`` (uint8)
NAMES = (META, GRAMMAR)
#: ``WHOLETRACE_NO_STORE=1``: ``hot`` stores no cache (as ``hot --no-store``; one still stored is read)
ENV_NO_STORE = "WHOLETRACE_NO_STORE"
#: Seconds ``save`` waits for another connection's lock (e.g. a sqlite3 shell in a read
#: transaction) before answering without caching, rather than SQLite's 5 s.
BUSY_TIMEOUT = 0.2

#: Sources whose code decides the rebuilt grammar and its stored bytes (an edit of one invalidates
#: every cache): every wholetrace file the rebuild and the cache's encode/decode run (checked by
#: tests/wpp/test_hot_cache.py, which traces them), plus events.py, whose constants the interner's
#: kernels compile in.  ``wpp/ungroup.py`` holds the rebuild, so editing ``wpp/view.py``'s plumbing
#: keeps the caches.
_SOURCES = (("wpp", "ungroup.py"), ("wpp", "intern.py"), ("wpp", "symbols.py"), ("wpp", "flatcache.py"),
            ("kernels", "wpp_intern.py"), ("kernels", "sequitur.py"), ("kernels", "sequitur_table.py"),
            ("kernels", "sequitur_rules.py"), ("kernels", "sequitur_flat.py"), ("kernels", "_jit.py"),
            ("grammar", "builder.py"), ("grammar", "grammar.py"), ("grammar", "encoding.py"), ("events.py",))
_code_digest: str | None = None


def code_digest() -> str:
    """SHA-256 of the sources that build the wave-10 grammar (read once per process)."""
    global _code_digest
    if _code_digest is None:
        from wholetrace.instrument.digest import sha256

        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        h = sha256()
        for parts in _SOURCES:
            with open(os.path.join(package, *parts), "rb") as f:
                h.update("/".join(parts).encode() + b"\0" + f.read() + b"\0")
        _code_digest = h.hexdigest()
    return _code_digest


def cache_key(grammar_digest: str, lookahead: bool, path_fids: "frozenset[int]", n_functions: int) -> str:
    """The key of a rebuild from stored grammars and table of digest ``grammar_digest``
    (``StoredWpp.digest``), built with this lookahead, these path functions and this code."""
    from wholetrace.instrument.digest import sha256

    what = {"format": FORMAT, "grammars": grammar_digest, "lookahead": bool(lookahead),
            "path_fids": sorted(int(f) for f in path_fids), "n_functions": int(n_functions),
            "code": code_digest()}
    return str(sha256(json.dumps(what, sort_keys=True).encode()).hexdigest())


def load(rec: Any, key: str, terms: Terminals, sids: list[int]) -> "dict[int, Grammar] | None":
    """The cached grammars of streams ``sids``, if ``rec`` holds them under ``key`` (``terms``:
    the stored table, which the cached grammars use too: ``save``), else None; None too for a damaged cache (derived
    data: the query rebuilds it from the recording's own grammars and replaces it)."""
    try:
        return _load(rec, key, terms, sids)
    except (StoreError, GrammarError, ValueError, TypeError, KeyError, IndexError):
        return None


def _load(rec: Any, key: str, terms: Terminals, sids: list[int]) -> "dict[int, Grammar] | None":
    raw = rec.get_array(META)
    if raw is None:
        return None
    meta = json.loads(raw.tobytes())
    if not isinstance(meta, dict) or meta.get("key") != key or not set(sids) <= set(meta.get("streams", ())):
        return None
    if int(meta.get("terminals", -1)) != len(terms):
        return None
    out = {}
    for sid in sids:
        blob = rec.get_array(GRAMMAR, str(sid))
        if blob is None:
            return None
        out[sid] = Grammar.from_bytes(blob.tobytes())
    return out


def save(path: str, key: str, stored_terms: Terminals, terms: Terminals, grammars: "dict[int, Grammar]") -> bool:
    """Store the rebuilt ``grammars`` (sid -> grammar, every stream of the WPP) under ``key`` in
    recording ``path``, replacing an older cache in one transaction.  False, storing nothing,
    when the rebuild's table ``terms`` is not the stored one ``stored_terms`` (the grouped interner
    interns every wave-10 terminal, so the rebuild appends none; were it to, ``hot --stream S``'s
    ids would depend on the cache), when the file cannot be written, or when another connection
    holds it longer than :data:`BUSY_TIMEOUT` (the query answers all the same)."""
    from wholetrace.grammar.encoding import encode_explicit
    from wholetrace.store.writer import updating

    if len(terms) != len(stored_terms):
        return False
    lookahead = any(g.lookahead for g in grammars.values())
    meta = {"key": key, "streams": sorted(grammars), "terminals": len(terms), "lookahead": lookahead}
    try:
        with updating(path, timeout=BUSY_TIMEOUT) as w:
            for name in NAMES:
                w.delete_arrays(name)
            for sid, g in grammars.items():   # (rule numbers kept: the builder numbers them in first appearance)
                w.put_array(GRAMMAR, np.frombuffer(encode_explicit(g, fast=True), np.uint8), key=str(sid))
            w.put_array(META, np.frombuffer(json.dumps(meta).encode(), np.uint8))
    except (StoreError, OSError):
        return False
    return True
