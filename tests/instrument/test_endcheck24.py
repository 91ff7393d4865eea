"""The end-of-run check (``instrument.bypass``) runs none of the program's code and never costs
the recording (review24a HIGH-1: a proxy's ``__getattr__``/``__class__`` ran and raised out of
``Live.stop``; HIGH-2: a lazily loaded module was executed; MED-1: lambdas were noted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest

from wtutil import ENV, profiles, run_plain, run_recorded

PROXIES = dedent('''\
    class Lazy:
        def __getattr__(self, name):
            print("proxy touched:", name)
            raise RuntimeError("settings not configured")

    class LazyObject:
        _wrapped = None
        def _setup(self):
            print("setup ran")
            raise LookupError("not configured")
        @property
        def __class__(self):
            if self._wrapped is None:
                self._setup()
            return type(self._wrapped)

    class Meta(type):
        def __getattribute__(cls, name):
            print("meta touched:", name)
            raise RuntimeError(name)

    class Odd(metaclass=Meta):
        pass

    settings = Lazy()
    request = LazyObject()

    def work(n):
        return sum(i for i in range(n) if i % 2)

    print(work(10))
''')

MODES = ["blocks", "count", "witness", "branches", "path", "path --wpp", "full"]


@pytest.mark.parametrize("mode", MODES)
def test_proxies_untouched_and_recorded(tmp_path: Path, mode: str) -> None:
    """Output as plain (before: ``proxy touched: __func__``, rc 1, a wholetrace traceback and an
    empty recording); ``work`` is recorded."""
    script = tmp_path / "prog.py"
    script.write_text(PROXIES)
    plain = run_plain(script)
    assert plain.stdout == "25\n" and plain.returncode == 0
    out = tmp_path / "p.wt"
    m, *opts = mode.split()
    got = run_recorded(script, out, mode=m, options=tuple(opts))
    assert (got.stdout, got.stderr, got.returncode) == (plain.stdout, plain.stderr, 0)
    assert "work" in {q for _f, q, _l in profiles(out)}


LAZY = dedent('''\
    import importlib.util, sys
    def lazy_import(name):
        spec = importlib.util.find_spec(name)
        loader = importlib.util.LazyLoader(spec.loader)
        spec.loader = loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        loader.exec_module(module)
        return module
    heavy = lazy_import("heavy")
    broken = lazy_import("broken")
    print("program done")
''')


@pytest.mark.parametrize("mode", ["blocks", "count"])
def test_lazy_modules_not_loaded(tmp_path: Path, mode: str) -> None:
    """A module ``importlib.util.LazyLoader`` put in ``sys.modules`` and the program never used is
    not executed at the end (before: ``heavy module executed`` printed; the missing optional
    dependency's ``ModuleNotFoundError`` came out of ``record``, rc 1, recording lost)."""
    script = tmp_path / "prog.py"
    script.write_text(LAZY)
    (tmp_path / "heavy.py").write_text('print("heavy module executed")\n')
    (tmp_path / "broken.py").write_text("import not_installed_dependency_xyz\n")
    plain = run_plain(script)
    assert plain.stdout == "program done\n" and plain.returncode == 0
    out = tmp_path / "p.wt"
    got = run_recorded(script, out, mode=mode)
    assert (got.stdout, got.stderr, got.returncode) == (plain.stdout, plain.stderr, 0)
    assert "lazy_import" in {q for _f, q, _l in profiles(out)}


def test_lambdas_not_noted(tmp_path: Path) -> None:
    """Lambdas at module and class level are instrumented with their module: no note (before:
    ``3 not instrumented``, ``<lambda>`` listed as code compiled by the program)."""
    script = tmp_path / "prog.py"
    script.write_text("import lmod\nsq = lambda x: x * x\nprint(sq(3), lmod.cube(2), lmod.C().f())\n")
    (tmp_path / "lmod.py").write_text("cube = lambda x: x ** 3\n\nclass C:\n    f = lambda self: 1\n")
    got = run_recorded(script, tmp_path / "p.wt", quiet=False)
    assert got.stdout == "9 8 1\n" and got.returncode == 0
    assert "not instrumented" not in got.stderr, got.stderr


def test_end_check_error_costs_no_recording() -> None:
    """An error inside the check (here: the scope's) gives no notes, and nothing raises."""
    from wholetrace.instrument.bypass import end_notes

    class Broken:
        def wants(self, name: str, origin: str) -> bool:
            raise RuntimeError("boom")

    assert end_notes(Broken(), [], [], object(), []) == []  # type: ignore[arg-type]
