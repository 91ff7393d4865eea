"""The codec table: ids stored in blobs, names, predictor family and context size of each."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from wholetrace.errors import UsageError
from wholetrace.kernels import predict as K

#: hit runs at least this long are one run record; shorter ones are single-hit records
RUN_MIN: Final = 4
#: table bits are at most this (tables of 64 Ki entries, 512 KiB each)
MAX_TABLE_BITS: Final = 16
MIN_TABLE_BITS: Final = 4

RAW: Final = -1
VARINT: Final = -2
PACKED: Final = -3
ZDELTA: Final = -4
ZVALUE: Final = -5


@dataclass(frozen=True)
class Codec:
    """One codec: ``id`` (stored in blobs, never reused), ``name``, ``family``, context ``n``."""

    id: int
    name: str
    family: int  # RAW, VARINT, PACKED, ZDELTA, ZVALUE, or a predictor family of kernels/predict.py
    n: int = 0

    @property
    def predictive(self) -> bool:
        return self.family >= 0

    @property
    def context(self) -> int:
        """Raw values the cursor holds: n for value predictors, n + 1 for stride predictors."""
        return self.n + 1 if self.family in (K.DFCM, K.LASTS) else self.n

    @property
    def index_bits(self) -> int:
        """Bits of a hit's index (which of the last n values or strides matched)."""
        return (self.n - 1).bit_length() if self.family in (K.LASTV, K.LASTS) else 0

    @property
    def tabled(self) -> bool:
        return self.family in (K.FCM, K.DFCM)


CODECS: Final = (
    Codec(0, "raw", RAW),
    Codec(1, "varint", VARINT),
    *(Codec(2 + i, f"bfcm-{n}", K.FCM, n) for i, n in enumerate((1, 2, 3))),
    *(Codec(5 + i, f"bdfcm-{n}", K.DFCM, n) for i, n in enumerate((1, 2, 3))),
    *(Codec(8 + i, f"blast-{n}", K.LASTV, n) for i, n in enumerate((2, 4, 8))),
    *(Codec(11 + i, f"blaststride-{n}", K.LASTS, n) for i, n in enumerate((2, 4, 8))),
    Codec(14, "packed", PACKED),
    Codec(15, "zdelta", ZDELTA),
    Codec(16, "zvalue", ZVALUE),
)
BY_ID: Final = {c.id: c for c in CODECS}
BY_NAME: Final = {c.name: c for c in CODECS}
NAMES: Final = tuple(c.name for c in CODECS)


def lookup(name: str) -> Codec:
    """The codec called ``name``, or a UsageError naming the choices."""
    codec = BY_NAME.get(name)
    if codec is None:
        raise UsageError(f"unknown stream codec {name!r}; choose from auto, {', '.join(NAMES)}")
    return codec


def table_bits(codec: Codec, m: int, segment: int) -> int:
    """Tables of 2**k entries, k from the segment length (at most one entry per value)."""
    if not codec.tabled:
        return 0
    longest = max(1, min(m, segment))
    return max(MIN_TABLE_BITS, min(MAX_TABLE_BITS, (longest - 1).bit_length()))


def params(codec: Codec, tbits: int, nseg: int, m: int, segment: int) -> np.ndarray:
    """The int64 parameter array every predictor kernel takes."""
    prm = np.zeros(K.N_PARAMS, np.int64)
    prm[K.P_FAM] = codec.family
    prm[K.P_N] = codec.n
    prm[K.P_C] = codec.context
    prm[K.P_SHIFT] = 64 - max(tbits, 1)
    prm[K.P_IB] = codec.index_bits
    prm[K.P_RUN] = RUN_MIN
    prm[K.P_NSEG] = nseg
    prm[K.P_M] = m
    prm[K.P_K] = segment
    return prm
