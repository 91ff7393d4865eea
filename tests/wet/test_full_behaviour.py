"""``record --mode full`` changes nothing the program can see: the 17 corpus programs, programs
with implicit calls that raise, and generated programs give the same stdout, stderr and exit
status, and the stored stream is still a well-formed blocks trace."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings

from corpus import PROGRAMS, corpus_params
from genprogs import run_plain as run_generated, structured_programs, write_program
from naive_decode import check_stream
from wholetrace.instrument.cfg import CFG
from wholetrace.store import Recording
from wholetrace.wet.capture import load
from wtutil import cli_in_process, run_plain, run_recorded

IMPLICIT = """
    class Prop:
        def __init__(self):
            self.calls = 0
        @property
        def bad(self):
            self.calls += 1
            raise ValueError("property")
        def __getitem__(self, k):
            self.calls += 1
            if k == 2:
                raise KeyError(k)
            return k * 10
        def __iadd__(self, other):
            raise TypeError("no iadd")
    p = Prop()
    try:
        x = p.bad
    except ValueError as e:
        print("caught", e, p.calls)
    y = p[1]
    try:
        z = p[2]
    except KeyError as e:
        print("key", e, p.calls)
    try:
        p += 1
    except TypeError as e:
        print("iadd", e)
    a, *rest = range(4)
    try:
        q, r = [1, 2, 3]
    except ValueError as e:
        print(e)
    d = {}
    d["k"] = d.get("k", 0) + 1
    d["k"] += 1
    print(y, a, rest, d, p.calls)
    def gen():
        got = yield 1
        print("got", got)
        yield got * 2
    g = gen()
    print(next(g), g.send(5))
    p.bad
"""


def _same(script: Path, tmp_path: Path, include: tuple[str, ...] = ()) -> Path:
    plain = run_plain(script)
    wt = tmp_path / "prog.wt"
    got = run_recorded(script, wt, mode="full", include=include)
    assert got.returncode == plain.returncode, got.stderr[-3000:]
    assert got.stdout == plain.stdout
    assert got.stderr == plain.stderr
    with Recording(wt) as rec:
        cfgs = {f.fid: CFG.from_json(f.cfg) for f in rec.functions()}
        for st in rec.streams():
            assert not check_stream(rec.iter_chunks(st.sid), cfgs)
        log = load(rec)
        assert all(int(s.pos.max(initial=0)) <= len(rec.events(sid)) for sid, s in log.streams.items())
    return wt


def test_implicit_calls_that_raise(tmp_path: Path) -> None:
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(IMPLICIT))
    wt = _same(script, tmp_path)
    with Recording(wt) as rec:
        log = load(rec)
    shown = {(log.slots[int(k)].what, log.render(int(t), int(v)))
             for s in log.streams.values() for k, t, v in zip(s.slot, s.tag, s.val)}
    assert ("y", "10") in shown and ("rest", "<list #%d>" % 0) not in shown
    assert ("got", "5") in shown and ("a", "0") in shown
    assert not any(w == "x" for w, _ in shown)     # the property raised: nothing was defined


@pytest.mark.parametrize("name", corpus_params(share=(0, 2)))
def test_corpus_same_behaviour(name: str, tmp_path: Path) -> None:
    prog = PROGRAMS[name]
    _same(prog.write(tmp_path, "small"), tmp_path, tuple(prog.include))


@seed(20261127)
@settings(max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(source=structured_programs())
def test_generated_programs(source: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    td = tmp_path_factory.mktemp("gen")
    rc, out, err = run_generated(source, str(td))
    if rc == -1:
        return
    driver = write_program(source, str(td))
    got = run_recorded(Path(driver), td / "prog.wt", mode="full", timeout=120)
    rerr = [l for l in got.stderr.splitlines() if l.strip()]
    assert "left uninstrumented" not in got.stderr
    assert (got.returncode, got.stdout, rerr[-1] if rerr else "") == (rc, out, err), source


def _counts(wt: Path) -> str:
    rc, stdout, stderr = cli_in_process("counts", str(wt), "--format", "json")
    assert rc == 0, stderr
    return stdout


def test_counts_of_a_full_recording_equal_blocks(tmp_path: Path) -> None:
    """Oracle: a ``blocks`` recording of the same program (full stores the same trace)."""
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(IMPLICIT))
    full = _same(script, tmp_path)
    blocks = tmp_path / "blocks.wt"
    assert run_recorded(script, blocks, mode="blocks").returncode == run_plain(script).returncode
    assert _counts(full) == _counts(blocks)


def test_queries_on_a_program_importing_an_empty_module(tmp_path: Path) -> None:
    """An empty ``__init__.py`` runs (its module body is a function with no statements): the
    WET is built and ``slice --output`` answers (it raised KeyError on a package from the index)."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "calc.py").write_text("def twice(x):\n    y = x * 2\n    return y\n")
    script = tmp_path / "main.py"
    script.write_text("from pkg.calc import twice\nz = twice(21)\nprint(z)\n")
    wt = tmp_path / "full.wt"
    got = run_recorded(script, wt, mode="full", include=("pkg",))
    assert (got.returncode, got.stdout) == (0, "42\n"), got.stderr
    rc, stdout, stderr = cli_in_process("slice", str(wt), "--output", "--json")
    assert rc == 0, stderr[-2000:]
    lines = json.loads(stdout)["lines"]
    assert sorted(lines[str(pkg / "calc.py")]) == [2, 3], lines
    assert sorted(lines[str(script)]) == [1, 2, 3], lines


GEN_THREADS = """
    import threading
    def g():
        x = 1
        while True:
            try:
                y = yield x
                x = y + 1.5
            except KeyError as e:
                z = str(e)
                x = 7
    it = g()
    print(next(it))
    print(it.send(2))
    out = []
    t = threading.Thread(target=lambda: out.append((it.throw(KeyError("k")), it.send(10))))
    t.start(); t.join()
    print(out, it.send(3))
"""


def test_generator_resumed_in_another_thread(tmp_path: Path) -> None:
    """A function's value probes take the stream its activation holds (``wt.a``), read after the
    value: a generator resumed in another thread (``send``, and ``throw`` into a handler that
    binds the exception) records those values in that thread's stream.  Oracle: which thread
    ran each resumption, by construction of the program."""
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(GEN_THREADS))
    wt = _same(script, tmp_path)
    with Recording(wt) as rec:
        kinds = {st.sid: st.name for st in rec.streams()}
        log = load(rec)
    seen: dict[tuple[str, str], set[str]] = {}
    for sid, s in log.streams.items():
        for k, t, v in zip(s.slot.tolist(), s.tag.tolist(), s.val.tolist()):
            info = log.slots[k]
            if info.kind == "def" and info.what in ("x", "y", "z", "e"):
                seen.setdefault((info.what, log.render(t, v)), set()).add(kinds[sid])
    main = {"MainThread"}
    assert seen[("x", "1")] == main and seen[("y", "2")] == main and seen[("x", "3.5")] == main
    other = seen[("z", repr("'k'"))]
    assert other and other != main
    assert seen[("x", "7")] == other and seen[("y", "10")] == other and seen[("x", "11.5")] == other
    assert seen[("y", "3")] == main and seen[("x", "4.5")] == main
