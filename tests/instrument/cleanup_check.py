"""Shared checks of the cleanup-shape tests: each mode runs as plain does, count reads as blocks."""

from __future__ import annotations

import textwrap
from pathlib import Path

from wtutil import assert_same_counts, cli_in_process, profiles, run_plain, run_recorded


def counts_json(wt: Path) -> str:
    """``counts --format json`` of a recording (it must be readable)."""
    rc, stdout, stderr = cli_in_process("counts", "--format", "json", str(wt))
    assert rc == 0, stderr
    return stdout


def record_modes(script: Path, modes: tuple[str, ...], tmp_path: Path) -> dict[str, Path]:
    """Record ``script`` in each mode: stdout (a ``__del__``'s prints too), stderr and exit
    status equal plain's; returns each mode's recording."""
    plain = run_plain(script)
    assert plain.returncode == 0 and plain.stdout, plain.stderr
    wts = {}
    for mode in modes:
        wts[mode] = tmp_path / f"{script.stem}.{mode}.wt"
        got = run_recorded(script, wts[mode], mode=mode)
        assert (got.returncode, got.stdout, got.stderr) == (plain.returncode, plain.stdout, plain.stderr), mode
    return wts


def assert_count_is_blocks(wts: dict[str, Path], name: str) -> None:
    """Count's recording reads as blocks' does: every statement and edge, and the JSON."""
    assert_same_counts(profiles(wts["blocks"]), profiles(wts["count"]), name, edges=True)
    assert counts_json(wts["count"]) == counts_json(wts["blocks"])


# counts19's inner2.py: a helper's bare raise in one block; the caller's traceback offset falls on
# the helper's 3rd line (test_count_exact: count mode; test_bare_raise_helper: every mode)
LONG_HELPER = textwrap.dedent('''\
    def inner(n):
        a = n + 1
        b = a * 2
        c = b - 3
        d = c + a
        e = d * b
        g = e - 1
        raise
    def f():
        try:
            raise KeyError(1)
        except KeyError:
            try:
                inner(3)
            except KeyError as e:
                print("re-raised", e.args)
    f()
    ''')
