"""Record's fixed cost, wave 13 (docs/design.md): the miss path imported on the first miss
(``test_misspath13.py``: its loading), ``_ctypes`` in place of ``ctypes``, no ``compile`` of strings at start-up.

Oracles: the plain run (what the program sees), ``ctypes`` itself, the code objects the former
``compile`` calls made, and a recording made from a warm cache (which never loads the miss path).
"""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

from wtutil import ENV, run_plain

SEES = '''
import sys
print(sorted(m for m in ("ast", "_ast", "enum", "bisect", "ctypes", "signal", "contextvars", "math")
             if m in sys.modules))
import helper_mod
print(sorted(m for m in ("ast", "_ast", "enum", "bisect", "ctypes", "signal") if m in sys.modules))
print(helper_mod.f(5))
import ast
print(ast.parse("x = 1").body[0].__class__.__name__, type(ast.parse("y")) is ast.Module)
'''
HELPER = '''
def f(n):
    total = 0
    for i in range(n):
        if i % 2:
            total += i
    return total
'''


def _cold_and_warm(tmp_path, name, text, mode, *options):
    """Write the program (beside ``helper_mod``), run it plain, then record it twice (cold,
    then warm code cache); returns (plain stdout, the two recorded stdouts)."""
    (tmp_path / "helper_mod.py").write_text(HELPER)
    script = tmp_path / name
    script.write_text(text)
    plain = run_plain(script)
    assert plain.returncode == 0, plain.stderr
    outs = []
    for _cold_then_warm in range(2):
        run = _record(tmp_path, script, mode, tmp_path / "cache", *options)
        assert run.returncode == 0, run.stderr
        outs.append(run.stdout)
    return plain.stdout, outs


def _record(tmp_path, script, mode, cache, *options):
    return subprocess.run([sys.executable, "-m", "wholetrace.cli", "record", "--mode", mode, "-q", *options,
                           "-o", str(tmp_path / f"{mode}.wt"), str(script)], capture_output=True, text=True,
                          cwd=tmp_path, env={**ENV, "WHOLETRACE_CACHE_DIR": str(cache)}, timeout=300)


#: What the cold recording's program sees from its first line: the modules the miss path
#: loaded to instrument the script itself (they stay: one copy of each, as before wave 13).
MISS_SEEN = "['_ast', 'ast', 'bisect', 'enum']"


@pytest.mark.parametrize("mode", ["blocks", "count", "witness", "path"])
def test_the_miss_path_is_not_seen_by_the_program(tmp_path, mode):
    """Warm cache (no miss: the miss path is not imported at all): the program sees none of its
    modules, as without wholetrace.  Cold cache (the script is instrumented before its first
    line): it sees those the miss path loaded, as every recording did before wave 13, and
    everything else it prints is the plain run's."""
    plain, outs = _cold_and_warm(tmp_path, "prog_sees.py", SEES, mode)
    assert outs[1] == plain
    assert plain.splitlines()[0] == "[]"
    cold = outs[0].splitlines()
    assert cold[:2] == [MISS_SEEN, MISS_SEEN]
    assert cold[2:] == plain.splitlines()[2:]


ENUM_PROG = '''
import enum
import helper_mod

class Colour(enum.Enum):
    RED = 1

print(Colour.RED, helper_mod.f(7))
'''


def test_include_of_a_module_the_miss_path_uses_loads_it_at_start_up(tmp_path):
    """``--include enum``: the program's ``enum`` is its instrumented copy, so the miss path
    (``ast`` builds enums) is imported before it, as before wave 13.  Oracle: the same
    recording from a warm cache, which loads no miss path: the cold one records as many
    events (the program's own enum calls), not the miss path's."""
    from wholetrace.store import Recording

    (tmp_path / "helper_mod.py").write_text(HELPER)
    script = tmp_path / "prog_enum.py"
    script.write_text(ENUM_PROG)
    plain = run_plain(script)
    counts = []
    for _cold_then_warm in range(2):
        run = _record(tmp_path, script, "blocks", tmp_path / "cache", "--include", "enum")
        assert run.returncode == 0, run.stderr
        assert run.stdout == plain.stdout
        with Recording(tmp_path / "blocks.wt") as rec:
            counts.append(sum(st.n_events for st in rec.streams()))
    assert counts[0] == counts[1] > 0


