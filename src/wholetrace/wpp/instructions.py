"""Bytecode instructions per statement: the original source compiled, each instruction given to the innermost statement whose span holds its position."""

from __future__ import annotations

import dis
from collections import defaultdict
from types import CodeType

from wholetrace.instrument.cfg import CFG


def statement_instructions(cfgs: dict[int, CFG], files: dict[int, str]) -> dict[int, list[int]]:
    """Per function: the number of bytecode instructions (this interpreter's compiler, caches
    not counted) of each statement; an instruction outside every statement's columns goes to the
    innermost statement on its line.  Functions whose file cannot be read or compiled count one
    instruction per statement."""
    out = {f: [1] * len(c.stmts) for f, c in cfgs.items()}
    by_file: dict[str, list[int]] = defaultdict(list)
    for f, name in files.items():
        if f in cfgs:
            by_file[name].append(f)
    for name, fids in by_file.items():
        try:
            with open(name, encoding="utf-8") as fh:
                code = compile(fh.read(), name, "exec", dont_inherit=True)
        except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
            continue
        covering: dict[int, list[tuple[int, int, int]]] = defaultdict(list)   # line -> (size, fid, stmt)
        for f in fids:
            for st in cfgs[f].stmts:
                size = (st.end_line - st.line) * 100_000 + (st.end_col - st.col)
                for line in range(st.line, st.end_line + 1):
                    covering[line].append((size, f, int(st.id)))
        for lst in covering.values():
            lst.sort()
        counts = {f: [0] * len(cfgs[f].stmts) for f in fids}
        for line, col in _positions(code):
            here = covering.get(line, ())
            for _size, f, s in (here if col >= 0 else ()):
                st = cfgs[f].stmts[s]
                if (line, col) >= (st.line, st.col) and (line, col) < (st.end_line, st.end_col):
                    counts[f][s] += 1
                    break
            else:   # no columns, or outside every span on its line
                if here:
                    counts[here[0][1]][here[0][2]] += 1
        out.update(counts)
    return out


def _positions(code: CodeType) -> list[tuple[int, int]]:
    """(line, column) of every instruction of ``code`` and the code objects nested in it."""
    found = []
    todo = [code]
    while todo:
        co = todo.pop()
        for ins in dis.get_instructions(co):
            pos = ins.positions
            if pos is None or pos.lineno is None:
                continue
            col = pos.col_offset
            if col is None or (pos.end_lineno == pos.lineno and pos.end_col_offset == col):
                col = -1     # no columns (e.g. RESUME): the innermost statement on the line
            found.append((pos.lineno, col))
        todo.extend(c for c in co.co_consts if isinstance(c, CodeType))
    return found
