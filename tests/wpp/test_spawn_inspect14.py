"""The builder's ``inspect`` stand-in, wave 14 review: another ``inspect`` name costs the real ``inspect`` only; without the stand-in numpy loads with the real one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from test_spawn_exit14 import _DUMP
from wtutil import ENV

SRC = str(Path(__file__).resolve().parents[2] / "src")
# numpy's modules the lean core does not import (import numpy does)
_HEAVY = ("numpy.lib", "numpy.linalg", "numpy.matrixlib", "numpy.__config__")

# numpy._core.overrides as a future numpy might be: its source with a module-level use of another
# inspect function (run while multiarray, hence overrides, loads: the stand-in's window)
_OVERRIDES_USES_MORE = '''
import importlib.machinery as _m, sys as _sys
class _Loader(_m.SourceFileLoader):
    def get_code(self, fullname):
        src = self.get_data(self.path) + b"\\nimport inspect as _i\\n_probe = (_i.getmodulename('a/b.py'), _i.isfunction(_i))\\n"
        return compile(src, self.path, "exec", dont_inherit=True)
class _Finder:
    def find_spec(self, name, path=None, target=None):
        if name != "numpy._core.overrides":
            return None
        spec = _m.PathFinder.find_spec(name, path)
        spec.loader = _Loader(name, spec.origin)
        return spec
_sys.meta_path.insert(0, _Finder())
'''


def _run(code: str) -> list[str]:
    return subprocess.run([sys.executable, "-W", "error", "-c", code], env={**ENV, "PYTHONPATH": SRC},
                          capture_output=True, text=True, check=True).stdout.splitlines()


def _plain() -> str:
    """Oracle: every dispatched function's module, name, docstring and signature in a plain ``import numpy``."""
    return _run("import numpy\n" + _DUMP + "print(repr(dump()))\n")[0]


def _lean_then_complete(prelude: str) -> list[str]:
    """After ``prelude``: the lean numpy's state and what it loaded, then (completed) overrides' inspect and the dump."""
    return _run(prelude + "import sys\nimport wholetrace.wpp.startup as s\nnp = s.lean_numpy()\n"
                "from numpy._core import overrides\n"
                f"print(s.numpy_state(), sorted(m for m in {_HEAVY!r} if m in sys.modules))\n"
                "real = sys.modules.get('inspect')\n"
                "print(real is not None and hasattr(real, 'getmembers') and not hasattr(real, '_wholetrace_stand_in'),"
                " getattr(overrides, '_probe', None))\n"
                "np.unique(np.zeros(3))\n"      # numpy.lib: completes the import
                + _DUMP + "import inspect\n"
                "print(s.numpy_state(), overrides.inspect is inspect is real)\nprint(repr(dump()))\n")


def test_an_overrides_using_another_inspect_name_costs_the_real_inspect_not_numpy_whole() -> None:
    """The stand-in's module ``__getattr__`` gives the real ``inspect``'s names: the lean core stays
    lean (the wave-14 branch without it: the lean step failed and numpy was completed, state
    ``full``); the real ``inspect`` is in ``sys.modules``, the overrides-like caller got its answers,
    and once completed every dispatched function's docstring and signature are a plain import's."""
    lean = _lean_then_complete(_OVERRIDES_USES_MORE)
    assert lean[0] == "lean []"
    assert lean[1] == "True ('b', False)"
    assert lean[2] == "full True"
    assert lean[3] == _plain()


def test_the_stand_in_s_getattr_swaps_in_the_real_inspect() -> None:
    out = _run("import sys\nfrom wholetrace.wpp.startup import _inspect_stand_in\n"
               "stand_in = _inspect_stand_in()\nsys.modules['inspect'] = stand_in\n"
               "import inspect as held\n"       # a module keeping the stand-in
               "print('inspect' in sys.modules and sys.modules['inspect'] is held)\n"
               "f = held.getdoc\n"
               "real = sys.modules['inspect']\n"
               "print(real is not stand_in, f is real.getdoc, held.cleandoc is not real.cleandoc,"
               " hasattr(held, '__path__'), 'numpy' in sys.modules)\n")
    assert out == ["True", "True True True False False"]


@pytest.mark.parametrize("how", ["no inspect.py", "cleandoc not self-contained"])
def test_without_the_stand_in_numpy_loads_with_the_real_inspect(tmp_path: Path, how: str) -> None:
    """``_inspect_stand_in`` gives None (no ``inspect.py`` beside ``os.py``, as in a ``.pyc``-only
    install; or a ``cleandoc`` that needs more than ``sys``): the lean numpy imports the real
    ``inspect`` for ``overrides`` and is the same as a plain import once completed."""
    if how == "cleandoc not self-contained":
        (tmp_path / "inspect.py").write_text("def cleandoc(doc):\n    return _helper(doc)\n\ndef other():\n    pass\n")
    prelude = (f"import os\nreal_file = os.__file__\nos.__file__ = {str(tmp_path / 'os.py')!r}\n"
               "from wholetrace.wpp.startup import _inspect_stand_in\nassert _inspect_stand_in() is None\n")
    lean = _lean_then_complete(prelude)
    assert lean[0] == "lean []"
    assert lean[1] == "True None"
    assert lean[2] == "full True"
    assert lean[3] == _plain()
