"""Reads the raw WET capture log of a ``full`` recording: records, slots, tokens, contents, objects.

The log format is described in docs/design.md ("WET capture log"); this module only
gathers it (per stream, chunks concatenated) and renders tokens.  Dependences, queries and
slicing are built on it by later stages.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wholetrace.errors import StoreError, UsageError
from wholetrace.runtime.wetlayout import LAYOUT, unpack_chunk, unpack_objects
from wholetrace.runtime.values import BIGINT, BOOL, BYTES, COMPLEX, FLOAT, INT, NONE, OBJ, STR, content_hash


@dataclass(frozen=True)
class SlotInfo:
    """A value slot: the function and statement it belongs to and what it records."""

    fid: int
    sid: int
    kind: str       # "def" | "obj" | "key"
    what: str
    op: str
    line: int
    scope: str
    key: int | str | None = None    # "key" of a literal subscript: the key (no probe records it)


@dataclass
class StreamLog:
    """The records of one stream, in execution order."""

    pos: np.ndarray      # int64: index in the stream's events of the event that follows the record
    slot: np.ndarray     # int64: global slot id
    tag: np.ndarray      # uint8: token tag
    val: np.ndarray      # int64: token payload
    switch: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.int64))
    # (m, 3) int64 thread switches: index of the record that follows, event position, number


@dataclass
class CaptureLog:
    """Everything ``full`` mode stored besides the ``blocks`` trace."""

    slots: dict[int, SlotInfo]
    facts: dict[int, dict[str, Any]]                 # fid -> {statement id: {"uses", "defs", "kills"}}
    streams: dict[int, StreamLog]
    contents: dict[int, tuple[int, bytes]] = field(default_factory=dict)
    object_types: dict[int, str] = field(default_factory=dict)
    parents: dict[int, int] = field(default_factory=dict)   # serial -> class its attribute reads fall back to

    def render(self, tag: int, val: int, limit: int = 80) -> str:
        """A token as the ``values`` query would show it: ``repr`` of scalars, ``<type #serial>`` else."""
        if tag == NONE:
            return "None"
        if tag == BOOL:
            return repr(bool(val))
        if tag == INT:
            return repr(int(val))
        if tag == FLOAT:
            return repr(struct.unpack("<d", struct.pack("<q", int(val)))[0])
        if tag == OBJ:
            return f"<{self.object_types.get(int(val), 'object').rsplit('.', 1)[-1]} #{int(val)}>"
        t, data = self.contents.get(int(val), (tag, b""))
        text = {STR: lambda: repr(data.decode("utf-8", "surrogatepass")), BYTES: lambda: repr(data),
                BIGINT: lambda: data.decode(), COMPLEX: lambda: data.decode()}[t]()
        return text if len(text) <= limit else text[: limit - 3] + "..."


