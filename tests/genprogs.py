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
modules of the script directory instruments ``prog``), prints ``EXC <type name>`` if it
raised, then a deterministic digest of its module globals, and exits 1 if it raised,
else 0. ``run_plain(source, tmpdir)`` does that in a subprocess (timeout 5 s, memory,
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

__all__ = ["programs", "structured_programs", "acceptable", "write_program", "run_plain",
           "DRIVER", "DENY_NAMES", "TIMEOUT"]

TIMEOUT = 5.0

# Names whose use could reach outside the process, block, or print addresses.
DENY_NAMES = frozenset({
    "open", "exec", "eval", "compile", "__import__", "input", "breakpoint", "help", "exit",
    "quit", "id", "hash", "memoryview", "globals", "locals", "vars", "dir", "object",
    "__builtins__", "__loader__", "__spec__", "__file__", "copyright", "credits", "license",
})
_ALLOWED_IMPORTS = frozenset({"__future__", "math", "itertools", "functools", "operator"})
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
        base = hypothesmith.from_node()
    elif kind == "grammar":
        base = hypothesmith.from_grammar()
    else:
        raise ValueError(f"unknown kind {kind!r}")
    return base.filter(acceptable)


# ------------------------------------------------------------------ structured programs

_VARS = ("a", "b", "c")


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


def _stmt(draw, depth: int, ctx: dict) -> list[str]:
    simple = ["assign", "aug", "print", "append", "raise", "pass", "divide", "index"]
    if ctx["loop"]:
        simple += ["break", "continue"]
    if ctx["func"]:
        simple += ["return"]
    compound = ["if", "for", "while", "try", "with", "forgen", "match"] if depth < 3 else []
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
        ctx["ids"][0] += 1
        d = ctx["ids"][0]
        if kind == "for":
            head = [f"for i{d} in range({draw(st.integers(0, 4))}):"]
            body = _block(draw, depth + 1, inner)
        elif kind == "forgen":
            head = [f"for i{d} in gen({draw(st.sampled_from(_VARS))} % 4):"]
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


a, b, c = 1, 2, 3
lst = [4, 5, 6]
"""


@st.composite
def structured_programs(draw) -> str:
    """Bounded programs with real control flow (see the module docstring)."""
    lines = [_PRELUDE]
    nfns = draw(st.integers(0, 3))
    ids = [0]   # shared counter for loop variable names
    for i in range(nfns):
        ctx = {"loop": False, "func": True, "fns": i, "ids": ids}
        body = ["global lst", "a, b, c = x, y, x + y"] + _block(draw, 1, ctx) + ["return a + b + c"]
        lines.append(f"def f{i}(x, y):")
        lines += _indent(body)
        lines.append("")
    ctx = {"loop": False, "func": False, "fns": nfns, "ids": ids}
    lines += _block(draw, 0, ctx, 6)
    lines.append("print(a, b, c, lst)")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ running

DRIVER = r'''
"""Runs prog.py as __main__ (through the import system) and prints a digest of its globals."""
import os
import runpy
import sys

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
    print("EXC", type(exc).__name__)
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
