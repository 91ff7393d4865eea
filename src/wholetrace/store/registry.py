"""One source file's function registry as one blob: encoded once when the file is instrumented
(the code cache keeps it), stored with one insert per file, expanded per function when read."""

from __future__ import annotations

from typing import Any

from wholetrace.errors import StoreError
from wholetrace.store import schema

#: Keys every function description must have, with their types (the reader relies on them).
_REQUIRED = {"qualname": str, "kind": str, "firstline": int, "lastline": int, "fingerprint": str,
             "plan": dict}


def encode_registry(source: str, functions: list[dict[str, Any]], offsets: list[int]) -> bytes:
    """The blob of a file: its source text once, and per function its description (the CFG
    JSON with its probe plan under ``"plan"``) and the offset of its first counter in the file."""
    if len(functions) != len(offsets):
        raise StoreError("registry: one counter offset per function")
    text = schema.encode_json({"source": source, "functions": functions, "offsets": offsets},
                              "function registry")
    return schema.compress(text.encode("utf-8", "surrogatepass"))


def function_source(source: str, lines: list[str], desc: dict[str, Any]) -> str:
    """The source text kept for one function: the whole file for a module body, else its lines."""
    if desc["kind"] == "module":
        return source
    return "".join(lines[desc["firstline"] - 1:desc["lastline"]])


def decode_registry(blob: object, n_functions: int, counter_base: int,
                    what: str) -> tuple[str, list[dict[str, Any]]]:
    """(source, function descriptions) of a stored blob, each plan given its global
    ``counter_base``; StoreError if the blob is not what :func:`encode_registry` makes."""
    if not isinstance(blob, bytes):
        raise StoreError(f"{what} is corrupt (not a blob)")
    raw = schema.decompress(blob, None, what)
    try:
        text = raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        raise StoreError(f"{what} is corrupt (not UTF-8)") from None
    value = schema.decode_json(text, what)
    if not isinstance(value, dict):
        raise StoreError(f"{what} is corrupt (not a JSON object)")
    source, functions, offsets = value.get("source"), value.get("functions"), value.get("offsets")
    if not isinstance(source, str) or not isinstance(functions, list) or not isinstance(offsets, list) \
            or len(functions) != n_functions or len(offsets) != n_functions:
        raise StoreError(f"{what} is corrupt (expected {n_functions} functions)")
    out = []
    for desc, off in zip(functions, offsets):
        if not isinstance(desc, dict) or type(off) is not int or any(
                not isinstance(desc.get(k), t) or isinstance(desc.get(k), bool) for k, t in _REQUIRED.items()):
            raise StoreError(f"{what} is corrupt (bad function description)")
        desc["plan"] = dict(desc["plan"], counter_base=counter_base + off)
        out.append(desc)
    return source, out
