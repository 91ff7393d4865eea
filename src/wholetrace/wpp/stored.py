"""A recording's stored WPP: per-stream grammars, the terminal table, build statistics, and the streams they expand to."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from wholetrace.errors import UsageError
from wholetrace.grammar import Grammar
from wholetrace.kernels.wpp_parts import close_parts
from wholetrace.wpp.intern import events_of, terminal_widths, terminals_from_array
from wholetrace.wpp.online import GRAMMAR_NAME, META_KEY, SYMBOLS_NAME, TERMINALS_VERSION
from wholetrace.wpp.symbols import ENTER, ENTER_CHAIN, ENTER_PATH, EXC, FUSED, LEAVE, PATH, Terminals, number_rows

#: Bytes per event of the raw stream (Larus's Table 1 trace size counts 4 per path).
RAW_EVENT_BYTES = 4


@dataclass(frozen=True)
class StreamWpp:
    """One stream's grammar and its numbers (Larus 1999 Table 1 per stream)."""

    sid: int
    name: str
    grammar: Grammar
    encoded_bytes: int
    stats: dict[str, Any]

    def table1(self, terms: Terminals) -> dict[str, Any]:
        """events, distinct paths/symbols, raw and encoded bytes, ratio, rules per path ..."""
        from wholetrace.wpp.queries import terminal_counts

        g = self.grammar
        # events as ``info`` counts them: the raw stream's words (a fused or SEQ terminal is its
        # events, an EXC record its code and operands), so raw bytes are the raw stream's
        n = len(terms)
        counts = terminal_counts(g, n)[:n]
        events = int(np.dot(counts, terminal_widths(terms)))
        kinds, distinct = _used_parts(terms, counts > 0)
        markers = np.isin(kinds, (ENTER, LEAVE, EXC))
        paths = int(np.count_nonzero(~markers))
        raw = RAW_EVENT_BYTES * events
        return {"stream": self.sid, "name": self.name, "events": events, "grammar_symbols": len(g),
                "distinct_paths": paths, "distinct_symbols": distinct,
                "path_kind": "path" if np.any(kinds == PATH) else "block",
                "rules": g.num_rules, "rhs": g.num_symbols, "len_S": g.start_length,
                "raw_bytes": raw, "encoded_bytes": self.encoded_bytes,
                "ratio": round(raw / self.encoded_bytes, 2) if self.encoded_bytes else None,
                "rules_per_path": round(g.num_rules / paths, 2) if paths else None,
                "build_seconds": self.stats.get("build_seconds")}


def _used_parts(terms: Terminals, used: np.ndarray) -> tuple[np.ndarray, int]:
    """The kinds of the distinct one-an-event terminals (``symbols.split_entered``'s) that the
    terminals marked ``used`` stand for, and their number: a fused terminal stands for (ENTER, f, 0)
    and its path (ENTER_PATH) or its inner terminal's (ENTER_CHAIN); a SEQ its parts'."""
    need = np.ascontiguousarray(used, dtype=np.bool_).copy()
    close_parts(terms.kind, terms.fid, terms.value, need)
    plain = need & ~np.isin(terms.kind, FUSED)
    fused = need & np.isin(terms.kind, (ENTER_PATH, ENTER_CHAIN))      # a SEQ stands for nothing of its own
    enter_path = need & (terms.kind == ENTER_PATH)
    nf, npath = int(np.count_nonzero(fused)), int(np.count_nonzero(enter_path))
    kind = np.concatenate([terms.kind[plain], np.full(nf, ENTER), np.full(npath, PATH)]).astype(np.int64)
    fid = np.concatenate([terms.fid[plain], terms.fid[fused], terms.fid[enter_path]]).astype(np.int64)
    value = np.concatenate([terms.value[plain], np.zeros(nf), terms.value[enter_path]]).astype(np.int64)
    _, keys = number_rows(np.zeros((0, 3), np.int64), np.stack([kind, fid, value], axis=1))   # the distinct ones
    return keys[:, 0], len(keys)


def _stored_bytes(rec: Any, name: str, table: "np.ndarray | None") -> int:
    """The stored (compressed) size of array ``name``: the store's figure, else (a salvaged
    recording) the array compressed as the store does."""
    if table is None:
        return 0
    sizes = getattr(rec, "array_sizes", None)
    if sizes is not None:
        got = [b for n, k, b in sizes(name) if n == name and k == ""]
        if got:
            return got[0]
    from wholetrace.store import schema

    return len(schema.compress(np.ascontiguousarray(table).tobytes()))


