"""What comes from a file is checked: bad events, ids, tables and counters give one-line errors.

Hand-made streams name each reason the kernel reports; the CLI exits 2 on the cases the
issue found (a block id of 50,000,000: SIGSEGV in `counts` and exit 0 in `trace` before;
an unknown event code: a traceback).  The structure-aware fuzzer starts from real recordings
(valid SQLite and zstd containers) and damages what is inside: events (ids, codes, order,
lengths), stored CFGs and plans, counters and exception tables.  No input may crash the
process or print a traceback: every command exits 0 or 2, with at most one line on stderr.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wholetrace.errors import StoreError
from wholetrace.events import ENTER_BASE, EXC, LEAVE, LEAVE_PATH, START
from wholetrace.instrument.cfg import build_module
from wholetrace.instrument.modes import make_plan
from wholetrace.store import schema
from wholetrace.trace.decode import StreamDecoder
from wholetrace.trace.shape import parse_shape
from wholetrace.trace.tables import Tables
from wtutil import ENV, cli_in_process, run_recorded

SRC = textwrap.dedent('''\
    def f(x):
        if x:
            x = 1
        return x
    def g(n):
        try:
            yield n
        finally:
            n = 0
    def h(n):
        for i in range(n):
            yield i
        yield n
''')


def F(f: int) -> int:
    return -(ENTER_BASE + f)


def tables(mode: str) -> Tables:
    cfgs = build_module(SRC)
    shapes = {}
    for fid, cfg in enumerate(cfgs):
        desc = cfg.to_json()
        desc["plan"] = make_plan(mode if mode != "blocks" else "blocks", cfg, 0).to_json()
        shapes[fid] = parse_shape(fid, desc, file="t.py")
    return Tables(shapes, shapes.__getitem__, mode)


def decode(mode: str, events: list[int]) -> None:
    dec = StreamDecoder(tables(mode), what="stream 0")
    for _ in dec.decode([np.array(events, np.int32)]):
        pass


@pytest.mark.parametrize("events, reason", [
    ([F(1), 50_000_000], "block 50000000 does not exist in function 1 (f)"),
    ([F(1), -5], "unknown event code -5"),
    ([F(9)], "ENTER of function 9, which is not registered"),
    ([-2**31], "ENTER of function 2147483640, which is not registered"),
    ([2], "event 2 outside any activation"),
    ([LEAVE], "outside any activation"),
    ([F(1), 3], "activation of function 1 (f) starts at block 3"),
    ([F(1), 2, 2], "B2 -> B2 is not an edge of function 1 (f)"),
    ([F(1), 2, EXC, 99], "statement 99 does not exist"),
    ([F(1), 2, EXC, 0, 3], "enters block 3 of function 1 (f), which is not a handler"),
    ([F(1), 2, LEAVE], "returns from block 2, which has no edge to EXIT"),
])
def test_bad_blocks_streams(events: list[int], reason: str) -> None:
    with pytest.raises(StoreError) as info:
        decode("blocks", events)
    assert reason in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("events, reason", [
    ([F(1), 77], "witness 77 does not exist in function 1 (f)"),
    ([F(1), EXC, 0, 1], "which is not a handler"),
    ([F(3), EXC, 0, LEAVE], "0 cannot start or resume the generator function 3 (h)"),
])
def test_bad_witness_streams(events: list[int], reason: str) -> None:
    assert tables("witness").load(3).plan["strategy"] == "witness"
    with pytest.raises(StoreError) as info:
        decode("witness", events)
    assert reason in str(info.value)


@pytest.mark.parametrize("events, reason", [
    ([F(1), 10**6], "path 1000000 does not exist in function 1 (f)"),
    ([F(2), START, EXC, 0, 99_999, "H"], "path register 99999 of an exception names no path of function 2 (g)"),
    ([F(1), LEAVE], "function 1 (f) returns from block"),
    ([F(3), START, START], "unknown event code -5"),
    ([F(1), LEAVE_PATH, 0], "outside any activation"),
])
def test_bad_path_streams(events: list[int | str], reason: str) -> None:
    assert tables("path").load(1).plan["strategy"] == "paths"
    handler = next(b.id for b in build_module(SRC)[2].blocks if b.dynamic_entry)   # g's finally
    events = [handler if e == "H" else e for e in events]
    with pytest.raises(StoreError) as info:
        decode("path", events)  # type: ignore[arg-type]
    assert reason in str(info.value) and "\n" not in str(info.value)


def test_closing_record_with_a_stale_register_exits_from_where_the_frame_stands() -> None:
    """A frame stopped between a cut's record and its reset is closed with ``EXC s r`` LEAVE
    whose register names no path from the cut's target: the edge to EXIT leaves from there."""
    decode("path", [F(1), EXC, 0, 99_999, LEAVE])


