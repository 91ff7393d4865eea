"""Random programs for differential tests (imports nothing from wholetrace).

Strategies (hypothesis):

* ``programs()``: hypothesmith's ``from_node()`` output, kept when it compiles (from
  text and from UTF-8 bytes, to the same AST) and touches nothing outside the process
  (no ``open``/``exec``/``eval``/``input``/``id``/imports ..., see ``DENY_NAMES``).
  ``programs("grammar")`` uses ``from_grammar()`` instead. hypothesmith targets parsers:
  its programs are syntactically rich but semantically thin (mostly ``class A: pass``,
  ``try``/``except``/``finally`` around ``pass``, calls of undefined names), so they test
  the instrumenter's handling of odd syntax, not much control flow.
* ``structured_programs()``: programs with real, bounded control flow over a few integer
  variables: functions (calling only earlier ones), ``if``/``elif``/``else``, ``for``
  and ``while`` with ``break``/``continue``/``else``, ``try``/``except``/``else``/
  ``finally`` with raised and caught exceptions, ``with`` (a context manager that may
  suppress), generators, comprehensions, lambdas, ``match``, early ``return`` ... and
  ``print``. Every loop is bounded, so every program ends quickly.

Running: ``write_program(source, dir)`` writes ``dir/prog.py`` and the driver
``dir/run_prog.py``; the driver runs ``prog`` with ``runpy.run_module("prog",
run_name="__main__")`` (through the import system, so an import hook that instruments
modules of the script directory instruments ``prog``), prints ``EXC <type name> <message>``
and ``TB <line> <function>`` per traceback entry in ``prog`` if it raised, then a
deterministic digest of its module globals, and exits 1 if it raised, else 0. ``run_plain(source, tmpdir)`` does that in a subprocess (timeout 5 s, memory,
CPU and file-size limits, ``PYTHONHASHSEED=0``, stdin closed) and returns
``(returncode, stdout, last line of stderr)``; a timeout gives ``(-1, stdout so far,
"TimeoutExpired")``.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

from hypothesis import strategies as st

__all__ = ["programs", "structured_programs", "implicit_programs", "acceptable", "write_program", "run_plain",
           "DRIVER", "DENY_NAMES", "TIMEOUT"]

TIMEOUT = 5.0

# Names whose use could reach outside the process, block, or print addresses.
DENY_NAMES = frozenset({
    "open", "exec", "eval", "compile", "__import__", "input", "breakpoint", "help", "exit",
    "quit", "id", "hash", "memoryview", "globals", "locals", "vars", "dir", "object",
    "__builtins__", "__loader__", "__spec__", "__file__", "copyright", "credits", "license",
})
_ALLOWED_IMPORTS = frozenset({"__future__", "math", "itertools", "functools", "operator", "asyncio"})
_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=]")


def acceptable(source: str) -> bool:
    """True if ``source`` compiles the same from text and from UTF-8 bytes and uses none of
    ``DENY_NAMES`` nor imports other than a few pure modules."""
    try:
        data = source.encode("utf-8")
        tree = ast.parse(source)
        compile(source, "prog.py", "exec", dont_inherit=True)
        if any(_CODING.match(line) for line in data.splitlines()[:2]):
            return False
        if ast.dump(ast.parse(data)) != ast.dump(tree):
            return False
    except (SyntaxError, ValueError, UnicodeError, MemoryError, RecursionError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in DENY_NAMES:
            return False
        if isinstance(node, ast.Attribute) and node.attr.startswith("__"):
            return False
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] not in _ALLOWED_IMPORTS for a in node.names):
            return False
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] not in _ALLOWED_IMPORTS):
            return False
    return True


def programs(kind: str = "node") -> st.SearchStrategy[str]:
    """hypothesmith programs (``kind`` "node": ``from_node()``, "grammar": ``from_grammar()``)
    that pass ``acceptable``."""
    import hypothesmith

    if kind == "node":
        base = hypothesmith.from_node(auto_target=False)
    elif kind == "grammar":
        base = hypothesmith.from_grammar(auto_target=False)
    else:
        raise ValueError(f"unknown kind {kind!r}")
    # No targets: hypothesmith's ``target()`` calls, under any filter after them, repeat their
    # labels when the filter draws again within one example, and hypothesis refuses that
    # (InvalidArgument, raised or not depending on what was drawn before).  Targeting needs
    # thousands of examples to steer anything; these tests draw a few.
    return base.filter(acceptable)


# ------------------------------------------------------------------ structured programs

_VARS = ("a", "b", "c")
_EXCS = ("ValueError", "KeyError", "RuntimeError", "IndexError", "ZeroDivisionError")


def _expr(draw, fns: int) -> str:
    v = draw(st.sampled_from(_VARS))
    w = draw(st.sampled_from(_VARS))
    k = draw(st.integers(0, 9))
    choice = draw(st.integers(0, 9 if fns else 7))
    if choice == 0:
        return str(k)
    if choice == 1:
        return f"{v} + {k}"
    if choice == 2:
        return f"({v} * {w} + {k}) % 97"
    if choice == 3:
        return f"{v} - {w}"
    if choice == 4:
        return f"len(lst) + {v} % 3"
    if choice == 5:
        return f"sum(x * {k} for x in range({v} % 4))"
    if choice == 6:
        return f"max([{v}, {w}, {k}], key=lambda t: -t)"
    if choice == 7:
        return f"({v} if {w} > {k} else {k})"
    f = draw(st.integers(0, fns - 1))
    return f"f{f}({v} % 10, {w} % 10)"


def _cond(draw) -> str:
    v = draw(st.sampled_from(_VARS))
    op = draw(st.sampled_from(["<", ">", "==", "!=", "<=", ">="]))
    k = draw(st.integers(-2, 9))
    cond = f"{v} {op} {k}"
    if draw(st.integers(0, 4)) == 0:
        cond += f" and {draw(st.sampled_from(_VARS))} % 2 == 0"
    return cond


def _block(draw, depth: int, ctx: dict, n_max: int = 4) -> list[str]:
    n = draw(st.integers(1, n_max))
    out: list[str] = []
    for _ in range(n):
        out += _stmt(draw, depth, ctx)
    return out


def _indent(lines: list[str]) -> list[str]:
    return ["    " + ln for ln in lines]


def _fresh(ctx: dict) -> int:
    ctx["ids"][0] += 1
    return ctx["ids"][0]


def _implicit(draw, ctx: dict) -> list[str]:
    """A statement whose evaluation calls instrumented code implicitly (``IMPLICIT_PRELUDE``),
    mostly without an explicit call (so it does not start a block), with an exception that
    may come before or after the implicit call, from it, or from a later statement."""
    v = draw(st.sampled_from(_VARS))
    w = draw(st.sampled_from(_VARS))
    o = f"objs[{w} % 7]"     # made beforehand: no explicit call (which would start a block)
    call = draw(st.sampled_from([
        f"{o}.p", f"table[objs[{w} % 5]]", f"{o}.missing", f"{o}[{v} % 4]", f"(f'{{{o}}}' == '3')",
        f"{o}.d", f"({o} + {v} % 5)", f"(1 if {o} else 2)", f"({o} == objs[{v} % 7])",
        f"len({o})", f"sum({o})", f"Obj({w} % 7).p"]))
    risky = draw(st.sampled_from(["", f"lst[{v} % 5]", f"100 // ({v} % 3)", f"{{1: 1}}[{v} % 3]"]))
    where = draw(st.integers(0, 5))
    if where == 5:   # first in a block that does not start with a call, an explicit call next
        return [f"if {v} != -1:", f"    {v} = {call}", f"    print({v})"]
    if not risky or where == 0:
        return [f"{v} = {call}"]
    if where == 1:
        return [f"{v} = ({call}, {risky})[0]"]       # the implicit call, then the risk
    if where == 2:
        return [f"{v} = ({risky}, {call})[1]"]       # the risk first
    if where == 3:
        return [f"{v} = {call}", f"{v} = {risky}"]   # the risk in a later statement of the block
    return [f"if {call}:", f"    {v} = {risky}"]


def _stmt(draw, depth: int, ctx: dict) -> list[str]:  # noqa: C901 - one arm per kind
    simple = ["assign", "aug", "print", "append", "raise", "pass", "divide", "index"]
    if ctx["loop"]:
        simple += ["break", "continue"]
    if ctx["func"]:
        simple += ["return"]
    if ctx.get("implicit"):
        simple += ["implicit"] * 4
    compound = ["if", "for", "while", "try", "with", "forgen", "match", "tryloop", "repeat", "gentry"] \
        if depth < 3 else []
    if depth < 2:
        compound += ["defn", "classdef"]
    kind = draw(st.sampled_from(simple + compound * 2))
    v = draw(st.sampled_from(_VARS))
    fns = ctx["fns"]
    if kind == "assign":
        return [f"{v} = {_expr(draw, fns)}"]
    if kind == "aug":
        return [f"{v} += {draw(st.integers(1, 5))}"]
    if kind == "print":
        return [f"print({v}, {draw(st.sampled_from(_VARS))})"]
    if kind == "append":
        return [f"lst.append({v} % 10)", "del lst[:-5]"]
    if kind == "raise":
        exc = draw(st.sampled_from(["ValueError", "KeyError", "RuntimeError"]))
        return [f"if {_cond(draw)}:", f"    raise {exc}({v})"]
    if kind == "pass":
        return ["pass"]
    if kind == "divide":
        return [f"{v} = 100 // ({draw(st.sampled_from(_VARS))} % 3)"]
    if kind == "index":
        return [f"{v} = lst[{v} % 7]"]
    if kind == "break":
        return [f"if {_cond(draw)}:", "    break"]
    if kind == "continue":
        return [f"if {_cond(draw)}:", "    continue"]
    if kind == "return":
        return [f"if {_cond(draw)}:", f"    return {_expr(draw, fns)}"]
    if kind == "implicit":
        return _implicit(draw, ctx)
    inner = dict(ctx)
    if kind == "if":
        out = [f"if {_cond(draw)}:"] + _indent(_block(draw, depth + 1, inner))
        for _ in range(draw(st.integers(0, 2))):
            out += [f"elif {_cond(draw)}:"] + _indent(_block(draw, depth + 1, inner))
        if draw(st.booleans()):
            out += ["else:"] + _indent(_block(draw, depth + 1, inner))
        return out
    if kind in ("for", "while", "forgen"):
        inner["loop"] = True
        d = _fresh(ctx)
        if kind == "for":
            head = [f"for i{d} in range({draw(st.integers(0, 4))}):"]
            body = _block(draw, depth + 1, inner)
        elif kind == "forgen":
            g = draw(st.sampled_from(["gen", "gen_fin"] + [f"g{k}" for k in range(ctx.get("gens", 0))]
                                     + (["Obj"] if ctx.get("implicit") else [])))
            head = [f"for i{d} in {g}({draw(st.sampled_from(_VARS))} % 4):"]
            body = _block(draw, depth + 1, inner)
        else:
            head = [f"w{d} = 0", f"while w{d} < {draw(st.integers(0, 4))}:"]
            body = [f"w{d} += 1"] + _block(draw, depth + 1, inner)
        out = head + _indent(body)
        if draw(st.integers(0, 3)) == 0:
            out += ["else:"] + _indent(_block(draw, depth + 1, ctx, 2))
        return out
    if kind == "try":
        out = ["try:"] + _indent(_block(draw, depth + 1, inner))
        handlers = draw(st.integers(0, 2))
        for h in range(handlers):
            exc = draw(st.sampled_from(["ValueError", "(KeyError, IndexError)", "ZeroDivisionError",
                                        "Exception", "RuntimeError as e"]))
            out += [f"except {exc}:"] + _indent(_block(draw, depth + 1, inner, 2))
        if handlers and draw(st.booleans()):
            out += ["else:"] + _indent(_block(draw, depth + 1, inner, 2))
        if not handlers or draw(st.booleans()):
            out += ["finally:"] + _indent(_block(draw, depth + 1, inner, 2))
        return out
    if kind == "tryloop":
        # a loop with try/finally inside try/except (audit B2's shape)
        d = _fresh(ctx)
        looping = dict(ctx, loop=True)
        body = ["try:"] + _indent(_block(draw, depth + 2, looping, 2)) + ["finally:"] + \
            _indent([f"w{d} += 1"] + _block(draw, depth + 2, dict(ctx, loop=False), 1))
        loop = [f"w{d} = 0", f"while w{d} < {draw(st.integers(1, 4))}:"] + _indent(body)
        handler = draw(st.sampled_from(["Exception", "(KeyError, IndexError, ZeroDivisionError)", "ValueError"]))
        return ["try:"] + _indent(loop) + [f"except {handler}:"] + _indent(_block(draw, depth + 1, inner, 2))
    if kind == "repeat":
        # the same statement raises in several iterations, caught in or out of the loop
        d = _fresh(ctx)
        risky = draw(st.sampled_from([f"{{0: 1, 2: 3}}[i{d} % 4]", f"lst[i{d} + {v} % 3]",
                                      f"100 // (i{d} % 2)", f"[1, 2][i{d} % 3]"]))
        body = [f"{v} = {risky}"] + (["if False:", "    pass"] if draw(st.booleans()) else [])
        inner["loop"] = True
        if draw(st.booleans()):
            fin = ["finally:"] + _indent(_block(draw, depth + 2, dict(inner, loop=False), 1)) if draw(st.booleans()) else []
            body = ["try:"] + _indent(body) + ["except (KeyError, IndexError, ZeroDivisionError):"] + \
                _indent(_block(draw, depth + 2, inner, 1)) + fin
        return [f"for i{d} in range({draw(st.integers(1, 5))}):"] + _indent(body)
    if kind == "gentry":
        # a generator with try/finally, left early by an exception or a break in the loop over it
        d = _fresh(ctx)
        gbody = ["try:"] + _indent([f"for k in range(n):", f"    yield k + {draw(st.integers(0, 3))}"]
                                   + (["    if k == 2:", "        raise KeyError(k)"] if draw(st.booleans()) else [])) \
            + ["finally:", f"    lst.append({draw(st.integers(0, 9))})", "    del lst[:-5]"]
        inner["loop"] = True
        return [f"def gt{d}(n):"] + _indent(gbody) + [f"for i{d} in gt{d}({v} % 5):"] + \
            _indent(_block(draw, depth + 1, inner, 3))
    if kind == "defn":
        # a nested function (a closure over nothing: the program's variables are globals)
        d = _fresh(ctx)
        fctx = dict(ctx, loop=False, func=True)
        body = ["global a, b, c, lst"] + _block(draw, depth + 1, fctx, 3) + ["return a"]
        call = [f"{v} = nf{d}()"]
        if draw(st.booleans()):
            call = ["try:"] + _indent(call) + ["except Exception:"] + _indent([f"{v} = -1"])
        return [f"def nf{d}():"] + _indent(body) + call
    if kind == "classdef":
        d = _fresh(ctx)
        cctx = dict(ctx, loop=False, func=False)
        body = [f"attr = {draw(st.integers(0, 9))}"] + _block(draw, depth + 1, cctx, 2)
        wrap = draw(st.booleans())
        cls = [f"class K{d}:"] + _indent(body)
        if wrap:
            cls = ["try:"] + _indent(cls) + ["except Exception:"] + _indent(["pass"])
        return cls
    if kind == "with":
        return [f"with CM({draw(st.booleans())}) as cm{depth}:"] + _indent(_block(draw, depth + 1, inner))
    # match
    out = [f"match {v} % 4:"]
    for pat in draw(st.lists(st.sampled_from(["0", "1 | 2", "3"]), min_size=1, max_size=3, unique=True)):
        out += [f"    case {pat}:"] + _indent(_indent(_block(draw, depth + 1, inner, 2)))
    if draw(st.booleans()):
        out += ["    case _:"] + _indent(_indent(_block(draw, depth + 1, inner, 2)))
    return out


_PRELUDE = """\
class CM:
    def __init__(self, suppress):
        self.suppress = suppress

    def __enter__(self):
        return self

    def __exit__(self, typ, val, tb):
        return self.suppress and typ is not None and issubclass(typ, ArithmeticError)


