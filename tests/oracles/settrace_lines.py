"""Independent line-count oracle built on ``sys.settrace`` (imports nothing from wholetrace).

``line_counts(script, argv, files)`` runs ``script`` in a fresh interpreter under a tracer
that counts CPython's ``'line'`` events per ``(absolute filename, lineno)``.

A ``'line'`` event is not "one execution of the statement on that line": CPython 3.11
also fires it when a backward jump lands on a line, on a ``for`` header at every
iteration, for code of lambdas and comprehensions that shares the line, when a
generator resumes on a ``yield`` line, for duplicated ``finally`` code, and so on.
``single_simple_statement_lines(source)`` picks the lines where the two agree, so a
profiler's per-statement count can be compared with this oracle on exactly those lines.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["line_counts", "run_with_line_counts", "single_simple_statement_lines", "RUNNER"]

# The runner executed in the child. argv: out.txt files.txt|- script [args...]
RUNNER = r'''
import atexit, os, runpy, sys, threading
# Imports are kept few on purpose: json and re are corpus workloads, so the runner neither
# loads them nor anything that does (the counts are written one repr()'d tuple per line).

def _main():
    out_path, files_path, script = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3])
    args = sys.argv[4:]
    if files_path == "-":
        import site
        wanted = None
        roots = [os.path.dirname(os.__file__)] + list(site.getsitepackages())
        roots.append(site.getusersitepackages())
        skip = tuple(os.path.realpath(p) + os.sep for p in roots if p)
    else:
        with open(files_path) as f:
            wanted = {os.path.realpath(line.rstrip("\n")) for line in f if line.strip()}
    counts = {}
    decision = {}   # co_filename -> real absolute filename, or None when not counted

    def keep(fn):
        d = decision.get(fn, 0)
        if d == 0:
            if fn.startswith("<"):
                d = None
            else:
                real = os.path.realpath(os.path.abspath(fn))
                if wanted is None:
                    d = None if (real.startswith(skip) or real == _SELF) else real
                else:
                    d = real if real in wanted else None
            decision[fn] = d
        return d

    def local(frame, event, arg):
        if event == "line":
            key = (frame.f_code.co_filename, frame.f_lineno)
            counts[key] = counts.get(key, 0) + 1
        return local

    def global_(frame, event, arg):
        if keep(frame.f_code.co_filename) is None:
            return None
        return local(frame, event, arg)

    def dump():
        sys.settrace(None)
        threading.settrace(None)
        merged = {}
        for (fn, line), n in list(counts.items()):
            real = decision.get(fn)
            if real:
                merged[(real, line)] = merged.get((real, line), 0) + n
        tmp = out_path + ".tmp"
        with open(tmp, "w") as f:
            for (fn, line), n in sorted(merged.items()):
                f.write(repr((fn, line, n)) + "\n")
        os.replace(tmp, out_path)

    # atexit runs after non-daemon threads are joined and after the program's own atexit
    # handlers (registered later, run first): the dump sees everything but os._exit().
    atexit.register(dump)
    sys.argv = [script] + args
    sys.path[0] = os.path.dirname(script)
    threading.settrace(global_)
    sys.settrace(global_)
    runpy.run_path(script, run_name="__main__")

_SELF = os.path.realpath(os.path.abspath(__file__))
_main()
'''


def run_with_line_counts(script: Path | str, argv: list[str] | None = None,
                         files: set[str] | None = None, *, timeout: float = 600,
                         cwd: Path | str | None = None, env: dict | None = None,
                         python: str | None = None
                         ) -> tuple[dict[tuple[str, int], int], subprocess.CompletedProcess]:
    """Run ``script`` with ``argv`` under the line tracer; return (counts, completed process).

    ``files``: absolute paths to count (compared after ``realpath``); ``None`` counts every
    real file outside the standard library and site-packages. The counts of a run that
    exits with an exception or ``SystemExit`` are those up to the exit; a run killed
    before interpreter shutdown (``os._exit``, a signal, the timeout) raises RuntimeError.
    ``PYTHONHASHSEED`` defaults to 0 (in ``env`` or the inherited environment): some
    programs' control flow depends on set order (tomllib does), so compare runs made with
    the same seed. The runner loads runpy, threading and their few dependencies before the
    script starts (not json or re); their module-level code is not counted.
    """
    script = os.path.abspath(script)
    env = dict(os.environ if env is None else env)
    env.setdefault("PYTHONHASHSEED", "0")
    with tempfile.TemporaryDirectory(prefix="wt-settrace-") as td:
        runner = os.path.join(td, "settrace_runner.py")
        with open(runner, "w") as f:
            f.write(RUNNER)
        out = os.path.join(td, "counts.txt")
        files_arg = "-"
        if files is not None:
            files_arg = os.path.join(td, "files.txt")
            with open(files_arg, "w") as f:
                f.writelines(os.path.abspath(p) + "\n" for p in sorted(files))
        proc = subprocess.run([python or sys.executable, runner, out, files_arg, script, *(argv or [])],
                              capture_output=True, text=True, timeout=timeout,
                              cwd=cwd, env=env, stdin=subprocess.DEVNULL)
        if not os.path.exists(out):
            raise RuntimeError(f"line tracer wrote no counts (exit {proc.returncode}): {proc.stderr[-2000:]}")
        with open(out) as f:
            rows = [ast.literal_eval(line) for line in f if line.strip()]
    return {(fn, line): n for fn, line, n in rows}, proc


def line_counts(script: Path | str, argv: list[str], files: set[str] | None) -> dict[tuple[str, int], int]:
    """'line' events per (absolute real filename, lineno) of ``script`` run with ``argv``
    in a fresh subprocess (``sys.executable``), restricted to ``files`` (or, if None, to
    every file outside the standard library and site-packages)."""
    return run_with_line_counts(script, argv, files)[0]


# --------------------------------------------------------------------------- line selection

_SIMPLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Raise,
           ast.Assert, ast.Delete, ast.Pass, ast.Import, ast.ImportFrom)
_NESTED_CODE = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_SUSPEND = (ast.Yield, ast.YieldFrom, ast.Await)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _header_lines(node: ast.stmt) -> range:
    """Lines of a compound statement's header(s) that hold code of its own."""
    first = node.lineno
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.decorator_list:
        first = min(d.lineno for d in node.decorator_list)
    if isinstance(node, ast.Match):
        body_start = node.cases[0].pattern.lineno if node.cases else node.lineno
    else:
        body_start = node.body[0].lineno if getattr(node, "body", None) else node.lineno
    # A one-line compound statement (``if x: y = 1``) has its body on the header line.
    last = max(node.lineno, body_start - 1) if body_start > node.lineno else node.lineno
    # The header's own expressions may end on the body's first line (a multi-line ``def``'s
    # ``) -> T: ...``: the annotation runs with the ``def``, which fires that line's event).
    for field_name, value in ast.iter_fields(node):
        if field_name in _BODIES:
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, ast.AST):
                last = max([last] + [getattr(sub, "end_lineno", None) or last for sub in ast.walk(item)])
    return range(first, last + 1)


