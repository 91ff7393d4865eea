"""One time order over several threads: instances and accesses renumbered by the recorded thread switches.

The value probes append a *switch* record (``runtime.values.SWITCH``: a number from one
counter of the recording) whenever the value list they append to belongs to another thread
than the previous probe's; the capture log keeps them per stream (``StreamLog.switch``).  A
switch cuts its stream into *segments*: the instances started after the stream's last record
before the switch, up to its next switch.  Segments of all streams are ordered by their
numbers (the ones before a stream's first switch come first), and within a segment by time;
instance ids are renumbered in that order and the access log is reordered to match, so
``kernels/wetdeps.py`` sees one interleaving of the threads' reads and writes (Zhang and
Gupta's WET is single-threaded; this is the spec's "record per thread, document what is
approximate").

Approximate: a switch is seen at the next value record only, so statements a thread ran
between its last record and the switch (those without records: conditions, calls of C
functions without attribute/subscript operands) are placed after the switch, and a thread
that runs without records in between is not seen to have run at all.  Exact for one thread
(nothing is renumbered).

A thread's first instance has no caller in its own stream: it gets a call edge from the
instance that ran just before it in this order, in another thread (usually the ``start()``
call; an approximation when several threads start at once).
"""

from __future__ import annotations

import numpy as np

from wholetrace.wet.capture import CaptureLog
from wholetrace.wet.decode import NS, Decoded


def segment_keys(dec: Decoded, log: CaptureLog) -> np.ndarray:
    """The switch number of the segment each instance belongs to (0 before a stream's first switch)."""
    n = dec.i_fid.size
    key = np.zeros(n, np.int64)
    sids = dec.stream_sids
    ptr = dec.rec_ptr
    lo = 0
    for s, sid in enumerate(sids):
        hi = lo + int(np.count_nonzero(dec.i_stream == sid))
        sw = log.streams[sid].switch
        if sw.shape[0] and hi > lo:
            ri = dec.rec_inst[ptr[s]:ptr[s + 1]]
            runmax = np.maximum.accumulate(np.maximum(ri, lo - 1)) if ri.size else ri
            at = np.clip(sw[:, 0], 0, ri.size)
            starts = np.where(at > 0, runmax[np.maximum(at - 1, 0)] + 1 if ri.size else lo, lo)
            starts = np.clip(starts, lo, hi)
            seg = np.searchsorted(starts, np.arange(lo, hi), side="right") - 1
            key[lo:hi] = np.where(seg >= 0, sw[np.maximum(seg, 0), 2], 0)
        lo = hi
    return key


def interleave(dec: Decoded, log: CaptureLog) -> bool:
    """Renumber ``dec``'s instances and reorder its accesses by the thread switches (in place).
    False (nothing changed) when fewer than two streams have instances."""
    if dec.stream_sids is None or len(set(dec.i_stream.tolist())) < 2:
        return False
    n = dec.i_fid.size
    key = segment_keys(dec, log)
    perm = np.lexsort((np.arange(n), key))            # old ids in the new order
    new_id = np.empty(n, np.int64)
    new_id[perm] = np.arange(n)
    # an access belongs to the segment of the latest instance started before it (per stream:
    # later streams hold larger ids, so one running maximum serves every stream)
    acc_key = key[np.maximum.accumulate(dec.a_inst)] if dec.a_inst.size else dec.a_inst
    order = np.argsort(acc_key, kind="stable")
    for name in ("i_fid", "i_sid", "i_frame", "i_stream", "i_kind", "i_cd"):
        setattr(dec, name, getattr(dec, name)[perm])
    dec.i_cd = np.where(dec.i_cd >= 0, new_id[np.maximum(dec.i_cd, 0)], -1)
    dec.a_inst, dec.a_op, dec.a_loc, dec.a_fb = (a[order] for a in (dec.a_inst, dec.a_op, dec.a_loc, dec.a_fb))
    dec.a_inst = new_id[dec.a_inst]
    inst_fb = (dec.a_op != NS) & (dec.a_fb >= 0)
    dec.a_fb = np.where(inst_fb, new_id[np.where(inst_fb, dec.a_fb, 0)], dec.a_fb)
    dec.calls = new_id[dec.calls] if dec.calls.size else dec.calls
    dec.rec_inst = np.where(dec.rec_inst >= 0, new_id[np.maximum(dec.rec_inst, 0)], -1)
    _thread_starts(dec)
    return True


def _thread_starts(dec: Decoded) -> None:
    """A call edge from the instance that ran last before a thread's first instance (in another
    thread: usually the ``start()`` call) to that first instance, if nothing calls it."""
    firsts = np.flatnonzero(np.r_[True, dec.i_stream[1:] != dec.i_stream[:-1]])
    seen: set[int] = set()
    called = set(dec.calls[:, 1].tolist()) if dec.calls.size else set()
    extra = []
    for f in firsts.tolist():
        sid = int(dec.i_stream[f])
        if sid in seen:
            continue
        seen.add(sid)
        if f > 0 and f not in called:
            extra.append((f - 1, f))
    if extra:
        dec.calls = np.concatenate([dec.calls.reshape(-1, 2), np.array(extra, np.int64)])
