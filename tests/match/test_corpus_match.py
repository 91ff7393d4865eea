"""Corpus recordings (tests/corpus.py, small size): all four schemes against the vectorised
brute force (corpus_oracle.py) for hundreds of queries per recording: paths cut from real
executions (common ones, weighted by block events; rare ones, drawn per function), paths
that never occur; and blocks / witness recordings of the same program give the same answers."""

from __future__ import annotations

import numpy as np
import pytest

from corpus import PROGRAMS, names
from corpus_oracle import OwnBlocks
from wtutil import run_recorded
from wholetrace.match.compress import compress_file
from wholetrace.match.engine import SCHEMES, match
from wholetrace.match.query import Query
from wholetrace.match.store import load_stream
from wholetrace.store import Recording

DEFAULT = ("nqueens", "json", "pyflate")    # the rest run with -m slow
QUERIES = 240


def _record(tmp_path, name: str, mode: str = "blocks"):
    prog = PROGRAMS[name]
    driver = prog.write(tmp_path / name, "small")
    out = tmp_path / f"{name}-{mode}.wt"
    proc = run_recorded(driver, out, mode=mode, include=tuple(prog.include))
    assert proc.returncode == 0, proc.stderr[-2000:]
    compress_file(out, chunk_events=1 << 15, segments=64, segment_items=8)
    return out


def _streams(path):
    rec = Recording(path)       # stays open: scheme 3 reads its chunks lazily
    return [load_stream(rec, s.sid) for s in rec.streams()]


def _queries(oracles: dict, rng) -> list[tuple[int, tuple[int, ...]]]:
    qs: list[tuple[int, tuple[int, ...]]] = []
    busiest = max(oracles.values(), key=lambda o: sum(len(v[0]) for v in o.by_func.values()))
    qs += busiest.sample_paths(rng, QUERIES // 2, rare=False)
    qs += busiest.sample_paths(rng, QUERIES // 4, rare=True)
    funcs = sorted(busiest.by_func)
    for _ in range(QUERIES // 4):                       # random block sequences: mostly absent
        f = funcs[int(rng.integers(0, len(funcs)))]
        qs.append((f, tuple(int(b) for b in rng.integers(2, 12, size=int(rng.integers(2, 6))))))
    return qs


@pytest.fixture(scope="module")
def blocks_recording(tmp_path_factory):  # type: ignore[no-untyped-def]
    """``name`` -> its `blocks` recording (compressed), made once per module and worker: the
    scheme test and the blocks/witness test of a program read the same one."""
    made: dict[str, object] = {}

    def get(name: str):  # type: ignore[no-untyped-def]
        if name not in made:
            made[name] = _record(tmp_path_factory.mktemp(f"blocks-{name}"), name)
        return made[name]

    return get


def _check_program(tmp_path, name: str, path=None) -> None:  # type: ignore[no-untyped-def]
    path = path or _record(tmp_path, name)
    streams = _streams(path)
    oracles = {cs.sid: OwnBlocks(cs.grammar.expand()) for cs in streams}
    rng = np.random.default_rng(sum(map(ord, name)))
    kinds = {"absent": 0, "rare": 0, "common": 0}
    for fid, p in _queries(oracles, rng):
        q = Query(fid, p)
        for cs in streams:
            want = oracles[cs.sid].ends(fid, p)
            kinds["absent" if len(want) == 0 else "rare" if len(want) < 20 else "common"] += 1
            for scheme, run in SCHEMES.items():
                r = run(cs, q, False, len(want) + 1)
                assert r.count == len(want), (name, scheme, fid, p)
                assert np.array_equal(np.array(r.ends, np.int64), want), (name, scheme, fid, p)
                f = run(cs, q, True, 1)
                assert list(f.ends) == want[:1].tolist(), (name, scheme, fid, p)
    assert min(kinds.values()) > 0, kinds     # the sample really holds all three kinds


@pytest.mark.parametrize("name", DEFAULT)
def test_schemes_equal_brute_force_on_corpus(tmp_path, name, blocks_recording):
    _check_program(tmp_path, name, blocks_recording(name))


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in names() if n not in DEFAULT])
def test_schemes_equal_brute_force_on_corpus_slow(tmp_path, name):
    _check_program(tmp_path, name)


@pytest.mark.parametrize("name", ["nqueens", "json"])
def test_blocks_and_witness_recordings_answer_alike(tmp_path, name, blocks_recording):
    """Counts agree always (they depend only on each invocation's own blocks, which witness
    regeneration reproduces); positions too wherever the regenerated trace is the blocks trace
    event for event."""
    a, b = _streams(blocks_recording(name)), _streams(_record(tmp_path, name, "witness"))
    assert [cs.n for cs in a] == [cs.n for cs in b]
    same = [np.array_equal(x.grammar.expand(), y.grammar.expand()) for x, y in zip(a, b)]
    rng = np.random.default_rng(7)
    oracle = OwnBlocks(a[0].grammar.expand())
    for fid, p in oracle.sample_paths(rng, 30, rare=False) + oracle.sample_paths(rng, 30, rare=True):
        q = Query(fid, p)
        for scheme in (1, 2, 3, 4):
            x, y = match(a, q, scheme, "all"), match(b, q, scheme, "all")
            assert x.count == y.count, (name, fid, p, scheme)
            if all(same):
                assert x.occurrences == y.occurrences
