"""The WPP builder's file frames: which of a file's functions record path ids, read from the registry blob the recorder sends.

Split from ``wpp/builder.py`` (wave 18, unchanged): :func:`path_functions` and the strategy reader
it uses (docs/design.md, "Wave 15, builder start-up", decisions 1 and 2).
"""

from __future__ import annotations

import struct
TYPE_CHECKING = False   # typing is not imported by the builder (~11 M instructions of its start-up)
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any

FRAME = struct.Struct("<ii")   # a frame head <sid><n> (wpp.builder imports it); a file frame's payload begins <fid_base><n_functions>


def path_functions(payload: bytearray) -> tuple[int, int, list[int]]:
    """(fid_base, n_functions, the fids recording path ids: plan strategy ``paths``) of a file frame.
    Each description's strategy is read where ``store.registry`` puts it (:func:`_strategies`);
    anything else there, or a blob that is not what the recorder sends, goes through the full
    ``decode_registry`` and JSON parse of every description (its errors too)."""
    fid_base, n = FRAME.unpack_from(payload)
    blob = bytes(payload[FRAME.size:])
    strategies = _strategies(blob, n)
    if strategies is None:
        from wholetrace.store.registry import decode_registry

        _source, rows = decode_registry(blob, n, 0, f"functions {fid_base}..")
        strategies = [row[5]().get("plan", {}).get("strategy") for row in rows]
    return fid_base, n, [fid_base + i for i, s in enumerate(strategies) if s == "paths"]


#: what precedes a path-mode plan's strategy in a description (``store.schema.encode_json``'s compact
#: JSON of ``ProbePlan.to_json``, the description's last key)
_PLAN = b',"plan":{"mode":"path","strategy":"'
_MAX_REGISTRY = 1 << 30   # store.schema.MAX_UNSIZED_BLOB
#: a header row's types (``store.registry._ROW``, not imported: it imports ``store.schema``)
_ROW = [str, str, int, int, str, int, int, int]


def _strategies(blob: bytes, n: int) -> list[str] | None:
    """Each function's plan strategy (``"paths"`` or ``"other"``) in a registry blob (``store.registry.encode_registry``), read
    without parsing the descriptions (the builder's first file frame imported ``json``'s users in
    ``store`` and each description's JSON parse was ~23 instructions an event on json; docs/design.md,
    "wave 15, builder start-up"); None if the blob or a description is not in that form.

    Exact for valid JSON (what a full ``json.loads`` of the description reads, or None): a
    description holding a ``\\`` falls back (no escaped spelling of a key or value, so every ``"``
    delimits a string); the text ``"plan"`` occurs once in it, so one string is ``plan`` (a ``"``
    after a closing quote is not JSON): the key the pattern matches, not another spelled
    ``"plan" :`` that ``json.loads`` would keep as the last duplicate; that key is at depth 1 (the
    brackets outside strings from its value to the last ``}`` balance: a top-level key, not a
    nested plan's); ``"strategy"`` occurs once, so the plan holds no second one.  Not checked, as the full parse would: that the rest of
    a description is JSON (a damaged description with the plan in this form is read, where the
    full parse raises; docs/design.md, "wave 15, builder start-up")."""
    from wholetrace.zstdc import zstandard

    try:
        size = zstandard.frame_content_size(blob)
        if not 0 <= size <= _MAX_REGISTRY:
            return None
        raw = zstandard.ZstdDecompressor().decompress(blob)
        cut = raw.find(b"\n")
        if len(raw) != size or cut < 0:
            return None
        head = raw[:cut].decode("utf-8", "surrogatepass")
        value, end = _json_scanner()(head, 0)
        rows = value.get("functions") if end == len(head) else None
    except Exception:  # noqa: BLE001 - anything not in the recorder's form: the full decode and its errors
        return None
    if not isinstance(rows, list) or len(rows) != n or type(value.get("source")) is not str:
        return None
    start, out = cut + 1, []
    for row in rows:
        if not (type(row) is list and list(map(type, row)) == _ROW
                and 0 <= row[5] <= row[6] <= len(raw) - start):
            return None
        lo, hi = start + row[5], start + row[6]
        at = raw.find(_PLAN, lo, hi)
        if (at < 0 or raw[lo:lo + 1] != b"{" or raw[hi - 2:hi] != b"}}" or raw.find(b"\\", lo, hi) >= 0
                or raw.count(b'"plan"', lo, hi) != 1 or raw.count(b'"strategy"', lo, hi) != 1):
            return None
        # the plan's value to the description's last "}": its brackets outside strings (no backslash:
        # every '"' opens or closes one) balance only if that "}" closes the plan key's object, the
        # top level (a nested plan's text there also closes the objects around it: fewer opened)
        outside = b"".join(raw[at + 8:hi - 1].split(b'"')[::2])   # 8: len(b',"plan":')
        if outside.count(b"{") + outside.count(b"[") != outside.count(b"}") + outside.count(b"]"):
            return None
        at += len(_PLAN)
        end = raw.find(b'"', at, hi)
        if end < 0:
            return None
        out.append("paths" if raw[at:end] == b"paths" else "other")
    return out


class _Strict:
    """What ``_json.make_scanner`` reads of a ``json.JSONDecoder()``: ``json.loads``'s defaults."""

    strict = True
    object_hook = object_pairs_hook = None
    parse_float, parse_int = float, int

    @staticmethod
    def parse_constant(name: str) -> float:   # NaN, Infinity: never in a registry (store.schema.encode_json)
        raise ValueError(name)


_SCANNER: list[Any] = []


def _json_scanner() -> Any:
    """``json.loads``'s C scanner (``_json``) without the ``json`` package, whose import (its
    regular expressions compiled) was ~5 M instructions of the builder's first file frame."""
    if not _SCANNER:
        from _json import make_scanner

        _SCANNER.append(make_scanner(_Strict()))
    return _SCANNER[0]
