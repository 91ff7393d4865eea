"""Class attributes as locations: a class namespace entry becomes attribute ``(class, name)``, and
attribute reads with no writer of their own fall back along the instance -> class -> base links.

The decoding pass (``kernels/wetdecode.py``) ends a class statement with one ``NS`` access per
name its body defined (and, as before, a use of those whose value is an object or was not
recorded -- ``def`` statements record none --: implicit calls such as ``__init__`` reach methods
through the class statement).  Here each ``NS`` access gets, in its fallback
column, the location ``ATTR(serial of the class, name)``: the serial is the value the class
statement's own def record holds.  ``kernels/wetdeps.data_deps`` then makes the namespace
entry's last writer the attribute's last writer (an alias, no new instance), and resolves a
use of ``ATTR(o, n)`` that ``o`` never defined through ``up``: ``ATTR(parent(o), n)``, and so on
(``CaptureLog.parents``: an instance's class, a class's nearest recorded base).

Approximate: one base per class (the nearest recorded one in the MRO), metaclass attributes
and ``__getattr__`` are not followed, and a class statement whose def record is missing keeps
the old rule (it uses its whole namespace).
"""

from __future__ import annotations

import numpy as np

from wholetrace.kernels.wetdecode import ATTR, OBJ
from wholetrace.wet.capture import CaptureLog
from wholetrace.wet.decode import NS, USE, Decoded

#: How far an attribute read follows class links (a cycle cannot come from a real program).
MAX_DEPTH = 64


def link_classes(dec: Decoded, log: CaptureLog) -> np.ndarray:
    """Point every ``NS`` access of ``dec`` at its class attribute location (``dec.a_fb``; a
    class with no recorded serial turns the access into a plain use), adding the locations
    to ``dec.locs``; return ``up`` (per location: the location reads fall back to, or -1)."""
    rows: dict[tuple[int, int], int] = {}
    locs = dec.locs
    attr = np.flatnonzero(locs[:, 0] == ATTR)
    for j, a, b in zip(attr.tolist(), locs[attr, 1].tolist(), locs[attr, 2].tolist()):
        rows[(a, b)] = j
    new: list[tuple[int, int]] = []

    def loc_of(a: int, b: int) -> int:
        j = rows.get((a, b))
        if j is None:
            j = rows[(a, b)] = locs.shape[0] + len(new)
            new.append((a, b))
        return j

    ns = np.flatnonzero(dec.a_op == NS)
    if ns.size:
        serial_of = _class_serials(dec, log, np.unique(dec.a_inst[ns]))
        for a in ns.tolist():
            serial = serial_of.get(int(dec.a_inst[a]))
            if serial is None:
                dec.a_op[a] = USE
                dec.a_fb[a] = -1
            else:
                dec.a_fb[a] = loc_of(serial, int(locs[dec.a_loc[a], 2]))
    if new:
        extra = np.zeros((len(new), locs.shape[1]), np.int64)
        extra[:, 0] = ATTR
        extra[:, 1:3] = np.array(new, np.int64)
        dec.locs = np.concatenate([locs, extra])
    up = np.full(dec.locs.shape[0], -1, np.int64)
    parents = log.parents
    if parents:
        for (a, b), j in rows.items():
            p, depth = parents.get(a), 0
            while p is not None and depth < MAX_DEPTH:
                k = rows.get((p, b))
                if k is not None:
                    up[j] = k
                    break
                p, depth = parents.get(p), depth + 1
    return up


def _class_serials(dec: Decoded, log: CaptureLog, insts: np.ndarray) -> dict[int, int]:
    """Class statement instance -> the serial its def record holds (the last one, if several)."""
    if dec.rec_slot is None or dec.rec_slot.size == 0:
        return {}
    hit = np.flatnonzero(np.isin(dec.rec_inst, insts) & (dec.rec_tag == OBJ))
    out: dict[int, int] = {}
    for r in hit.tolist():
        info = log.slots.get(int(dec.rec_slot[r]))
        if info is not None and info.kind == "def":
            out[int(dec.rec_inst[r])] = int(dec.rec_val[r])
    return out