#: Fields of a compound statement that hold statements (or clauses), not header code.
_BODIES = {"body", "orelse", "finalbody", "handlers", "cases", "decorator_list"}


def _fires_twice(stmt: ast.stmt) -> bool:
    """A conditional expression whose ``body`` holds an ``and``/``or``: its short-circuit jump
    lands on the code after the whole expression, which fires the line a second time (3.11:
    ``x = (h or s) if en else None`` when ``en`` and ``h``; 3.12 and 3.13 in some shapes)."""
    return any(isinstance(sub, ast.IfExp) and any(isinstance(b, ast.BoolOp) for b in ast.walk(sub.body))
               for sub in ast.walk(stmt))


def _finally_protected(stack: list[ast.AST]) -> bool:
    """True if the innermost enclosing function/class scope puts the statement inside a
    ``with`` body or a ``try`` body/handler/else that has a ``finally`` clause (exit code
    is duplicated there and can be attributed to the jumping statement's line)."""
    for node, field_name in reversed(stack):
        if isinstance(node, _SCOPES):
            return False
        if isinstance(node, (ast.With, ast.AsyncWith)) and field_name == "body":
            return True
        if isinstance(node, (ast.Try, ast.TryStar)) and node.finalbody and field_name != "finalbody":
            return True
    return False


