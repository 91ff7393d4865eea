"""Versioned compact binary encoding of a Grammar: preorder streams, varints, then LZMA."""

from __future__ import annotations

import lzma
import struct

import numpy as np

from wholetrace.errors import GrammarError
from wholetrace.grammar.grammar import Grammar
from wholetrace.kernels import sequitur as K

MAGIC = b"WTGR"
VERSION = 1
FLAG_LOOKAHEAD = 1
_HEAD = struct.Struct("<4sBBxxQQQQQQ")  # magic, version, flags, rules+1, len_S, 4 stream counts
_LZMA = [{"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME}]


def _pack(data: bytes) -> bytes:
    return lzma.compress(data, format=lzma.FORMAT_RAW, filters=_LZMA)


def _unpack(data: bytes) -> bytes:
    try:
        return lzma.decompress(data, format=lzma.FORMAT_RAW, filters=_LZMA)
    except lzma.LZMAError as exc:
        raise GrammarError(f"corrupt grammar stream: {exc}") from None


def encode(g: Grammar) -> bytes:
    """Bytes of ``g``: header, then four LZMA streams (kinds, body lengths, terminals, refs).

    The grammar is written as a depth-first walk from S where a rule's first
    occurrence carries its body inline (rules are numbered in that order, so it needs
    no id) and later occurrences give ``newest id - id``; choice measured in
    docs/design-sequitur.md.
    """
    kinds, blens, terms, refs, ok = K.preorder_encode(g.off, g.rhs)
    if not ok:
        raise GrammarError("grammar rules are not numbered in first-appearance order")
    streams = [kinds.tobytes(), K.varint_encode(blens).tobytes(), K.varint_encode(terms).tobytes(),
               K.varint_encode(refs).tobytes()]
    packed = [_pack(s) for s in streams]
    head = _HEAD.pack(MAGIC, VERSION, FLAG_LOOKAHEAD if g.lookahead else 0, len(g.off) - 1,
                      g.start_length, len(kinds), len(blens), len(terms), len(refs))
    sizes = struct.pack("<4Q", *(len(p) for p in packed))
    return head + sizes + b"".join(packed)


def decode(data: bytes) -> Grammar:
    """Inverse of ``encode``; raises GrammarError for foreign, newer or corrupt data."""
    data = bytes(data)
    if len(data) < _HEAD.size + 32 or data[:4] != MAGIC:
        raise GrammarError("not a wholetrace grammar (bad magic or too short)")
    magic, version, flags, nr, len_s, nk, nb, nt, nf = _HEAD.unpack_from(data)
    if version != VERSION:
        raise GrammarError(f"grammar encoding version {version} is not supported (expected {VERSION})")
    sizes = struct.unpack_from("<4Q", data, _HEAD.size)
    pos = _HEAD.size + 32
    if pos + sum(sizes) != len(data) or nb != nr - 1:
        raise GrammarError("grammar encoding is truncated or inconsistent")
    raw = []
    for s in sizes:
        raw.append(_unpack(data[pos : pos + s]))
        pos += s
    if len(raw[0]) != nk:
        raise GrammarError("grammar encoding is inconsistent (kinds)")
    kinds = np.frombuffer(raw[0], np.uint8)
    vals = []
    for buf, n in zip(raw[1:], (nb, nt, nf)):
        v, ok = K.varint_decode(np.frombuffer(buf, np.uint8), n)
        if not ok:
            raise GrammarError("grammar encoding is inconsistent (varints)")
        vals.append(v)
    off, rhs, ok = K.preorder_decode(kinds, len_s, vals[0], vals[1], vals[2])
    if not ok:
        raise GrammarError("grammar encoding is inconsistent (structure)")
    return Grammar(off, rhs, lookahead=bool(flags & FLAG_LOOKAHEAD))
