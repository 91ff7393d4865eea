"""Encoding of the int32 event streams shared by every layer: B k (k >= 0), LEAVE, EXC stmt, ENTER f."""

from __future__ import annotations

from typing import Final

#: LEAVE: the current activation ends (return, uncaught exception, or generator suspension).
LEAVE: Final = -1
#: EXC: a dynamic exception edge; the next int is the statement id where the exception
#: originated in this activation (-1 if unknown).  The edge leaves the activation's last block
#: (from that statement if it lies in that block, else from the block's last statement, which is
#: then a re-raise) and enters the next recorded block (a handler) or EXIT (if LEAVE follows).
EXC: Final = -2
#: RERAISE (witness modes only): an exception record for an exception re-raised in this
#: activation, ``RERAISE s r``: ``s`` as for EXC (the statement the traceback points at), ``r``
#: the re-raise site that raised it (a bare ``raise``, the end of a ``finally``, a ``with``
#: exit).  Regeneration turns it into ``EXC s`` (docs/design.md, "Tracing with witnesses").
RERAISE: Final = -4
#: XCOUNT (count modes): followed by three encoded ints fid, source statement, target block
#: (each as -(ARG_BASE + v + 1), so no part of the record looks like a counter id).
XCOUNT: Final = -3
ARG_BASE: Final = 16
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
