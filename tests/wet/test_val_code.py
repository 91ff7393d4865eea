"""The value-record marker of ``full`` mode has a code of its own (it was -4 = ``RERAISE``)."""

from __future__ import annotations

from array import array

import numpy as np

from wholetrace import events
from wholetrace.runtime.values import VAL, ValueLog


def test_val_is_no_other_event_code() -> None:
    """VAL differs from every other negative code of events.py, from every ENTER code and from
    every encoded count-mode operand (``arg_code``)."""
    codes = {name: v for name, v in vars(events).items()
             if name.isupper() and isinstance(v, int) and v < 0 and name != "VAL"}
    assert VAL == events.VAL
    assert VAL not in codes.values(), codes
    assert VAL > events.enter_code(0)            # ENTER f is at or below -ENTER_BASE
    assert VAL > events.arg_code(0)              # count-mode operands likewise
    assert VAL != events.RERAISE


class _Writer:
    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def set_meta(self, **items: object) -> None:
        pass

    def put_array(self, name: str, data: np.ndarray, *, key: str = "") -> None:
        self.arrays[name] = np.asarray(data).copy()


def test_split_keeps_reraise_events() -> None:
    """A chunk holding RERAISE records keeps them; only the VAL markers leave it."""
    log = ValueLog(_Writer(), lambda: None)  # type: ignore[arg-type,return-value]
    log.lists[0] = [3, 7]
    log.seq[0] = log.cf_done[0] = 0
    chunk = array("i", [2, events.RERAISE, 5, 1, VAL, 4, events.LEAVE])
    assert list(log.split(0, chunk)) == [2, events.RERAISE, 5, 1, 4, events.LEAVE]
    assert log.records == 1
