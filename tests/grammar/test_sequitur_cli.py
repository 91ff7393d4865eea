"""The ``sequitur`` subcommand, driven through its own argparse parser."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from wholetrace.errors import UsageError
from wholetrace.grammar import Grammar
from wholetrace.grammar.cli import add_parser, run


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="wholetrace")
    add_parser(p.add_subparsers(dest="command"))
    return p.parse_args(argv)


def test_cli_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seq = np.frombuffer(b"aacaacbcbdaacbcbdebcbd", np.uint8).astype(np.uint16)
    (tmp_path / "x.txt").write_text("".join(f"{v}\n" for v in seq))
    seq.astype("<u2").tofile(tmp_path / "x.u16")
    seq.astype("<u4").tofile(tmp_path / "x.bin")
    outs = []
    for argv in (["x.txt"], ["x.u16"], ["x.bin", "--input-format", "u32"]):
        argv = [str(tmp_path / argv[0])] + argv[1:]
        assert run(parse(["sequitur", *argv, "--json", "-o", str(tmp_path / "g.wtg")])) == 0
        rep = json.loads(capsys.readouterr().out)
        outs.append((rep["rules"], rep["rhs"], rep["len_S"]))
        g = Grammar.from_bytes((tmp_path / "g.wtg").read_bytes())
        assert np.array_equal(g.expand(), seq)
    assert outs == [(3, 14, 5)] * 3
    assert run(parse(["sequitur", str(tmp_path / "x.u16"), "--print", "--lookahead"])) == 0
    assert "S -> " in capsys.readouterr().out


def test_cli_bad_inputs(tmp_path: Path) -> None:
    (tmp_path / "bad.txt").write_text("1\n2\nthree\n")
    (tmp_path / "odd.u16").write_bytes(b"\x01\x00\x02")
    (tmp_path / "x.dat").write_bytes(b"")
    for name in ("bad.txt", "odd.u16", "x.dat", "missing.txt"):
        with pytest.raises(UsageError) as exc:
            run(parse(["sequitur", str(tmp_path / name)]))
        assert "\n" not in str(exc.value)