@pytest.mark.parametrize("damage", ["drop", "val", "ref", "kind"])
def test_corrupt_path_numbering_is_refused(damage: str) -> None:
    cfg = build_module(SRC)[1]
    desc = cfg.to_json()
    desc["plan"] = make_plan("path", cfg, 0).to_json()
    dag = desc["plan"]["paths"]["dag"]
    if damage == "drop":
        del desc["plan"]["paths"]
    elif damage == "val":
        dag[4] = 10**9
    elif damage == "ref":
        dag[3] = 999
    else:
        dag[2] = 7
    sh = parse_shape(1, desc, file="t.py")
    t = Tables({1: sh}, {1: sh}.__getitem__, "path")
    with pytest.raises(StoreError, match="path numbering"):
        t.load(1)


def test_streams_cut_anywhere_still_decode() -> None:
    """A recording killed mid-run ends anywhere, even between EXC and its statement."""
    full = [F(0), F(1), 2, EXC]
    decode("blocks", full)
    decode("blocks", [F(2)])


# ----------------------------------------------------------------------------- the CLI

PROG = textwrap.dedent('''\
    def gen(n):
        for i in range(n):
            try:
                yield i
            finally:
                pass
    def risky(x):
        try:
            return 10 // x
        except ZeroDivisionError:
            return -1
    class Box:
        @property
        def size(self):
            return len(self.__dict__)
    total = 0
    for k in range(6):
        total += risky(k % 3) + sum(gen(k)) + Box().size
    print(total)
''')
MODES = ("blocks", "witness", "branches", "count", "count-naive", "path")


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("validate")
    script = root / "prog.py"
    script.write_text(PROG)
    out = {}
    for mode in MODES:
        out[mode] = root / f"{mode}.wt"
        r = run_recorded(script, out[mode], mode=mode, options=("--no-wpp",) if mode == "path" else ())
        assert r.returncode == 0, r.stderr
    return out


def cli(*argv: str) -> tuple[int, str, str]:
    """Run the command in this process; any exception other than an exit is a failure."""
    return cli_in_process(*argv)


# Tampering helpers: they rewrite rows with valid checksums, so the damage reaches the readers
# of the contents (the store's own checks of damaged rows are tested in tests/store).