def test_eager_miss_path_rule():
    from wholetrace.instrument import misspath
    from wholetrace.instrument.loader import Scope
    from wholetrace.runtime.runner import eager_miss_path

    assert not eager_miss_path(Scope(["/nowhere/project"], []))
    assert not eager_miss_path(Scope(["/nowhere/project"], ["json", "tomllib", "mypkg.sub"]))
    assert eager_miss_path(Scope(["/nowhere/project"], ["enum"]))
    assert eager_miss_path(Scope(["/nowhere/project"], ["ast"]))
    assert eager_miss_path(Scope(["/nowhere/project"], ["collections.abc"]))
    assert eager_miss_path(Scope(["/usr/lib/python3/x"], [], _install=("/usr/lib/python3",)))
    assert {"ast", "enum", "bisect"} <= misspath.CLOSURE


CLOSURE_PROBE = '''
import builtins, sys
import wholetrace.runtime.runner, wholetrace.runtime.recorder, wholetrace.runtime.cli, wholetrace.store.writer
from wholetrace.instrument import misspath
assert not misspath.loaded()
assert "ast" not in sys.modules and "enum" not in sys.modules, sorted(sys.modules)
named = set()
real = builtins.__import__
def spy(name, globals=None, locals=None, fromlist=(), level=0):
    if not level:
        named.add(name.split(".")[0])
    return real(name, globals, locals, fromlist, level)
builtins.__import__ = spy
misspath.load()
builtins.__import__ = real
print(" ".join(sorted(n for n in named if n in sys.stdlib_module_names)))
'''


def test_closure_lists_every_stdlib_module_the_miss_path_imports():
    """Every import statement run while the miss path loads (its modules' bodies, and the
    standard-library modules they load), on this Python: the names are in ``CLOSURE``."""
    from wholetrace.instrument import misspath

    r = subprocess.run([sys.executable, "-c", CLOSURE_PROBE], capture_output=True, text=True, env=ENV, timeout=120)
    assert r.returncode == 0, r.stderr
    named = set(r.stdout.split())
    assert {"ast", "enum"} <= named
    assert named <= misspath.CLOSURE, sorted(named - misspath.CLOSURE)


def test_lazy_module_binds_itself_in_place():
    from wholetrace.instrument.misspath import LazyModule

    ns: dict[str, object] = {}
    ns["j"] = LazyModule("json", ns, "j")
    assert ns["j"].dumps([1]) == "[1]"      # type: ignore[attr-defined]
    import json

    assert ns["j"] is json


def test_thread_state_ints_are_those_ctypes_reads():
    import ctypes

    from wholetrace.runtime import recursion

    get = ctypes.pythonapi.PyThreadState_Get
    get.restype = ctypes.c_void_p
    assert list(recursion._thread_state_ints()) == list((ctypes.c_int * recursion._FIELDS).from_address(get()))
    assert recursion.available()


def test_keep_alive_adds_one_reference_for_good():
    from wholetrace.capi import keep_alive

    obj = object()
    before = sys.getrefcount(obj)
    keep_alive(obj)
    assert sys.getrefcount(obj) == before + 1