def load(rec: Any) -> CaptureLog:
    """The capture log of an open recording (``store.open_recording``)."""
    if rec.meta.get("mode") != "full":
        raise UsageError(f"{rec.path}: not a full-mode recording (record --mode full)")
    slots: dict[int, SlotInfo] = {}
    facts: dict[int, dict[str, Any]] = {}
    for fn in rec.functions():
        plan = fn.cfg.get("plan", {})
        wet = plan.get("wet")
        if wet is None:
            continue
        base = plan["counter_base"]
        for j, row in enumerate(wet["slots"]):
            slots[base + j] = SlotInfo(fn.fid, *row)
        facts[fn.fid] = wet["stmts"]
    streams: dict[int, StreamLog] = {}
    layout = rec.meta.get("wet_layout", 1)
    stored = ("pos", "slot", "tag", "ref", "val") if layout == LAYOUT else ("pos", "slot", "tag", "val")
    for st in rec.streams():
        parts: dict[str, list[np.ndarray]] = {"pos": [], "slot": [], "tag": [], "val": []}
        switches = []
        seq = 0
        while True:
            got = {k: rec.get_array(f"wet.{k}", f"{st.sid}.{seq}") for k in stored}
            if got["pos"] is None:
                break
            sw = rec.get_array("wet.switch", f"{st.sid}.{seq}")
            if sw is not None:
                if sw.ndim != 2 or sw.shape[1] != 3:
                    raise StoreError(f"{rec.path}: damaged full-mode recording (switch chunk {st.sid}.{seq})")
                switches.append(sw.astype(np.int64))
            if layout == LAYOUT:
                if any(v is None for v in got.values()):
                    raise StoreError(f"{rec.path}: damaged full-mode recording (value log chunk {st.sid}.{seq})")
                try:
                    got = unpack_chunk(got)
                except ValueError:
                    raise StoreError(f"{rec.path}: damaged full-mode recording (value log chunk {st.sid}.{seq})") \
                        from None
            for k, v in got.items():
                parts[k].append(v)
            seq += 1
        dtypes = {"pos": np.int64, "slot": np.int64, "tag": np.uint8, "val": np.int64}
        streams[st.sid] = StreamLog(**{k: np.concatenate(v) if v else np.zeros(0, dtypes[k])
                                       for k, v in parts.items()},
                                    switch=np.concatenate(switches) if switches else np.zeros((0, 3), np.int64))
    log = CaptureLog(slots, facts, streams)
    hashes = rec.get_array("wet.content.hash")
    if hashes is not None:
        tags, sizes, data = (rec.get_array(f"wet.content.{k}") for k in ("tag", "size", "data"))
        raw = data.tobytes()
        ends = np.cumsum(sizes)
        for h, t, e, s in zip(hashes.tolist(), tags.tolist(), ends.tolist(), sizes.tolist()):
            log.contents[h] = (t, raw[e - s:e])
    _static_keys(log)
    objects = rec.get_array("wet.objects")
    if objects is not None and layout == LAYOUT:
        try:
            objects = unpack_objects(objects)
        except ValueError:
            raise StoreError(f"{rec.path}: damaged full-mode recording (object table)") from None
    names = rec.meta.get("wet_types", [])
    if objects is not None:
        log.object_types = {int(s): names[int(t)] for s, t in objects.reshape(-1, 2).tolist()}
    parents = rec.get_array("wet.parents")                  # absent before class links were recorded
    if parents is not None:
        if parents.size % 2:
            raise StoreError(f"{rec.path}: damaged full-mode recording (class links)")
        log.parents = {int(s): int(p) for s, p in parents.reshape(-1, 2).tolist()}
    return log


def _static_keys(log: CaptureLog) -> None:
    """Add the record of every literal subscript key (slot ``k``, no probe) right after the
    record of its object (slot ``k - 1``): as a probe would have, with nothing between them."""
    keyed = {g: s for g, s in log.slots.items() if s.key is not None and s.kind == "key"}
    if not keyed:
        return
    n = max(log.slots) + 1
    tag_of = np.zeros(n, np.uint8)
    val_of = np.zeros(n, np.int64)
    has = np.zeros(n, bool)
    for g, s in keyed.items():
        if isinstance(s.key, str):
            data = s.key.encode("utf-8", "surrogatepass")
            h = content_hash(bytes([STR]) + data)
            log.contents.setdefault(h, (STR, data))
            tag_of[g], val_of[g] = STR, h
        else:
            tag_of[g], val_of[g] = INT, int(s.key)  # type: ignore[arg-type]
        has[g - 1] = True
    for sid, sl in log.streams.items():
        at = np.flatnonzero(has[sl.slot])
        if at.size == 0:
            continue
        key = sl.slot[at] + 1
        switch = sl.switch.copy()
        switch[:, 0] += np.searchsorted(at, switch[:, 0], side="left")   # records inserted before each
        log.streams[sid] = StreamLog(np.insert(sl.pos, at + 1, sl.pos[at]), np.insert(sl.slot, at + 1, key),
                                     np.insert(sl.tag, at + 1, tag_of[key]), np.insert(sl.val, at + 1, val_of[key]),
                                     switch)


def log_bytes(rec: Any) -> tuple[int, int]:
    """(raw, stored) bytes of the capture log of an open recording (events not included)."""
    raw = int(rec.meta.get("wet_raw_bytes", 0))
    row = rec._db.execute("SELECT coalesce(sum(length(blob)), 0) FROM arrays WHERE name LIKE 'wet.%'").fetchone()
    return raw, int(row[0])
