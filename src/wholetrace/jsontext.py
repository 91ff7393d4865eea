"""``json.dumps`` from the interpreter's C encoder (``_json``): no ``json`` (nor ``re``) at ``record``'s start-up.

What ``record`` writes before and while the program runs (meta values, the function registry
on a code-cache miss, CFG fingerprints, the child processes' configuration) is encoded here:
``json`` and ``json.decoder`` (which imports ``re``) cost ~1.7 ms of every start-up, and
importing them lazily would run the import through the instrumenting finder (docs/design.md,
"Start-up of record, wave 10").  The text is exactly ``json.dumps``'s for the same arguments:
both drive ``_json.make_encoder`` the same way (``json.encoder.JSONEncoder.iterencode``,
Python 3.11-3.13); an interpreter without the accelerator uses ``json`` itself.
"""

from __future__ import annotations

try:
    from _json import encode_basestring, encode_basestring_ascii, make_encoder
except ImportError:  # pragma: no cover - a build without the C accelerator
    make_encoder = None

__all__ = ["dumps"]


def _default(o: object) -> object:
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


def dumps(obj: object, *, ensure_ascii: bool = True, allow_nan: bool = True,
          separators: tuple[str, str] | None = None) -> str:
    """``json.dumps(obj, ensure_ascii=..., allow_nan=..., separators=...)``, same text and
    same errors (TypeError for what JSON cannot hold, ValueError for NaN/Infinity without
    ``allow_nan`` and for circular references)."""
    if make_encoder is None:  # pragma: no cover
        import json

        return json.dumps(obj, ensure_ascii=ensure_ascii, allow_nan=allow_nan, separators=separators)
    item_separator, key_separator = separators if separators is not None else (", ", ": ")
    encoder = encode_basestring_ascii if ensure_ascii else encode_basestring
    if isinstance(obj, str):
        return encoder(obj)  # type: ignore[no-any-return]
    chunks = make_encoder({}, _default, encoder, None, key_separator, item_separator, False, False,
                          allow_nan)(obj, 0)
    return "".join(chunks)
