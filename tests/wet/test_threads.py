"""Thread order in the WET: switch records leave the value log at flush time, and the builder
orders instances of several streams by them (hand-computed cases; the golden two-thread
programs in test_golden.py are the end-to-end oracle)."""

from __future__ import annotations

import numpy as np

from wholetrace.runtime.values import INT, SWITCH_TAG, ValueLog, address, marker
from wholetrace.wet.capture import CaptureLog, StreamLog
from wholetrace.wet.decode import DEF, NS, USE, Decoded
from wholetrace.wet.threads import interleave, segment_keys


class _Writer:
    def __init__(self) -> None:
        self.arrays: dict[tuple[str, str], np.ndarray] = {}

    def set_meta(self, **items: object) -> None:
        pass

    def put_array(self, name: str, data: np.ndarray, *, key: str = "") -> None:
        self.arrays[(name, key)] = np.asarray(data).copy()

    def put_compressed_array(self, name: str, blob: bytes, dtype: str, shape: tuple, *, key: str = "") -> None:
        from wholetrace.store.schema import decompress   # the split's arrays come compressed
        self.put_array(name, np.frombuffer(decompress(blob, None, name), dtype).reshape(shape), key=key)


def test_split_stores_switches_apart() -> None:
    """A switch pair is no value record: it is stored as (record index, position, number)."""
    w = _Writer()
    log = ValueLog(w, lambda: None)  # type: ignore[arg-type,return-value]
    buf: list[int] = []
    log.on_new(3, buf.append)
    sw = marker(SWITCH_TAG, 0)
    chunk = [0, sw, 1, marker(INT, 4), 10, 1, marker(INT, 5), 11, 2, sw, 7, marker(INT, 6), 12]
    assert log.split(3, chunk).tolist() == [0, 1, 2]
    assert log.records == 3
    assert w.arrays[("wet.switch", "3.0")].tolist() == [[0, 1, 1], [2, 3, 7]]
    # a second chunk continues the record count of the stream
    assert log.split(3, [sw, 9, marker(INT, 8), 13, 5]).tolist() == [5]
    assert w.arrays[("wet.switch", "3.1")].tolist() == [[3, 3, 9]]


def test_probe_of_another_thread_writes_a_switch() -> None:
    """The first probe after another thread's writes a switch record before its own."""
    import threading

    w = _Writer()
    log = ValueLog(w, lambda: None)  # type: ignore[arg-type,return-value]
    main: list[int] = []
    other: list[int] = []
    log.on_new(0, main.append)
    value = log.probes()["value"]
    value(1, 5)

    def run() -> None:
        log.on_new(1, other.append)
        value(2, 6)
        value(3, 7)
    t = threading.Thread(target=run)
    t.start()
    t.join()
    value(4, 8)
    sw = marker(SWITCH_TAG, 0)
    assert main == [sw, 1, marker(INT, 1), 5, sw, 3, marker(INT, 4), 8]
    assert other == [sw, 2, marker(INT, 2), 6, marker(INT, 3), 7]


def test_function_probes_with_their_stream_switch_like_the_others() -> None:
    """``value-in``/``values-in`` (a function's probes, handed its stream's append ``wt.a``) write
    the same records and switches as ``value``/``values``; a None stream (a generator resumed
    by a thrown exception, before its handler fetched the stream) falls back to the look-up."""
    import threading

    w = _Writer()
    log = ValueLog(w, lambda: None)  # type: ignore[arg-type,return-value]
    main: list[int] = []
    other: list[int] = []
    log.on_new(0, main.append)
    a_main = log.by_buffer[address(main)][0]
    p = log.probes()
    value, value_in, values_in = p["value"], p["value-in"], p["values-in"]
    assert value_in(1, 5, a_main) == 5           # first probe of all: a switch
    value_in(2, 6, a_main)                      # same stream: no switch

    def run() -> None:
        log.on_new(1, other.append)
        a_other = log.by_buffer[address(other)][0]
        value_in(3, 7, a_other)
        values_in(4, a_other, 8, 9)
        value(6, 10)
        value_in(7, 11, None)
    t = threading.Thread(target=run)
    t.start()
    t.join()
    values_in(8, a_main, 12, 13)
    value_in(10, 14, None)
    sw = marker(SWITCH_TAG, 0)
    assert main == [sw, 1, marker(INT, 1), 5, marker(INT, 2), 6, sw, 3, marker(INT, 8), 12, marker(INT, 9), 13,
                    marker(INT, 10), 14]
    assert other == [sw, 2, marker(INT, 3), 7, marker(INT, 4), 8, marker(INT, 5), 9, marker(INT, 6), 10,
                     marker(INT, 7), 11]


