"""`trace --salvage` and `counts --salvage` on recordings stored only as grammars (`--wpp`, no `--keep-raw`)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from wholetrace.cli import main
from wholetrace.store.pages import scan
from wholetrace.store.salvage import classify
from wtutil import run_recorded

PROGRAM = '''\
import threading

def f(x):
    if x % 3:
        return x * 2
    return -x

def work(n):
    return sum(f(i) for i in range(n))

t = threading.Thread(target=work, args=(7,))
t.start()
print(work(12))
t.join()
'''


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("salvage_wpp")
    (d / "prog.py").write_text(PROGRAM)
    out = {mode: d / f"{mode}.wt" for mode in ("blocks", "path")}
    for mode, wt in out.items():     # grammars only (no --keep-raw)
        assert run_recorded(d / "prog.py", wt, mode=mode, options=("--wpp",)).returncode == 0
    return out


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("mode", ["blocks", "path"])
def test_salvage_reads_the_grammars_as_the_normal_read_does(recordings: dict[str, Path], mode: str) -> None:
    path = str(recordings[mode])
    for command in (["trace"], ["trace", "--format", "json"], ["counts"]):
        code, plain, _ = run_cli(*command, path)
        assert code == 0
        assert len(plain) > 300 and "never ran" not in plain
        code, salvaged, err = run_cli(*command, "--salvage", path)
        assert code == 0
        assert "nothing lost" in err
        assert salvaged == plain, command


@pytest.mark.parametrize("mode", ["blocks", "path"])
def test_a_damaged_grammar_is_reported_lost_and_the_others_read(recordings: dict[str, Path], tmp_path: Path,
                                                              mode: str) -> None:
    src = recordings[mode]
    rows, _ = classify(scan(src))
    grammar = rows["arrays"][("wpp.grammar.0", "")]
    data = bytearray(src.read_bytes())
    blob = grammar.values[4]
    at = bytes(data).find(blob)
    assert at > 0 and bytes(data).find(blob, at + 1) < 0
    for i in range(at + 4, at + len(blob) - 4):   # past the zstd frame header: the content
        data[i] ^= 0x5A
    damaged = tmp_path / "damaged.wt"
    damaged.write_bytes(bytes(data))
    code, out, err = run_cli("trace", "--salvage", str(damaged))
    assert code == 0
    assert "array 'wpp.grammar.0' lost" in err and "nothing lost" not in err
    _, whole, _ = run_cli("trace", str(src))
    others = [s for s in whole.split("\nT ") if not s.startswith("T 0")]
    assert others and all(s in out for s in others)        # stream 1, read through its intact grammar
    assert len(out) < len(whole)
