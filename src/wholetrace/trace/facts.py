"""The stored static facts of a recording (``report.facts``, ``instrument.facts``): each function's lines and branches without its CFG.

Checked before use like everything read from a file: a record that does not fit its
counts, or a function index or name code out of range, is a one-line StoreError.
Recordings without the array (older writers, salvaged runs) have no facts: readers parse
the CFGs as before.
"""

from __future__ import annotations

import numpy as np

from wholetrace.errors import StoreError

#: Layout version of a file's record (``instrument.facts.VERSION``).
VERSION = 1
#: Edge kinds by name code (``-2 - k``), as ``instrument.cfg.EDGE_KINDS``.
EDGE_KINDS = ("fall", "true", "false", "next", "exhausted", "back", "break", "continue",
              "return", "finally-dispatch")


class StoredFacts:
    """``lines`` (rows fid, line, first statement starting there, its column; by fid then line)
    and ``branches`` (rows fid, block, index, line, edge id, name code; by fid, block, edge)
    of the functions ``covered`` marks (a bool per function id)."""

    def __init__(self, data: np.ndarray, nfunctions: int) -> None:
        def bad(why: str) -> StoreError:
            return StoreError(f"the stored report facts of the recording are corrupt ({why})")

        if data.dtype.kind not in "iu" or data.ndim != 1:
            raise bad(f"dtype {data.dtype}, {data.ndim} dimensions")
        a = data.astype(np.int64)
        covered = np.zeros(nfunctions, bool)
        lines, branches, lsize, bsize, bases, counts = [], [], [], [], [], []
        i, n = 0, len(a)
        while i < n:                              # one header per file: a few hundred steps
            if i + 5 > n:
                raise bad("a truncated header")
            base, version, nf, nl, nb = a[i:i + 5].tolist()
            end = i + 5 + 4 * nl + 6 * nb
            if version != VERSION or min(base, nf, nl, nb) < 0 or base + nf > nfunctions or end > n:
                raise bad(f"a bad header at {i}")
            if covered[base:base + nf].any():
                raise bad(f"function {base} twice")
            covered[base:base + nf] = True
            lines.append(a[i + 5:i + 5 + 4 * nl])
            branches.append(a[i + 5 + 4 * nl:end])
            lsize.append(nl)
            bsize.append(nb)
            bases.append(base)
            counts.append(nf)
            i = end
        ln = np.concatenate(lines).reshape(-1, 4).T.copy() if lines else np.zeros((4, 0), np.int64)
        br = np.concatenate(branches).reshape(-1, 6).T.copy() if branches else np.zeros((6, 0), np.int64)
        for rows, size in ((ln, lsize), (br, bsize)):
            nf_of = np.repeat(np.array(counts, np.int64), size)
            if ((rows[0] < 0) | (rows[0] >= nf_of)).any():
                raise bad("a function index out of range")
            rows[0] += np.repeat(np.array(bases, np.int64), size)
        self.covered, self.lines, self.branches = covered, ln, br
        if (self.branches[5] < -1 - len(EDGE_KINDS)).any():
            raise bad("an unknown branch name")
        for rows in (self.lines, self.branches):     # rows of a function are consecutive, by fid
            if rows.shape[1] and (np.diff(rows[0]) < 0).any():
                raise bad("rows out of order")

    def has(self, fid: int) -> bool:
        return 0 <= fid < len(self.covered) and bool(self.covered[fid])


def branch_name(code: int) -> str:
    """A branch's name from its code (see ``instrument.facts``)."""
    return str(code) if code >= 0 else "exit" if code == -1 else EDGE_KINDS[-2 - code]


def load_facts(recording: object, nfunctions: int) -> StoredFacts | None:
    """The recording's stored facts, or None if it has none."""
    get = getattr(recording, "get_array", None)
    data = get("report.facts") if get is not None else None
    return None if data is None else StoredFacts(data, nfunctions)
