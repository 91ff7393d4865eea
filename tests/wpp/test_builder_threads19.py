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


def test_an_interrupted_wait_leaves_the_queue_usable() -> None:
    """A KeyboardInterrupt in the build loop's wait (``_Condition.wait``) removes its waiter and
    leaves the lock free: the next put/get pair works (review19b LOW-1)."""
    import subprocess
    import sys

    from wtutil import ENV

    code = """if True:
        import os, signal, _thread, time
        from wholetrace.wpp.builder import ChunkQueue
        q = ChunkQueue(bound=100)
        signal.signal(signal.SIGINT, signal.default_int_handler)   # a pytest-xdist worker's children ignore it
        def later():
            time.sleep(0.3)
            os.kill(os.getpid(), signal.SIGINT)
        _thread.start_new_thread(later, ())
        try:
            q.get()
        except KeyboardInterrupt:
            print("interrupted", len(q._cond._waiters), q._cond._lock.locked())
        q.put(1, bytearray((7).to_bytes(4, "little") * 3))
        q.end()
        sid, events, _ = q.get()
        print(sid, bytes(events).hex(), q.get())
    """
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == "interrupted 0 False", proc.stdout
    assert lines[1].startswith("1 070000000700000007000000 "), proc.stdout
