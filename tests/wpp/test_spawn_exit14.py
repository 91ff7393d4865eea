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
