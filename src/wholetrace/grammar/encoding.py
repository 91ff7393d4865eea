"""Versioned compact binary encoding of a Grammar: preorder streams, each stored with the
smallest of a few (layout, compressor) choices, measured when encoding."""

from __future__ import annotations

import bz2
import lzma
import struct

import numpy as np

from wholetrace.errors import GrammarError
from wholetrace.grammar.grammar import Grammar
from wholetrace.kernels import sequitur_flat as K

MAGIC = b"WTGR"
VERSION = 2  # 1: every stream LEB128 + LZMA; 2: a codec byte per stream (still decoded: 1)
FLAG_LOOKAHEAD = 1
_HEAD = struct.Struct("<4sBBxxQQQQQQ")  # magic, version, flags, rules+1, len_S, 4 stream counts
_LZMA = [{"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME}]


# codec byte of a stream: compressor in the low nibble, value layout in the high one
C_LZMA = 0
C_BZ2 = 1
L_VARINT = 0  # LEB128 (the kinds stream is raw u8 either way)
L_U32 = 1  # little-endian uint32


def _pack(data: bytes, comp: int) -> bytes:
    if comp == C_BZ2:
        return bz2.compress(data, 9)
    # a dictionary no larger than the data gives the same output with less memory; the
    # decoder's 64 MiB dictionary (preset 9) reads any smaller one
    dict_size = min(1 << 26, max(1 << 16, 1 << max(0, len(data) - 1).bit_length()))
    return lzma.compress(data, format=lzma.FORMAT_RAW, filters=[{**_LZMA[0], "dict_size": dict_size}])


def _unpack(data: bytes, comp: int) -> bytes:
    try:
        if comp == C_BZ2:
            return bz2.decompress(data)
        if comp == C_LZMA:
            return lzma.decompress(data, format=lzma.FORMAT_RAW, filters=_LZMA)
    except (lzma.LZMAError, OSError, ValueError, EOFError) as exc:
        raise GrammarError(f"corrupt grammar stream: {exc}") from None
    raise GrammarError(f"unknown grammar stream compressor {comp}")


def _smallest(values: np.ndarray | None, raw: bytes | None) -> tuple[int, bytes]:
    """(codec byte, bytes): the smallest of LZMA / bzip2 over LEB128 (or the raw bytes) and,
    for values that fit, uint32.  LZMA wins on the small streams and on loopy's references,
    bzip2 on markov's references (docs/design-sequitur.md)."""
    layouts = []
    if raw is not None:
        layouts.append((L_VARINT, raw))
    else:
        assert values is not None
        layouts.append((L_VARINT, K.varint_encode(values).tobytes()))
        if len(values) >= 1 << 16 and int(values.max(initial=0)) < 1 << 32:
            layouts.append((L_U32, values.astype("<u4").tobytes()))
    best: tuple[int, bytes] | None = None
    for lay, data in layouts:
        for comp in (C_LZMA, C_BZ2):
            packed = _pack(data, comp)
            if best is None or len(packed) < len(best[1]):
                best = (lay << 4 | comp, packed)
    assert best is not None
    return best


def encode(g: Grammar) -> bytes:
    """Bytes of ``g``: header, stream sizes, a codec byte per stream, then the four
    compressed streams (kinds, body lengths, terminals, refs).

    The grammar is written as a depth-first walk from S where a rule's first
    occurrence carries its body inline (rules are numbered in that order, so it needs
    no id) and later occurrences give ``newest id - id``; choice measured in
    docs/design-sequitur.md.
    """
    kinds, blens, terms, refs, ok = K.preorder_encode(g.off, g.rhs)
    if not ok:
        raise GrammarError("grammar rules are not numbered in first-appearance order")
    chosen = [_smallest(None, kinds.tobytes())] + [_smallest(v, None) for v in (blens, terms, refs)]
    head = _HEAD.pack(MAGIC, VERSION, FLAG_LOOKAHEAD if g.lookahead else 0, len(g.off) - 1,
                      g.start_length, len(kinds), len(blens), len(terms), len(refs))
    sizes = struct.pack("<4Q", *(len(p) for _, p in chosen))
    codecs = bytes(c for c, _ in chosen)
    return head + sizes + codecs + b"".join(p for _, p in chosen)


def decode(data: bytes) -> Grammar:
    """Inverse of ``encode``; raises GrammarError for foreign, newer or corrupt data."""
    data = bytes(data)
    if len(data) < _HEAD.size + 32 or data[:4] != MAGIC:
        raise GrammarError("not a wholetrace grammar (bad magic or too short)")
    magic, version, flags, nr, len_s, nk, nb, nt, nf = _HEAD.unpack_from(data)
    if version not in (1, VERSION):
        raise GrammarError(f"grammar encoding version {version} is not supported (expected {VERSION})")
    sizes = struct.unpack_from("<4Q", data, _HEAD.size)
    pos = _HEAD.size + 32
    codecs = bytes(4)  # version 1: LEB128 + LZMA everywhere
    if version >= 2:
        codecs = data[pos : pos + 4]
        pos += 4
    if len(codecs) != 4 or pos + sum(sizes) != len(data) or nb != nr - 1:
        raise GrammarError("grammar encoding is truncated or inconsistent")
    raw = []
    for s, c in zip(sizes, codecs):
        raw.append(_unpack(data[pos : pos + s], c & 15))
        pos += s
    if len(raw[0]) != nk or codecs[0] >> 4 != L_VARINT:
        raise GrammarError("grammar encoding is inconsistent (kinds)")
    kinds = np.frombuffer(raw[0], np.uint8)
    vals = []
    for buf, n, c in zip(raw[1:], (nb, nt, nf), codecs[1:]):
        if c >> 4 == L_U32:
            if len(buf) != 4 * n:
                raise GrammarError("grammar encoding is inconsistent (uint32 stream)")
            vals.append(np.frombuffer(buf, "<u4").astype(np.int64))
            continue
        if c >> 4 != L_VARINT:
            raise GrammarError(f"unknown grammar stream layout {c >> 4}")
        v, ok = K.varint_decode(np.frombuffer(buf, np.uint8), n)
        if not ok:
            raise GrammarError("grammar encoding is inconsistent (varints)")
        vals.append(v)
    off, rhs, ok = K.preorder_decode(kinds, len_s, vals[0], vals[1], vals[2])
    if not ok:
        raise GrammarError("grammar encoding is inconsistent (structure)")
    return Grammar(off, rhs, lookahead=bool(flags & FLAG_LOOKAHEAD))
