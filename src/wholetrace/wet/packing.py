"""How each chunk of a stored WET array is encoded: zstd of the int64s, or a transform then byte planes or a ``streams`` codec.

The stored WET (``wet/graph.py``) is mostly instance ids -- timestamps -- and dependence
labels: sorted use instances, def instances, control parents, call pairs.  Stored as plain
int64 words zstd finds little; most of them are small once written relative to something
they follow (``TRANSFORMS``).  Each chunk is stored in whichever of three encodings is
smallest, and the choice is recorded per chunk in the WET meta (``enc``):

* ``z``: zstd of the int64 words (the only encoding of WET version 3);
* ``p``: the transformed words as byte planes (``runtime.wetlayout.planes``), then zstd;
* ``s``: the transformed words through ``wholetrace.streams.encode`` (codec selection on a
  prefix: FCM, DFCM, last-n, stride, packed, ...; the codec id is in the blob), then zstd;
* ``P``, ``S``: the same without the transform (the words themselves), for arrays that have one.

2-D arrays (the location table) are encoded column after column.

Invariant: ``unpack(name, pack(name, a, ctx)[...], ctx) == a`` for every array and chunk,
where ``ctx`` holds the chunk's row offset and the arrays a transform refers to.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from wholetrace.runtime.wetlayout import planes, unplanes

Ctx = dict[str, np.ndarray]


def _delta(a: np.ndarray, ctx: Ctx) -> np.ndarray:
    return np.diff(a, prepend=0)


def _undelta(t: np.ndarray, ctx: Ctx) -> np.ndarray:
    return np.cumsum(t)


def _to_parent(a: np.ndarray, ctx: Ctx) -> np.ndarray:          # cd: distance back to the parent, 0 = none
    rows = ctx["lo"] + np.arange(a.size, dtype=np.int64)
    return np.where(a >= 0, rows - a, 0)


def _from_parent(t: np.ndarray, ctx: Ctx) -> np.ndarray:
    rows = ctx["lo"] + np.arange(t.size, dtype=np.int64)
    return np.where(t != 0, rows - t, -1)


#: name -> (forward, inverse, the arrays the transform needs, read before this one)
TRANSFORMS: dict[str, tuple[Callable[[np.ndarray, Ctx], np.ndarray], Callable[[np.ndarray, Ctx], np.ndarray],
                            tuple[str, ...]]] = {
    "d_use": (_delta, _undelta, ()),
    "c_src": (_delta, _undelta, ()),
    "rec_inst": (_delta, _undelta, ()),
    "d_def": (lambda a, c: c["d_use"] - a, lambda t, c: c["d_use"] - t, ("d_use",)),
    "c_dst": (lambda a, c: a - c["c_src"], lambda t, c: t + c["c_src"], ("c_src",)),
    "cd": (_to_parent, _from_parent, ()),
}
#: Encodings, in the order ties are broken.
ENCODINGS = ("z", "p", "s", "P", "S")


def candidates(name: str, part: np.ndarray, ctx: Ctx,
               compress: Callable[[bytes], bytes]) -> dict[str, tuple[bytes, str, list[int]]]:
    """Every encoding of one chunk: (stored blob, dtype text, shape of what the blob holds).
    Int64 chunks get all of them (2-D ones column after column); others ``z`` only.  For an
    array with a transform, ``P``/``S`` are ``p``/``s`` of the untransformed words."""
    out = {"z": (compress(np.ascontiguousarray(part).tobytes()), part.dtype.str, list(part.shape))}
    if part.ndim not in (1, 2) or part.dtype != np.int64 or part.size == 0:
        return out
    from wholetrace.streams import encode

    flat = np.ascontiguousarray(part.T).reshape(-1)
    ways = [("p", "s", flat)]
    if name in TRANSFORMS and part.ndim == 1:
        ways = [("p", "s", np.ascontiguousarray(TRANSFORMS[name][0](part, ctx), np.int64)), ("P", "S", flat)]
    for p, s, t in ways:
        out[p] = (compress(planes(t).tobytes()), "|u1", [8, int(t.size)])
        raw = encode(t).to_bytes()
        out[s] = (compress(raw), "|u1", [len(raw)])
    return out


def pack(name: str, part: np.ndarray, ctx: Ctx,
         compress: Callable[[bytes], bytes]) -> tuple[str, bytes, str, list[int], dict[str, int]]:
    """(encoding, stored blob, dtype text, shape, every encoding's size) of the smallest
    encoding of one chunk."""
    got = candidates(name, part, ctx, compress)
    enc = min(got, key=lambda e: (len(got[e][0]), ENCODINGS.index(e)))
    return (enc, *got[enc], {e: len(b) for e, (b, _d, _s) in got.items()})


def unpack(name: str, enc: str, stored: np.ndarray, ctx: Ctx, cols: int = 0) -> np.ndarray:
    """One chunk of array ``name`` from what ``get_array`` returned (``cols``: columns of a 2-D
    array, else 0).  ValueError if damaged."""
    if enc == "z":
        return stored
    if enc in "pP":
        t = unplanes(stored)
    elif enc in "sS":
        from wholetrace.streams import CompressedStream

        t = CompressedStream.from_bytes(np.asarray(stored, np.uint8).tobytes()).decode().astype(np.int64)
    else:
        raise ValueError(f"unknown encoding {enc!r}")
    if cols:
        if t.size % cols:
            raise ValueError("a 2-D chunk of the wrong size")
        return np.ascontiguousarray(t.reshape(cols, -1).T)
    if enc in "ps" and name in TRANSFORMS:
        t = TRANSFORMS[name][1](t, ctx)
    return np.ascontiguousarray(t, np.int64)
