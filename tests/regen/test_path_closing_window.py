"""Python code running inside a constant-closing handler's record (review13d, defect 1).

A single-exit-record function (``pathforms.single_exit_record``) closes an activation left by an
exception in its handler's one ``extend`` (``EXC s r`` LEAVE), then turns ``wt.a`` into ``skip``
so the epilogue's constant records nothing.  On 3.11 the cyclic GC runs inside allocations
(``__del__`` is Python code: thread switches), and a profile function runs at the extend's
``c_call``: if ``wt.a`` were switched before the record is appended, a daemon thread stopped
there, or a profile function raising, would leave the activation unclosed and the recording
unreadable.  Oracles: the streams decode (kernel and twin), every activation is closed, and
``trace`` reads the recording; the deterministic program equals the blocks recording event for
event but for the profile function's activations (the probes' calls differ between modes).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from regenutil import streams_of
from test_path_mode import record
from wholetrace.events import ENTER_BASE, EXC, LEAVE
from wholetrace.store import Recording
from wtutil import cli_in_process

# ``__del__`` of cyclic garbage, collected inside an allocation of ``f``'s handler (thresholds
# 1-40 move where), blocks a daemon thread for good when it finds ``f`` at WHERE; the run ends.
GC_WINDOW = '''
import gc, sys, threading
stop = threading.Event()
forever = threading.Event()
class Cyc:
    def __init__(self):
        self.me = self
    def __del__(self):
        fr = sys._getframe(1)
        while fr is not None:
            if fr.f_code.co_name == "f" and WHERE:
                stop.set()
                forever.wait()
            fr = fr.f_back
def f(x):
    return 10 // x
def worker():
    for k in range(1, 400):
        gc.collect()
        gc.set_threshold(k % 40 + 1)
        Cyc()
        try:
            f(0)
        except ZeroDivisionError:
            pass
        gc.set_threshold(700)
    stop.set()
threading.Thread(target=worker, daemon=True).start()
stop.wait(60)
print("done")
'''

WHERE = {"skip": 'fr.f_locals.get("wt.a") is bool',          # the switch made, its record not (before the fix)
         "handler": 'fr.f_locals.get("wt.e") is not None'}    # anywhere in f's handler

# A profile function raising once, at the ``c_call`` of f's handler's extend: the record is lost
# (in every mode), the activation must still be closed.
PROFILER = '''
import sys
armed = [False]
def prof(frame, event, arg):
    if event == "c_call" and armed[0] and getattr(arg, "__name__", "") == "extend":
        armed[0] = False
        raise KeyError("profiler")
def f(x):
    return 10 // x
def g():
    armed[0] = True
    sys.setprofile(prof)
    try:
        f(0)
    except (ZeroDivisionError, KeyError) as e:
        out = type(e).__name__
    sys.setprofile(None)
    return out
print(g())
'''


def closed(events: np.ndarray) -> bool:
    """Does every activation of the stream end (each ENTER has its LEAVE, none without one)?"""
    depth, vals, i = 0, events.tolist(), 0
    while i < len(vals):
        v = vals[i]
        depth += v <= -ENTER_BASE
        depth -= v == LEAVE
        i += 2 if v == EXC else 1
        if depth < 0:
            return False
    return depth == 0


def without(events: np.ndarray, fid: int) -> list[int]:
    """The stream without the activations of ``fid`` (and what they called)."""
    out: list[int] = []
    depth, vals, i = 0, events.tolist(), 0
    while i < len(vals):
        v, n = vals[i], 2 if vals[i] == EXC else 1
        if depth or v == -ENTER_BASE - fid:
            depth += (v <= -ENTER_BASE) - (v == LEAVE)
        else:
            out += vals[i:i + n]
        i += n
    return out


def readable(wt: Path) -> list[np.ndarray]:
    """The regenerated streams (kernel == twin), each closing every activation; ``trace`` reads it."""
    mode, streams, _cfgs, _n = streams_of(wt, twin=True)
    assert mode == "path"
    assert all(closed(s) for s in streams), "an activation left open"
    rc, _stdout, stderr = cli_in_process("trace", str(wt))
    assert rc == 0, stderr[-2000:]
    return streams


@pytest.mark.parametrize("where", sorted(WHERE))
def test_gc_inside_closing_handler(tmp_path: Path, where: str) -> None:
    script = tmp_path / f"gcwin_{where}.py"
    script.write_text(GC_WINDOW.replace("WHERE", WHERE[where]))
    wt = tmp_path / f"gcwin_{where}.wt"
    r = record(script, wt, "path")
    assert (r.returncode, r.stdout) == (0, "done\n"), r.stderr[-2000:]
    readable(wt)


def test_profiler_raising_on_closing_extend(tmp_path: Path) -> None:
    script = tmp_path / "prof.py"
    script.write_text(textwrap.dedent(PROFILER))
    wt = {}
    for mode in ("blocks", "path"):   # (a profile function sees the probes' calls: KeyError in both)
        wt[mode] = tmp_path / f"prof.{mode}.wt"
        r = record(script, wt[mode], mode)
        assert (r.returncode, r.stdout) == (0, "KeyError\n"), r.stderr[-2000:]
    got = readable(wt["path"])
    want = streams_of(wt["blocks"])[1]
    with Recording(wt["blocks"]) as rec:
        prof = next(f.fid for f in rec.functions() if f.qualname == "prof")
    assert [without(s, prof) for s in got] == [without(s, prof) for s in want]