class StoredWpp:
    """The WPP of a recording made with ``record --wpp`` (``rec``: a ``store.Recording``)."""

    def __init__(self, rec: Any, lost: list[str] | None = None) -> None:
        """``lost``: read a salvaged recording (``--salvage``): a grammar that is missing or does not
        decode (or the terminal table, which every grammar needs) is left out and its array's name
        appended to ``lost`` instead of failing."""
        meta = rec.meta.get(META_KEY)
        if not isinstance(meta, dict):
            raise UsageError(f"{rec.path}: no WPP in this recording (record it with --wpp)")
        if "error" in meta:   # wpp.online.OnlineWpp.close: the builder failed, nothing was stored
            raise UsageError(f"{rec.path}: no WPP in this recording: {meta['error']}")
        self.meta: dict[str, Any] = meta
        version = int(meta.get("terminals", 1))
        if version > TERMINALS_VERSION:
            raise UsageError(f"{rec.path}: its WPP terminals are of version {version}, this wholetrace reads up to "
                             f"{TERMINALS_VERSION} (a newer wholetrace made it)")
        table = rec.get_array(SYMBOLS_NAME)
        recorded = {int(k) for k in meta.get("streams", {}) if str(k).isdigit()}   # streams that stored a grammar
        if lost is not None and table is None and recorded:
            lost.append(SYMBOLS_NAME)   # no grammar can be expanded without the terminals
            recorded = set()
        self.terminals = terminals_from_array(table if table is not None else np.zeros((0, 3), np.int64))
        #: Bytes the terminal table takes in the file (compressed as stored): part of the WPP, as
        #: the grammars are (a SEQ terminal holds up to 4 events of the trace).
        self.symbols_bytes = _stored_bytes(rec, SYMBOLS_NAME, table)
        self.streams: list[StreamWpp] = []
        stats = meta.get("streams", {})
        from wholetrace.instrument.digest import sha256

        h = sha256(b"terminals %d %d\0" % (version, len(self.terminals)))
        h.update(np.ascontiguousarray(table if table is not None else np.zeros(0, np.int64), np.int64).tobytes())
        for st in rec.streams():
            name = GRAMMAR_NAME.format(sid=st.sid)
            if lost is not None and SYMBOLS_NAME in lost:
                continue
            blob = rec.get_array(name)
            if blob is None:
                if lost is not None and st.sid in recorded:
                    lost.append(name)
                continue   # a stream that recorded nothing
            data = blob.tobytes()
            try:
                grammar = Grammar.from_bytes(data)
            except Exception:
                if lost is None:
                    raise
                lost.append(name)
                continue
            h.update(b"\0stream %d %d\0" % (st.sid, len(data)) + data)
            self.streams.append(StreamWpp(st.sid, st.name, grammar, len(data), dict(stats.get(str(st.sid), {}))))
        #: SHA-256 of the terminal table and every stream's stored grammar (what they expand to:
        #: the key of caches derived from them, ``wpp.flatcache``)
        self.digest = h.hexdigest()

    def stream(self, sid: int) -> StreamWpp:
        for s in self.streams:
            if s.sid == sid:
                return s
        raise UsageError(f"no WPP for stream {sid}")

    def iter_events(self, sid: int, chunk: int = 1 << 16) -> Iterator[np.ndarray]:
        """Stream ``sid``'s events (int32, ``wholetrace.events`` encoding), expanded from its
        grammar a chunk at a time (never the whole trace in memory)."""
        widths = terminal_widths(self.terminals)
        for codes in self.stream(sid).grammar.iter_chunks(chunk):
            yield events_of(codes, self.terminals, widths)

    def events(self, sid: int) -> np.ndarray:
        """All of stream ``sid``'s events."""
        parts = list(self.iter_events(sid))
        return np.concatenate(parts) if parts else np.zeros(0, np.int32)


class ExpandedRecording:
    """A recording made with ``--wpp`` and without ``--keep-raw``, read like one with raw streams:
    each stream's events are expanded from its grammar as they are read (``iter_chunks``), so
    ``info``, ``trace`` and ``counts`` work on it unchanged.  Everything else is ``rec``'s."""

    def __init__(self, rec: Any, lost: list[str] | None = None) -> None:
        self.rec = rec
        self.wpp = StoredWpp(rec, lost)
        self._sids = {s.sid for s in self.wpp.streams}

    def streams(self) -> list[Any]:
        from dataclasses import replace

        from wholetrace.wpp.queries import terminal_counts

        widths = terminal_widths(self.wpp.terminals)   # events per terminal (EXC s, fused ENTERs: more than 1)
        out = []
        for st in self.rec.streams():
            if st.sid in self._sids:
                g = self.wpp.stream(st.sid).grammar
                counts = terminal_counts(g, len(widths))
                st = replace(st, n_events=int(np.dot(counts[: len(widths)], widths)),
                             stored_bytes=self.wpp.stream(st.sid).encoded_bytes)
            out.append(st)
        return out

    def iter_chunks(self, sid: int) -> Iterator[np.ndarray]:
        if sid in self._sids:
            yield from self.wpp.iter_events(sid)
        else:
            yield from self.rec.iter_chunks(sid)

    def events(self, sid: int) -> np.ndarray:
        return self.wpp.events(sid) if sid in self._sids else self.rec.events(sid)

    def __getattr__(self, name: str) -> Any:   # meta, functions(), get_array(), sizes(), close() ...
        return getattr(self.rec, name)

    def __enter__(self) -> "ExpandedRecording":
        return self

    def __exit__(self, *exc: object) -> None:
        self.rec.close()


def readable(rec: Any) -> Any:
    """``rec``, or an :class:`ExpandedRecording` of it when its streams are stored only as grammars
    (``record --wpp`` without ``--keep-raw``): the expanded streams are the recorded events, so
    the mode's own readers (regeneration of witness and path recordings) work on them."""
    meta = rec.meta.get(META_KEY)
    if not isinstance(meta, dict) or meta.get("keep_raw"):
        return rec
    return ExpandedRecording(rec)


def salvaged(rec: Any) -> tuple[Any, list[str]]:
    """For ``--salvage`` (``rec``: a ``store.salvage.SalvagedRecording``): ``rec`` with its streams
    expanded from every intact grammar when they are stored only as grammars, and the names of the
    arrays (grammars, terminal table) that were lost; ``(rec, [])`` for a recording with raw streams."""
    meta = rec.meta.get(META_KEY)
    if not isinstance(meta, dict) or meta.get("keep_raw"):
        return rec, []
    lost: list[str] = []
    return ExpandedRecording(rec, lost), lost
