"""A thread ident given again (review23c HIGH-1, HIGH-2): an ended thread's streams are no one's.

Short threads started one after another, and a fork child's threads, get the ident of a thread
that has ended.  Wave 23's owner lock (``runtime.streams``) stayed held by the ended thread, so
the later thread appended to its stream (misattributed), and in a fork child to a stream nobody
flushes (lost).  Oracles: the thread each function runs in (known from the program), count
mode's counts, and the number of calls the program makes.  Each program prints whether an
ident was reused: the cases below exist only if it was.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from naive_decode import raw_events
from wholetrace.store import Recording
from wtutil import assert_same_counts, profiles, run_plain, run_recorded

# the idiom that carries contextvars into a thread, for short threads one after another
SEQUENTIAL = '''\
import contextvars, threading, time
def work(i):
    if i % 2:
        return i
    return -i
def head():
    return 0
head()
idents = []
for i in range(3):
    t = threading.Thread(target=contextvars.copy_context().run, args=(work, i), name=f"T{i}")
    t.start(); t.join(); idents.append(t.ident)
    time.sleep(0.05)
print("reused", len(set(idents)) < 3)
'''

# a context copied in a thread that has ended, run as the first code of a later thread
FIRST_CODE = '''\
import contextvars, threading, time
def f(x):
    return x + 1
def g(x):
    return x * 2
box = []
def origin():
    f(1)
    box.append(contextvars.copy_context())
t = threading.Thread(target=origin, name="origin"); t.start(); t.join()
time.sleep(0.1)
t2 = threading.Thread(target=box[0].run, args=(g, 3), name="later"); t2.start(); t2.join()
print("reused", t.ident == t2.ident)
'''

# a fork child whose threads get the ident of a thread of its parent's
FORK = '''\
import contextvars, os, sys, threading, time
def work(i):
    t = 0
    for k in range(i):
        t += k
    return t
def run_in_thread(i):
    t = threading.Thread(target=contextvars.copy_context().run, args=(work, i))
    t.start(); t.join(); time.sleep(0.05)
    return t.ident
a = run_in_thread(5)
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    idents = [run_in_thread(7) for _ in range(3)]
    print("reused", a in idents, flush=True)
    sys.exit(0)
os.waitpid(pid, 0)
print("parent")
'''

WHERE = {
    "sequential": (SEQUENTIAL, {"work": {"T0", "T1", "T2"}, "head": {"MainThread"}}),
    "first_code": (FIRST_CODE, {"f": {"origin"}, "g": {"later"}}),
}


def _record(tmp: Path, source: str, mode: str) -> Path:
    script = tmp / "prog.py"
    script.write_text(source)
    plain = run_plain(script)
    assert "reused True" in plain.stdout, ("no ident was reused: the case did not occur", plain.stdout)
    wt = tmp / f"prog.{mode}.wt"
    got = run_recorded(script, wt, mode=mode)
    assert (got.returncode, got.stderr) == (plain.returncode, plain.stderr), got.stderr[-2000:]
    assert "reused True" in got.stdout, got.stdout
    return wt


def _streams_of(wt: Path) -> dict[str, list[str]]:
    """Function qualname -> the names of the streams holding its activations, one a call."""
    out: dict[str, list[str]] = {}
    with Recording(wt) as rec:
        names = {f.fid: f.qualname for f in rec.functions()}
        for st in rec.streams():
            for kind, v in raw_events(rec.iter_chunks(st.sid)):
                if kind == "F":
                    out.setdefault(names[v], []).append(st.name)
    return out


@pytest.mark.parametrize("mode", ("blocks", "witness", "path"))
@pytest.mark.parametrize("name", sorted(WHERE))
def test_a_later_thread_with_an_ended_thread_s_ident_has_its_own_stream(name: str, mode: str, tmp_path: Path) -> None:
    """Each activation is in a stream of the thread it ran in: one stream a thread (the three
    sequential threads' ``work`` in T0, T1, T2, not all three in T0; ``g`` in ``later``, not in
    ``origin``'s stream); counts are count mode's."""
    source, where = WHERE[name]
    wt = _record(tmp_path, source, mode)
    got = _streams_of(wt)
    for f, threads in where.items():
        assert sorted(got[f]) == sorted(threads), (f, "ran in", sorted(threads), "recorded in", got[f])
    counted = _record(tmp_path, source, "count")
    assert_same_counts(profiles(wt), profiles(counted), (name, mode))


@pytest.mark.parametrize("mode", ("blocks", "witness"))
def test_a_fork_child_s_threads_with_its_parent_s_idents_are_recorded(mode: str, tmp_path: Path) -> None:
    """A fork child's threads reuse the ident of a thread of the parent: all four calls of
    ``work`` (one in the parent, three in the child) are in the recording's parts, as in count mode."""
    wt = _record(tmp_path, FORK, mode)
    got = profiles(wt)
    entries = [int(v.blocks[2]) for k, v in got.items() if k[1] == "work"]
    assert entries == [4], entries
    counted = _record(tmp_path, FORK, "count")
    assert_same_counts(got, profiles(counted), ("fork", mode))
