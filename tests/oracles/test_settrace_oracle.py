"""Tests of the sys.settrace line-count oracle.

1. Hand-computed counts on small programs (loops, exceptions, generators, exits, threads).
2. The line-selection rule on hand-written sources.
3. The rule validated against a second, independent counter: the program is rewritten
   (AST) with a counter increment before every selected statement, on that statement's
   line, and run without tracing; on every selected line the settrace count must equal
   the counter. Done on a program of tricky constructs and on corpus programs.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from corpus import PROGRAMS
from oracles.settrace_lines import line_counts, run_with_line_counts, single_simple_statement_lines
from oracles.tricky import TRICKY


def _write(tmp_path: Path, name: str, source: str) -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(source).lstrip("\n"))
    return p


def _by_line(counts, path: Path) -> dict[int, int]:
    real = os.path.realpath(path)
    return {ln: n for (fn, ln), n in counts.items() if fn == real}


# ------------------------------------------------------------------ hand-computed counts

BASIC = """
def f(n):
    t = 0
    for i in range(n):
        t += i
    return t


def g(x):
    try:
        if x:
            raise ValueError(x)
        y = 1
    except ValueError:
        y = 2
    return y


def gen(n):
    i = 0
    while i < n:
        yield i
        i += 1


f(3)
f(2)
for v in [0, 1, 1]:
    g(v)