def put_events(path: Path, events: np.ndarray | list[int], seq: int = 0, sid: int = 0) -> None:
    raw = np.array(events, np.int64).astype("<i4").tobytes()
    blob = schema.compress(raw)
    with sqlite3.connect(path) as conn:
        start, = conn.execute("SELECT start FROM chunks WHERE sid = ? AND seq = ?", (sid, seq)).fetchone()
        crc = schema.row_crc("chunks", sid, seq, len(raw) // 4, blob, start)
        conn.execute("UPDATE chunks SET blob = ?, n_events = ?, crc = ? WHERE sid = ? AND seq = ?",
                     (blob, len(raw) // 4, crc, sid, seq))


def get_descs(path: Path) -> dict[int, dict]:
    """Every function's stored description (CFG JSON with its plan), from the file registries."""
    out = {}
    with sqlite3.connect(path) as conn:
        for base, blob in conn.execute("SELECT fid_base, blob FROM files"):
            raw = schema.decompress(blob, None, "registry")
            cut = raw.index(b"\n")
            head = json.loads(raw[:cut])
            for i, row in enumerate(head["functions"]):
                out[base + i] = json.loads(raw[cut + 1 + row[5]:cut + 1 + row[6]])
    return out


def put_desc(path: Path, fid: int, desc: object) -> None:
    """Replace function ``fid``'s description in its file's registry blob (the header keeps the
    names and lines the writer gave; only the byte ranges move)."""
    with sqlite3.connect(path) as conn:
        base, fpath, n, counter_base, blob = conn.execute(
            "SELECT fid_base, path, n_functions, counter_base, blob FROM files WHERE fid_base <= ? "
            "ORDER BY fid_base DESC LIMIT 1", (fid,)).fetchone()
        raw = schema.decompress(blob, None, "registry")
        cut = raw.index(b"\n")
        head = json.loads(raw[:cut])
        bodies = [raw[cut + 1 + r[5]:cut + 1 + r[6]] for r in head["functions"]]
        bodies[fid - base] = json.dumps(desc).encode()
        pos = 0
        for r, body in zip(head["functions"], bodies):
            r[5:7] = [pos, pos + len(body)]
            pos += len(body)
        new = schema.compress(json.dumps(head).encode() + b"\n" + b"".join(bodies))
        crc = schema.row_crc("files", base, fpath, n, counter_base, new)
        conn.execute("UPDATE files SET blob = ?, crc = ? WHERE fid_base = ?", (new, crc, base))


def put_array(path: Path, name: str, data: np.ndarray, dtype: str, shape: list[int]) -> None:
    blob = schema.compress(data.astype(dtype).tobytes())
    shape_text = json.dumps(shape)
    crc = schema.row_crc("arrays", name, "", dtype, shape_text, blob)
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT OR REPLACE INTO arrays(name, key, dtype, shape, blob, crc) VALUES (?, '', ?, ?, ?, ?)",
                     (name, dtype, shape_text, blob, crc))


def test_huge_block_id_is_a_one_line_error(recordings: dict[str, Path], tmp_path: Path) -> None:
    bad = tmp_path / "bad.wt"
    shutil.copy(recordings["blocks"], bad)
    with sqlite3.connect(recordings["blocks"]) as conn:
        blob, = conn.execute("SELECT blob FROM chunks WHERE seq = 0").fetchone()
    ev = np.frombuffer(schema.decompress(blob, None, "chunk"), "<i4").copy()
    ev[np.flatnonzero(ev >= 0)[5]] = 50_000_000
    put_events(bad, ev)
    for command in ("counts", "trace"):     # in a child: a crash must show as a signal
        done = subprocess.run([sys.executable, "-m", "wholetrace.cli", command, str(bad)], capture_output=True,
                              text=True, env=ENV)
        assert done.returncode == 2, (command, done.returncode, done.stderr[-500:])
        assert done.stderr.count("\n") == 1 and "block 50000000 does not exist" in done.stderr
    ev[3] = -5
    put_events(bad, ev)
    rc, _, err = cli("trace", str(bad))
    assert rc == 2 and "unknown event code -5" in err and "Traceback" not in err


def test_old_witness_recordings_are_refused(recordings: dict[str, Path], tmp_path: Path) -> None:
    old = tmp_path / "old.wt"
    shutil.copy(recordings["witness"], old)
    for fid, desc in get_descs(old).items():
        desc["plan"].pop("witnessed", None)
        put_desc(old, fid, desc)
    with sqlite3.connect(old) as conn:
        conn.execute("PRAGMA user_version = 1")
    rc, _, err = cli("counts", str(old))
    assert rc == 2 and "does not store its witness placement" in err and err.count("\n") == 1
    blocks = tmp_path / "old-blocks.wt"                 # nothing missing: still read
    shutil.copy(recordings["blocks"], blocks)
    with sqlite3.connect(blocks) as conn:
        conn.execute("PRAGMA user_version = 1")
    assert cli("counts", str(blocks))[0] == 0 and cli("trace", str(blocks))[0] == 0


def test_witness_recordings_without_reraise_records_are_refused(recordings: dict[str, Path], tmp_path: Path) -> None:
    """Schema 3 marks re-raises (RERAISE): a schema 2 witness recording cannot be placed
    exactly and is refused in one line; blocks recordings of schema 2 still read."""
    for mode in ("witness", "blocks"):
        old = tmp_path / f"v2-{mode}.wt"
        shutil.copy(recordings[mode], old)
        with sqlite3.connect(old) as conn:
            conn.execute("PRAGMA user_version = 2")
        rc, _, err = cli("counts", str(old))
        if mode == "witness":
            assert rc == 2 and "(schema 2)" in err and "re-raises" in err and err.count("\n") == 1
        else:
            assert rc == 0 and cli("trace", str(old))[0] == 0


# ----------------------------------------------------------------------------- the fuzzer

INTERESTING = st.one_of(
    st.integers(-2**31, 2**31 - 1),
    st.integers(-12, 40),
    st.sampled_from([LEAVE, EXC, -3, -4, -7, 50_000_000, 2**31 - 1, -2**31]),
    st.integers(0, 12).map(F),
)
JSON = st.recursive(st.none() | st.booleans() | st.integers(-10, 10**12) | st.text(max_size=3),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=2),
                    max_leaves=6)


def damage_events(data: st.DataObject, path: Path) -> None:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT sid, seq, blob FROM chunks").fetchall()
    if not rows:
        return
    sid, seq, blob = data.draw(st.sampled_from(rows))
    ev = np.frombuffer(schema.decompress(blob, None, "chunk"), "<i4").astype(np.int64).tolist()
    how = data.draw(st.sampled_from(["set", "truncate", "drop", "repeat", "insert"]))
    if how == "set" and ev:
        for _ in range(data.draw(st.integers(1, 4))):
            ev[data.draw(st.integers(0, len(ev) - 1))] = data.draw(INTERESTING)
    elif how == "truncate":
        ev = ev[:data.draw(st.integers(0, len(ev)))]
    elif how in ("drop", "repeat") and ev:
        a = data.draw(st.integers(0, len(ev) - 1))
        b = data.draw(st.integers(a, min(len(ev), a + 20)))
        ev = ev[:a] + ev[b:] if how == "drop" else ev[:b] + ev[a:b] + ev[b:]
    else:
        at = data.draw(st.integers(0, len(ev)))
        ev = ev[:at] + data.draw(st.lists(INTERESTING, min_size=1, max_size=5)) + ev[at:]
    put_events(path, ev, seq, sid)


def _mutate(data: st.DataObject, value: object, depth: int = 0) -> object:
    """``value`` with one part replaced, removed or re-typed, somewhere inside."""
    if isinstance(value, dict) and value and depth < 4 and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(value)))
        out = dict(value)
        if data.draw(st.integers(0, 4)) == 0:
            del out[key]
        else:
            out[key] = _mutate(data, value[key], depth + 1)
        return out
    if isinstance(value, list) and value and depth < 4 and data.draw(st.booleans()):
        i = data.draw(st.integers(0, len(value) - 1))
        out = list(value)
        out[i] = _mutate(data, value[i], depth + 1)
        return out
    if isinstance(value, int) and not isinstance(value, bool) and data.draw(st.booleans()):
        return data.draw(st.sampled_from([value + 1, value - 1, -1, -value - 2, 10**6, 2**40]))
    return data.draw(JSON)


