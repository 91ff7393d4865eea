"""WET capture (spec §6.8 stage 1a): on one-statement-per-line programs, an independent
``sys.settrace`` recorder (settrace_values.py) agrees with the control flow rebuilt from a
``full`` recording and with the local and global definitions it logged."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from settrace_values import reference
from wholetrace.instrument.cfg import CFG
from wholetrace.store import Recording
from wholetrace.wet.capture import load
from wtutil import run_plain, run_recorded

PROGRAMS = {
    "loops_and_calls": """
        import math
        def square(v):
            r = v * v
            return r
        def walk(n):
            total = 0
            for i in range(n):
                if i % 2:
                    total += square(i)
                else:
                    total -= 1
            k = n
            while k > 0:
                k -= 3
            return total
        class Box:
            size = 3
            def __init__(self, v):
                self.v = v
        x = walk(7)
        b = Box(x)
        y = b.v + Box.size
        name = "box" * 2
        f = 1.5
        ok = x > 3
        z = None
        root = math.sqrt(16)
        print(x, y, name, f, ok, z, root)
    """,
    "exceptions_and_with": """
        import io
        def risky(d, key):
            try:
                v = d[key]
            except KeyError as e:
                v = -1
                msg = str(e)
            finally:
                d["seen"] = True
            return v
        def reader(text):
            with io.StringIO(text) as fh:
                first = fh.readline()
            parts = first.split()
            a, b = parts[0], parts[1]
            return a + b
        d = {"a": 1}
        r1 = risky(d, "a")
        r2 = risky(d, "b")
        s = reader("x y\\nz")
        print(r1, r2, s, d)
    """,
    "recursion_and_generators": """
        def fact(n):
            if n <= 1:
                return 1
            sub = fact(n - 1)
            return n * sub
        def gen(n):
            i = 0
            while i < n:
                got = yield i
                i += 1
        def nested(v):
            def inner(w):
                return w + v
            return inner(1)
        big = fact(25)
        out = []
        for item in gen(3):
            out.append(item)
        t = nested(4)
        print(big, out, t)
    """,
}


def statement_lines(source: str) -> set[int]:
    """Lines where a simple statement or an if/while/for/with/match header starts."""
    out = set()
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, ast.stmt) and not isinstance(n, (ast.Try, ast.TryStar, ast.Global, ast.Nonlocal)):
            out.add(n.lineno)
    return out


def collapse(lines: list[int], keep: set[int]) -> list[int]:
    out: list[int] = []
    for line in lines:
        if line in keep and (not out or out[-1] != line):
            out.append(line)
    return out


def changed_only(defs: list[tuple[int, str, str]]) -> list[tuple[int, str, str]]:
    last: dict[str, str] = {}
    out = []
    for line, name, desc in defs:
        if last.get(name) != desc:
            out.append((line, name, desc))
        last[name] = desc
    return out


def stmt_lines(cfg: CFG) -> list[int]:
    """The line settrace reports for each statement: its first line, except that a ``with``
    exit (the ``__exit__`` call) is reported on the ``with`` line."""
    out = [st.line for st in cfg.stmts]
    enters: list[int] = []
    for st in cfg.stmts:
        if st.kind == "with-enter":
            enters.append(st.id)
        elif st.kind == "with-exit":
            out[st.id] = cfg.stmts[enters.pop()].line
    return out


def rebuild(wt: Path) -> list[tuple[str, list[int], list[tuple[int, str, str]]]]:
    """Activations from the recorded blocks trace, with the plain-name definitions logged in each."""
    with Recording(wt) as rec:
        cfgs = {f.fid: CFG.from_json(f.cfg) for f in rec.functions()}
        lines_of = {fid: stmt_lines(c) for fid, c in cfgs.items()}
        log = load(rec)
        (stream,) = rec.streams()
        events = rec.events(stream.sid).tolist()
    vals = log.streams[stream.sid]
    groups: list[tuple[str, list[int], list[tuple[int, str, str]]]] = []
    stack: list[tuple[int, int]] = []          # (fid, group)
    last_block: dict[int, tuple[int, list[int]]] = {}   # group -> (start in lines, block stmts)
    r = 0
    n_rec = len(vals.pos)
    i = 0
    while i <= len(events):
        while r < n_rec and vals.pos[r] <= i:
            info = log.slots[int(vals.slot[r])]
            if info.kind == "def" and info.what.isidentifier() and stack:
                desc = log.render(int(vals.tag[r]), int(vals.val[r]))
                if desc.startswith("<") and "#" in desc:
                    desc = desc.split(" #")[0] + ">"
                groups[stack[-1][1]][2].append((info.line, info.what, desc))
            r += 1
        if i == len(events):
            break
        e = events[i]
        if e <= -8:
            fid = -e - 8
            groups.append((cfgs[fid].qualname, [], []))
            stack.append((fid, len(groups) - 1))
        elif e == -1:
            stack.pop()
        elif e == -2:
            i += 1
            fid, g = stack[-1]
            start, stmts = last_block[g]
            if events[i] in stmts:
                del groups[g][1][start + stmts.index(events[i]) + 1:]
        else:
            fid, g = stack[-1]
            cfg = cfgs[fid]
            stmts = cfg.blocks[e].stmts
            last_block[g] = (len(groups[g][1]), list(stmts))
            groups[g][1].extend(lines_of[fid][s] for s in stmts)
        i += 1
    return groups


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_settrace_reference_agrees(name: str, tmp_path: Path) -> None:
    source = textwrap.dedent(PROGRAMS[name]).lstrip()
    script = tmp_path / "prog.py"
    script.write_text(source)
    plain = run_plain(script)
    wt = tmp_path / "prog.wt"
    got = run_recorded(script, wt, mode="full")
    assert (got.returncode, got.stdout, got.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    ours = rebuild(wt)
    ref = reference(script)
    keep = statement_lines(source)
    # a class body's frame starts with a line event on its ``class`` line (the implicit
    # ``__module__``/``__qualname__`` stores), which belongs to the enclosing statement
    class_lines = {n.lineno for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef)}
    ref = [(q, rl[1:] if rl and rl[0] in class_lines else rl, d) for q, rl, d in ref]
    assert [q for q, _l, _d in ours] == [q for q, _l, _d in ref]
    compared = 0
    for (q, lines, defs), (_q, rlines, rdefs) in zip(ours, ref):
        assert collapse(lines, keep) == collapse(rlines, keep), q
        mine = changed_only(defs)
        theirs = changed_only([tuple(d) for d in rdefs])   # type: ignore[misc]
        if "gen" not in q:
            assert mine == theirs, q
            compared += len(mine)
    assert compared >= 10
