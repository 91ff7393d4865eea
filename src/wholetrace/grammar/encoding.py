"""Versioned binary encodings of a Grammar: compact (the input sequence through a context-mixing
coder, versions 3, 5 and 6, or an order-0 coder, version 7; decoding rebuilds the grammar) or
explicit (preorder streams of the rules, version 4; versions 1 and 2 still decode)."""

from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np

from wholetrace.zstdc import zstandard   # the C backend: the package's __init__ imports platform and typing

from wholetrace.errors import GrammarError
from wholetrace.grammar.grammar import Grammar
from wholetrace.kernels import sequitur_code as CM
from wholetrace.kernels import sequitur_flat as K

MAGIC = b"WTGR"
VERSION = 4  # explicit rules. 1: every stream LEB128 + LZMA; 2: a codec byte per stream;
#             4: as 2, plus zstd, 2-bit kinds and byte-plane layouts (2 and 4 share the decoder)
VERSION_COMPACT = 3  # the expansion through kernels/sequitur_code; decoding rebuilds the grammar
VERSION_FLAG = 5  # as 3, each symbol first coded as "is it the predicted symbol" (the flag); the
#                   header's last u32 also holds the predicting context (bits 8-15)
VERSION_FLAG6 = 6  # as 5, with match and prediction tables of 2**(tbits - 3) entries instead of
#                    2**(tbits - 2) (textlike's coder 5-8% faster, 0.6% larger: docs/design-sequitur.md)
VERSION_ORDER0 = 7  # the expansion through kernels/order0_code (memoryless inputs: no context model
#                    codes them smaller, and this coder is ~5x faster); decoding rebuilds the grammar
_PSHIFT = {VERSION_COMPACT: 2, VERSION_FLAG: 2, VERSION_FLAG6: 3}  # context mixing: log2(ctab / match table)
_COMPACT = (*_PSHIFT, VERSION_ORDER0)  # the versions that code the expansion (decoding rebuilds the grammar)
_FLAG_VERSION = VERSION_FLAG6  # what the encoder writes when it takes the flag
_EXPLICIT = (1, 2, VERSION)
FLAG_LOOKAHEAD = 1
FLAG_BUILT = 2  # versions 2 and 4: the grammar came from the SEQUITUR builder
_HEAD = struct.Struct("<4sBBxxQQQQQQ")  # magic, version, flags, rules+1, len_S, 4 stream counts
_HEAD3 = struct.Struct("<4sBBBBQQII")  # magic, version, flags, rawbits, tbits, n, payload, crc32,
#                                         mask of the coder's context models left out (0: none)
#                                         | the flag's mode << 8 (versions 5 and 6)
_cm_tables_memo: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []


