"""The builder's queue on ``_thread``, wave 19 (no ``threading``: test_builder_numpy18 checks the process loads none)."""

from __future__ import annotations

import time

import numpy as np


def test_the_queue_hands_over_every_chunk_in_order_across_threads() -> None:
    """A producer thread puts chunks (some after the consumer waits, some spilled past the bound)
    while this thread gets them: every chunk arrives once, in order, with its events (the oracle:
    the list put), and ``get`` gives None only after ``end``."""
    import threading

    from wholetrace.wpp.builder import ChunkQueue

    q = ChunkQueue(bound=40)
    chunks = [np.arange(i, i + 1 + i % 7, dtype=np.int32) for i in range(200)]

    def produce() -> None:
        for i, c in enumerate(chunks):
            if i % 50 == 0:
                time.sleep(0.01)      # the consumer is waiting in get() by then
            q.put(i, bytearray(c.tobytes()))
        q.end()

    t = threading.Thread(target=produce)
    t.start()
    got = []
    while (item := q.get()) is not None:
        sid, arr, spilled = item
        got.append((sid, arr.tolist()))
        q.done(arr, spilled)
    t.join()
    assert got == [(i, c.tolist()) for i, c in enumerate(chunks)]
    assert q.spilled_chunks > 0 and q.backlog == 0 and q.in_memory == 0