def _decoded(i_stream: list[int], rec_inst: list[int], rec_ptr: list[int], sids: list[int],
             a_inst: list[int], a_op: list[int]) -> Decoded:
    n = len(i_stream)
    z = np.zeros(n, np.int64)
    a = np.array(a_inst, np.int64)
    return Decoded(np.arange(n, dtype=np.int64), z.copy(), z.copy(), np.array(i_stream, np.int64), z.copy(),
                   np.full(n, -1, np.int64), a, np.array(a_op, np.int64), np.arange(a.size, dtype=np.int64),
                   np.full(a.size, -1, np.int64), np.zeros((0, 2), np.int64), np.zeros((0, 3), np.int64), [], [],
                   np.array(rec_inst, np.int64), 0, rec_ptr=np.array(rec_ptr, np.int64), stream_sids=sids)


def _log(switches: dict[int, list[list[int]]]) -> CaptureLog:
    e = np.zeros(0, np.int64)
    return CaptureLog({}, {}, {sid: StreamLog(e, e, e.astype(np.uint8), e, np.array(sw, np.int64).reshape(-1, 3))
                               for sid, sw in switches.items()})


def test_main_worker_main() -> None:
    """Main runs instances 0-4, a worker 5-6.  Main's records: #0 -> 1, #1 -> 2, #2 -> 4, with
    switch 1 before #0 and switch 3 before #2; the worker's record #0 -> 5 after switch 2.
    Hand order: main 0 1 2 (up to its last record before switch 3), worker 5 6, main 3 4."""
    dec = _decoded([0, 0, 0, 0, 0, 1, 1], rec_inst=[1, 2, 4, 5], rec_ptr=[0, 3, 4], sids=[0, 1],
                   a_inst=[0, 1, 2, 3, 4, 5, 6], a_op=[DEF, USE, DEF, USE, USE, DEF, USE])
    # main's records: #0 -> inst 1, #1 -> inst 2, #2 -> inst 4 (switch 3 precedes record #2);
    # worker's record #0 -> inst 5 (switch 2 precedes it)
    log = _log({0: [[0, 0, 1], [2, 0, 3]], 1: [[0, 0, 2]]})
    key = segment_keys(dec, log)
    # main: switch 1 before record 0 -> segment from instance 0; switch 3 before record 2 ->
    # from (latest instance of records 0..1) + 1 = 3
    assert key.tolist() == [1, 1, 1, 3, 3, 2, 2]
    assert interleave(dec, log)
    # new order: main 0 1 2, worker 5 6, main 3 4
    assert dec.i_fid.tolist() == [0, 1, 2, 5, 6, 3, 4]
    assert dec.a_inst.tolist() == [0, 1, 2, 3, 4, 5, 6]          # accesses follow their instances
    assert dec.a_op.tolist() == [DEF, USE, DEF, DEF, USE, USE, USE]
    assert dec.rec_inst.tolist() == [1, 2, 6, 3]
    assert dec.calls.tolist() == [[2, 3]]                        # the worker's first instance


def test_one_stream_is_left_alone() -> None:
    dec = _decoded([0, 0, 0], rec_inst=[0, 2], rec_ptr=[0, 2], sids=[0], a_inst=[0, 1, 2], a_op=[DEF, NS, USE])
    before = dec.a_inst.copy()
    assert not interleave(dec, _log({0: [[0, 0, 1]]}))
    assert np.array_equal(dec.a_inst, before)


def test_function_probes_know_the_stream_their_functions_hold() -> None:
    """A full-mode recorder gives each stream's value-probe state the very append its trace
    probes hold (``wt.a``, from the stream look-up): ``value-in`` then appends straight to it,
    with no look-up and no second switch record."""
    from wholetrace.runtime.recorder import Recorder

    rec = Recorder(_Writer(), mode="full")
    wt_a = rec.constants["new"]()               # what a function's prologue fetches
    assert rec.constants["get"](None) is wt_a
    assert rec.values.by_buffer[address(wt_a.__self__)][0] is wt_a   # type: ignore[union-attr]
    value_in = rec.constants["value-in"]
    value_in(1, 5, wt_a)
    value_in(2, 6, wt_a)
    sw = marker(SWITCH_TAG, 0)
    assert wt_a.__self__[-8:] == [sw, 1, marker(INT, 1), 5, marker(INT, 2), 6][-8:]
    assert wt_a.__self__.count(sw) == 1
