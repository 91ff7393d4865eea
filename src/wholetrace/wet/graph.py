"""The stored WET of a ``full`` recording: instances, values, dependence pairs; built once, cached in the ``.wt``.

Build = decode (``wet/decode.py``: instances, dynamic control parents, calls, access log)
then the data-dependence kernel (``kernels/wetdeps.py``).  The result is stored as
zstd-compressed arrays ``wet.g.*`` in the recording's ``arrays`` table, chunked by
``CHUNK`` rows (key = chunk number), so a second query reads instead of rebuilding.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wholetrace.errors import StoreError, WholetraceError
from wholetrace.kernels.wetdeps import closure, csr, data_deps
from wholetrace.store import Recording, schema
from wholetrace.wet import packing
from wholetrace.wet.capture import CaptureLog, load
from wholetrace.wet.classes import link_classes
from wholetrace.wet.threads import interleave
from wholetrace.wet.decode import ATTR, ELEM, MERGE, WHOLE, decode
from wholetrace.wet.static import FunctionFacts, function_facts

CHUNK = 1 << 20
#: Dependence kinds in ``edges``.
DATA, CONTROL, CALL = 0, 1, 2
_ARRAYS = ("fid", "sid", "frame", "stream", "kind", "cd", "d_use", "d_def", "d_loc",
           "c_src", "c_dst", "rec_inst", "locs")
VERSION = 4
#: Stored versions this one reads: 3 (before class links and thread order: same arrays) is
#: NOT among them -- its dependences lack both, so it is rebuilt.
_READS = (VERSION,)
#: Arrays in reading order: a transform's reference arrays first (``packing.TRANSFORMS``).
_ORDER = tuple(sorted(_ARRAYS, key=lambda n: n in ("d_def", "c_dst")))


@dataclass
class WET:
    """Instances (real ones first, then merge nodes), data pairs, call pairs and tables."""

    fid: np.ndarray
    sid: np.ndarray
    frame: np.ndarray
    stream: np.ndarray
    kind: np.ndarray
    cd: np.ndarray                  # dynamic control parent instance, -1 if none
    d_use: np.ndarray               # data pairs, sorted by use instance
    d_def: np.ndarray
    d_loc: np.ndarray
    c_src: np.ndarray               # call instance -> first instance of the callee
    c_dst: np.ndarray
    rec_inst: np.ndarray            # capture records (streams in order) -> instance
    locs: np.ndarray                # (n, 3) location table: kind, a, b
    names: list[str]
    meta: dict[str, Any] = field(default_factory=dict)
    _csr: dict[bool, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)

    @property
    def n_inst(self) -> int:
        return int(self.meta["n_inst"])

    def loc_name(self, loc: int, log: CaptureLog | None = None) -> str:
        """A location for people: ``x``, ``<list #3>.attr``, ``<dict #4>[key]``, ``<list #3>[*]``."""
        k, a, b = (int(v) for v in self.locs[loc])
        if k in (0, 1):
            return self.names[b]
        obj = log.render(8, a) if log is not None else f"#{a}"
        if k == ATTR:
            return f"{obj}.{self.names[b]}"
        if k == ELEM:
            tag, val = self.meta["keys"][b]
            return f"{obj}[{log.render(tag, val) if log is not None else val}]"
        if k == WHOLE:
            return f"{obj}[*]"
        return "<return value>"

    def graph(self, forward: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """CSR of the dependence graph: node -> what it depends on (``forward``: who depends on it)."""
        if forward in self._csr:
            return self._csr[forward]
        n = self.fid.shape[0]
        has_cd = self.cd >= 0
        src = tuple(np.ascontiguousarray(a, np.int64) for a in (self.d_use, np.nonzero(has_cd)[0], self.c_dst))
        dst = tuple(np.ascontiguousarray(a, np.int64) for a in (self.d_def, self.cd[has_cd], self.c_src))
        if forward:
            src, dst = dst, src
        self._csr[forward] = csr(src, dst, n)
        return self._csr[forward]

    def slice(self, start: np.ndarray, forward: bool = False) -> np.ndarray:
        """Instances (merge nodes dropped) reachable from ``start`` (included)."""
        indptr, targets = self.graph(forward)
        mask = closure(indptr, targets, np.asarray(start, np.int64), forward, self.n_inst)
        mask[self.n_inst:] = False
        return np.nonzero(mask)[0]


def build(rec: Recording, log: CaptureLog | None = None) -> WET:
    """Compute the WET of an open ``full`` recording."""
    t0 = time.perf_counter()
    log = log if log is not None else load(rec)
    facts: dict[int, FunctionFacts] = function_facts(rec, log)
    dec = decode(rec, facts, log)
    up = link_classes(dec, log)
    threads = interleave(dec, log)
    t1 = time.perf_counter()
    locs = dec.locs
    n_inst = dec.i_fid.size
    use, dfn, dloc, n_merge = data_deps(dec.a_inst, dec.a_op, dec.a_loc, dec.a_fb, object_of(locs), up,
                                        locs.shape[0], n_inst)
    span = np.int64(n_inst + n_merge + 1)
    pairs = np.unique(use * span + dfn, return_index=True)[1]     # first occurrence of each pair
    pairs.sort()
    use, dfn, dloc = use[pairs], dfn[pairs], dloc[pairs]
    order = np.argsort(use, kind="stable")
    t2 = time.perf_counter()
    pad = np.full(n_merge, -1, np.int64)
    return WET(np.concatenate([dec.i_fid, pad]), np.concatenate([dec.i_sid, pad]),
               np.concatenate([dec.i_frame, pad]), np.concatenate([dec.i_stream, pad]),
               np.concatenate([dec.i_kind, np.full(n_merge, MERGE, np.int64)]), np.concatenate([dec.i_cd, pad]),
               use[order], dfn[order], dloc[order], dec.calls[:, 0].copy(), dec.calls[:, 1].copy(),
               dec.rec_inst, locs, list(dec.names),
               {"version": VERSION, "n_inst": n_inst, "n_merge": int(n_merge), "n_access": int(dec.a_inst.size),
                "unknown_calls": dec.unknown_calls, "n_streams": len(rec.streams()), "interleaved": threads,
                "keys": [list(k) for k in dec.keys], "decode_s": t1 - t0, "deps_s": t2 - t1,
                "decode_kernel_s": dec.seconds["kernel_s"]})


def object_of(locs: np.ndarray) -> np.ndarray:
    """For each location, the whole-object location of its object if it is an item or attribute, else -1."""
    out = np.full(locs.shape[0], -1, np.int64)
    whole = np.nonzero(locs[:, 0] == WHOLE)[0]
    if whole.size == 0:
        return out
    order = np.argsort(locs[whole, 1], kind="stable")
    wa, wid = locs[whole, 1][order], whole[order]
    part = np.nonzero((locs[:, 0] == ATTR) | (locs[:, 0] == ELEM))[0]
    j = np.searchsorted(wa, locs[part, 1])
    ok = j < wa.size
    ok[ok] = wa[j[ok]] == locs[part[ok], 1]
    out[part[ok]] = wid[j[ok]]
    return out


# ---------------------------------------------------------------------------- storage

def save(path: str | os.PathLike[str], wet: WET) -> None:
    """Store ``wet`` into the recording at ``path`` (arrays ``wet.g.*``; replaces an older one),
    each chunk in its smallest encoding (``wet/packing.py``; the choices in the meta)."""
    rows = []
    encs: dict[str, list[str]] = {}
    sizes: dict[str, dict[str, int]] = {}
    for name in _ARRAYS:
        arr = np.ascontiguousarray(getattr(wet, name))
        n = arr.shape[0]
        for q, lo in enumerate(range(0, max(n, 1), CHUNK)):
            part = arr[lo:lo + CHUNK]
            ctx = {"lo": np.int64(lo), **{d: np.ascontiguousarray(getattr(wet, d))[lo:lo + CHUNK]
                                          for d in packing.TRANSFORMS.get(name, (None, None, ()))[2]}}
            enc, blob, dtype, shape, got = packing.pack(name, part, ctx, schema.compress)
            encs.setdefault(name, []).append(enc)
            tally = sizes.setdefault(name, {})
            for e, b in got.items():
                tally[e] = tally.get(e, 0) + b
            rows.append((f"wet.g.{name}", str(q), dtype, json.dumps(shape), blob))
    meta = dict(wet.meta, names=wet.names, enc=encs, enc_bytes=sizes,
                chunks={n: -(-max(getattr(wet, n).shape[0], 1) // CHUNK) for n in _ARRAYS})
    raw = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    rows.append(("wet.g.meta", "", raw.dtype.str, json.dumps([raw.size]), schema.compress(raw.tobytes())))
    try:
        conn = sqlite3.connect(os.fspath(path), isolation_level=None)
        try:
            if any(r[1] == "crc" for r in conn.execute("PRAGMA table_info(arrays)")):   # checksummed rows
                rows = [r + (schema.row_crc("arrays", *r),) for r in rows]
            conn.execute("BEGIN")
            conn.execute("DELETE FROM arrays WHERE name LIKE 'wet.g.%'")
            conn.executemany(f"INSERT INTO arrays VALUES ({', '.join('?' * len(rows[0]))})", rows)
            conn.execute("COMMIT")
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StoreError(f"cannot store the WET in {schema.where(path)}: {schema.one_line(exc)}") from None


def stored(rec: Recording) -> WET | None:
    """The WET stored in an open recording, or None (none, or of an older version)."""
    raw = rec.get_array("wet.g.meta")
    if raw is None:
        return None
    meta = json.loads(raw.tobytes())
    if meta.get("version") not in _READS:
        return None
    encs = meta.pop("enc", {})
    meta["version"] = VERSION
    parts: dict[str, np.ndarray] = {}
    for name in _ORDER:
        got = []
        for q in range(meta["chunks"][name]):
            part = rec.get_array(f"wet.g.{name}", str(q))
            if part is None:
                return None
            mine = encs.get(name)
            enc = "z" if mine is None else (mine[q] if q < len(mine) else "?")
            ctx = {"lo": np.int64(q * CHUNK), **{d: parts[d][q * CHUNK:(q + 1) * CHUNK]
                                                 for d in packing.TRANSFORMS.get(name, (None, None, ()))[2]}}
            try:
                got.append(packing.unpack(name, enc, part, ctx, 3 if name == "locs" else 0))
            except (ValueError, WholetraceError):
                raise StoreError(f"{rec.path}: damaged stored WET (array {name}, chunk {q})") from None
        parts[name] = np.concatenate(got)
    return WET(**parts, names=meta.pop("names"), meta=meta)


def wet_of(path: str | os.PathLike[str], *, cache: bool = True) -> tuple[WET, CaptureLog]:
    """The WET of a recording: the stored one, else built (and stored if ``cache``)."""
    with Recording(path) as rec:
        log = load(rec)
        wet = stored(rec)
        if wet is None:
            wet = build(rec, log)
            fresh = True
        else:
            fresh = False
    if fresh and cache:
        try:
            save(path, wet)
        except StoreError:
            pass          # read-only file: answer the query all the same
    return wet, log
