"""``store.fdguard.FcntlUnseen`` and ``high_pipe`` (wave 17: the one home of the ``fcntl`` save-and-pop
that ``wpp.spawn`` and ``runtime.children`` each had): the recorder may import ``fcntl``, the
program's ``sys.modules`` looks as in a plain run afterwards."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import os, sys
from wholetrace.store.fdguard import HIGH_FD, FcntlUnseen, high_pipe
assert "fcntl" not in sys.modules, "imported before the test"
with FcntlUnseen():
    import fcntl
    assert "fcntl" in sys.modules
print("after", "fcntl" in sys.modules)
try:
    with FcntlUnseen():
        import fcntl
        raise KeyError
except KeyError:
    pass
print("after raise", "fcntl" in sys.modules)
r, w = high_pipe()
os.write(w, b"x")
print("pipe", r >= HIGH_FD, w >= HIGH_FD, os.read(r, 1), os.get_inheritable(r), "fcntl" in sys.modules)
import fcntl
with FcntlUnseen():
    pass
print("kept", "fcntl" in sys.modules)
"""


def test_fcntl_is_dropped_unless_the_program_had_it() -> None:
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["after False", "after raise False", "pipe True True b'x' False False", "kept True"]
