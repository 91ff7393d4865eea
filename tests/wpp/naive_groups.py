"""Pure-Python twin of the interner's SEQ groups (wave 12), over the fused twin's terminals, and a
comparison of terminal tables by structure (ids differ: the kernel interns a group right after its parts)."""

from __future__ import annotations

from wholetrace.wpp.symbols import ENTER_CHAIN, ENTER_PATH, LEAVE, PATH, SEQ

Key = tuple[int, int, int]


def _cls(v: int, leave_at: int) -> str:
    return "O" if v < 0 else "X" if v >= leave_at else "C"


def group_codes(codes: list[int], table: list[Key], group: int, leave_at: int) -> tuple[list[int], list[Key]]:
    """``codes`` over ``table`` (the fused twin's, wave 10) with up to ``group`` terminals in a
    row joined into (SEQ, head, last) keys, greedily from the left, where each seam is a call (a
    terminal ending with a value or LEAVE, then one beginning with a fused ENTER) or a return
    (one ending with LEAVE_PATH + p, then one beginning with a value).  New keys are appended."""
    table = list(table)
    index = {k: i for i, k in enumerate(table)}

    def head(t: int) -> str:
        k, _f, v = table[t]
        return "F" if k in (ENTER_PATH, ENTER_CHAIN) else "V" if k == PATH and v >= 0 else "O"

    def tail(t: int) -> str:
        while table[t][0] == ENTER_CHAIN:
            t = table[t][2]
        k, _f, v = table[t]
        return _cls(v, leave_at) if k in (PATH, ENTER_PATH) else "L" if k == LEAVE else "O"

    def seq(h: int, u: int) -> int:
        key = (SEQ, h, u)
        if key not in index:
            index[key] = len(table)
            table.append(key)
        return index[key]

    out: list[int] = []
    pend: tuple[int, int, str] | None = None     # (group id, terminals in it, what it ends with)
    for c in codes:
        if pend is not None:
            g, n, gt = pend
            if n < group and ((head(c) == "F" and gt in "CXL") or (head(c) == "V" and gt == "X")):
                s = seq(g, c)
                if n + 1 >= group:
                    out.append(s)
                    pend = None
                else:
                    pend = (s, n + 1, tail(c))
                continue
            out.append(g)
            pend = None
        if tail(c) in "CXL":
            pend = (c, 1, tail(c))
        else:
            out.append(c)
    if pend is not None:
        out.append(pend[0])
    return out, table


def canonical(table: list[Key], cons: dict[tuple[int, int, int], int]) -> list[int]:
    """Each terminal of ``table`` as a structure id in ``cons`` (shared between the tables
    compared): ENTER_CHAIN's inner terminal and SEQ's parts by their structure, not their id."""
    out: list[int] = []
    for k, f, v in table:
        if k == ENTER_CHAIN:
            v = out[v]
        elif k == SEQ:
            f, v = out[f], out[v]
        out.append(cons.setdefault((k, f, v), len(cons)))
    return out
