"""Activations still open when the recording ends (a daemon thread blocked for good, an asyncio
task left pending), with statements after the one in flight in the same block: every mode
counts those statements 0 (hand-computed expectations; the settrace oracle agrees on the
thread program).  Audit bug B1: `blocks` counted them once."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from oracles.settrace_lines import line_counts
from wtutil import fbe_lines, profiles, run_plain, run_recorded

MODES = ("blocks", "count", "count-naive", "witness", "branches", "path", "full")

# spin: lines 5-6 ran, 7-8 did not (never.wait() is in flight; y = 1 and return y share its block).
# outer: line 11 ran, 12 is in flight (inner), 13-14 did not; inner: 17-18 ran, 19 is in flight.
THREAD = '''\
import threading
started = threading.Event()
never = threading.Event()
def spin():
    started.set()
    never.wait()
    y = 1
    return y
def outer(n):
    k = n + 1
    m = inner(k)
    z = m * 2
    return z
def inner(k):
    j = k
    started2.set()
    never.wait()
    j += 1
    return j
started2 = threading.Event()
threading.Thread(target=spin, daemon=True).start()
started.wait()
threading.Thread(target=outer, args=(3,), daemon=True).start()
started2.wait()
print("done")
'''
THREAD_LINES = {"spin": {5: 1, 6: 1, 7: 0, 8: 0},
                "outer": {10: 1, 11: 1, 12: 0, 13: 0},
                "inner": {15: 1, 16: 1, 17: 1, 18: 0, 19: 0}}

# A task left pending by an event loop that runs for good in a daemon thread: in stuck, lines
# 4-6 ran (the await is in flight), 7-8 did not; in run, asyncio.run(...) is in flight.
# (A task destroyed at interpreter shutdown would run its cleanup after the recording.)
TASK = '''\
import asyncio
import threading
ready = threading.Event()
async def stuck(n):
    x = n
    ready.set()
    await asyncio.sleep(1000)
    x = 1
    return x
def run():
    asyncio.run(stuck(5))
    print("never")
threading.Thread(target=run, daemon=True).start()
ready.wait()
print("done")
'''
TASK_LINES = {"stuck": {5: 1, 6: 1, 7: 1, 8: 0, 9: 0}, "run": {11: 1, 12: 0}}


def _lines(path: Path) -> dict[str, dict[int, int]]:
    out: dict[str, dict[int, int]] = {}
    for (_file, qualname, _first), p in profiles(path).items():
        out[qualname] = {st.line: int(n) for st, n in zip(p.cfg.stmts, p.stmts)}
    return out


@pytest.mark.parametrize("name, source, want", [("thread", THREAD, THREAD_LINES), ("task", TASK, TASK_LINES)])
def test_unfinished_activations_count_what_ran(name: str, source: str, want: dict, tmp_path: Path) -> None:
    script = tmp_path / f"prog_{name}.py"
    script.write_text(source)
    plain = run_plain(script)
    for mode in MODES:
        out = tmp_path / f"{mode}.wt"
        proc = run_recorded(script, out, mode=mode)
        assert (proc.returncode, proc.stdout, proc.stderr) == (plain.returncode, plain.stdout, plain.stderr), mode
        got = _lines(out)
        for fn, lines in want.items():
            assert {ln: got[fn].get(ln) for ln in lines} == lines, (mode, fn)


def test_settrace_agrees_on_the_thread_program(tmp_path: Path) -> None:
    script = tmp_path / "prog_thread.py"
    script.write_text(THREAD)
    oracle = line_counts(script, [], {str(script)})
    for lines in THREAD_LINES.values():
        for ln, n in lines.items():
            assert oracle.get((str(script), ln), 0) == n, ln


def test_open_activations_end_with_an_early_exit(tmp_path: Path) -> None:
    """The stream of the blocked thread closes its two activations: X <in-flight statement>, E."""
    script = tmp_path / "prog_thread.py"
    script.write_text(THREAD)
    out = tmp_path / "blocks.wt"
    assert run_recorded(script, out).returncode == 0
    lines = fbe_lines(out)
    streams = "\n".join(lines).split("T thread")
    outer = next(s for s in streams if "F outer" in s).strip().splitlines()
    # inner's statement 2 (never.wait()) and outer's statement 1 (m = inner(k)) were in flight
    assert outer[-4:] == ["X 2", "E", "X 1", "E"]
    assert textwrap.dedent(THREAD).count("never.wait()") == 2