print(sum(gen(3)))
"""


def test_loops_exceptions_generators(tmp_path):
    p = _write(tmp_path, "basic.py", BASIC)
    counts, proc = run_with_line_counts(p, [], {str(p)})
    assert proc.returncode == 0 and proc.stdout == "3\n"
    assert _by_line(counts, p) == {
        1: 1,             # def f
        2: 2, 3: 7,       # for header: 3 + 1 and 2 + 1 (the exhausted test)
        4: 5, 5: 2,
        8: 1,             # def g
        9: 3,             # try: (a NOP per call)
        10: 3, 11: 2, 12: 1,
        13: 2, 14: 2,     # except clause and handler, for the two raises
        15: 3,
        18: 1,            # def gen
        19: 1,
        20: 4,            # while test: on entry and after each of the 3 iterations
        21: 3, 22: 3,
        25: 1, 26: 1,
        27: 4, 28: 3,     # module-level for
        29: 1,
    }


def test_files_filter_argv_and_default_filter(tmp_path):
    helper = _write(tmp_path, "helper.py", """
        def twice(x):
            y = x * 2
            return y
    """)
    main = _write(tmp_path, "main.py", """
        import sys
        import helper
        for a in sys.argv[1:]:
            helper.twice(int(a))
        print(len(sys.argv))
    """)
    only_main = line_counts(main, ["1", "2", "3"], {str(main)})
    assert {fn for fn, _ in only_main} == {os.path.realpath(main)}
    assert _by_line(only_main, main) == {1: 1, 2: 1, 3: 4, 4: 3, 5: 1}
    everything = line_counts(main, ["1", "2", "3"], None)
    # Not the stdlib (sys, json ...), not site-packages, not the runner: both user files.
    assert {fn for fn, _ in everything} == {os.path.realpath(main), os.path.realpath(helper)}
    assert _by_line(everything, helper) == {1: 1, 2: 3, 3: 3}


def test_exit_paths_keep_counts(tmp_path):
    p = _write(tmp_path, "exits.py", """
        import sys
        mode = sys.argv[1]
        for i in range(3):
            x = i
        if mode == "exit":
            sys.exit(3)
        if mode == "raise":
            raise KeyError(mode)
        y = 1
    """)
    for mode, rc in [("exit", 3), ("raise", 1), ("ok", 0)]:
        counts, proc = run_with_line_counts(p, [mode], {str(p)})
        assert proc.returncode == rc, proc.stderr
        lines = _by_line(counts, p)
        assert lines[4] == 3
        assert (6 in lines) == (mode == "exit")
        assert (8 in lines) == (mode == "raise")
        assert (9 in lines) == (mode == "ok")
    counts, proc = run_with_line_counts(p, ["raise"], {str(p)})
    assert "KeyError" in proc.stderr


def test_threads_and_atexit_are_counted(tmp_path):
    p = _write(tmp_path, "threads.py", """
        import atexit
        import threading
        def work(n):
            for i in range(n):
                s = i
        def bye():
            z = 1
        atexit.register(bye)
        ts = [threading.Thread(target=work, args=(4,)) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        threading.Thread(target=work, args=(2,)).start()   # never joined explicitly
    """)
    counts, proc = run_with_line_counts(p, [], {str(p)})
    assert proc.returncode == 0, proc.stderr
    lines = _by_line(counts, p)
    assert lines[5] == 4 + 4 + 2
    assert lines[7] == 1


def test_os_exit_loses_counts(tmp_path):
    p = _write(tmp_path, "hard.py", """
        import os
        os._exit(0)
    """)
    with pytest.raises(RuntimeError):
        line_counts(p, [], None)


# ------------------------------------------------------------------ the selection rule

def test_selection_rule_on_hand_written_source():
    src = textwrap.dedent('''
        """module docstring"""
        import os
        x = 1; y = 2
        if x: z = 3
        a = [i for i in range(3)]
        b = (1 +
             2)
        class C:
            """class docstring"""
            k = 1
            ann: int
            def m(self):
                "method docstring"
                global x
                q: int
                return self.k
        def g():
            yield 1
            v = yield
            w = 2
            try:
                return w
            finally:
                pass
        def h():
            with open(__file__) as f:
                return 1
        for i in range(2):
            pass
            continue
        while False:
            break
        else:
            del x
        f = lambda: 0
        @staticmethod
        def s(): pass
        assert True
        raise SystemExit
    ''').lstrip("\n")
    lines = src.splitlines()
    got = {lines[n - 1].strip() for n in single_simple_statement_lines(src)}
    assert got == {
        "import os",
        "k = 1",
        "ann: int",          # class body: stored in __annotations__, executes
        "return self.k",
        "w = 2",
        "pass",              # two `pass` lines: both qualify (for body, finally body)
        "del x",
        "assert True",
        "raise SystemExit",
    }
    pass_lines = [n for n in single_simple_statement_lines(src) if lines[n - 1].strip() == "pass"]
    assert len(pass_lines) == 2


def test_selection_rule_on_match_and_except():
    src = textwrap.dedent('''
        def m(v):
            match v:
                case 1:
                    r = 1
                case [a,
                      b]:
                    r = 2
            try:
                r += 1
            except (KeyError,
                    ValueError):
                r = 0
            return r
    ''').lstrip("\n")
    lines = src.splitlines()
    got = sorted(lines[n - 1].strip() for n in single_simple_statement_lines(src))
    assert got == ["r += 1", "r = 0", "r = 1", "r = 2", "return r"]


# ------------------------------------------------------------------ independent validation

COUNT_RUNNER = r'''
import ast, atexit, builtins, importlib.machinery, importlib.util, os, sys, tokenize, types  # noqa: F401 (decode_source needs tokenize loaded before re is purged)

out_path, plan_path, script = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3])
plan = {}
with open(plan_path) as f:
    for row in f:
        fn, lines = ast.literal_eval(row)
        plan[os.path.realpath(fn)] = set(lines)
COUNTS = {}
builtins._WT_ORACLE_COUNTS = COUNTS


def transform(source, filename):
    real = os.path.realpath(filename)
    lines = plan.get(real, ())
    tree = ast.parse(source, filename)
    for node in ast.walk(tree):
        for field, value in ast.iter_fields(node):
            if not (isinstance(value, list) and value and isinstance(value[0], ast.stmt)):
                continue
            new = []
            for st in value:
                if st.lineno in lines and not (isinstance(st, ast.ImportFrom) and st.module == "__future__"):
                    key = (real, st.lineno)
                    COUNTS.setdefault(key, 0)
                    probe = ast.AugAssign(
                        target=ast.Subscript(value=ast.Name("_WT_ORACLE_COUNTS", ast.Load()),
                                             slice=ast.Constant(key), ctx=ast.Store()),
                        op=ast.Add(), value=ast.Constant(1))
                    for n in ast.walk(probe):
                        n.lineno = n.end_lineno = st.lineno
                        n.col_offset = n.end_col_offset = 0
                    new.append(probe)
                new.append(st)
            setattr(node, field, new)
    return compile(tree, filename, "exec", dont_inherit=True)


class Loader(importlib.machinery.SourceFileLoader):
    def get_code(self, fullname):
        path = self.get_filename(fullname)
        return transform(importlib.util.decode_source(self.get_data(path)), path)


class Finder:
    @staticmethod
    def find_spec(name, path=None, target=None):
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.origin and os.path.realpath(spec.origin) in plan:
            spec.loader = Loader(name, spec.origin)
        return spec


def dump():
    with open(out_path, "w") as f:
        for key, n in COUNTS.items():
            f.write(repr((key[0], key[1], n)) + "\n")


# Planned modules that this runner's own imports loaded (re, by ast) load again, counted.
for name, mod in list(sys.modules.items()):
    if os.path.realpath(getattr(mod, "__file__", None) or "/nonexistent") in plan:
        del sys.modules[name]
sys.meta_path.insert(0, Finder())
sys.dont_write_bytecode = True
atexit.register(dump)
sys.argv = [script] + sys.argv[4:]
sys.path[0] = os.path.dirname(script)
main = types.ModuleType("__main__")
main.__file__ = script
sys.modules["__main__"] = main
with open(script) as f:
    code = transform(f.read(), script)
exec(code, main.__dict__)
'''


def statement_counts(script: Path, argv: list[str], files: set[str]):
    """Counts of the selected statements, by explicit counters (no tracing)."""
    plan = {}
    for fn in files:
        plan[os.path.realpath(fn)] = sorted(single_simple_statement_lines(Path(fn).read_text()))
    with tempfile.TemporaryDirectory(prefix="wt-count-") as td:
        runner = Path(td) / "count_runner.py"
        runner.write_text(COUNT_RUNNER)
        plan_path = Path(td) / "plan.txt"
        plan_path.write_text("".join(repr(item) + "\n" for item in plan.items()))
        out = Path(td) / "out.txt"
        env = dict(os.environ, PYTHONHASHSEED="0")
        proc = subprocess.run([sys.executable, str(runner), str(out), str(plan_path), str(script), *argv],
                              capture_output=True, text=True, timeout=600, env=env)
        assert out.exists(), proc.stderr
        rows = [ast.literal_eval(line) for line in out.read_text().splitlines()]
    return {(fn, ln): n for fn, ln, n in rows}, plan, proc


def _validate(script: Path, files: set[str]) -> int:
    traced, p1 = run_with_line_counts(script, [], files)
    counted, plan, p2 = statement_counts(script, [], files)
    assert p1.returncode == p2.returncode == 0, (p1.stderr, p2.stderr)
    assert p1.stdout == p2.stdout
    bad = []
    checked = 0
    for fn, lines in plan.items():
        src = Path(fn).read_text().splitlines()
        for ln in lines:
            if src[ln - 1].lstrip().startswith("from __future__"):
                continue
            checked += 1
            if traced.get((fn, ln), 0) != counted.get((fn, ln), 0):
                bad.append((os.path.basename(fn), ln, traced.get((fn, ln), 0),
                            counted.get((fn, ln), 0), src[ln - 1].strip()))
    assert not bad, bad
    return checked


def test_rule_matches_explicit_counters_on_tricky_program(tmp_path):
    p = _write(tmp_path, "tricky.py", TRICKY)
    assert _validate(p, {str(p)}) > 40


@pytest.mark.parametrize("name", ["nqueens", "pyflate", "tomllib"])
def test_rule_matches_explicit_counters_on_corpus(name, tmp_path):
    prog = PROGRAMS[name]
    driver = prog.write(tmp_path)
    assert _validate(driver, prog.files(tmp_path)) > 30


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_rule_matches_explicit_counters_on_whole_corpus(name, tmp_path):
    prog = PROGRAMS[name]
    driver = prog.write(tmp_path)
    assert _validate(driver, prog.files(tmp_path)) > 30