def single_simple_statement_lines(source: str) -> set[int]:
    """Lines whose 'line'-event count equals the execution count of the one statement on them.

    A line qualifies when all of these hold:

    * it holds exactly one statement (counting every simple statement's full line span,
      every compound statement's header lines including decorators and ``elif``, and
      every ``except`` clause line), and that statement is a *simple* statement of kind
      Expr, Assign, AugAssign, AnnAssign, Return, Raise, Assert, Delete, Pass, Import or
      ImportFrom (``global``/``nonlocal`` execute nothing; ``break``/``continue`` only jump)
      that starts and ends on that line;
    * it is not a docstring (an ``Expr`` string constant first in a module, class or
      function body) and not an annotation-only ``AnnAssign`` without a value in a
      function (nothing executes);
    * it contains no ``yield``, ``yield from`` or ``await`` (resuming fires another event);
    * it contains no lambda, comprehension or generator expression (their own code objects
      fire events on the same line), and no conditional expression whose true branch holds
      an ``and``/``or`` (a jump past the expression fires the line again);
    * no compound statement's header code (a ``def``'s return annotation) ends on it;
    * it is not a ``return`` inside a ``with`` body or a ``try ... finally`` of the same
      function (the exit code copied to that ``return`` fires its line a second time).

    Statements in class bodies, loops, handlers and ``finally`` blocks are kept.
    """
    tree = ast.parse(source)
    touch: dict[int, int] = {}
    candidates: dict[int, ast.stmt] = {}
    docstrings: set[int] = set()
    protected: set[int] = set()

    def mark(lines) -> None:
        for ln in lines:
            touch[ln] = touch.get(ln, 0) + 1

    def visit_body(owner: ast.AST, body: list[ast.stmt]) -> None:
        if (isinstance(owner, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            docstrings.add(id(body[0]))

    stack: list[tuple[ast.AST, str]] = []

    def walk(node: ast.AST) -> None:
        if isinstance(node, ast.stmt):
            if isinstance(node, _SIMPLE) or isinstance(node, (ast.Global, ast.Nonlocal, ast.Break, ast.Continue)):
                if not isinstance(node, (ast.Global, ast.Nonlocal)):
                    mark(range(node.lineno, node.end_lineno + 1))
                    if node.lineno == node.end_lineno and isinstance(node, _SIMPLE):
                        candidates.setdefault(node.lineno, node)
                        if isinstance(node, ast.Return) and _finally_protected(stack):
                            protected.add(id(node))
            else:
                mark(_header_lines(node))
        elif isinstance(node, ast.ExceptHandler):
            first_body = node.body[0].lineno if node.body else node.lineno
            mark(range(node.lineno, max(node.lineno, first_body - 1) + 1))
        elif isinstance(node, ast.match_case):
            first_body = node.body[0].lineno if node.body else node.pattern.lineno
            mark(range(node.pattern.lineno, max(node.pattern.lineno, first_body - 1) + 1))
        for field_name, value in ast.iter_fields(node):
            if isinstance(value, list):
                if value and isinstance(value[0], ast.stmt):
                    visit_body(node, value)
                for item in value:
                    if isinstance(item, ast.AST):
                        stack.append((node, field_name))
                        walk(item)
                        stack.pop()
            elif isinstance(value, ast.AST):
                stack.append((node, field_name))
                walk(value)
                stack.pop()

    walk(tree)

    in_function: set[int] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(fn):
                if isinstance(sub, ast.AnnAssign):
                    in_function.add(id(sub))

    out: set[int] = set()
    for line, stmt in candidates.items():
        if touch.get(line) != 1:
            continue
        if id(stmt) in docstrings or id(stmt) in protected:
            continue
        if isinstance(stmt, ast.AnnAssign) and stmt.value is None and (
                id(stmt) in in_function or not stmt.simple):
            continue
        if any(isinstance(sub, _SUSPEND + _NESTED_CODE) for sub in ast.walk(stmt)) or _fires_twice(stmt):
            continue
        out.add(line)
    return out
