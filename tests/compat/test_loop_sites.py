"""Exceptions raised by a ``for`` loop's ``iter()`` or ``next()`` are charged to its for-next statement on every version.

3.13 gives ``GET_ITER``, ``FOR_ITER`` and ``GET_AITER`` the iterable's position (3.11 and 3.12:
the whole ``for``), which is also the for-iter statement's span; resolved by position alone,
such an exception was charged to the for-iter statement, in the block before the loop header:
count modes then lost the header's count (the 3.13 count-mode "flake" of issue 18), witness
regeneration left the header out.  The oracle is the program's own markings: each line with an
``X:kind`` comment says which kind of statement the exceptions raised there belong to.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from differential import check_all_modes
from naive_decode import raw_events
from wholetrace.instrument.cfg import CFG
from wholetrace.store import Recording
from wtutil import run_recorded

PROGRAM = '''
def boom(n):
    raise RuntimeError(n)
    yield


class NoIter:
    pass


class BadNext:
    def __iter__(self):
        return self

    def __next__(self):
        raise KeyError("next")


class BadAIter:
    def __aiter__(self):
        return self

    async def __anext__(self):
        raise LookupError("anext")


def in_function():
    out = []
    for cls in (RuntimeError, TypeError, KeyError, ZeroDivisionError):
        try:
            if cls is RuntimeError:
                for x in boom(1):  # X:for-next
                    out.append(x)
            elif cls is TypeError:
                for x in NoIter():  # X:for-next
                    out.append(x)
            elif cls is KeyError:
                for x in BadNext():  # X:for-next
                    out.append(x)
            else:
                for x in [1 / y for y in (1, 0)]:  # X:for-iter
                    out.append(x)
        except cls as e:
            out.append(type(e).__name__)
    return out


async def in_coroutine():
    out = []
    try:
        async for x in BadAIter():  # X:for-next
            out.append(x)
    except LookupError as e:
        out.append(str(e))
    try:
        async for x in NoIter():  # X:for-next
            out.append(x)
    except TypeError:
        out.append("no aiter")
    return out


for cls in (RuntimeError, TypeError, ZeroDivisionError):
    try:
        if cls is RuntimeError:
            for x in boom(1):  # X:for-next
                pass
        elif cls is TypeError:
            for x in 3:  # X:for-next
                pass
        else:
            for x in [1 / y for y in (1, 0)]:  # X:for-iter
                pass
    except cls:
        print(cls.__name__)
print(in_function())
co = in_coroutine()
try:
    co.send(None)
except StopIteration as stop:
    print(stop.value)
for x in boom(2):  # X:for-next
    pass
'''

CHECKED = ("<module>", "in_function", "in_coroutine")


def test_loop_exceptions_in_every_mode() -> None:
    # behaviour, well-formed streams, count modes == blocks, witness/branches/path regeneration
    assert check_all_modes(textwrap.dedent(PROGRAM))


def test_loop_exceptions_are_charged_to_the_marked_statements(tmp_path: Path) -> None:
    script = tmp_path / "loops.py"
    script.write_text(PROGRAM)
    want = {n: m.group(1) for n, line in enumerate(PROGRAM.splitlines(), 1)
            if (m := re.search(r"# X:([\w-]+)", line))}
    out = tmp_path / "blocks.wt"
    proc = run_recorded(script, out)
    assert proc.returncode == 1 and "RuntimeError: 2" in proc.stderr, proc.stderr
    seen: dict[int, list[str]] = {}
    with Recording(out) as rec:
        funcs = {f.fid: (f.qualname, CFG.from_json(f.cfg)) for f in rec.functions() if f.file == str(script)}
        for st in rec.streams():
            stack: list[int] = []
            for kind, v in raw_events(rec.iter_chunks(st.sid)):
                if kind == "F":
                    stack.append(v)
                elif kind == "E":
                    stack.pop()
                elif kind == "X" and stack and stack[-1] in funcs and funcs[stack[-1]][0] in CHECKED and v >= 0:
                    stmt = funcs[stack[-1]][1].stmts[v]
                    if stmt.line in want:
                        seen.setdefault(stmt.line, []).append(stmt.kind)
    assert seen == {line: [kind] * len(seen.get(line, [])) for line, kind in want.items()}
    assert seen.keys() == want.keys()
