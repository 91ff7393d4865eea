"""The recorder-to-builder handoff (wave 12): partial writes, the builder's idle time, meta ``wpp.feed`` against the raw events."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import threading
import time
import types
from array import array
from pathlib import Path

import numpy as np
import pytest

from wholetrace.store import Recording
from wholetrace.wpp import online
from wholetrace.wpp.builder import ChunkQueue
from wtutil import ENV

FRAME = struct.Struct("<ii")


def _frames(data: bytes) -> list[tuple[int, list[int]]]:
    """Parse the builder's input format independently: <sid:int32><n:int32> then n int32."""
    out, pos = [], 0
    while pos < len(data):
        sid, n = FRAME.unpack_from(data, pos)
        pos += FRAME.size
        if sid == -1:
            out.append((sid, []))
            continue
        size = n if sid == -2 else 4 * n
        body = data[pos:pos + size]
        pos += size
        out.append((sid, list(struct.unpack(f"<{n}i", body)) if sid >= 0 else list(body)))
    return out


class _Writer:
    closed = False

    def close(self, **how: object) -> None:
        self.closed = True


def _fake_process(fd: int, progress: object = None) -> types.SimpleNamespace:
    """A started builder's stand-in: chunks go to ``fd``, its result is empty (EOF)."""
    r, w = os.pipe()
    os.close(w)
    return types.SimpleNamespace(mode="blocks", lookahead=False, queue_events=10, spawned=time.time(),
                                 stderr=open(os.devnull, "w+b"), fd=fd, out=os.fdopen(r, "rb"), reap=lambda: None,
                                 progress=progress)


@pytest.mark.parametrize("step", [1, 3, 8, 1000, None])
def test_frames_survive_partial_writes(monkeypatch: pytest.MonkeyPatch, step: int | None) -> None:
    """``_send`` writes a frame's head and events in one writev; a system call that takes only
    ``step`` bytes at a time must still deliver every byte, in order."""
    r, w = os.pipe()
    if step is not None:
        real_writev, real_write = os.writev, os.write

        def writev(fd: int, bufs: list[memoryview]) -> int:
            flat = b"".join(bytes(b) for b in bufs)
            return real_write(fd, flat[:step])

        monkeypatch.setattr(online.os, "writev", writev)
        monkeypatch.setattr(online.os, "write", lambda fd, b: real_write(fd, bytes(b)[:step]))
    wpp = online.OnlineWpp(_Writer(), "blocks", process=_fake_process(w))   # type: ignore[arg-type]
    rng = np.random.default_rng(step or 0)
    chunks = [(int(rng.integers(0, 3)), [int(x) for x in rng.integers(-9, 1 << 30, int(rng.integers(1, 300)))])
              for _ in range(20)]
    got = bytearray()
    reader = threading.Thread(target=lambda: [got.extend(b) for b in iter(lambda: os.read(r, 1 << 16), b"")])
    reader.start()
    for sid, ev in chunks:
        wpp.append_events(sid, array("i", ev))
    wpp.append_events(0, array("i"))        # empty: no frame
    with wpp._lock:
        wpp._send(FRAME.pack(-1, 0))
    os.close(w)
    reader.join()
    os.close(r)
    assert _frames(bytes(got)) == chunks + [(-1, [])]
    assert wpp.submitted == sum(len(ev) for _, ev in chunks)
    assert wpp._sent[0] == len(chunks)


def test_idle_time_is_bracketed_by_the_wait() -> None:
    q = ChunkQueue(100)
    q.idle_from = time.perf_counter()
    t0 = time.perf_counter()
    threading.Timer(0.05, q.put, args=(3, bytearray(8))).start()
    sid, chunk, spilled = q.get()
    waited = time.perf_counter() - t0
    assert (sid, len(chunk), spilled) == (3, 2, False)
    assert 0 < q.idle <= waited
    q.done(chunk, spilled)
    before = q.idle
    q.put(1, bytearray(4))                 # a chunk already there: no wait
    assert q.get() is not None and q.idle == before
    assert [n for _, n in q.arrivals] == [2, 1]


def test_idle_before_ready_is_not_counted() -> None:
    q = ChunkQueue(100)                    # idle_from unset: the builder is not ready yet
    threading.Timer(0.02, q.put, args=(0, bytearray(4))).start()
    assert q.get() is not None and q.idle == 0.0


PROGRAM = """\
import threading

def work(k):
    t, i = 0, 0
    while i < k:
        t = t + i if i & 1 else t - 1
        i += 1
    return t

ts = [threading.Thread(target=work, args=(150000,)) for _ in range(2)]
for t in ts:
    t.start()
print(work(450000))
for t in ts:
    t.join()
"""


@pytest.mark.parametrize("flush", ["0.001", "0.05"])
def test_feed_meta_accounts_for_every_event(tmp_path: Path, flush: str) -> None:
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    out = tmp_path / "p.wt"
    env = dict(ENV, WHOLETRACE_WPP_DEBUG="1", WHOLETRACE_WPP_FLUSH=flush)
    proc = subprocess.run([sys.executable, "-m", "wholetrace.cli", "record", "--mode", "path", "--wpp", "--keep-raw",
                           "-q", "-o", str(out), str(script)], capture_output=True, text=True, env=env, timeout=300,
                          cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == subprocess.run([sys.executable, str(script)], capture_output=True, text=True).stdout
    with Recording(out) as rec:
        wpp = rec.meta["wpp"]
        raw = sum(len(rec.events(st.sid)) for st in rec.streams())
    feed = wpp["feed"]
    assert feed["interval"] == float(flush) and feed["progress"] is True and feed["progress_mapped"] is True
    dbg = feed["debug"]
    assert raw == wpp["events"] == sum(n for _, n, _, _ in dbg)
    assert feed["chunks"] == feed["chunks_sent"] == len(dbg)
    assert feed["chunk_events"] == [min(n for _, n, _, _ in dbg), sorted(n for _, n, _, _ in dbg)[len(dbg) // 2],
                                    max(n for _, n, _, _ in dbg)]
    arrivals = [a for a, _, _, _ in dbg]
    assert arrivals == sorted(arrivals)
    for (a, _, s, e), (_, _, s2, _) in zip(dbg, dbg[1:] + [(0, 0, float("inf"), 0)]):
        assert a <= s <= e <= s2 + 1e-4        # built after it came, one at a time, in order
    assert 0 <= feed["idle_seconds"] <= wpp["timeline"]["end"]
    # the flusher's own flushes: at 1 ms the program (~0.15 s recorded, by its event count) runs
    # a hundred intervals; at 50 ms a few, and a late wake-up may find it gone (then stop() flushes)
    assert feed["flushes"] >= (1 if flush == "0.001" else 0) and feed["busy_flushes"] <= feed["flushes"]
    assert feed["flush_seconds"] >= 0 and feed["convert_seconds"] >= 0 and feed["chunks_sent"] >= 1
    assert wpp["backlog_at_end_events"] <= wpp["events"]
