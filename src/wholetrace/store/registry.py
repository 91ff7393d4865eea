"""One source file's function registry as one blob: encoded once when the file is instrumented
(the code cache keeps it), stored with one insert per file, expanded per function when read.

The blob is zstd of: a JSON header line, then each function's description (its CFG JSON
with its probe plan under ``"plan"``) as JSON text, back to back.  The header holds the
file's source once, each function's name, kind, lines and fingerprint, the byte range of
its description and the offset of its first counter in the file; so listing the functions
decodes the header only, and a description is parsed when a reader asks for it.
"""

from __future__ import annotations

from wholetrace.errors import StoreError
from wholetrace.store import schema

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from collections.abc import Callable   # (not imported at start-up)
    from typing import Any

#: Per function in the header: name, kind, first line, last line, fingerprint, start, end, counter offset.
_ROW = (str, str, int, int, str, int, int, int)


def encode_registry(source: str, functions: list[dict[str, Any]], offsets: list[int]) -> bytes:
    """The blob of a file: ``functions`` are the descriptions (CFG JSON with ``"plan"``),
    ``offsets`` the first counter of each, counted from the file's first."""
    if len(functions) != len(offsets):
        raise StoreError("registry: one counter offset per function")
    bodies = [schema.encode_json(d, "function description").encode("utf-8", "surrogatepass") for d in functions]
    rows, pos = [], 0
    for d, body, off in zip(functions, bodies, offsets):
        rows.append([d["qualname"], d["kind"], d["firstline"], d["lastline"], d["fingerprint"], pos, pos + len(body), off])
        pos += len(body)
    head = schema.encode_json({"source": source, "functions": rows}, "function registry")
    return schema.compress(head.encode("utf-8", "surrogatepass") + b"\n" + b"".join(bodies))


def function_source(source: str, lines: list[str], kind: str, firstline: int, lastline: int) -> str:
    """The source text kept for one function: the whole file for a module body, else its lines."""
    return source if kind == "module" else "".join(lines[firstline - 1:lastline])


if TYPE_CHECKING:   # pragma: no cover
    Row = tuple[str, str, int, int, str, Callable[[], dict[str, Any]], int]


def decode_registry(blob: object, n_functions: int, counter_base: int, what: str) -> tuple[str, list[Row]]:
    """(source, per function (name, kind, first line, last line, fingerprint, description
    loader, global id of its first counter)); each loader parses its description and gives
    its plan that ``counter_base``.  StoreError if the blob is not what :func:`encode_registry` makes."""
    if not isinstance(blob, bytes):
        raise StoreError(f"{what} is corrupt (not a blob)")
    raw = schema.decompress(blob, None, what)
    cut = raw.find(b"\n")
    try:
        head = raw[:cut].decode("utf-8", "surrogatepass") if cut >= 0 else ""
    except UnicodeDecodeError:
        raise StoreError(f"{what} is corrupt (not UTF-8)") from None
    value = schema.decode_json(head, what)
    source, rows = (value.get("source"), value.get("functions")) if isinstance(value, dict) else (None, None)
    if not isinstance(source, str) or not isinstance(rows, list) or len(rows) != n_functions:
        raise StoreError(f"{what} is corrupt (expected {n_functions} functions)")
    body = memoryview(raw)[cut + 1:]
    out: list[Row] = []
    for row in rows:
        if not isinstance(row, list) or len(row) != len(_ROW) or any(
                type(v) is not t for v, t in zip(row, _ROW)) or not 0 <= row[5] <= row[6] <= len(body):
            raise StoreError(f"{what} is corrupt (bad function row)")
        out.append((*row[:5], _loader(body[row[5]:row[6]], counter_base + row[7], what),  # type: ignore[arg-type]
                    counter_base + row[7]))
    return source, out


def _loader(text: memoryview, counter_base: int, what: str) -> Callable[[], dict[str, Any]]:
    def load() -> dict[str, Any]:
        try:
            import json   # reading only (record's start-up imports no json: wholetrace.jsontext)

            desc = json.loads(bytes(text))
        except (ValueError, RecursionError):
            raise StoreError(f"{what} is corrupt (a function description is not JSON)") from None
        plan = desc.get("plan") if isinstance(desc, dict) else None
        if not isinstance(plan, dict):
            raise StoreError(f"{what} is corrupt (a function description has no plan)")
        desc["plan"] = dict(plan, counter_base=counter_base)
        return desc
    return load
