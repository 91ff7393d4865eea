"""The corpus registry for benchmark scripts: a re-export of ``tests/corpus.py``.

There is one registry, ``tests/corpus.py``; this module loads it by path (no change to
``sys.path``) and re-exports its public names: ``PROGRAMS``, ``Program``, ``SIZES``,
``names``, ``pyperformance_benchmark_dir``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_PATH = Path(__file__).resolve().parent.parent / "tests" / "corpus.py"
_NAME = "wholetrace_tests_corpus"


def _load():
    for mod in (sys.modules.get("corpus"), sys.modules.get(_NAME)):
        if mod is not None and Path(getattr(mod, "__file__", "") or "").resolve() == _PATH:
            return mod
    spec = importlib.util.spec_from_file_location(_NAME, _PATH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[_NAME] = mod  # dataclasses need the module registered while executing
    spec.loader.exec_module(mod)
    return mod


_corpus = _load()
Program = _corpus.Program
PROGRAMS = _corpus.PROGRAMS
SIZES = _corpus.SIZES
names = _corpus.names
pyperformance_benchmark_dir = _corpus.pyperformance_benchmark_dir

__all__ = ["Program", "PROGRAMS", "SIZES", "names", "pyperformance_benchmark_dir"]
