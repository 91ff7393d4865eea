"""Encoding of the int32 event streams shared by every layer: B k (k >= 0), LEAVE, EXC stmt, ENTER f.

Streams of ``path`` recordings (``record --mode path``) use the same codes with these meanings
inside an activation of a function recorded with path ids (plan strategy ``paths``; functions
with strategy ``trace`` record block ids, as in ``blocks`` mode):

* ``p`` with ``0 <= p < LEAVE_PATH`` (2^29): Ball-Larus path id ``p`` of the running function
  (``instrument.pathnum``) ended at a cut edge; the activation goes on at that edge's target.
* ``LEAVE_PATH + p``: path ``p`` ended at EXIT *and* the activation returns (LEAVE folded in).
* ``START``: right after ENTER, a generator/coroutine activation starts (ENTER without START
  is a resumption after a ``yield``/``await``).
* ``EXC s r [H]`` / ``RERAISE s x r [H]``: as in witness mode, with ``r`` the path register as
  the exception left it (``PathNumbering.decode_truncated``; negative: no path open) between
  the statements and the handler block ``H`` (absent when LEAVE follows).
* a plain LEAVE: a generator/coroutine suspends (or, after an exception record without a
  handler, the activation ends by the exception).
"""

from __future__ import annotations

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from typing import Final


#: LEAVE: the current activation ends (return, uncaught exception, or generator suspension).
LEAVE: Final = -1
#: EXC: a dynamic exception edge; the next int is the statement id where the exception
#: originated in this activation (-1 if unknown).  The edge leaves the activation's last block
#: (from that statement if it lies in that block, else from the block's last statement, which is
#: then a re-raise) and enters the next recorded block (a handler) or EXIT (if LEAVE follows).
EXC: Final = -2
#: RERAISE (witness and path modes): an exception record for an exception re-raised in this
#: activation, ``RERAISE s r``: ``s`` as for EXC (the statement the traceback points at), ``r``
#: the re-raise site that raised it (a bare ``raise``, the end of a ``finally``, a ``with``
#: exit).  Regeneration turns it into ``EXC s`` (docs/design.md, "Tracing with witnesses").
RERAISE: Final = -4
#: XCOUNT (count modes): followed by three encoded ints fid, source statement, target block
#: (each as -(ARG_BASE + v + 1), so no part of the record looks like a counter id).
XCOUNT: Final = -3
ARG_BASE: Final = 16
#: START (path mode): a generator activation starts at ENTRY (the ENTER before it is not a resumption).
START: Final = -5
#: VAL (``full`` mode until wave 6, never stored): marked a value record in a thread's event
#: buffer.  No longer written (``runtime.values`` now puts each record in the event list as a
#: marker below every event and a payload); kept reserved: no other event may take its code.
VAL: Final = -6
#: Path mode: an event at or above this value is ``LEAVE_PATH + id``: path ``id`` ends at EXIT
#: and the activation returns.  Path ids are below it (``instrument.pathnum.MAX_PATHS``), so every
#: closing record is below 2^30: a one-digit CPython int, which the flusher converts ~37 instructions
#: faster than a two-digit one (docs/design.md, "Path mode, wave 14").  Recordings made before wave
#: 14 used 2^30; a path numbering stores the base it was recorded with (``plan["paths"]["leave"]``,
#: ``instrument.modes.check_leave_base``) and readers refuse another.
LEAVE_PATH: Final = 1 << 29
#: Path mode: the register in an exception record when no path is open, and the register a
#: recorder sets once an exception left the activation without a closing table
#: (``instrument.emit.Emitter.no_path``: ``NO_PATH + LEAVE_PATH`` is a plain LEAVE).  Readers take
#: -1 (LEAVE) and any register at or below it as "no path open"; other negative values are
#: registers (chord increments can be negative).
NO_PATH: Final = LEAVE - LEAVE_PATH
#: ENTER f is encoded as -(ENTER_BASE + f).
ENTER_BASE: Final = 8


def arg_code(v: int) -> int:
    return -(ARG_BASE + v + 1)


def arg_value(code: int) -> int:
    return -code - ARG_BASE - 1


def enter_code(fid: int) -> int:
    return -(ENTER_BASE + fid)


def enter_fid(code: int) -> int:
    return -code - ENTER_BASE
