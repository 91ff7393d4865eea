"""Typed integer ids shared by every layer, and the named pseudo-blocks ENTRY and EXIT."""

from typing import Final, NewType

FuncId = NewType("FuncId", int)      # global to one recording (function registry row)
BlockId = NewType("BlockId", int)    # local to one function's CFG
StmtId = NewType("StmtId", int)      # local to one function, dense, in source order
PathId = NewType("PathId", int)      # local to one function (Ball-Larus path number)
StreamId = NewType("StreamId", int)  # one per OS thread / asyncio task in a recording

#: Pseudo-block every function starts from; never holds statements.
ENTRY: Final = BlockId(0)
#: Pseudo-block every function leaves through (return, fall off the end, uncaught raise).
EXIT: Final = BlockId(1)
#: Real blocks are numbered from here, in source order of their first statement.
FIRST_BLOCK: Final = 2
