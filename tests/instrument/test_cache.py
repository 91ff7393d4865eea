"""The instrumented-code cache: relocation of placeholder ids, and recordings made cold, warm
and without the cache agree with each other and with the `blocks` trace."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


from wholetrace.instrument.cache import COUNTER_ORIGIN, FID_ORIGIN, relocate
from wholetrace.events import enter_code
from regenutil import compare
from wtutil import ENV, assert_same_counts, fbe_lines, profiles


def test_relocate_replaces_only_placeholders() -> None:
    src = f"""
def f(a):
    x = ({FID_ORIGIN + 2}, {COUNTER_ORIGIN + 5}, {enter_code(FID_ORIGIN + 3)}, 7, -9, 2**40)
    def g():
        return ({COUNTER_ORIGIN}, ({FID_ORIGIN},), "s", 1.5)
    return x, g()
"""
    code = relocate(compile(src, "<t>", "exec"), fid_base=100, counter_base=1000)
    ns: dict[str, object] = {}
    exec(code, ns)
    assert ns["f"](0) == ((102, 1005, enter_code(103), 7, -9, 2**40), (1000, (100,), "s", 1.5))  # type: ignore[operator]


MAIN = '''
    import sys
    if sys.argv[1] == "ab":
        import mod_a, mod_b
    else:
        import mod_b, mod_a

    def work(n):
        total = 0
        for i in range(n):
            if i % 3 == 0:
                total += mod_a.f(i)
            else:
                total += mod_b.g(i)
        return total

    print(work(200))
'''
MOD_A = '''
    def f(i):
        try:
            if i % 2:
                raise ValueError(i)
            return i
        except ValueError:
            return -1
'''
MOD_B = '''
    def g(i):
        acc = 0
        for k in range(i % 7):
            acc += k
        return acc
'''


def _record(dirp: Path, mode: str, order: str, out: Path, cache: Path | None) -> dict:
    env = dict(ENV)
    cmd = [sys.executable, "-m", "wholetrace.cli", "record", "-q", "--mode", mode, "-o", str(out)]
    if cache is None:
        cmd.append("--no-cache")
    else:
        env["WHOLETRACE_CACHE_DIR"] = str(cache)
    proc = subprocess.run(cmd + [str(dirp / "main.py"), order], capture_output=True, text=True, cwd=dirp,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return profiles(out)


def _write(dirp: Path) -> None:
    for name, text in (("main.py", MAIN), ("mod_a.py", MOD_A), ("mod_b.py", MOD_B)):
        (dirp / name).write_text(textwrap.dedent(text))


def _stamps(cache: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_mtime_ns, p.stat().st_size) for p in cache.glob("*.wtc")}


def test_cold_warm_and_uncached_recordings_agree(tmp_path: Path) -> None:
    _write(tmp_path)
    cache = tmp_path / "cache"
    truth = {order: _record(tmp_path, "blocks", order, tmp_path / f"blocks-{order}.wt", None) for order in ("ab", "ba")}
    for mode in ("count", "count-naive"):
        runs = [("ab", _record(tmp_path, mode, "ab", tmp_path / "none.wt", None)),
                ("ab", _record(tmp_path, mode, "ab", tmp_path / "cold.wt", cache))]
        stamps = {p.name: p.stat().st_mtime_ns for p in cache.iterdir()}
        # warm, and the modules imported the other way round: every id is handed out differently
        runs.append(("ba", _record(tmp_path, mode, "ba", tmp_path / "warm.wt", cache)))
        assert {p.name: p.stat().st_mtime_ns for p in cache.iterdir()} == stamps   # all hits
        for order, got in runs:
            assert_same_counts(truth[order], got, (mode, order))
    assert len(list(cache.glob("*.wtc"))) == 6     # 3 files x 2 modes


def test_trace_modes_through_relocated_cached_code(tmp_path: Path) -> None:
    """blocks and witness recordings made through cache hits, with every id handed out in
    another order than when the entries were written, equal uncached recordings."""
    _write(tmp_path)
    cache = tmp_path / "cache"
    for mode in ("blocks", "witness"):
        _record(tmp_path, mode, "ab", tmp_path / f"cold-{mode}.wt", cache)
    stamps = _stamps(cache)
    assert len(stamps) == 6
    for order in ("ab", "ba"):
        _record(tmp_path, "blocks", order, tmp_path / f"none-{order}.wt", None)
        _record(tmp_path, "blocks", order, tmp_path / f"warm-{order}.wt", cache)
        _record(tmp_path, "witness", order, tmp_path / f"warm-witness-{order}.wt", cache)
        assert _stamps(cache) == stamps                                        # all hits
        assert fbe_lines(tmp_path / f"warm-{order}.wt") == fbe_lines(tmp_path / f"none-{order}.wt")
        compare(tmp_path / f"none-{order}.wt", tmp_path / f"warm-witness-{order}.wt", exact=True)
    assert fbe_lines(tmp_path / "none-ab.wt") != fbe_lines(tmp_path / "none-ba.wt")  # ids differ


def test_stale_or_broken_entries_are_not_used(tmp_path: Path) -> None:
    _write(tmp_path)
    cache = tmp_path / "cache"
    truth = _record(tmp_path, "blocks", "ab", tmp_path / "none.wt", None)
    _record(tmp_path, "blocks", "ab", tmp_path / "cold.wt", cache)
    sizes = {name: size for name, (_t, size) in _stamps(cache).items()}
    for entry in cache.glob("*.wtc"):       # a truncated file is a miss, not an error
        entry.write_bytes(entry.read_bytes()[:20])
    assert_same_counts(truth, _record(tmp_path, "blocks", "ab", tmp_path / "again.wt", cache), "truncated")
    assert fbe_lines(tmp_path / "none.wt") == fbe_lines(tmp_path / "again.wt")
    assert {name: size for name, (_t, size) in _stamps(cache).items()} == sizes   # rewritten whole
    (tmp_path / "mod_b.py").write_text(textwrap.dedent(MOD_B).replace("acc += k", "acc += 2 * k"))
    changed = _record(tmp_path, "blocks", "ab", tmp_path / "changed.wt", cache)
    assert_same_counts(_record(tmp_path, "blocks", "ab", tmp_path / "changed-none.wt", None), changed, "changed")
    recorded = subprocess.run([sys.executable, "-m", "wholetrace.cli", "record", "-q", "-o", str(tmp_path / "out.wt"),
                               str(tmp_path / "main.py"), "ab"], capture_output=True, text=True, cwd=tmp_path,
                              timeout=120, env=dict(ENV, WHOLETRACE_CACHE_DIR=str(cache))).stdout
    plain = subprocess.run([sys.executable, str(tmp_path / "main.py"), "ab"], capture_output=True, text=True,
                           cwd=tmp_path, env=ENV).stdout
    assert recorded == plain                    # the changed module's new code ran, not the cached old one
    assert len(list(cache.glob("*.wtc"))) == 4     # the changed source got an entry of its own
    assert os.listdir(cache) and not [n for n in os.listdir(cache) if n.startswith(".tmp-")]


@pytest.mark.parametrize("data", [b"", b"abc", bytes(range(256)) * 300, "x\u20ac".encode() * 1000])
def test_builtin_sha256_is_sha256(data):
    """The cache keys and CFG fingerprints hash with the interpreter's built-in SHA-256
    (instrument.digest); hashlib's OpenSSL one is the oracle."""
    import hashlib

    from wholetrace.instrument.digest import sha256

    h = sha256()
    h.update(data[:7])
    h.update(data[7:])
    assert h.hexdigest() == sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
