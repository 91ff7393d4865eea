"""The import hook's collector hold (``runtime.collector.held``) as the program sees it, and
concurrent recorded imports, wave 21 (review21d): a program's signal handler never runs with
the collector held, a hold's end turns the collector back on whatever lands in it, and two
threads' cache misses do not interleave their ``ast`` work.

Oracles: ``gc.isenabled()`` read by the program's own handler, and a plain run's output.
"""

from __future__ import annotations

import _thread
import gc
import signal
import subprocess
import sys

import pytest

from wtutil import ENV


@pytest.fixture
def collector_on():
    """Collections on, holds allowed (the xdist worker's threads are the baseline)."""
    from wholetrace.runtime import collector

    was, saved = gc.isenabled(), collector._THREADS[0]
    gc.enable()
    collector.own_threads(_thread._count())
    try:
        yield collector
    finally:
        collector._THREADS[0] = saved
        (gc.enable if was else gc.disable)()


def test_a_hold_is_off_once_the_program_has_a_signal_handler(collector_on):
    """With a Python handler of the program's set, a hold does nothing: the handler, run inside
    it, sees the collector on and its ``gc.disable()`` stays.  Fails before (the hold was on)."""
    seen = []

    def handler(signum, frame):
        seen.append(gc.isenabled())
        gc.disable()

    old = signal.signal(signal.SIGUSR1, handler)
    try:
        with collector_on.held() as h:
            signal.raise_signal(signal.SIGUSR1)
        assert seen == [True] and not h.on
        assert not gc.isenabled()   # the handler's gc.disable() is not undone
    finally:
        signal.signal(signal.SIGUSR1, old)


@pytest.mark.parametrize("where", ["_fill_free_lists", "set_young"])
def test_a_hold_ends_with_the_collector_on_whatever_lands_in_it(collector_on, monkeypatch, where):
    """A ``KeyboardInterrupt`` (Ctrl-C) raised in the hold's end still leaves the collector on.
    Fails before (``gc.enable()`` came after them, with no ``finally``)."""
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(collector_on, where, interrupted)
    with pytest.raises(KeyboardInterrupt):
        with collector_on.held() as h:
            assert h.on and not gc.isenabled()
    assert gc.isenabled()


SIGNALLED = '''import gc, signal
seen = []
def h(s, f):
    seen.append(gc.isenabled())
signal.signal(signal.SIGALRM, h)
signal.setitimer(signal.ITIMER_REAL, 0.0005, 0.0005)
import bigmod
signal.setitimer(signal.ITIMER_REAL, 0)
print("handler ran:", len(seen) > 0, "saw gc off:", False in seen)
'''
BIG = "".join(f"def f{i}(x):\n    if x > {i}:\n        for j in range(x):\n            x += j\n    return x\n\n"
              for i in range(400))


def _run(tmp_path, program, record=True):
    cmd = [sys.executable, "-m", "wholetrace", "record", "-q", "--no-cache", "-o", str(tmp_path / "r.wt")] \
        if record else [sys.executable]
    out = subprocess.run([*cmd, program], capture_output=True, text=True, cwd=tmp_path, env=ENV, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_a_signal_handler_during_a_recorded_import_sees_the_collector_on(tmp_path):
    """A handler firing every 0.5 ms while a 400-function module is instrumented (cache off):
    it never sees ``gc.isenabled()`` False, as in a plain run.  Fails before (3 of 3: "saw gc off: True")."""
    (tmp_path / "main.py").write_text(SIGNALLED)
    (tmp_path / "bigmod.py").write_text(BIG)
    assert _run(tmp_path, "main.py") == "handler ran: True saw gc off: False\n"


THREADED = '''import gc, threading
ev = []
gc.callbacks.append(lambda ph, info: ev.append(ph))
def t():
    import bigmod2
th = threading.Thread(target=t); th.start()
import bigmod
th.join()
import bigmod2
print(bigmod.f3(5) + bigmod2.f3(5), "start" in ev)
'''


def test_two_threads_instrumenting_with_a_gc_callback(tmp_path):
    """Two threads' recorded imports both missing the cache while the program has a ``gc``
    callback: both modules load, output as plain.  Fails before (6 of 6 on 3.11: "SystemError:
    AST constructor recursion depth mismatch" from ``ast.parse``, review21d HIGH-3)."""
    (tmp_path / "main.py").write_text(THREADED)
    (tmp_path / "bigmod.py").write_text(BIG)
    (tmp_path / "bigmod2.py").write_text(BIG)
    assert _run(tmp_path, "main.py") == _run(tmp_path, "main.py", record=False)


def test_the_restart_ends_with_the_collector_on_whatever_lands_in_it(monkeypatch):
    """record's ``before_program`` (``cli._hold_collections``'s ``resume``): a
    ``KeyboardInterrupt`` landing in the restart still turns the collector on.  Fails before."""
    from wholetrace.runtime import cli, collector
    from wholetrace.store import cmods

    def interrupted():
        raise KeyboardInterrupt

    was = gc.isenabled()
    monkeypatch.setattr(collector, "restart", interrupted)
    monkeypatch.setattr(cmods, "hide", lambda: None)
    try:
        gc.enable()
        resume = cli._hold_collections()
        assert not gc.isenabled()
        with pytest.raises(KeyboardInterrupt):
            resume()
        assert gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()
