"""The builder's exit, wave 14: its result pipe reaches EOF before the process tears itself down, with the whole result in it."""

from __future__ import annotations

import marshal
import subprocess
import sys
from pathlib import Path

from wtutil import ENV

SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_the_builder_closes_its_result_pipe_before_its_exit_and_the_result_is_whole() -> None:
    """Started as ``wpp.spawn`` starts it: when it calls ``os._exit`` its standard output (the
    recorder's result pipe, read to EOF) is already closed, so the recorder's read ends without
    waiting for the teardown of a process with numpy and the kernels mapped; what it read before
    is the whole result (every event received, both streams' grammars)."""
    from test_builder_startup11 import _events, _frames, _path
    from wholetrace.wpp.spawn import _CODE

    code = ("import os, sys\nreal = os._exit\n"
            "def _exit(c):\n"
            "    try:\n        os.fstat(1)\n        state = 'open'\n"
            "    except OSError:\n        state = 'closed'\n"
            "    sys.stderr.write('STDOUT %s\\n' % state); sys.stderr.flush(); real(c)\n"
            "os._exit = _exit\n" + _CODE.replace("; ", "\n"))
    events = _events(14)
    p = subprocess.run([sys.executable, "-S", "-c", code, "blocks", "1", "100000", "0", *_path()],
                       input=_frames(events), capture_output=True, check=True,
                       env={**ENV, "PYTHONPATH": SRC, "OPENBLAS_NUM_THREADS": "1"})
    assert p.stderr.decode().split("STDOUT ", 1)[1].split("\n")[0] == "closed"
    result = marshal.loads(p.stdout)
    assert "error" not in result
    assert set(result["grammars"]) == {0, 1}
    assert result["stats"]["received_events"] == sum(len(e) for e in events)
    assert {int(s): v["events"] for s, v in result["streams"].items()} == {0: len(events[0]), 1: len(events[1])}


# every dispatched numpy function: (module, qualname, docstring, signature as inspect gives it)
_DUMP = ("def dump():\n"
         "    import inspect\n"
         "    from numpy._core import overrides\n"
         "    out = []\n"
         "    for f in overrides.ARRAY_FUNCTIONS:\n"
         "        try:\n            sig = str(inspect.signature(f))\n"
         "        except (ValueError, TypeError) as exc:\n            sig = type(exc).__name__\n"
         "        out.append((getattr(f, '__module__', None), getattr(f, '__qualname__', None), f.__doc__, sig,"
         " type(getattr(f, '__signature__', None)).__name__))\n"
         "    return sorted(out, key=repr)\n")


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-W", "error", "-c", code], env={**ENV, "PYTHONPATH": SRC},
                          capture_output=True, text=True, check=True).stdout


def test_the_lean_core_loads_without_inspect_and_completes_to_import_numpys_signatures_and_docs() -> None:
    """The lean numpy loads ``numpy._core.overrides`` with the stand-in ``inspect`` (none of
    inspect, ast, dis, tokenize loaded); once numpy is completed every dispatched function has
    the docstring and the signature (computed, of the same type) a plain ``import numpy`` in
    another process gives, and the real ``inspect`` is overrides' again."""
    lean = _run("import sys\nimport wholetrace.wpp.startup as s\nnp = s.lean_numpy()\n"
                "print(sorted(m for m in ('inspect', 'ast', 'dis', 'tokenize') if m in sys.modules))\n"
                "np.unique(np.zeros(3))\n"      # numpy.lib: completes the import
                + _DUMP + "from numpy._core import overrides\nimport inspect\n"
                "print(s.numpy_state(), overrides.inspect is inspect)\nprint(repr(dump()))\n").splitlines()
    plain = _run("import numpy\n" + _DUMP + "print(repr(dump()))\n").strip()
    assert lean[0] == "[]"
    assert lean[1] == "full True"
    assert lean[2] == plain
    assert "_Pending" not in plain and "Signature" in plain   # the oracle has computed signatures


def test_the_lean_core_takes_the_real_inspect_when_it_is_loaded() -> None:
    """``inspect`` imported before the lean numpy: overrides gets that module, as before."""
    out = _run("import inspect\nimport wholetrace.wpp.startup as s\nnp = s.lean_numpy()\n"
               "from numpy._core import overrides\nprint(overrides.inspect is inspect, s.numpy_state())\n")
    assert out.split() == ["True", "lean"]


def test_the_stand_in_cleandoc_is_inspects() -> None:
    """The stand-in's ``cleandoc`` (compiled from ``inspect.py``'s source) cleans every docstring
    of a few modules, and odd ones (tabs, blank lines, no indentation), as ``inspect.cleandoc``."""
    import collections
    import inspect
    import json
    import os
    import textwrap

    from wholetrace.wpp.startup import _inspect_stand_in

    stand_in = _inspect_stand_in()
    assert stand_in is not None and stand_in is not sys.modules.get("inspect")
    docs = [o.__doc__ for m in (os, collections, json, textwrap, inspect) for o in vars(m).values()
            if isinstance(getattr(o, "__doc__", None), str)]
    docs += ["\tx\n\t  y\n\n", " a\n  b\n\t c", "", "\n\n", "one", "  lead\n\n    body\n  less\n"]
    assert len(docs) > 100
    assert [stand_in.cleandoc(d) for d in docs] == [inspect.cleandoc(d) for d in docs]
