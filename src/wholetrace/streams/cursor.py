"""Cursors over a compressed stream: next/prev one value at a time, seek, and bulk moves."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Iterator

import numpy as np

from wholetrace.errors import StreamError, UsageError
from wholetrace.kernels import predict as K
from wholetrace.kernels.varint import copy_run
from wholetrace.streams.predicted import status_error
from wholetrace.streams.simple import NO_KEEP

#: a buffered cursor moving over the whole of a segment of at most this many values does
#: not keep it (see BufferedCursor)
UNKEPT: Final = 4096

if TYPE_CHECKING:
    from wholetrace.streams.predicted import PredictedBody
    from wholetrace.streams.simple import Segmented


class Cursor:
    """A position ``pos`` in ``0..len``: ``next()`` returns the value at ``pos`` and moves
    right, ``prev()`` moves left and returns the value there; both raise StopIteration at
    the ends.  ``next_many(n)``/``prev_many(n)`` do up to ``n`` moves at kernel speed and
    return the values in the order visited."""

    __slots__ = ("_m", "_signed")

    def __init__(self, m: int, signed: bool) -> None:
        self._m = m
        self._signed = signed

    def __len__(self) -> int:
        return self._m

    @property
    def pos(self) -> int:
        raise NotImplementedError

    def seek(self, i: int) -> None:
        raise NotImplementedError

    def _moves(self, forward: bool, n: int) -> np.ndarray:
        raise NotImplementedError

    def _check(self, i: int) -> int:
        if type(i) is int and 0 <= i <= self._m:
            return i
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i <= self._m:
            raise UsageError(f"cursor position {i!r} is outside 0..{self._m}")
        return int(i)

    def next_many(self, n: int) -> np.ndarray:
        out = self._moves(True, n if type(n) is int and n >= 0 else max(0, int(n)))
        return out.view(np.int64) if self._signed else out

    def prev_many(self, n: int) -> np.ndarray:
        out = self._moves(False, n if type(n) is int and n >= 0 else max(0, int(n)))
        return out.view(np.int64) if self._signed else out

    def _one(self, forward: bool) -> int:
        got = self._moves(forward, 1)
        if got.shape[0] == 0:
            raise StopIteration
        return int(got.view(np.int64)[0]) if self._signed else int(got[0])

    def next(self) -> int:
        return self._one(True)

    def prev(self) -> int:
        return self._one(False)

    __next__ = next

    def __iter__(self) -> Iterator[int]:
        return self


class PredictedCursor(Cursor):
    """Walks a predictor-coded stream: every move is one bidirectional predictor step
    (no decoded buffer); entering a segment costs a walk from its park (at most about
    half a segment)."""

    __slots__ = ("_body", "_bi", "_bu", "_ws", "_st", "_buf")

    def __init__(self, body: "PredictedBody", signed: bool, pos: int = 0) -> None:
        super().__init__(body.m, signed)
        self._body = body
        self._bi, self._bu = body.bi, body.bu
        self._ws = body.work()
        self._st = np.zeros(K.N_STATE, np.int64)
        self._st[K.S_SEG] = -1
        self._buf = np.empty(1, np.uint64)
        self.seek(pos)

    @property
    def pos(self) -> int:
        self._loaded()
        return int(self._body.segs[self._st[K.S_SEG], K.G_START] + self._st[K.S_P])

    def seek(self, i: int) -> None:
        status = K.seek(self._bi, self._bu, self._ws, self._st, self._check(i))
        if status < 0:
            raise self._broken(status)

    def _broken(self, status: int) -> Exception:
        """The error for a failed kernel call; the cursor must be re-seeked before reuse."""
        self._st[K.S_SEG] = -1
        return status_error(status, f"{self._body.codec.name} stream")

    def _loaded(self) -> None:
        if self._st[K.S_SEG] < 0:
            raise StreamError(f"{self._body.codec.name} stream cursor failed earlier; seek() it first")

    def _moves(self, forward: bool, n: int) -> np.ndarray:
        if self._st[K.S_SEG] < 0:
            self._loaded()
        out = self._buf if n == 1 else np.empty(n, np.uint64)
        k = K.walk(self._bi, self._bu, self._ws, self._st, forward, n, out)
        if k < 0:
            raise self._broken(k)
        return out[:k] if k < n else out

    def state(self) -> dict[str, object]:
        """The predictor state (canonical bits of both stacks, tables, context): equal for
        equal positions whatever moves led there.  For tests and debugging."""
        self._loaded()
        fb, bb, ft, bt, cx, pay = self._body.work_views(self._ws)
        size = 1 << self._body.tbits
        fd, bd = np.zeros_like(fb), np.zeros_like(bb)
        h = np.zeros(2, np.int64)
        status = K.cursor_state(self._body.prm, self._body.segs, fb, bb, self._st, pay, fd, bd, h)
        if status < 0:
            raise self._broken(status)
        return {"segment": int(self._st[K.S_SEG]), "i": int(self._st[K.S_I]), "p": int(self._st[K.S_P]),
                "context": cx.copy(), "ftable": ft[:size].copy(), "btable": bt[:size].copy(),
                "fbits": _bits(fd, int(h[0])), "bbits": _bits(bd, int(h[1]))}


def _bits(words: np.ndarray, n: int) -> str:
    """The first ``n`` bits of a little-endian bit array as a '0'/'1' string (bit 0 first)."""
    raw = np.unpackbits(words.astype("<u8").view(np.uint8), bitorder="little")
    return "".join("1" if b else "0" for b in raw[:n])


class BufferedCursor(Cursor):
    """Cursor of the codecs without a predictor (and of short predictor streams): it decodes
    the segment it enters (into its own buffer, values going to the caller's array in the
    same pass) and reads the segment it is in from memory.  Both directions do the same
    work: a backward move fills its result from the end (a contiguous array, like a forward
    one).  A move over the whole of a short segment (at most ``UNKEPT`` values) keeps no
    buffer: decoding it again costs about what one call costs."""

    __slots__ = ("_body", "_segment", "_seg", "_vals", "_keep", "_pos")

    def __init__(self, body: "Segmented", m: int, signed: bool, segment: int, pos: int = 0) -> None:
        self._m = m  # Cursor.__init__ inlined: a whole walk of a short stream is a few µs
        self._signed = signed
        self._body = body
        self._segment = segment
        self._seg = -1
        self._vals = self._keep = NO_KEEP
        self._pos = pos if type(pos) is int and 0 <= pos <= m else self._check(pos)

    @property
    def pos(self) -> int:
        return self._pos

    def seek(self, i: int) -> None:
        self._pos = self._check(i)

    def next(self) -> int:
        pos = self._pos
        if pos < self._m and pos // self._segment == self._seg:  # in the decoded segment: no kernel call
            self._pos = pos + 1
            return self._value(pos)
        return self._one(True)

    def prev(self) -> int:
        pos = self._pos - 1
        if pos >= 0 and pos // self._segment == self._seg:
            self._pos = pos
            return self._value(pos)
        return self._one(False)

    __next__ = next

    def _value(self, pos: int) -> int:
        v = int(self._vals[pos - self._seg * self._segment])
        return v - (1 << 64) if self._signed and v >> 63 else v

    def _moves(self, forward: bool, n: int) -> np.ndarray:
        pos, m, K = self._pos, self._m, self._segment
        if forward:
            lo, hi = pos, (pos + n if pos + n < m else m)
            self._pos = hi
        else:
            lo, hi = (pos - n if pos > n else 0), pos
            self._pos = lo
        out = np.empty(hi - lo, np.uint64)
        if m <= K:  # one segment (short streams): no loop
            if hi > lo:
                self._run(0, lo, hi, m, out, 0 if forward else hi - lo - 1, 1 if forward else -1)
            return out
        k = lo
        while k < hi:  # one decoded segment at a time
            s = k // K
            base = s * K
            top = hi if hi < base + K else base + K
            self._run(s, k - base, top - base, min(K, m - base), out, k - lo if forward else hi - 1 - k,
                      1 if forward else -1)
            k = top
        return out

    def _run(self, s: int, lo: int, hi: int, n: int, out: np.ndarray, first: int, step: int) -> None:
        """Values ``lo..hi-1`` of segment ``s`` (``n`` values) to ``out[first + step * k]``."""
        if s == self._seg:
            copy_run(self._vals, lo, hi, out, first, step)
            return
        if not self._body.keeps:  # raw gives a view of its values to read from; packed nothing
            vals = self._body.fill(s, NO_KEEP, lo, hi, out, first, step)
            if vals is not None:
                self._vals, self._seg = vals, s
            return
        if hi - lo == n and n <= UNKEPT:
            self._body.fill(s, NO_KEEP, lo, hi, out, first, step)
            return
        if self._keep is NO_KEEP:
            self._keep = np.empty(min(self._m, self._segment), np.uint64)
        self._seg = -1  # until the segment is whole in the buffer
        self._vals = self._body.fill(s, self._keep, lo, hi, out, first, step)
        self._seg = s
