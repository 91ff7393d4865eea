"""Value records of ``full`` mode cannot be taken for events: their markers lie below every
event (events are int32), and the flusher keeps every event code (it once took RERAISE, -4,
for the record marker)."""

from __future__ import annotations

import numpy as np

from wholetrace import events
from wholetrace.runtime.buffers import INT32_MIN
from wholetrace.runtime.values import _MARK, _MARK_MAX, INT, NONE, OBJ, SWITCH_TAG, ValueLog, marker


def test_markers_lie_below_every_event() -> None:
    """Every marker is below int32 (so below every ENTER code and count-mode operand) and the
    tag and slot come back out of it."""
    assert _MARK_MAX == max(_MARK.values()) < INT32_MIN
    assert _MARK_MAX < events.enter_code((1 << 31) - 9)
    for tag in list(_MARK):
        for slot in (0, 1, 12345, (1 << 40) - 1):
            u = -marker(tag, slot)
            assert ((u >> 40) - 1, u & ((1 << 40) - 1)) == (tag, slot)
            assert marker(tag, slot) <= _MARK_MAX


class _Writer:
    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def set_meta(self, **items: object) -> None:
        pass

    def put_array(self, name: str, data: np.ndarray, *, key: str = "") -> None:
        self.arrays[name] = np.asarray(data).copy()

    def put_compressed_array(self, name: str, blob: bytes, dtype: str, shape: tuple, *, key: str = "") -> None:
        from wholetrace.store.schema import decompress   # the split's arrays come compressed
        self.put_array(name, np.frombuffer(decompress(blob, None, name), dtype).reshape(shape), key=key)


def test_split_keeps_every_event_code() -> None:
    """A chunk holding RERAISE, EXC, LEAVE, ENTER and VAL codes keeps them all; only the records
    leave it, whatever their payloads look like (an event code, a marker-like low int)."""
    log = ValueLog(_Writer(), lambda: None)  # type: ignore[arg-type,return-value]
    buf: list = []
    log.on_new(0, buf.append)
    codes = [2, events.RERAISE, 5, events.EXC, 1, events.VAL, events.enter_code(3), 4, events.LEAVE]
    chunk = codes[:5] + [marker(INT, 3), events.RERAISE] + codes[5:7] + [marker(INT, 4), marker(OBJ, 9)] \
        + [marker(NONE, 5), 0] + codes[7:] + [marker(SWITCH_TAG, 0), 1]
    assert log.split(0, chunk).tolist() == codes
    assert log.records == 3
