"""The builder process without ``threading``, wave 19: its reader thread and queue condition on ``_thread``."""

from __future__ import annotations

import marshal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from wtutil import ENV

SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_a_builder_process_builds_without_threading_and_datetime() -> None:
    """The builder, started as ``wpp.spawn`` starts it, on a few events: at its exit neither
    ``threading`` nor ``datetime`` is loaded, and the result is a built grammar."""
    from test_builder_startup11 import _events, _frames, _path
    from wholetrace.wpp.spawn import _CODE

    code = ("import os, sys\nreal = os._exit\n"
            "def _exit(c):\n    sys.stderr.write('LOADED %s\\n' % ','.join(m for m in ('threading', 'datetime')"
            " if m in sys.modules))\n    sys.stderr.flush(); real(c)\n"
            "os._exit = _exit\n" + _CODE.replace("; ", "\n"))
    p = subprocess.run([sys.executable, "-S", "-c", code, "blocks", "1", "100000", "0", *_path()],
                       input=_frames(_events(4)), capture_output=True, check=True,
                       env={**ENV, "PYTHONPATH": SRC, "OPENBLAS_NUM_THREADS": "1"})
    result = marshal.loads(p.stdout)
    assert "error" not in result
    if result["stats"]["kernels"] != "aot":
        pytest.skip("no compiled kernels: numba imports threading")
    loaded = p.stderr.decode().split("LOADED ", 1)[1].split("\n")[0]
    assert (loaded, result["stats"]["received_events"] > 0, len(result["grammars"]) > 0) == ("", True, True)


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
