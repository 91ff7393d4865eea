"""Shared checks of the cleanup-shape tests: each mode runs as plain does, count reads as blocks."""

from __future__ import annotations

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
