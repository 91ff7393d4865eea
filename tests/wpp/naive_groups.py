"""Pure-Python twin of the interner's SEQ groups (wave 12), over the fused twin's terminals, and a
comparison of terminal tables by structure (ids differ: the kernel interns a group right after its parts)."""

from __future__ import annotations

from wholetrace.kernels.wpp_intern import SEQ_BUDGET_K, SEQ_BUDGET_MIN
from wholetrace.wpp.symbols import ENTER_CHAIN, ENTER_PATH, LEAVE, PATH, SEQ

Key = tuple[int, int, int]


def _cls(v: int, leave_at: int) -> str:
    return "O" if v < 0 else "X" if v >= leave_at else "C"


def group_codes(codes: list[int], table: list[Key], group: int, leave_at: int,
                budget: tuple[int, int] = (SEQ_BUDGET_MIN, SEQ_BUDGET_K),
                state: dict[str, int] | None = None) -> tuple[list[int], list[Key]]:
    """``codes`` over ``table`` (the fused twin's, wave 10) with up to ``group`` terminals in a
    row joined into (SEQ, head, last) keys, greedily from the left, where each seam is a call (a
    terminal ending with a value or LEAVE, then one beginning with a fused ENTER) or a return
    (one ending with LEAVE_PATH + p, then one beginning with a value).  New keys are appended.
    ``budget`` (floor, k): a new SEQ key only while the SEQ keys made so far are fewer than
    max(floor, k x the fused twin's terminals met so far, the largest id seen + 1: the twin numbers
    them by first appearance); past it a seam joins only into a key already in ``table``.
    ``state`` carries the count across calls (streams in turn: pass the returned table back in)."""
    table = list(table)
    index = {k: i for i, k in enumerate(table)}
    st = state if state is not None else {}
    st.setdefault("seq", sum(1 for k in table if k[0] == SEQ))
    st.setdefault("top", 0)

    def head(t: int) -> str:
        k, _f, v = table[t]
        return "F" if k in (ENTER_PATH, ENTER_CHAIN) else "V" if k == PATH and v >= 0 else "O"

    def tail(t: int) -> str:
        while table[t][0] == ENTER_CHAIN:
            t = table[t][2]
        k, _f, v = table[t]
        return _cls(v, leave_at) if k in (PATH, ENTER_PATH) else "L" if k == LEAVE else "O"

    def seq(h: int, u: int) -> int | None:
        key = (SEQ, h, u)
        if key not in index:
            if st["seq"] >= max(budget[0], budget[1] * st["top"]):
                st["refused"] = st.get("refused", 0) + 1
                return None
            st["seq"] += 1
            index[key] = len(table)
            table.append(key)
        return index[key]

    out: list[int] = []
    pend: tuple[int, int, str] | None = None     # (group id, terminals in it, what it ends with)
    for c in codes:
        st["top"] = max(st["top"], c + 1)
        if pend is not None:
            g, n, gt = pend
            s = None
            if n < group and ((head(c) == "F" and gt in "CXL") or (head(c) == "V" and gt == "X")):
                s = seq(g, c)
            if s is not None:
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