def _cm_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The context-mixing coder's tables (``CM.tables()``), made at first use: the WPP builder
    process imports this module only for ``encode_explicit(fast=True)`` (docs/design.md, "The
    builder's start-up, wave 10")."""
    if not _cm_tables_memo:
        _cm_tables_memo.append(CM.tables())
    return _cm_tables_memo[0]


def _lzma_filters() -> list[dict[str, int]]:
    """LZMA2 at preset 9 extreme (``lzma`` and ``bz2`` are imported by the codecs that use them)."""
    import lzma

    return [{"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME}]


# codec byte of a stream: compressor in the low nibble, value layout in the high one
C_LZMA = 0
C_BZ2 = 1
C_ZSTD = 2
L_VARINT = 0  # LEB128 (the kinds stream: raw u8)
L_U32 = 1  # little-endian uint32 (written by version 2; still decoded)
L_BITS2 = 2  # the kinds stream, 2 bits a value, 4 values a byte, first in the low bits
L_PLANES = 3  # L_PLANES + k - 1: k byte planes (the low bytes of every value, then the next...)
#: every stream tries zstd (level 17 up to _SMALL bytes, else 12); streams up to _SMALL bytes
#: also bzip2, up to _TINY bytes LZMA as well: LZMA was most of the encoding time and gains
#: about 1% on the large streams once they are in byte planes (docs/design-sequitur.md)
_SMALL = 1 << 20
_TINY = 1 << 18


#: zstd's level for ``encode_explicit(fast=True)`` (the online builder's, on the recording's tail) up to
#: ``_SMALL`` bytes (above it 12, as before).  On streams this small zstd picks its parameters by size,
#: and level 13 is its optimal parser (btultra, ~670 instructions a byte), not btlazy2 as wave 14
#: assumed; the tail is wall time of every ``path --wpp`` recording.  Level 6 against 13 (callgrind of
#: the compression calls on the builder's grammars): json 18.3 -> 3.5 M instructions, bytes +3.8%;
#: go 49.3 -> 13.3 M, +10.8%; nqueens 0.87 -> 0.22 M, +3.8%; the trace/WPP ratio keeps its large
#: margin over the >= 10x target: docs/design.md, "The builder's per-event instructions, wave 21"
FAST_ZSTD_LEVEL = 6


def _pack(data: bytes, comp: int, level: int = 0) -> bytes:
    if comp == C_ZSTD:
        level = level or (17 if len(data) <= _SMALL else 12)
        return zstandard.ZstdCompressor(level=level).compress(data)
    if comp == C_BZ2:
        import bz2

        return bz2.compress(data, 9)
    import lzma

    # a dictionary no larger than the data gives the same output with less memory; the
    # decoder's 64 MiB dictionary (preset 9) reads any smaller one
    dict_size = min(1 << 26, max(1 << 16, 1 << max(0, len(data) - 1).bit_length()))
    return lzma.compress(data, format=lzma.FORMAT_RAW, filters=[{**_lzma_filters()[0], "dict_size": dict_size}])


def _unpack(data: bytes, comp: int, limit: int) -> bytes:
    errors: tuple[type[BaseException], ...] = (OSError, ValueError, EOFError, zstandard.ZstdError)
    try:
        if comp == C_ZSTD:  # refuse a frame that announces more than the stream can hold
            if zstandard.frame_content_size(data) > limit:
                raise GrammarError("corrupt grammar stream: zstd frame larger than its stream")
            return zstandard.ZstdDecompressor().decompress(data, max_output_size=limit)
        import lzma

        errors += (lzma.LZMAError,)
        if comp == C_BZ2:
            import bz2

            return bz2.decompress(data)
        if comp == C_LZMA:
            return lzma.decompress(data, format=lzma.FORMAT_RAW, filters=_lzma_filters())
    except errors as exc:
        raise GrammarError(f"corrupt grammar stream: {exc}") from None
    raise GrammarError(f"unknown grammar stream compressor {comp}")


def _planes(values: np.ndarray) -> tuple[int, bytes]:
    """(layout, bytes): the values as byte planes, as many as the largest value needs."""
    k = max(1, (int(np.maximum.reduce(values, axis=None, initial=0)).bit_length() + 7) // 8)   # not .max(): numpy's _methods (wave 18)
    return L_PLANES + k - 1, values.astype("<u4").view(np.uint8).reshape(-1, 4)[:, :k].T.tobytes()


def _unplanes(buf: bytes, n: int, k: int) -> np.ndarray:
    if len(buf) != k * n:
        raise GrammarError("grammar encoding is inconsistent (byte planes)")
    planes = np.frombuffer(buf, np.uint8).reshape(k, n)
    out = planes[0].astype(np.int64)
    for i in range(1, k):
        out |= planes[i].astype(np.int64) << (8 * i)
    return out


def _bits2(kinds: np.ndarray) -> bytes:
    k = np.zeros(-(-len(kinds) // 4) * 4, np.uint8)
    k[: len(kinds)] = kinds
    k = k.reshape(-1, 4)
    return (k[:, 0] | k[:, 1] << 2 | k[:, 2] << 4 | k[:, 3] << 6).tobytes()


def _unbits2(buf: bytes, n: int) -> np.ndarray:
    if len(buf) != -(-n // 4):
        raise GrammarError("grammar encoding is inconsistent (kinds)")
    b = np.frombuffer(buf, np.uint8)
    kinds = ((b[:, None] >> np.array([0, 2, 4, 6], np.uint8)) & 3).reshape(-1)[:n]
    if n and int(kinds.max()) > 2:
        raise GrammarError("grammar encoding is inconsistent (kinds)")
    return kinds


def _smallest(layouts: list[tuple[int, bytes]]) -> tuple[int, bytes]:
    """(codec byte, bytes): the smallest of zstd and, for the smaller streams, bzip2 and LZMA,
    over the given layouts.  zstd wins on the large reference streams once they are split into
    byte planes, at a tenth of LZMA's time (docs/design-sequitur.md)."""
    best: tuple[int, bytes] | None = None
    for lay, data in layouts:
        n = len(data)
        for comp in (C_ZSTD,) + ((C_BZ2,) if n <= _SMALL else ()) + ((C_LZMA,) if n <= _TINY else ()):
            packed = _pack(data, comp)
            if best is None or len(packed) < len(best[1]):
                best = (lay << 4 | comp, packed)
    assert best is not None
    return best


def _layouts(values: np.ndarray) -> list[tuple[int, bytes]]:
    """Byte planes, and LEB128 for the small streams."""
    planes = _planes(values)
    if len(planes[1]) > _SMALL:
        return [planes]
    return [(L_VARINT, K.varint_encode(values).tobytes()), planes]


def _sequence(g: Grammar) -> np.ndarray:
    """The expansion of ``g`` as int32, in one depth-first walk (no lengths, no int64 copy)."""
    out = np.empty(len(g), np.int32)
    nr = len(g.off) - 1
    work = [np.empty(nr + 1, np.int64) for _ in range(5)] + [np.full(nr + 1, -1, np.int64)]
    ks, ends, rid, at, ln, pos = work
    w = CM.expand_into(g.off, g.rhs, out, ks, ends, rid, at, pos, ln)
    if w != len(out):
        raise GrammarError("grammar is malformed (its expansion is not its length)")
    return out


#: the coder's context models tried after all six, in order, each with its slack: kept only if it
#: codes a prefix within that factor of all six without the flag.  Orders 0-4 and 0-3 (wave 9) are
#: kept within 3% (what textlike can afford: 0.934x `xz -9` with the flag and all six, and its
#: whole-input loss of a smaller set is ~1.5x the prefix's); orders 0-2, 0-1, 0 within 0.5% as
#: before (as small on order-1 sources such as markov and on memoryless ones such as rand4, in
#: 0.6-0.8x the time; at 3% markov's prefix would take order 0, 20% larger on the whole input)
_LADDER = ((0b011111, 1.03), (0b001111, 1.03), (0b000111, 1.005), (0b000011, 1.005), (0b000001, 1.005))
_TRIAL = 1 << 16  # at most this many symbols of the prefix on which the model sets are compared
_TRIAL_MIN = 1 << 14  # inputs shorter than 8x this always use all six models
_TREE = 0  # "model mask" of the order-0 tree coder (version 7), taken where order 0 alone was
_TREE_SLACK = 1.0  # ... if it codes the prefix no larger than the context-mixing coder's order 0
_TREE_MAX_RAWBITS = 16  # (kernels/order0_code.MAX_RAWBITS: its tree has 2**rawbits nodes)


def _cm_encode(a: np.ndarray, rawbits: int, models: int, pmode: int = 0) -> tuple[int, int, np.ndarray]:
    """(tbits, bytes, buffer) of ``a`` through the coder with the given model mask and flag mode
    (with the flag, as version ``_FLAG_VERSION`` codes it)."""
    pshift = _PSHIFT[_FLAG_VERSION if pmode else VERSION_COMPACT]
    tbits = min(20, max(12, a.size.bit_length() + 2))
    nbytes, buf = _coded(lambda out: CM.cm_code(a, a.size, rawbits, out, False, tbits, *_cm_tables(), models, pmode,
                                                pshift), a.size + a.size // 2 + 4096)
    return tbits, nbytes, buf


def _coded(code: Callable[[np.ndarray], tuple[int, int]], size: int) -> tuple[int, np.ndarray]:
    """(bytes, buffer) of ``code(buffer)`` (an encoder kernel's call), the buffer doubled from
    ``size`` bytes until the kernel no longer says it is too short."""
    buf = np.empty(size, np.uint8)
    while True:
        nbytes, status = code(buf)
        if status != CM.ST_SHORT:
            return int(nbytes), buf
        buf = np.empty(2 * len(buf), np.uint8)


#: the flag's mode when it is used: the predicted symbol is the one that last followed the
#: same order-3 context (measured in docs/design-sequitur.md, wave 9)
_FLAG = CM.P_ORDER3
_FLAG_SLACK = 1.025  # the flag is kept if it codes the prefix at most 2.5% larger (where it
#                      is, it saves a third of the coder's time: textlike; elsewhere it costs 12-30%)


_ORDERS_0_3 = 0b001111
_ORDERS_2_3 = 0b001100
#: orders 2-3 replace orders 0-3 (with the flag) if they code the prefix at most this much larger
#: than orders 0-3: textlike's prefix 1.025x, its whole input 1.009x, in 0.82-0.88x the coder's time
#: (wave 9b, docs/design-sequitur.md; order 0 and 1 help most while the tables are still cold)
_ORDERS_2_3_SLACK = 1.03


def _choose_models(a: np.ndarray, rawbits: int) -> tuple[int, int]:
    """(model mask, flag mode) for ``a``, from codings of a prefix (1/32 of the input, 16-64 Ki
    symbols): the last rung of the ladder (order 0) first, taken at once if it codes the prefix
    within its slack of all six (a memoryless source: the trials were ~30% of rand4's encoding);
    else the flag, kept if all six models code the prefix with it about as small as
    without; then the smallest set of the ladder (with that flag mode) that codes the prefix
    within its slack of all six without the flag, trying them in order; with the flag, orders
    0-3 give way to orders 2-3 if these are within _ORDERS_2_3_SLACK of them.  Deterministic: the
    same input always gives the same bytes."""
    if a.size < 8 * _TRIAL_MIN:
        return CM.ALL_MODELS, 0
    head = a[: min(_TRIAL, max(_TRIAL_MIN, a.size // 32))]
    size = _cm_encode(head, rawbits, CM.ALL_MODELS)[1]
    last, slack = _LADDER[-1]
    order0 = _cm_encode(head, rawbits, last)[1]
    if order0 <= size * slack:  # memoryless (rand4): no more trials
        if rawbits <= _TREE_MAX_RAWBITS and _o0_encode(head, rawbits)[0] <= order0 * _TREE_SLACK:
            return _TREE, 0
        return last, 0
    pmode = _FLAG if _cm_encode(head, rawbits, CM.ALL_MODELS, _FLAG)[1] <= size * _FLAG_SLACK else 0
    chosen, chosen_size = CM.ALL_MODELS, size
    for models, slack in _LADDER:
        trial = _cm_encode(head, rawbits, models, pmode)[1]
        if trial > size * slack:
            break
        chosen, chosen_size = models, trial
    if pmode and chosen == _ORDERS_0_3:  # with the flag, orders 0 and 1 add little but time
        if _cm_encode(head, rawbits, _ORDERS_2_3, pmode)[1] <= chosen_size * _ORDERS_2_3_SLACK:
            chosen = _ORDERS_2_3
    return chosen, pmode


def _o0_encode(a: np.ndarray, rawbits: int) -> tuple[int, np.ndarray]:
    """(bytes, buffer) of ``a`` through the order-0 tree coder (version 7)."""
    from wholetrace.kernels import order0_code as O0  # not at import: the WPP builder never codes compact

    return _coded(lambda out: O0.order0_code(a, a.size, rawbits, out, False, np.zeros(2 << rawbits, np.int64)),
                  a.size * rawbits // 8 + a.size // 16 + 4096)


def encode_compact(g: Grammar) -> bytes:
    """Version 3, 6 or 7: the expansion of ``g`` coded by the context-mixing coder of
    ``kernels/sequitur_code`` (6: with the flag) or, where it is memoryless, by the order-0 tree
    coder of ``kernels/order0_code`` (7); ``decode`` rebuilds the grammar with the SEQUITUR
    builder, so this is exact only for grammars that builder made (``g.built``)."""
    a = _sequence(g)
    rawbits = max(1, int(a.max(initial=0)).bit_length())
    models, pmode = _choose_models(a, rawbits)
    if models == _TREE:
        tbits = 12  # (no table; the field keeps the header's layout)
        nbytes, buf = _o0_encode(a, rawbits)
    else:
        tbits, nbytes, buf = _cm_encode(a, rawbits, models, pmode)
    version = VERSION_ORDER0 if models == _TREE else _FLAG_VERSION if pmode else VERSION_COMPACT
    import zlib   # not at import: the WPP builder codes explicit grammars only (0.7 M instructions of its start-up)

    head = _HEAD3.pack(MAGIC, version, FLAG_LOOKAHEAD if g.lookahead else 0,
                       rawbits, tbits, a.size, nbytes, zlib.crc32(a.astype("<i4", copy=False).data),
                       (CM.ALL_MODELS & ~models) | pmode << 8)
    return head + buf[:nbytes].tobytes()


def _decode_compact(data: bytes) -> Grammar:
    from wholetrace.grammar.builder import sequitur

    if len(data) < _HEAD3.size:
        raise GrammarError("grammar encoding is truncated")
    _magic, version, flags, rawbits, tbits, n, nbytes, crc, dropped = _HEAD3.unpack_from(data)
    flag = version in (VERSION_FLAG, VERSION_FLAG6)
    pmode = dropped >> 8 if flag else 0
    dropped &= 0xFF if flag else 0xFFFFFFFF
    if (len(data) != _HEAD3.size + nbytes or not 1 <= rawbits <= 31 or not 12 <= tbits <= 24
            or dropped & ~CM.ALL_MODELS or (flag and pmode not in CM.P_MODES)):
        raise GrammarError("grammar encoding is truncated or inconsistent")
    if n > 30_000 * (nbytes + 16):  # a symbol costs at least log2(4096/4095) bits
        raise GrammarError("grammar encoding is inconsistent (length)")
    a = np.zeros(n, np.int32)
    payload = np.frombuffer(data, np.uint8, offset=_HEAD3.size).copy()  # the kernel types buf writable
    if version == VERSION_ORDER0:
        from wholetrace.kernels import order0_code as O0

        if rawbits > O0.MAX_RAWBITS:
            raise GrammarError("grammar encoding is inconsistent (order-0 coder)")
        _, status = O0.order0_code(a, n, rawbits, payload, True, np.zeros(2 << rawbits, np.int64))
    else:
        _, status = CM.cm_code(a, n, rawbits, payload, True, tbits, *_cm_tables(), CM.ALL_MODELS & ~dropped, pmode,
                           _PSHIFT[version])
    import zlib

    if status != CM.ST_OK or zlib.crc32(a.astype("<i4", copy=False).data) != crc:
        raise GrammarError("corrupt grammar encoding (sequence check failed)")
    return sequitur(a, lookahead=bool(flags & FLAG_LOOKAHEAD))


def encode(g: Grammar, compact: bool = False) -> bytes:
    """Bytes of ``g``: the explicit rules of version 4, or with ``compact=True`` and a grammar
    the SEQUITUR builder made, ``encode_compact`` (version 3)."""
    if compact and g.built and len(g) > 0:
        return encode_compact(g)
    return encode_explicit(g)


def encode_explicit(g: Grammar, fast: bool = False) -> bytes:
    """Bytes of ``g``: header, stream sizes, a codec byte per stream, then the four
    compressed streams (kinds, body lengths, terminals, refs).

    The grammar is written as a depth-first walk from S where a rule's first
    occurrence carries its body inline (rules are numbered in that order, so it needs
    no id) and later occurrences give ``newest id - id``; choice measured in
    docs/design-sequitur.md.  ``fast=True`` (the online WPP builder, whose encoding is on
    the recording's tail) tries zstd over byte planes only, at ``FAST_ZSTD_LEVEL``: the same format,
    about a sixth of the time, a few percent larger (docs/design.md, "The online builder, wave 9"; the
    level, waves 14 and 21).
    """
    kinds, blens, terms, refs, ok = K.preorder_encode(g.off, g.rhs)
    if not ok:
        raise GrammarError("grammar rules are not numbered in first-appearance order")
    if fast:
        chosen = [(lay << 4 | C_ZSTD, _pack(data, C_ZSTD, FAST_ZSTD_LEVEL if len(data) <= _SMALL else 0))
                  for lay, data in [(L_BITS2, _bits2(kinds))] + [_planes(v) for v in (blens, terms, refs)]]
    else:
        chosen = [_smallest([(L_BITS2, _bits2(kinds))])] + [_smallest(_layouts(v)) for v in (blens, terms, refs)]
    flags = (FLAG_LOOKAHEAD if g.lookahead else 0) | (FLAG_BUILT if g.built else 0)
    head = _HEAD.pack(MAGIC, VERSION, flags, len(g.off) - 1,
                      g.start_length, len(kinds), len(blens), len(terms), len(refs))
    sizes = struct.pack("<4Q", *(len(p) for _, p in chosen))
    codecs = bytes(c for c, _ in chosen)
    return head + sizes + codecs + b"".join(p for _, p in chosen)


def decode(data: bytes) -> Grammar:
    """Inverse of ``encode``; raises GrammarError for foreign, newer or corrupt data."""
    data = bytes(data)
    if len(data) < _HEAD3.size or data[:4] != MAGIC:
        raise GrammarError("not a wholetrace grammar (bad magic or too short)")
    if data[4] in _COMPACT:
        return _decode_compact(data)
    if len(data) < _HEAD.size + 32:
        raise GrammarError("grammar encoding is truncated")
    magic, version, flags, nr, len_s, nk, nb, nt, nf = _HEAD.unpack_from(data)
    if version not in _EXPLICIT:
        raise GrammarError(f"grammar encoding version {version} is not supported (expected {VERSION})")
    sizes = struct.unpack_from("<4Q", data, _HEAD.size)
    pos = _HEAD.size + 32
    codecs = bytes(4)  # version 1: LEB128 + LZMA everywhere
    if version >= 2:
        codecs = data[pos : pos + 4]
        pos += 4
    if len(codecs) != 4 or pos + sum(sizes) != len(data) or nb != nr - 1:
        raise GrammarError("grammar encoding is truncated or inconsistent")
    streams = []
    for s, c in zip(sizes, codecs):
        streams.append((data[pos : pos + s], c))
        pos += s
    kind_buf, kc = streams[0]
    if kc >> 4 == L_BITS2 and version >= VERSION:
        kinds = _unbits2(_unpack(kind_buf, kc & 15, -(-nk // 4)), nk)
    elif kc >> 4 == L_VARINT:
        kinds = np.frombuffer(_unpack(kind_buf, kc & 15, nk), np.uint8)
        if len(kinds) != nk:
            raise GrammarError("grammar encoding is inconsistent (kinds)")
    else:
        raise GrammarError("grammar encoding is inconsistent (kinds)")
    vals = []
    for (buf, c), n in zip(streams[1:], (nb, nt, nf)):
        lay = c >> 4
        if lay == L_U32:
            buf = _unpack(buf, c & 15, 4 * n)
            if len(buf) != 4 * n:
                raise GrammarError("grammar encoding is inconsistent (uint32 stream)")
            vals.append(np.frombuffer(buf, "<u4").astype(np.int64))
            continue
        if L_PLANES <= lay < L_PLANES + 4:
            vals.append(_unplanes(_unpack(buf, c & 15, n * (lay - L_PLANES + 1)), n, lay - L_PLANES + 1))
            continue
        if lay != L_VARINT:
            raise GrammarError(f"unknown grammar stream layout {lay}")
        v, ok = K.varint_decode(np.frombuffer(_unpack(buf, c & 15, 10 * n), np.uint8), n)
        if not ok:
            raise GrammarError("grammar encoding is inconsistent (varints)")
        vals.append(v)
    off, rhs, ok = K.preorder_decode(kinds, len_s, vals[0], vals[1], vals[2])
    if not ok:
        raise GrammarError("grammar encoding is inconsistent (structure)")
    return Grammar(off, rhs, lookahead=bool(flags & FLAG_LOOKAHEAD), built=bool(flags & FLAG_BUILT))