def gen(n):
    for k in range(n):
        yield k * 2
    if n == 3:
        return


def gen_fin(n):
    try:
        for k in range(n):
            try:
                yield k
            finally:
                lst.append(k)
                del lst[:-5]
    finally:
        lst.append(n)


a, b, c = 1, 2, 3
lst = [4, 5, 6]
"""

# Classes whose implicit calls (properties, dunders, a descriptor) run instrumented code and
# sometimes raise; the thresholds are drawn, so each program raises in other places.
IMPLICIT_PRELUDE = """\
class Desc:
    def __get__(self, obj, owner):
        if obj is not None and obj.v % {dk} == {dr}:
            raise LookupError(obj.v)
        return 3


class Obj:
    d = Desc()

    def __init__(self, v):
        self.v = v

    def __repr__(self):
        return "Obj(%d)" % self.v

    @property
    def p(self):
        if self.v % {pk} == {pr}:
            raise ValueError(self.v)
        return self.v + 1

    def __eq__(self, other):
        if self.v == {ev}:
            raise KeyError(self.v)
        return isinstance(other, Obj) and other.v == self.v

    def __hash__(self):
        return self.v % 3

    def __getattr__(self, name):
        if self.v % {gk} == {gr}:
            raise AttributeError(name)
        return len(name)

    def __bool__(self):
        return self.v % 2 == 0

    def __len__(self):
        if self.v == {lv}:
            raise RuntimeError("len")
        return self.v

    def __iter__(self):
        for i in range(self.v % 4):
            if i == {iv}:
                raise IndexError(i)
            yield i

    def __getitem__(self, i):
        if i >= self.v:
            raise IndexError(i)
        return i * 10

    def __format__(self, spec):
        if self.v == {fv}:
            raise ValueError("format")
        return str(self.v)

    def __add__(self, other):
        if other == {av}:
            raise ZeroDivisionError(other)
        return self.v + other


