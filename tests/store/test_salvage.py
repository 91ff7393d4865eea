"""`--salvage` on damaged recordings: a fuzzer over real recordings (bytes flipped, pages zeroed
or swapped, files cut short).  Oracles: the undamaged file read by SQLite (every chunk that
comes back equals it; every chunk whose pages were not touched comes back), and the CLI's
contract (no traceback, exit status 0 or 2, one-line messages of at most 200 characters)."""

from __future__ import annotations

import contextlib
import io
import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from naive_decode import raw_events as iter_events
from wholetrace.cli import main
from wholetrace.errors import StoreError
from wholetrace.events import ENTER_BASE, EXC, LEAVE
from wholetrace.store import Recording
from wholetrace.store.pages import scan
from wholetrace.store.salvage import SalvagedRecording, classify
from wholetrace.store.segments import attributable
from wtutil import ENV

PAGE = 4096

# Bursts of random branching (about 1 bit per event after zstd) between short sleeps: each
# 0.25 s flush makes a chunk of a few KB, some spilling over several overflow pages.
PROGRAM = '''
import random, threading, time

def left(x):
    return x + 1

def right(x):
    if x % 3:
        return x - 1
    return x * 2

def work(seed, rounds):
    rng = random.Random(seed)
    total = 0
    for r in range(rounds):
        for _ in range(rng.choice([300, 600, 4000])):
            total = (left(total) if rng.random() < 0.5 else right(total)) % 1000003
        time.sleep(0.04)
    return total

t = threading.Thread(target=work, args=(2, 14))
t.start()
print(work(1, 24))
t.join()
'''


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("salvage")
    (d / "prog.py").write_text(PROGRAM)
    out = {}
    for mode in ("blocks", "witness", "count"):
        out[mode] = d / f"{mode}.wt"
        subprocess.run([sys.executable, "-m", "wholetrace", "record", "-q", "--mode", mode, "-o", str(out[mode]),
                        "prog.py"], cwd=d, env=ENV, check=True, capture_output=True, timeout=300)
    return out


def original_chunks(path: Path) -> dict[tuple[int, int], np.ndarray]:
    with Recording(path) as rec:
        return {(s.sid, q): c for s in rec.streams() for q, c in enumerate(rec.iter_chunks(s.sid))}


def chunk_pages(path: Path) -> dict[tuple[int, int], set[int]]:
    """Pages holding each chunk row of an undamaged file (its leaf page and overflow pages)."""
    rows, _ = classify(scan(path))
    return {key: set(r.pages) for key, r in rows["chunks"].items()}