def damage_function(data: st.DataObject, path: Path) -> None:
    descs = get_descs(path)
    fid = data.draw(st.sampled_from(sorted(descs)))
    desc = descs[fid]
    part = data.draw(st.sampled_from(["blocks", "edges", "stmts", "plan", None]))
    if part is None:
        desc = _mutate(data, desc)
    else:
        desc[part] = _mutate(data, desc.get(part))
    put_desc(path, fid, desc)


def damage_arrays(data: st.DataObject, path: Path) -> None:
    name = data.draw(st.sampled_from(["counters", "exception_edges", "early_exits"]))
    arr = np.array(data.draw(st.lists(st.integers(-3, 2**40), max_size=12)), np.int64)
    shape = data.draw(st.sampled_from([[len(arr)], [len(arr) // 4, 4][: 2 if len(arr) % 4 == 0 else 1],
                                       [len(arr) // 2, 2] if len(arr) % 2 == 0 else [len(arr)]]))
    put_array(path, name, arr, data.draw(st.sampled_from(["<i8", "<f8", "<i4"])), shape)


def assert_graceful(path: Path, mode: str) -> None:
    commands = [("info",), ("counts",), ("counts", "--format", "lcov")]
    if mode in ("blocks", "witness", "branches"):
        commands += [("trace",), ("trace", "--format", "json")]
    for command in commands:
        try:
            rc, _out, err = cli(*command, str(path))
        except Exception as exc:  # noqa: BLE001 - the point is that nothing escapes
            raise AssertionError(f"{command}: {type(exc).__name__}: {exc}") from exc
        assert rc in (0, 2), (command, rc, err)
        assert err.count("\n") <= 1 and "Traceback" not in err, (command, err)
        assert (rc == 0) == (err == ""), (command, err)


FUZZ = settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("mode", MODES)
@FUZZ
@given(data=st.data())
def test_fuzz_damaged_contents(recordings: dict[str, Path], tmp_path_factory: pytest.TempPathFactory,
                               mode: str, data: st.DataObject) -> None:
    path = tmp_path_factory.mktemp("fuzz") / f"{mode}.wt"
    shutil.copy(recordings[mode], path)
    what = data.draw(st.sampled_from(["events", "function", "arrays"] if mode.startswith("count")
                                     else ["events", "events", "function"]))
    {"events": damage_events, "function": damage_function, "arrays": damage_arrays}[what](data, path)
    assert_graceful(path, mode)


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=1000, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_fuzz_damaged_contents_long(recordings: dict[str, Path], tmp_path_factory: pytest.TempPathFactory,
                                    mode: str, data: st.DataObject) -> None:
    test_fuzz_damaged_contents.hypothesis.inner_test(recordings, tmp_path_factory, mode, data)  # type: ignore[attr-defined]
