"""The builder's reader thread: frames off the pipe into the queue, event chunks in uninitialised (np.empty) buffers."""

from __future__ import annotations

import io

import numpy as np

from wholetrace.wpp.builder import END_FRAME, FILE_FRAME, FRAME, ChunkQueue, read_frames


class Trickle(io.RawIOBase):
    """A pipe that hands out at most ``step`` bytes a read (``readinto`` must be resumed)."""

    def __init__(self, data: bytes, step: int) -> None:
        self._data, self._pos, self._step = data, 0, step

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[no-untyped-def, override]
        n = min(len(b), self._step, len(self._data) - self._pos)
        b[:n] = self._data[self._pos : self._pos + n]
        self._pos += n
        return n


def frames(chunks: list[tuple[int, np.ndarray]], payload: bytes, end: bool = True) -> bytes:
    out = [FRAME.pack(FILE_FRAME, len(payload)) + payload]
    out += [FRAME.pack(sid, len(c)) + c.astype("<i4").tobytes() for sid, c in chunks]
    if end:
        out.append(FRAME.pack(END_FRAME, 0))
    return b"".join(out)


def drain(q: ChunkQueue) -> list[tuple[int, object]]:
    got: list[tuple[int, object]] = []
    while (item := q.get()) is not None:
        sid, chunk, spilled = item
        if sid != FILE_FRAME:
            assert chunk.dtype == np.int32 and chunk.flags.writeable and chunk.flags.c_contiguous
            got.append((sid, chunk.copy()))
            q.done(chunk, spilled)
        else:
            got.append((sid, bytes(chunk)))
    return got


def test_chunks_arrive_whole_writeable_and_in_order() -> None:
    rng = np.random.default_rng(16)
    chunks = [(int(rng.integers(0, 3)), rng.integers(-(2**31), 2**31 - 1, int(n), dtype=np.int64).astype(np.int32))
              for n in rng.integers(0, 3000, 40)]
    payload = bytes(range(256)) * 3
    for step in (1, 7, 4096, 1 << 20):     # reads cut anywhere, a frame's head included
        q = ChunkQueue(1 << 30)
        read_frames(Trickle(frames(chunks, payload), step), q)
        got = drain(q)
        assert got[0] == (FILE_FRAME, payload)
        want = [(s, c) for s, c in chunks if len(c)]   # empty chunks are not queued
        assert [s for s, _ in got[1:]] == [s for s, _ in want]
        for (_, a), (_, b) in zip(got[1:], want):
            assert np.array_equal(a, b)


def test_spilled_chunks_read_back_equal() -> None:
    chunks = [(0, np.arange(i * 100, i * 100 + 97, dtype=np.int32)) for i in range(30)]
    q = ChunkQueue(150)                     # most chunks go to the spill file
    read_frames(Trickle(frames(chunks, b"x"), 333), q)
    got = drain(q)
    assert q.spilled_chunks > 0
    assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(got[1:], chunks))


def test_a_pipe_that_ends_mid_chunk_queues_what_was_whole() -> None:
    chunks = [(1, np.arange(50, dtype=np.int32)), (1, np.arange(60, dtype=np.int32))]
    data = frames(chunks, b"p", end=False)
    q = ChunkQueue(1 << 20)
    read_frames(Trickle(data[:-20], 64), q)   # the recorded process died amid the second chunk
    assert q.ended
    got = drain(q)
    assert len(got) == 2 and np.array_equal(got[1][1], chunks[0][1])