table = {{Obj(1): 1, Obj(2): 2, Obj(4): 4}}
objs = [Obj(i) for i in range(7)]
"""


def _program(draw, *, implicit: bool, asyncs: bool) -> str:
    lines = [_PRELUDE]
    if implicit:
        k = {name: draw(st.integers(2, 5)) for name in ("dk", "pk", "gk")}
        lines.append(IMPLICIT_PRELUDE.format(
            dr=draw(st.integers(0, k["dk"] - 1)), pr=draw(st.integers(0, k["pk"] - 1)),
            gr=draw(st.integers(0, k["gk"] - 1)), ev=draw(st.integers(0, 6)), lv=draw(st.integers(0, 6)),
            iv=draw(st.integers(0, 4)), fv=draw(st.integers(0, 6)), av=draw(st.integers(0, 4)), **k))
    nfns = draw(st.integers(0, 3))
    ngens = draw(st.integers(0, 2))
    ids = [0]   # shared counter for loop variable and local names
    for i in range(ngens):
        ctx = {"loop": True, "func": False, "fns": 0, "ids": ids, "implicit": implicit}
        body = ["global a, b, c", f"for k in range(n):"] + _indent([f"a = k + {i}"] + _block(draw, 2, ctx, 2)
                                                                 + [f"yield a % 10"])
        if draw(st.booleans()):
            body = ["try:"] + _indent(body) + ["finally:", "    lst.append(n)", "    del lst[:-5]"]
        lines.append(f"def g{i}(n):")
        lines += _indent(body)
        lines.append("")
    for i in range(nfns):
        ctx = {"loop": False, "func": True, "fns": i, "ids": ids, "implicit": implicit, "gens": ngens}
        body = ["global lst", "a, b, c = x, y, x + y"] + _block(draw, 1, ctx) + ["return a + b + c"]
        lines.append(f"def f{i}(x, y):")
        lines += _indent(body)
        lines.append("")
    if asyncs:
        ctx = {"loop": False, "func": True, "fns": nfns, "ids": ids, "implicit": implicit, "gens": ngens}
        body = ["global a, b, c", "await asyncio.sleep(0)"] + _block(draw, 1, ctx, 3) + \
            ["await asyncio.sleep(0)", "return a"]
        lines += ["import asyncio", "", "async def co(n):"] + _indent(body) + [
            "", "async def main_co():",
            "    got = await asyncio.gather(co(1), co(2), return_exceptions=True)",
            "    return [repr(x) for x in got]", ""]
    ctx = {"loop": False, "func": False, "fns": nfns, "ids": ids, "implicit": implicit, "gens": ngens}
    for _ in range(draw(st.integers(1, 6))):
        top = _stmt(draw, 0, ctx)
        if implicit and draw(st.integers(0, 2)):   # most implicit-call programs run on after a raise
            top = ["try:"] + _indent(top) + ["except Exception as exc:", "    print(repr(exc))"]
        lines += top
    if asyncs:
        lines.append("print(asyncio.run(main_co()))")
    lines.append("print(a, b, c, lst)")
    return "\n".join(lines) + "\n"


@st.composite
def structured_programs(draw, implicit: bool = False, asyncs: bool | None = None) -> str:
    """Bounded programs with real control flow (see the module docstring); with ``implicit``
    the statements also make implicit calls into instrumented code that sometimes raise
    (``IMPLICIT_PRELUDE``); ``asyncs``: add coroutines run by asyncio (None: drawn, rarely)."""
    if asyncs is None:
        asyncs = draw(st.integers(0, 5)) == 0
    return _program(draw, implicit=implicit, asyncs=asyncs)


def implicit_programs() -> st.SearchStrategy[str]:
    """Structured programs built around classes with properties, dunder methods and a
    descriptor that sometimes raise (issue 9): implicit calls before, after and between
    exceptions, in try bodies, loops, ``with``, ``finally``, generators and coroutines."""
    return structured_programs(implicit=True)


# ------------------------------------------------------------------ running

DRIVER = r'''
"""Runs prog.py as __main__ (through the import system) and prints a digest of its globals."""
import os
import re
import runpy
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
PROG = os.path.join(HERE, "prog.py")
if HERE not in sys.path:
    sys.path.insert(0, HERE)


def safe(v, depth=0):
    """A repr that never shows addresses: containers of plain values, else the type name."""
    if v is None or isinstance(v, (bool, float, complex)):
        return repr(v)
    if isinstance(v, int):
        return repr(v) if v.bit_length() < 4000 else "int(bits=%d)" % v.bit_length()
    if isinstance(v, (str, bytes)):
        return repr(v) if len(v) <= 200 else "%s(len=%d)" % (type(v).__name__, len(v))
    if depth < 3 and type(v) in (list, tuple):
        return type(v).__name__ + "[" + ", ".join(safe(x, depth + 1) for x in v[:50]) + "]"
    if depth < 3 and type(v) in (set, frozenset):
        return type(v).__name__ + "{" + ", ".join(sorted(safe(x, depth + 1) for x in v)[:50]) + "}"
    if depth < 3 and type(v) is dict:
        return "{" + ", ".join(sorted("%s: %s" % (safe(k, depth + 1), safe(x, depth + 1))
                                      for k, x in list(v.items())[:50])) + "}"
    if isinstance(v, type):
        return "<class %s>" % getattr(v, "__qualname__", "?")
    if callable(v) and hasattr(v, "__qualname__"):
        return "<%s %s>" % (type(v).__name__, v.__qualname__)
    return "<%s>" % type(v).__name__


g, exc = None, None
try:
    g = runpy.run_module("prog", run_name="__main__", alter_sys=True)
except BaseException as e:  # noqa: B036 - report every way the program can end
    exc = e
    tb = e.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name == "<module>" and os.path.abspath(code.co_filename) == PROG:
            g = tb.tb_frame.f_globals
        tb = tb.tb_next
sys.stdout.flush()
if exc is not None:
    print("EXC", type(exc).__name__, re.sub(r"0x[0-9a-fA-F]+", "0x?", str(exc))[:200])
    for fs in traceback.extract_tb(exc.__traceback__):
        if os.path.abspath(fs.filename) == PROG:
            print("TB", fs.lineno, fs.name)
for name in sorted(g or {}):
    if not (name.startswith("__") and name.endswith("__")):
        try:
            text = safe(g[name])
        except Exception as e:  # a hostile __len__/__iter__ ...
            text = "<unprintable %s>" % type(e).__name__
        print("G", name, "=", text)
sys.exit(1 if exc is not None else 0)
'''


def write_program(source: str, dir: Path | str) -> Path:
    """Write ``prog.py`` and its driver ``run_prog.py`` into ``dir``; return the driver."""
    d = Path(dir)
    d.mkdir(parents=True, exist_ok=True)
    (d / "prog.py").write_bytes(source.encode("utf-8"))
    driver = d / "run_prog.py"
    driver.write_text(DRIVER.lstrip("\n"))
    return driver


def _limits() -> None:  # runs in the child before exec
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    resource.setrlimit(resource.RLIMIT_CPU, (10, 10))
    resource.setrlimit(resource.RLIMIT_FSIZE, (16 << 20, 16 << 20))


def run_plain(source: str, tmpdir: Path | str, *, timeout: float = TIMEOUT,
              python: str | None = None) -> tuple[int, str, str]:
    """Run ``source`` through the driver in a subprocess; (returncode, stdout, last stderr line)."""
    driver = write_program(source, tmpdir)
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
    try:
        proc = subprocess.run([python or sys.executable, str(driver)], capture_output=True,
                              timeout=timeout, cwd=str(tmpdir), env=env, stdin=subprocess.DEVNULL,
                              preexec_fn=_limits if os.name == "posix" else None)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace")
        return -1, out, "TimeoutExpired"
    out = proc.stdout.decode("utf-8", "replace")
    err_lines = [ln for ln in proc.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    return proc.returncode, out, (err_lines[-1] if err_lines else "")