def damage(data: bytes, rng: random.Random) -> tuple[bytes, set[int], str]:
    """One random kind of damage; returns the damaged bytes and the pages it touched."""
    buf = bytearray(data)
    n = len(buf) // PAGE
    kind = rng.choice(["flip", "zero", "swap", "truncate"])
    touched: set[int] = set()
    if kind == "flip":
        for _ in range(rng.randint(1, 20)):
            i = rng.randrange(len(buf))
            buf[i] ^= rng.randint(1, 255)
            touched.add(i // PAGE + 1)
    elif kind == "zero":
        p = rng.randrange(n)
        buf[p * PAGE:(p + 1) * PAGE] = bytes(PAGE)
        touched.add(p + 1)
    elif kind == "swap":
        a, b = rng.sample(range(n), 2)
        pa, pb = bytes(buf[a * PAGE:(a + 1) * PAGE]), bytes(buf[b * PAGE:(b + 1) * PAGE])
        buf[a * PAGE:(a + 1) * PAGE], buf[b * PAGE:(b + 1) * PAGE] = pb, pa
        touched |= {a + 1, b + 1} if pa != pb else set()
    else:
        cut = rng.randrange(len(buf))
        del buf[cut:]
        touched |= set(range(cut // PAGE + 1, n + 1))
    return bytes(buf), touched, kind


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def fbe(chunks: list[np.ndarray], labels: dict[int, str]) -> list[str]:
    out = []
    for kind, v in iter_events(chunks):
        out.append(f"F {labels.get(v, f'<fid {v}>')}" if kind == "F" else "E" if kind == "E" else f"{kind} {v}")
    return out


def test_salvage_of_an_intact_file_reads_what_sqlite_reads(recordings: dict[str, Path]) -> None:
    for mode, path in recordings.items():
        salv = SalvagedRecording(path)
        with Recording(path) as rec:
            assert salv.meta == rec.meta
            assert salv.functions() == rec.functions()
            assert [f.cfg for f in salv.functions()] == [f.cfg for f in rec.functions()]
            assert salv.streams() == rec.streams()
            for st in rec.streams():
                assert np.array_equal(salv.events(st.sid), rec.events(st.sid))
            for name in ("counters", "exception_edges", "early_exits"):
                a, b = rec.get_array(name), salv.get_array(name)
                assert (a is None and b is None) or np.array_equal(a, b)
        assert not salv.lost.anything and not salv.lost.unfinished, salv.lost.lines()
        if mode != "count":
            assert sum(s.n_chunks for s in salv.streams()) >= 5   # the fuzzer has chunks to lose
            assert any(len(p) > 1 for p in chunk_pages(path).values())   # and overflow chains
        for cmd in ("trace", "counts"):
            plain, salvaged = run_cli(cmd, str(path)), run_cli(cmd, "--salvage", str(path))
            assert salvaged[:2] == plain[:2], cmd
            assert salvaged[2] == "wholetrace: salvage: nothing lost\n"
        info = [json.loads(run_cli("info", "--json", *s, str(path))[1]) for s in ([], ["--salvage"])]
        for d in info:   # per-table sizes need SQLite's dbstat
            del d["sizes"]
        assert info[1].pop("salvage")["chunks"] == [] and info[0] == info[1]


def test_lost_chunks_are_reported_with_their_event_ranges(recordings: dict[str, Path], tmp_path: Path) -> None:
    """Zero the pages of one chunk in the middle of stream 0: it alone is lost, its exact
    event range is reported, and counts are a lower bound of the undamaged counts."""
    path = recordings["blocks"]
    chunks, pages = original_chunks(path), chunk_pages(path)
    last = max(q for s, q in chunks if s == 0)
    assert last >= 2, "stream 0 needs a chunk in the middle"
    q = last // 2 or 1
    victim = sorted(pages[(0, q)] - set().union(*(p for k, p in pages.items() if k != (0, q))))
    assert victim, f"chunk {q} shares all its pages"
    data = bytearray(path.read_bytes())
    for p in victim:
        data[(p - 1) * PAGE:p * PAGE] = bytes(PAGE)
    bad = tmp_path / "bad.wt"
    bad.write_bytes(bytes(data))
    salv = SalvagedRecording(bad)
    assert set(salv.chunk_rows(0)) == {k for s, k in chunks if s == 0} - {q}
    start, n = sum(len(chunks[(0, k)]) for k in range(q)), len(chunks[(0, q)])
    assert salv.lost.chunks == [(0, q, q, start, start + n)]
    assert f"stream 0: chunk {q} lost (events {start:,}-{start + n - 1:,})" in salv.lost.lines()
    code, out, err = run_cli("counts", "--salvage", "--format", "json", str(bad))
    assert code == 0 and f"chunk {q} lost" in err
    full = json.loads(run_cli("counts", "--format", "json", str(path))[1])["lines"]
    part = json.loads(out)["lines"]
    assert part.keys() == full.keys()
    assert all(part[f][ln] <= full[f][ln] for f in full for ln in full[f])
    assert sum(map(sum, (d.values() for d in part.values()))) < sum(map(sum, (d.values() for d in full.values())))
    code, out, err = run_cli("counts", str(bad))
    assert code == 2 and "\n" not in err.strip() and "salvage" not in out


@pytest.mark.parametrize("seed", [pytest.param(s, marks=pytest.mark.slow) if s >= 2 else s for s in range(8)])
def test_fuzzed_damage(recordings: dict[str, Path], tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    for mode, path in recordings.items():
        orig = path.read_bytes()
        chunks, pages = original_chunks(path), chunk_pages(path)
        with Recording(path) as rec:
            functions = {f.fid: f for f in rec.functions()}
            labels = {f.fid: f"{f.qualname}@{f.file}:{f.firstline}" for f in rec.functions()}
        for _ in range(4):
            data, touched, kind = damage(orig, rng)
            bad = tmp_path / f"{mode}.wt"
            bad.write_bytes(data)
            what = (mode, kind, sorted(touched))
            try:
                salv = SalvagedRecording(bad)
            except StoreError as exc:
                assert "\n" not in str(exc) and not any(not (p & touched) for p in pages.values()), what
                continue
            got = {(st.sid, q): salv.chunk(st.sid, q) for st in salv.streams() for q in salv.chunk_rows(st.sid)}
            for key, chunk in got.items():         # nothing wrong comes back
                assert np.array_equal(chunk, chunks[key]), (what, key)
            for key, held in pages.items():        # nothing intact is left behind
                assert key in got or held & touched, (what, key)
            for f in salv.functions():
                assert f == functions[f.fid] and f.cfg == functions[f.fid].cfg, what
            lost = {(s, q) for s, a, b, _e0, _e1 in salv.lost.chunks if b is not None for q in range(a, b + 1)}
            assert lost <= set(chunks) - set(got), what
            for cmd in (["info"], ["trace"], ["counts"]):
                for salvage in ([], ["--salvage"]):
                    code, out, err = run_cli(*cmd, *salvage, str(bad))
                    assert code in (0, 2), (what, cmd, salvage, err)
                    errors = [ln for ln in err.splitlines() if ln.startswith("wholetrace: error:")]
                    assert len(errors) == (code == 2), (what, cmd, err)
                    assert all(len(ln) <= 200 for ln in err.splitlines()), (what, cmd, err)
                    if cmd == ["trace"] and salvage and mode == "blocks" and code == 0:
                        want = []
                        for sid in [st.sid for st in salv.streams()]:
                            want += [f"T {sid}"] + fbe([got[(s, q)] for s, q in sorted(got) if s == sid], labels)
                        assert out.splitlines() == want, what


def F(fid: int) -> int:
    return -(ENTER_BASE + fid)


def test_segments_keep_whole_activations_only() -> None:
    """A segment starting inside activations keeps only those it sees begin, and drops the
    events of functions that were lost (keeping the activations they call)."""
    chunk1 = np.array([7, LEAVE, 3, EXC, 1, 4, LEAVE, F(1), 2, F(9), 5, F(2), 6, LEAVE, 8, LEAVE, 2, LEAVE, LEAVE, F(2)],
                      np.int32)
    chunk2 = np.array([3, EXC, -1, LEAVE], np.int32)
    got = np.concatenate(list(attributable([chunk1, chunk2], {1, 2}, from_start=False))).tolist()
    assert got == [F(1), 2, F(2), 6, LEAVE, 2, LEAVE, F(2), 3, EXC, -1, LEAVE]
    whole = np.concatenate([chunk1[7:], chunk2])
    assert np.concatenate(list(attributable([whole], {1, 2, 9}, from_start=True))).tolist() == whole.tolist()
