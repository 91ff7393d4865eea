"""The value log's flusher side without numpy: a chunk's int64 image, side payloads, contents and objects, split by the server.

The flusher thread turns the first ``n`` items of a stream's event list into one int64 image
(``array('q')`` per piece; ints beyond 64 bits found by bit length and sent apart), converts the
stream's side list into int64 payloads (float bits; content hashes of str, bytes, complex,
hashed once per distinct value), and hands these to the split server (``runtime.splitserver``),
which finds the records with numpy and returns the events and the stored arrays, compressed.
Without a usable server the same split runs in-process (``runtime.splitcore``).  Nothing here
imports a module the program could see (docs/design.md, "Full mode's split server, wave 18").
"""

from __future__ import annotations

import os
import sys
import time

from wholetrace.store.cmods import ArrayType as array

#: New arrays are slices of these: ``array()`` is an audit event, which a program's hook would see.
_Q, _D, _I = array("q"), array("d"), array("i")

TYPE_CHECKING = False
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any

#: Items converted at a time: the flusher never copies a whole chunk into one Python list (the
#: program's young-generation collections would traverse it item by item while it lives).
_PIECE = 1 << 16
_I64 = 1 << 63


class Flushing:
    """``ValueLog``'s flusher side (a mixin: the state is ``ValueLog.__init__``'s)."""

    server: Any = None
    asked: Any = None          # a fork child's request for a server of its own (``prepare``)
    pure_until = 0.0           # a fork child without numpy splits in Python until then (``prepare``)
    parts: str | None = None   # the root's parts directory, swept of fork children's FIFOs at the end

    def split(self, sid: int, raw: list[Any], n: int | None = None) -> Any:
        """Take the value records out of one chunk of stream ``sid``'s event list (events and
        records as the probes appended them), store them as one log chunk, and return the
        events alone (an int32 ``array``).  With ``n``, ``raw`` is the stream's live list: its
        first ``n`` items are the chunk, and they are deleted from it."""
        from wholetrace.errors import StoreError

        carried = self.carry.pop(sid, None) or []   # type: ignore[attr-defined]
        live = n is not None
        n = len(raw) if n is None else n
        try:
            image, big = _image(carried, raw, n)
        except (TypeError, ValueError) as exc:
            raise StoreError(f"a probe recorded a value that is no event ({exc})") from None
        finally:
            if live:
                del raw[:n]
        bigs = _Q[:]
        for at, x in big:
            bigs.append(at)
            bigs.append(self._content(x, _BIGINT))   # type: ignore[attr-defined]
        side = self._side_payloads(sid)
        done, rec_done = self.cf_done.get(sid, 0), self.rec_done.get(sid, 0)   # type: ignore[attr-defined]
        request = ("split", _le(image), done, rec_done, _le(side), _le(bigs))
        reply = self._served(request)
        self.splits[reply is None] += 1                # type: ignore[attr-defined]
        if reply is None:
            reply = self._in_process(request)
        if reply[0] != "ok":
            raise StoreError(reply[1])
        events_image, carry, used, k, stored = reply[1:]
        if carry is not None:
            self.carry[sid] = [carry]                  # type: ignore[attr-defined]
        events = _I[:]
        events.frombytes(events_image)
        if _BIG_ENDIAN:                                # pragma: no cover
            events.byteswap()
        self.cf_done[sid] = done + len(events)          # type: ignore[attr-defined]
        if stored is None:
            return events
        seq = self.seq[sid]                            # type: ignore[attr-defined]
        self.seq[sid] = seq + 1                        # type: ignore[attr-defined]
        key = f"{sid}.{seq}"
        if not self.layout_marked:                     # type: ignore[attr-defined]  # before the first chunk
            self.writer.set_meta(wet_layout=LAYOUT)    # type: ignore[attr-defined]
            self.layout_marked = True
        if used:
            del self.lists[sid][:used]                 # type: ignore[attr-defined]
            del self.side_done[sid][:used]             # type: ignore[attr-defined]
        self.rec_done[sid] = rec_done + k              # type: ignore[attr-defined]
        self._objects()                                # type: ignore[attr-defined]
        for name, dtype, shape, blob in stored:
            self.writer.put_compressed_array(name, blob, dtype, tuple(shape), key=key)   # type: ignore[attr-defined]
        self.records += k                              # type: ignore[attr-defined]
        self.raw_bytes += 25 * k   # type: ignore[attr-defined]  # pos, slot, val int64 and the tag byte
        return events

    def prepare(self) -> None:
        """A fork child's flusher, before its first wait (its copies of the server's pipes are its
        parent's): ask for a split server of its own (``splitserver.ask``); until it is joined, or
        for ``PURE_SECONDS`` after the fork where there is none, the child splits in Python
        (``splitpure``, ``forked``): never numpy imported inside a flush, which a child ending
        soon after would lose, rows and all."""
        from wholetrace.runtime import splitserver
        if self.server is not None:
            self.asked = splitserver.ask(self.server, os.path.dirname(self.writer.path))   # type: ignore[attr-defined]

    def _served(self, request: tuple[Any, ...]) -> Any:
        """The server's reply to ``request``, or None (no usable server)."""
        asked = self.asked
        if asked is not None:                          # a fork child's own server, once joined
            own = asked.join()
            if own is not False:
                self.asked = None
                if own is not None:
                    self.server = own
        return self.server.call(request) if self.server is not None else None

    def _in_process(self, request: tuple[Any, ...]) -> Any:
        """The reply of the split in this process: in Python while a fork child waits for its own
        server or has just started without one (unless numpy is imported already), else numpy's."""
        if self.asked is not None or ("numpy" not in sys.modules and time.monotonic() < self.pure_until):
            from wholetrace.runtime import splitpure
            return splitpure.handle(request)
        from wholetrace.runtime import splitcore
        return splitcore.handle(request)

    def _side_payloads(self, sid: int) -> Any:
        """The int64 payloads of stream ``sid``'s side list from its start (float bits, content
        hashes): those converted by earlier flushes and not used yet, then the new ones."""
        side = self.lists[sid]                         # type: ignore[attr-defined]
        done = self.side_done.get(sid)                 # type: ignore[attr-defined]
        if done is None:
            done = self.side_done[sid] = _Q[:]         # type: ignore[attr-defined]
        new = side[len(done):]                         # probes may append meanwhile: a snapshot
        if not new:
            return done
        floats = _D[:]
        try:
            floats.fromlist(new)                       # all floats (array('d') takes no str, complex)
            done.frombytes(floats.tobytes())
            return done
        except TypeError:
            pass
        floats.fromlist([x if type(x) is float else 0.0 for x in new])
        bits = _Q[:]
        bits.frombytes(floats.tobytes())
        memo = self.memo                               # type: ignore[attr-defined]
        for j, x in enumerate(new):
            t = type(x)
            if t is float:
                continue
            tg = _TAG[t]
            h = memo[tg].get(x) if tg != _COMPLEX else None   # complex: 0j == -0j, reprs differ
            if h is None:
                h = self._content(x, tg)               # type: ignore[attr-defined]
            bits[j] = h
        done.extend(bits)
        return done

    def finish(self) -> None:
        """Store the distinct contents, the object table and the log's totals."""
        from wholetrace.errors import StoreError

        self._objects()                                # type: ignore[attr-defined]
        items = sorted(self.contents.items())          # type: ignore[attr-defined]
        hashes = _Q[:]
        hashes.fromlist([h for h, _ in items])
        tags = bytes([t for _, (t, _d) in items])
        sizes = _Q[:]
        sizes.fromlist([len(d) for _, (_t, d) in items])
        data = b"".join(d for _, (_t, d) in items)
        w = self.writer                                # type: ignore[attr-defined]
        w.put_array("wet.content.hash", hashes)
        w.put_array("wet.content.tag", tags)
        w.put_array("wet.content.size", sizes)
        w.put_array("wet.content.data", data)
        request = ("objects", _le(self.objects))       # type: ignore[attr-defined]
        reply = self._served(request)
        if reply is None:
            reply = self._in_process(request)
        if reply[0] != "ok":                           # pragma: no cover - objects always pack
            raise StoreError(reply[1])
        name, dtype, shape, blob = reply[1:]
        w.put_compressed_array(name, blob, dtype, tuple(shape))
        parents = self.parents                         # type: ignore[attr-defined]
        w.put_array("wet.parents", parents, shape=(len(parents) // 2, 2))
        w.set_meta(wet_types=self.type_names, wet_records=self.records,   # type: ignore[attr-defined]
                   wet_raw_bytes=self.raw_bytes + 17 * len(hashes) + len(data)   # type: ignore[attr-defined]
                   + 8 * len(self.objects) + 8 * len(parents),   # type: ignore[attr-defined]
                   wet_splits=list(self.splits))   # type: ignore[attr-defined]  # chunks split by the server, in-process
        if self.server is not None:
            self.server.close()
        if self.parts is not None:                     # type: ignore[attr-defined]
            from wholetrace.runtime import splitserver
            splitserver.sweep(self.parts)              # type: ignore[attr-defined]
        self.pins.clear()                              # type: ignore[attr-defined]
        self.loose.clear()                             # type: ignore[attr-defined]
        self.refs.clear()                              # type: ignore[attr-defined]
        self.serials.clear()                           # type: ignore[attr-defined]


#: A fork child with no server of its own and no numpy splits in Python for this long (``prepare``).
PURE_SECONDS = 5.0
_BIG_ENDIAN = sys.byteorder != "little"
# runtime.values' tags (that module imports this one; tests/wet/test_split_server18.py keeps them equal)
_STR, _BYTES, _BIGINT, _COMPLEX = 4, 5, 6, 7
_TAG = {str: _STR, bytes: _BYTES, complex: _COMPLEX}
#: ``wetlayout.LAYOUT`` (that module imports numpy; a test keeps them equal): meta ``wet_layout``
LAYOUT = 2


def _le(a: Any) -> Any:
    """An ``array('q')`` whose buffer holds its items little-endian (the array itself here)."""
    if _BIG_ENDIAN:                                    # pragma: no cover
        a = a[:]
        a.byteswap()
    return a


def _image(carried: list[int], raw: list[Any], n: int) -> tuple[Any, list[tuple[int, int]]]:
    """``carried`` then the first ``n`` items of ``raw`` (ints) as one ``array('q')``, with every
    int beyond 64 bits replaced by 0, and those ints with their index (TypeError/ValueError: an
    item is no int)."""
    out = _Q[:]
    big: list[tuple[int, int]] = []
    if carried:
        _put(out, list(carried), big)
    for s in range(0, n, _PIECE):
        _put(out, raw[s:min(n, s + _PIECE)], big)
    return out, big


def _put(out: Any, part: list[Any], big: list[tuple[int, int]]) -> None:
    """Append one piece to ``out``; an int beyond 64 bits (``OverflowError``) is found by its
    bit length (one C pass over the piece), kept in ``big`` and stored as 0."""
    at = len(out)
    try:
        out.fromlist(part)                             # (all or nothing)
        return
    except OverflowError:
        pass
    for j, b in enumerate(map(int.bit_length, part)):
        if b >= 64:                                    # -2**63 has 64 bits and fits
            x = part[j]
            if not -_I64 <= x < _I64:
                big.append((at + j, x))
                part[j] = 0
    out.fromlist(part)
