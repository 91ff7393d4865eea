"""`wholetrace compress`, `wholetrace match`, `record --cf-grammar` and `info` from the command
line: answers against the brute-force oracle over `wholetrace trace --format json`, function
and path resolution, every bad query as one line on stderr with exit status 2, idempotent and
interruptible compression."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from naive_match import brute_ends
from wtutil import ENV

PROG = textwrap.dedent('''\
    import threading


    def f(n):
        total = 0
        for i in range(n):
            if i % 3 == 0:
                total += g(i)
            else:
                total -= 1
        return total


    def g(x):
        if x > 4:
            return f(2)
        return x


    class C:
        @property
        def v(self):
            return 1

        @v.setter
        def v(self, value):
            pass


    c = C()
    c.v = c.v
    t = threading.Thread(target=f, args=(7,))
    t.start()
    t.join()
    print(f(10))
''')


def wt(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run the command line in a child process (record, and a few end-to-end checks)."""
    return subprocess.run([sys.executable, "-m", "wholetrace.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env=ENV, timeout=300)


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run ``wholetrace.cli.main`` in this process (numba kernels stay loaded between calls)."""
    import contextlib
    import io
    import os

    from wholetrace.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        os.chdir(old)
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="module")
def rec(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    (d / "prog.py").write_text(PROG)
    p = wt("record", "--cf-grammar", "-q", "-o", "prog.wt", "prog.py", cwd=d)
    assert p.returncode == 0, p.stderr
    return d


def _events(d: Path, stream: int) -> list:
    out = json.loads(cli("trace", "prog.wt", "--format", "json", cwd=d).stdout)
    evs = [e for s in out["streams"] if s["stream"] == stream for e in s["events"]]
    fids = {}
    res = []
    for e in evs:                            # X events are not part of the F/B/E trace
        if e[0] == "F":
            res.append(("F", fids.setdefault(e[1], len(fids))))
        elif e[0] == "B":
            res.append(("B", e[1]))
        elif e[0] == "E":
            res.append(("E",))
    return res, fids


def _fid_of(fids: dict, qual: str) -> int:
    return next(v for k, v in fids.items() if k.startswith(qual + "@"))


def test_info_lists_the_compressed_trace(rec):
    out = cli("info", "prog.wt", cwd=rec).stdout
    assert "cf trace:  2 stream(s)" in out and "grammar" in out and "segment index" in out
    d = json.loads(cli("info", "prog.wt", "--json", cwd=rec).stdout)["cf_trace"]
    assert d["complete"] and set(d["streams"]) == {"0", "1"} and d["bytes"]["grammar"] > 0
    # a trace this small is scanned whole: its one-unit indexes are derived, not stored (the
    # answers below equal brute force all the same)
    assert d["bytes"]["chunk_index"] == d["bytes"]["segment_index"] == 0


@pytest.mark.parametrize("path", [["4", "5", "6"], ["6"], ["6", "4"], ["4", "5", "7", "4"], ["2", "3"]])
def test_answers_equal_brute_force_per_stream(rec, path):
    blocks = [int(b) for b in path]
    for stream in (0, 1):
        events, fids = _events(rec, stream)
        want = brute_ends(events, _fid_of(fids, "f"), blocks)
        for scheme in ("1", "2", "3", "4", "auto"):
            p = cli("match", "prog.wt", "f", *path, "--stream", str(stream), "--scheme", scheme, "--all",
                   "--json", cwd=rec)
            assert p.returncode == 0, p.stderr
            got = json.loads(p.stdout)
            assert got["count"] == len(want), (path, stream, scheme)
            assert [o["position"] for o in got["occurrences"]] == want
            assert got["first"] == (None if not want else {"stream": stream, "position": want[0]})


def test_json_shape_and_callers(rec):
    got = json.loads(cli("match", "prog.wt", "f", "5", "6", "--json", cwd=rec).stdout)
    assert set(got) == {"function", "path", "scheme", "count", "first", "occurrences"}
    assert got["function"].startswith("f@") and got["function"].endswith("prog.py:4")
    assert got["path"] == [5, 6] and got["scheme"] in (2, 4) and got["count"] > 0
    occ = got["occurrences"]
    assert len(occ) == 1 and occ[0]["stream"] == got["first"]["stream"]
    assert occ[0]["invocation"][-1] == got["function"]
    first = json.loads(cli("match", "prog.wt", "f", "5", "6", "--first", "--json", cwd=rec).stdout)
    assert first["count"] is None and first["first"] == got["first"]
    count = json.loads(cli("match", "prog.wt", "f", "5", "6", "--count", "--json", cwd=rec).stdout)
    assert count["count"] == got["count"] and count["occurrences"] == [] and count["first"] is None
    two = json.loads(cli("match", "prog.wt", "f", "5", "6", "--all", "--limit", "2", "--json", cwd=rec).stdout)
    assert len(two["occurrences"]) == 2 and two["count"] == got["count"]
    # recursion: f called from g called from f
    deep = json.loads(cli("match", "prog.wt", "f", "5", "--all", "--json", cwd=rec).stdout)
    assert any(sum(x.startswith("f@") for x in o["invocation"]) == 2 for o in deep["occurrences"])
    text = cli("match", "prog.wt", "f", "5", "6", cwd=rec).stdout
    assert "occurs     yes" in text and "count" in text and "f > g > f" not in text.split("first")[0]
    # --count alone (no first occurrence looked for) still says the path occurs
    counted = cli("match", "prog.wt", "f", "5", "6", "--count", cwd=rec).stdout
    assert f"count      {got['count']:,}" in counted and "occurs     yes" in counted
    # and says it does not where the brute force finds none (the loop never runs zero times)
    never = [3, 4, 8]
    assert not any(brute_ends(ev, _fid_of(fids, "f"), never) for ev, fids in map(lambda s: _events(rec, s), (0, 1)))
    assert "occurs     no" in cli("match", "prog.wt", "f", "3", "4", "8", "--count", cwd=rec).stdout


def test_function_and_line_forms(rec):
    base = json.loads(cli("match", "prog.wt", "f", "5", "7", "--count", "--json", cwd=rec).stdout)
    assert base["count"] > 0
    for spec in (base["function"], "prog.py:4", base["function"].split("@")[1]):
        got = json.loads(cli("match", "prog.wt", spec, "5", "7", "--count", "--json", cwd=rec).stdout)
        assert got["count"] == base["count"], spec
    cfg = json.loads(cli("cfg", "prog.py:f", "--format", "json", cwd=rec).stdout)
    lines = {b: sorted({s[2] for s in cfg[0]["stmts"] if s[7] == b}) for b in (5, 7)}
    by_lines = json.loads(cli("match", "prog.wt", "f", "--lines", str(lines[5][0]), str(lines[7][0]), "--count",
                             "--json", cwd=rec).stdout)
    assert by_lines["path"] == [5, 7] and by_lines["count"] == base["count"]
    # line 6 holds the for-iter (B3) and the loop header (B4): after line 5's block only B3 fits,
    # before line 7's block only B4
    start = json.loads(cli("match", "prog.wt", "f", "--lines", "5", "6", "--count", "--json", cwd=rec).stdout)
    assert start["path"] == [2, 3]
    head = json.loads(cli("match", "prog.wt", "f", "--lines", "6", "7", "--count", "--json", cwd=rec).stdout)
    assert head["path"] == [4, 5]


@pytest.mark.parametrize("args,needle", [
    (["nope", "2"], "no function 'nope'"),
    (["C.v", "2"], "ambiguous"),
    (["f", "99"], "not a block of f"),
    (["f", "1"], "not a block of f"),
    (["f", "2", "4"], "not an edge of f"),
    (["f", "--lines", "1"], "holds no statement"),
    (["f", "5", "--limit", "3"], "--limit"),
    (["f", "5", "--stream", "7"], "no stream 7"),
    (["f", "x5"], "not a block id"),
    (["f", "--lines", "7b"], "not a line number"),
])
def test_bad_queries_one_line_exit_2(rec, args, needle):
    p = cli("match", "prog.wt", *args, cwd=rec)
    assert p.returncode == 2
    assert needle in p.stderr and p.stderr.count("\n") == 1, p.stderr


def test_recording_without_grammar_and_count_mode(tmp_path):
    (tmp_path / "prog.py").write_text(PROG)
    assert wt("record", "-q", "-o", "b.wt", "prog.py", cwd=tmp_path).returncode == 0
    p = wt("match", "b.wt", "f", "5", cwd=tmp_path)       # end to end: a child process, exit status 2
    assert p.returncode == 2 and "wholetrace compress" in p.stderr and p.stderr.count("\n") == 1
    assert wt("record", "--mode", "count", "-q", "-o", "c.wt", "prog.py", cwd=tmp_path).returncode == 0
    p = cli("compress", "c.wt", cwd=tmp_path)
    assert p.returncode == 2 and "no control-flow trace" in p.stderr and p.stderr.count("\n") == 1
    p = wt("record", "--mode", "count", "--cf-grammar", "-o", "d.wt", "prog.py", cwd=tmp_path)
    assert p.returncode == 2 and "--cf-grammar needs a trace mode" in p.stderr and not (tmp_path / "d.wt").exists()


def test_compress_is_idempotent_and_survives_interruption(tmp_path, monkeypatch):
    from wholetrace.match import compress, store
    from wholetrace.match.store import describe
    from wholetrace.store import Recording

    (tmp_path / "prog.py").write_text(PROG)
    assert wt("record", "-q", "-o", "b.wt", "prog.py", cwd=tmp_path).returncode == 0
    real = store.write_stream
    calls = []

    def dies_on_second(w, cs):
        calls.append(cs.sid)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(w, cs)

    monkeypatch.setattr(store, "write_stream", dies_on_second)
    with pytest.raises(KeyboardInterrupt):
        compress.compress_file(tmp_path / "b.wt")
    with Recording(tmp_path / "b.wt") as rec:      # valid, with the first stream complete
        d = describe(rec)
        assert sum(v is not None for v in d["streams"].values()) == 1 and not d["complete"]
    monkeypatch.setattr(store, "write_stream", real)
    built = compress.compress_file(tmp_path / "b.wt")
    assert [b.skipped for b in built].count(True) == 1
    assert all(b.skipped for b in compress.compress_file(tmp_path / "b.wt"))
    p = wt("compress", "b.wt", cwd=tmp_path)
    assert p.returncode == 0 and "already compressed" in p.stderr
    p = cli("compress", "b.wt", "--force", "--chunk-events", "16", "--segments", "4", cwd=tmp_path)
    assert p.returncode == 0 and "compressed 2 stream(s)" in p.stderr
    with Recording(tmp_path / "b.wt") as rec:
        d = describe(rec)
        assert d["complete"] and all(v["chunk_events"] == 16 for v in d["streams"].values())


def test_compress_decodes_ahead_in_order_and_raises_the_decoders_error():
    import numpy as np

    from wholetrace.errors import StoreError
    from wholetrace.match.compress import ahead

    buf = np.zeros(3, np.int32)

    def reused(n):                      # one buffer rewritten for each array, as the decoder does
        for i in range(n):
            buf[:] = i
            yield buf

    assert [a.tolist() for a in ahead(reused(40), depth=2)] == [[i] * 3 for i in range(40)]

    def broken():
        yield np.ones(2, np.int32)
        raise StoreError("stream 0: invalid event 5")

    got = ahead(broken())
    assert next(got).tolist() == [1, 1]
    with pytest.raises(StoreError, match="invalid event 5"):
        next(got)
    early = ahead(reused(1000), depth=1)  # closed before the end: the producer stops
    next(early)
    early.close()
