"""Streams kept by a bidirectional predictor: segments parked at their middle, encoded, parsed, decoded."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from wholetrace.errors import InternalError, StreamError
from wholetrace.kernels import predict as K
from wholetrace.streams import sections
from wholetrace.streams.codecs import Codec, params
from wholetrace.streams.simple import range_of_segments

#: fields stored per segment: mid, F bits, B bits, F table entries, B table entries, F and B
#: heights after the whole segment (cursor capacities are those plus one record)
_FIELDS = 7


def status_error(status: int, what: str) -> StreamError:
    """The StreamError for a negative kernel status."""
    why = {K.ERR_CORRUPT: "corrupt records", K.ERR_FULL: "records overflow the stack",
           K.ERR_RANGE: "position out of range"}.get(status, f"status {status}")
    return StreamError(f"{what}: {why}")


@dataclass
class PredictedBody:
    """The stored form of a predictor-coded stream, as flat arrays the kernels read."""

    codec: Codec
    m: int
    segment: int
    tbits: int
    segs: np.ndarray   # int64 [nseg, N_SEGCOLS]
    words: np.ndarray  # uint64: F then B bits of every segment at its park
    tidx: np.ndarray   # int64: table indices (per segment: F entries, then B entries)
    tval: np.ndarray   # uint64: table entries
    cxv: np.ndarray    # uint64: raw context values at every park
    keeps: ClassVar[bool] = True
    prm: np.ndarray = field(init=False, repr=False)
    bi: np.ndarray = field(init=False, repr=False)  # int64: params, counts, segment table, table indices
    bu: np.ndarray = field(init=False, repr=False)  # uint64: bits, table entries, contexts

    def __post_init__(self) -> None:
        """Flatten the arrays into ``bi``/``bu`` (kernels/predict.py) and view them back."""
        nseg = self.segs.shape[0]
        self.prm = params(self.codec, self.tbits, nseg, self.m, self.segment)
        cap = int(max(self.segs[:, K.G_FCAP].max(), self.segs[:, K.G_BCAP].max()))
        self._nwords = (cap + 63) // 64 + 1
        self._work_size = 2 * self._nwords + 2 * (1 << (64 - int(self.prm[K.P_SHIFT]))) + max(1, self.codec.context) + 2
        nw, ne = self.words.shape[0], self.tidx.shape[0]
        self.bi = np.concatenate([self.prm, [nw, ne], self.segs.ravel(), self.tidx]).astype(np.int64)
        self.bu = np.concatenate([self.words, self.tval, self.cxv]).astype(np.uint64)
        end = K.BI_SEGS + nseg * K.N_SEGCOLS
        self.prm, self.segs, self.tidx = self.bi[:K.N_PARAMS], self.bi[K.BI_SEGS:end].reshape(nseg, -1), self.bi[end:]
        self.words, self.tval, self.cxv = self.bu[:nw], self.bu[nw:nw + ne], self.bu[nw + ne:]

    def work(self) -> np.ndarray:
        """A fresh cursor work array (``kernels.predict.work_views``)."""
        return np.zeros(self._work_size, np.uint64)

    def work_views(self, ws: np.ndarray) -> tuple[np.ndarray, ...]:
        """F bits, B bits, F table, B table, context, payloads: views of a work array."""
        nw, size, c = self._nwords, 1 << (64 - int(self.prm[K.P_SHIFT])), max(1, self.codec.context)
        a, b = 2 * nw, 2 * nw + 2 * size
        return ws[:nw], ws[nw:a], ws[a:a + size], ws[a + size:b], ws[b:b + c], ws[b + c:b + c + 2]

    def fill(self, s: int, keep: np.ndarray, lo: int, hi: int, out: np.ndarray, first: int,
             step: int) -> np.ndarray:
        """Decode segment ``s`` from its park: values ``lo..hi-1`` to ``out[first + step * k]``,
        and the whole segment to ``keep`` if it has room (returned): the buffered walk."""
        status = K.decode_run(self.bi, self.bu, s, keep, lo, hi, out, first, step)
        if status < 0:
            raise status_error(status, f"segment {s} of a {self.codec.name} stream")
        return keep

    # ------------------------------------------------------------------ build

    @classmethod
    def build(cls, values: np.ndarray, codec: Codec, segment: int, tbits: int) -> "PredictedBody":
        """Compress ``values`` (uint64, non-empty) segment by segment."""
        m = int(values.shape[0])
        c = codec.context
        nseg = -(-m // segment)
        longest = min(m, segment)
        cap = longest * K.MAX_RECORD_BITS + 256
        nw = (cap + 63) // 64 + 1
        fb, fsnap, bb, bsnap = (np.zeros(nw, np.uint64) for _ in range(4))
        size = 1 << tbits
        ft, ftsnap, bt, btsnap = (np.zeros(size, np.uint64) for _ in range(4))
        st = np.zeros(K.N_STATE, np.int64)
        pay = np.zeros(2, np.uint64)
        out = np.zeros(4, np.int64)
        prm = params(codec, tbits, nseg, m, segment)
        segs = np.zeros((nseg, K.N_SEGCOLS), np.int64)
        words: list[np.ndarray] = []
        idx: list[np.ndarray] = []
        val: list[np.ndarray] = []
        cxs: list[np.ndarray] = []
        nwords = nentries = ncx = 0
        for s in range(nseg):
            start = s * segment
            L = min(segment, m - start)
            vals = values[start:start + L]
            g = segs[s]
            g[K.G_START], g[K.G_LEN] = start, L
            mid = max(0, L - c) // 2
            fbits = bbits = fh = bh = 0
            fent = bent = np.zeros(0, np.int64)
            if L > c:
                ft[:] = 0
                bt[:] = 0
                status = K.encode_segment(prm, vals, mid, fb, ft, fsnap, ftsnap, bb, bt, bsnap, btsnap,
                                          st, pay, cap, out)
                if status < 0:
                    raise InternalError(f"stream encoder failed on segment {s} (status {status})")
                fbits, bbits, fh, bh = (int(x) for x in out)
                fent, bent = np.flatnonzero(ftsnap), np.flatnonzero(btsnap)
                idx += [fent, bent]
                val += [ftsnap[fent], btsnap[bent]]
            fw, bw = (fbits + 63) // 64, (bbits + 63) // 64
            words += [fsnap[:fw].copy(), bsnap[:bw].copy()]
            cc = min(c, L)
            cxs.append(vals[mid:mid + cc].copy())
            g[K.G_MID], g[K.G_FBITS], g[K.G_BBITS] = mid, fbits, bbits
            g[K.G_FWORD], g[K.G_BWORD] = nwords, nwords + fw
            g[K.G_FTOFF], g[K.G_FTCNT] = nentries, len(fent)
            g[K.G_BTOFF], g[K.G_BTCNT] = nentries + len(fent), len(bent)
            g[K.G_CXOFF] = ncx
            g[K.G_FCAP], g[K.G_BCAP] = fh + K.MAX_RECORD_BITS, bh + K.MAX_RECORD_BITS
            nwords += fw + bw
            nentries += len(fent) + len(bent)
            ncx += cc
        return cls(codec, m, segment, tbits, segs, _cat(words, np.uint64), _cat(idx, np.int64),
                   _cat(val, np.uint64), _cat(cxs, np.uint64))

    # ------------------------------------------------------------------ decode

    def decode_range(self, i: int, j: int) -> np.ndarray:
        """Values ``[i, j)`` (uint64), popping outward from each segment's park."""
        return range_of_segments(self, self.segment, i, j)

    # ------------------------------------------------------------------ bytes

    def to_bytes(self) -> bytes:
        g = self.segs
        fields = np.stack([g[:, K.G_MID], g[:, K.G_FBITS], g[:, K.G_BBITS], g[:, K.G_FTCNT],
                           g[:, K.G_BTCNT], g[:, K.G_FCAP] - K.MAX_RECORD_BITS,
                           g[:, K.G_BCAP] - K.MAX_RECORD_BITS], axis=1).astype(np.uint64)
        gaps = np.zeros(self.tidx.shape[0], np.uint64)
        for off, cnt in ((g[:, K.G_FTOFF], g[:, K.G_FTCNT]), (g[:, K.G_BTOFF], g[:, K.G_BTCNT])):
            for o, n in zip(off.tolist(), cnt.tolist()):
                if n:
                    t = self.tidx[o:o + n]
                    gaps[o] = t[0]
                    gaps[o + 1:o + n] = np.diff(t) - 1
        parts = [sections.pack_uvarints(fields.ravel()), sections.pack_uvarints(self.cxv),
                 sections.pack_uvarints(gaps), sections.pack_uvarints(sections.zigzag(self.tval))]
        raw = self.words.astype("<u8").view(np.uint8)
        for s in range(g.shape[0]):
            for word, bits in ((g[s, K.G_FWORD], g[s, K.G_FBITS]), (g[s, K.G_BWORD], g[s, K.G_BBITS])):
                parts.append(raw[word * 8:word * 8 + (bits + 7) // 8].tobytes())
        return b"".join(parts)

    @classmethod
    def from_bytes(cls, body: bytes, codec: Codec, m: int, segment: int, tbits: int) -> "PredictedBody":
        """Parse and validate a body; any inconsistency is a StreamError."""
        c = codec.context
        nseg = -(-m // segment)
        rd = sections.Reader(body, f"{codec.name} stream")
        f = rd.uvarints(nseg * _FIELDS).astype(np.int64).reshape(nseg, _FIELDS)
        if (f < 0).any():
            raise rd.bad("segment field out of range")
        starts = np.arange(nseg, dtype=np.int64) * segment
        lens = np.minimum(segment, m - starts)
        last = np.maximum(lens - c, 0)
        mid, fbits, bbits, fcnt, bcnt, fh, bh = f.T
        limit = lens * K.MAX_RECORD_BITS + 256
        short = lens <= c
        if (mid > last).any() or (fh > limit).any() or (bh > limit).any() \
                or (fbits > fh + K.MAX_RECORD_BITS).any() or (bbits > bh + K.MAX_RECORD_BITS).any() \
                or (short & ((fbits | bbits | fcnt | bcnt) != 0)).any():
            raise rd.bad("inconsistent segment table")
        size = 1 << tbits
        if (fcnt > size).any() or (bcnt > size).any() or (not codec.tabled and (fcnt | bcnt).any()):
            raise rd.bad("table entry count out of range")
        ncx = int(np.minimum(lens, c).sum())
        cxv = rd.uvarints(ncx)
        counts = np.stack([fcnt, bcnt], axis=1).ravel()
        nent = int(counts.sum())
        gaps = rd.uvarints(nent)
        tval = sections.unzigzag(rd.uvarints(nent))
        tidx = _indices(gaps, counts, size)
        if tidx is None:
            raise rd.bad("table indices out of range")
        fw, bw = (fbits + 63) // 64, (bbits + 63) // 64
        nwords = fw + bw
        words = np.zeros(int(nwords.sum()) + 1, np.uint64)
        woff = np.concatenate([[0], np.cumsum(nwords)[:-1]]).astype(np.int64)
        raw = words.view(np.uint8)
        for s in range(nseg):
            for off, bits in ((woff[s], fbits[s]), (woff[s] + fw[s], bbits[s])):
                nbytes = int((bits + 7) // 8)
                raw[off * 8:off * 8 + nbytes] = np.frombuffer(rd.take(nbytes), np.uint8)
        rd.finish()
        if not _little_endian():
            words.byteswap(inplace=True)
        toff = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        segs = np.zeros((nseg, K.N_SEGCOLS), np.int64)
        segs[:, K.G_START], segs[:, K.G_LEN], segs[:, K.G_MID] = starts, lens, mid
        segs[:, K.G_FBITS], segs[:, K.G_BBITS] = fbits, bbits
        segs[:, K.G_FWORD], segs[:, K.G_BWORD] = woff, woff + fw
        segs[:, K.G_FTOFF], segs[:, K.G_FTCNT] = toff[0::2], fcnt
        segs[:, K.G_BTOFF], segs[:, K.G_BTCNT] = toff[1::2], bcnt
        segs[:, K.G_CXOFF] = np.concatenate([[0], np.cumsum(np.minimum(lens, c))[:-1]])
        segs[:, K.G_FCAP], segs[:, K.G_BCAP] = fh + K.MAX_RECORD_BITS, bh + K.MAX_RECORD_BITS
        return cls(codec, m, segment, tbits, segs, words, tidx, tval, cxv)


def _cat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)


def _indices(gaps: np.ndarray, counts: np.ndarray, size: int) -> np.ndarray | None:
    """Table indices from per-table gap lists (the first index, then each difference minus
    one, so indices strictly increase), or None if one falls outside ``[0, size)``."""
    if gaps.shape[0] == 0:
        return np.zeros(0, np.int64)
    if (gaps >= np.uint64(size)).any():
        return None
    steps = gaps.astype(np.int64) + 1
    nz = counts[counts > 0].astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(nz)[:-1]]).astype(np.int64)
    steps[starts] -= 1
    csum = np.cumsum(steps)
    before = np.where(starts > 0, csum[np.maximum(starts - 1, 0)], 0)
    idx = csum - np.repeat(before, nz)
    if (idx >= size).any():
        return None
    return idx


def _little_endian() -> bool:
    import sys
    return sys.byteorder == "little"
