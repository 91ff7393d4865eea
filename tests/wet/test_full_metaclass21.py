"""Full mode runs none of the program's code on its values (explore21 HIGH-9): a metaclass's
``__module__``/``__mro__`` properties and ``__hash__``/``__eq__`` were called by the value probes
(a dict keyed by the value's class) and the flusher (the object table's type names, class links);
one that raised lost the recording.

Oracles: the plain run's output and exit status, blocks mode's counts, and the classes' names as
``type`` itself stores them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wtutil import cli_in_process, run_plain, run_recorded

PROG = '''
import sys
class Meta(type):
    @property
    def __module__(cls):
        print("module read", file=sys.stderr)
        RAISE
        return "mymod"
    @property
    def __mro__(cls):
        print("mro read", file=sys.stderr)
        RAISE
        return ()
    def __hash__(cls):
        print("hash", file=sys.stderr)
        RAISE
        return 7
    def __eq__(cls, other):
        print("eq", file=sys.stderr)
        RAISE
        return cls is other
class C(metaclass=Meta):
    pass
class D(C):
    pass
def f():
    x = C()
    y = D()
    return [x, y, D, C]
r = f()
k = C
print("end", len(r))
'''


@pytest.mark.parametrize("raises", [False, True], ids=["prints", "raises"])
def test_metaclass_code_never_runs(tmp_path: Path, raises: bool) -> None:
    script = tmp_path / "prog.py"
    script.write_text(PROG.replace("RAISE", "raise RuntimeError('program code ran')" if raises else "pass"))
    plain = run_plain(script)
    assert plain.returncode == 0 and plain.stdout == "end 4\n" and plain.stderr == ""
    blocks = run_recorded(script, tmp_path / "b.wt")
    full = run_recorded(script, tmp_path / "f.wt", mode="full")
    for got in (blocks, full):
        assert (got.returncode, got.stdout, got.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    counts = []
    for out in ("b.wt", "f.wt"):
        rc, text, err = cli_in_process("counts", str(tmp_path / out), "--format", "json")
        assert rc == 0, err
        counts.append(json.loads(text))
    assert counts[0] == counts[1]
    from wholetrace.store import open_recording

    with open_recording(tmp_path / "f.wt") as rec:
        names = rec.meta["wet_types"]
    assert "__main__.C" in names and "__main__.D" in names, names
    rc, text, err = cli_in_process("values", str(tmp_path / "f.wt"), f"{script}:28")
    assert rc == 0, err
    assert "y = <D #" in text, text