def test_leaking_a_connection_loads_no_ctypes_package():
    """``store.fdguard.leak`` (a connection whose descriptor the program took) keeps it through
    ``_ctypes``: the program's ``sys.modules`` gains no ``ctypes`` (it imported the package)."""
    code = ("import sys, sqlite3; from wholetrace.store import fdguard; c = sqlite3.connect(':memory:'); "
            "n = sys.getrefcount(c); fdguard.leak(c); print(sys.getrefcount(c) - n, 'ctypes' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["2", "False"]     # the list's reference and the one never given back


def test_depth_probe_measures_what_the_compiled_probe_did():
    from wholetrace.runtime import recursion, runner

    compiled = compile("out.append(depth() - 1)", "<wholetrace>", "exec")

    def nested(level: int) -> tuple[list[int], list[int]]:
        if level:
            return nested(level - 1)
        a: list[int] = []
        b: list[int] = []
        exec(runner._DEPTH_PROBE, {"out": a, "depth": recursion.depth})
        exec(compiled, {"out": b, "depth": recursion.depth})
        return a, b

    for level in (0, 3, 10):
        a, b = nested(level)
        assert a == b


def test_as_main_frame_is_the_code_compile_made():
    import dis
    import runpy

    from wholetrace.runtime import runner

    real = runpy._run_module_as_main.__code__  # type: ignore[attr-defined]
    line = next((pos[0] for ins, pos in ((i, i.positions) for i in dis.get_instructions(real))
                 if ins.argval == "_run_code" and pos is not None and pos.lineno), real.co_firstlineno + 1)
    source = "\n" * max(line - 2, 0) + ("def _run_module_as_main(code, main_globals, mod_spec):\n"
                                        "    return _run_code(code, main_globals, None, '__main__', mod_spec)\n")
    module = compile(source, real.co_filename, "exec", dont_inherit=True)
    want = next(c for c in module.co_consts if isinstance(c, types.CodeType))
    fn = runner._as_main_frame()
    got = fn.__code__
    assert got == want
    assert list(got.co_positions()) == list(want.co_positions())
    assert (got.co_filename, got.co_name, got.co_qualname, got.co_flags) == \
        (want.co_filename, want.co_name, want.co_qualname, want.co_flags)
    assert fn.__globals__ is runpy.__dict__


def test_record_start_up_does_not_import_signal():
    """``runtime.children`` and ``runtime.cli`` use ``_signal`` (``signal.py`` imports enum):
    importing them, and the runner, loads neither ``signal`` nor ``enum`` (oracle: a fresh
    interpreter's ``sys.modules``)."""
    probe = ("import sys, wholetrace.runtime.cli, wholetrace.runtime.children, wholetrace.runtime.runner\n"
             "print(sorted(m for m in ('signal', 'enum') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=ENV, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "[]\n"
    import _signal

    from wholetrace.runtime import children, cli

    assert children.signal is _signal and cli.signal is _signal


SPECS = '''
import importlib, importlib.abc, importlib.machinery, sys


class Appended(importlib.abc.MetaPathFinder):   # after PathFinder: asked only for what it does not find
    asked = []

    def find_spec(self, name, path=None, target=None):
        self.asked.append(name)
        return None


class Between(importlib.abc.MetaPathFinder):    # between the built-in importer and PathFinder
    asked = []

    def find_spec(self, name, path=None, target=None):
        self.asked.append(name)
        if name == "claimed_by_between":
            return importlib.machinery.ModuleSpec(name, None, is_package=True)
        return None


sys.meta_path.append(Appended())
sys.meta_path.insert(sys.meta_path.index(importlib.machinery.PathFinder), Between())
import helper_mod, json.decoder, math, _decimal, __hello__, claimed_by_between, nspkg.inner
for name in ("helper_mod", "json", "json.decoder", "math", "_decimal", "__hello__", "claimed_by_between", "nspkg",
             "nspkg.inner", "sys", "_signal"):
    m = sys.modules[name]
    spec = m.__spec__
    print(name, type(spec.loader).__name__ if spec.loader is not None else None, spec.origin,
          getattr(m, "__file__", None), spec.submodule_search_locations is not None)
try:
    import no_such_module_anywhere
except ImportError as exc:
    print(type(exc).__name__, exc, exc.name)
print(Between.asked.count("json.decoder"), Between.asked.count("no_such_module_anywhere"))
print(Appended.asked.count("json.decoder"), Appended.asked.count("no_such_module_anywhere"))
print(helper_mod.f(4))
'''


@pytest.mark.parametrize("mode", ["blocks", "count"])
def test_modules_out_of_scope_get_the_spec_they_get_without_wholetrace(tmp_path, mode):
    """The finder hands a module out of scope the spec ``PathFinder`` found (one search, not
    two), unless a finder between it and ``PathFinder`` claims the module: the program sees the
    same loaders, origins and errors as without wholetrace, and each finder is asked as often
    (oracle: the plain run; the helper module is the program's own, instrumented)."""
    (tmp_path / "nspkg").mkdir()
    (tmp_path / "nspkg" / "inner.py").write_text("X = 1\n")
    plain, outs = _cold_and_warm(tmp_path, "prog_specs.py", SPECS, mode)
    assert outs == [plain, plain]          # the instrumented helper's loader too: plain's (wave 22)
    from wholetrace.store import Recording

    with Recording(tmp_path / f"{mode}.wt") as rec:
        assert sorted({f.file.rsplit("/", 1)[-1] for f in rec.functions()}) == \
            ["helper_mod.py", "inner.py", "prog_specs.py"]


def test_scope_real_is_realpath(tmp_path):
    """``Scope._real`` (directory realpaths kept) answers as ``os.path.realpath``, through
    symlinked directories and files (oracle: ``os.path.realpath``)."""
    import os

    from wholetrace.instrument.loader import Scope

    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "m.py").write_text("")
    (tmp_path / "real" / "n.py").write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "real" / "l.py").symlink_to(tmp_path / "real" / "n.py")
    scope = Scope([str(tmp_path / "real")], [])
    for p in ("real/m.py", "link/m.py", "link/l.py", "real/l.py", "link/missing.py", "link/../real/m.py", "link/"):
        path = str(tmp_path / p)
        assert scope._real(path) == os.path.realpath(path), p
        assert scope._real(path) == os.path.realpath(path), p   # second answer from the kept directory
    assert scope._real("rel/x.py") == os.path.realpath("rel/x.py")
