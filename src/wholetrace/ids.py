"""Typed integer ids shared by every layer, and the named pseudo-blocks ENTRY and EXIT."""

from __future__ import annotations

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from typing import Final, NewType

    FuncId = NewType("FuncId", int)      # global to one recording (function registry row)
    BlockId = NewType("BlockId", int)    # local to one function's CFG
    StmtId = NewType("StmtId", int)      # local to one function, dense, in source order
    PathId = NewType("PathId", int)      # local to one function (Ball-Larus path number)
    StreamId = NewType("StreamId", int)  # one per OS thread / asyncio task in a recording
else:
    def _new_type(name: str):  # type: ignore[no-untyped-def]
        """What ``typing.NewType(name, int)`` is at run time: a callable returning its argument."""
        def new_type(x: int) -> int:
            return x
        new_type.__name__ = new_type.__qualname__ = name
        return new_type

    FuncId = _new_type("FuncId")
    BlockId = _new_type("BlockId")
    StmtId = _new_type("StmtId")
    PathId = _new_type("PathId")
    StreamId = _new_type("StreamId")

#: Pseudo-block every function starts from; never holds statements.
ENTRY: Final = BlockId(0)
#: Pseudo-block every function leaves through (return, fall off the end, uncaught raise).
EXIT: Final = BlockId(1)
#: Real blocks are numbered from here, in source order of their first statement.
FIRST_BLOCK: Final = 2
