"""`wholetrace cfg FILE[:QUALNAME] --format text|dot|json` through ``wholetrace.cli.main``."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from wholetrace.cli import main
from wholetrace.instrument.cfg import CFG, build_module

SOURCE = textwrap.dedent('''\
    """A module with quotes "here" and a backslash \\\\ in it."""
    import os


    class Box:
        def items(self, xs):
            out = {}
            for x in xs:
                try:
                    if x == "\\"":
                        continue
                    out[x] = os.sep
                except KeyError:
                    return None
            return out


    def gen(n):
        while True:
            n = yield n
            if n is None:
                break
    ''')


@pytest.fixture()
def src_file(tmp_path: Path) -> Path:
    p = tmp_path / "mod.py"
    p.write_text(SOURCE, encoding="utf-8")
    return p


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(["cfg", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _expected() -> dict[str, CFG]:
    return {c.qualname: c for c in build_module(SOURCE)}


def test_text_one_function(src_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(capsys, f"{src_file}:Box.items")
    assert rc == 0 and err == ""
    cfg = _expected()["Box.items"]
    lines = out.splitlines()
    assert lines[0] == (f"Box.items  (function, lines 6-15, {len(cfg.blocks) - 2} blocks, "
                        f"{len(cfg.edges)} edges, fingerprint {cfg.fingerprint})")
    assert "  ENTRY -> B2:fall" in lines and "  EXIT -> -" in lines
    # one line per block (with its successors) and one per live statement
    block_lines = [ln for ln in lines if re.match(r"  (ENTRY|EXIT|B\d+)\b", ln)]
    assert len(block_lines) == len(cfg.blocks)
    stmt_lines = [ln for ln in lines if re.match(r"      s\d+ ", ln)]
    assert len(stmt_lines) == sum(len(b.stmts) for b in cfg.blocks)
    text = "\n".join(lines)
    assert "[loop header]" in text and "[dynamic entry]" in text
    assert re.search(r"B\d+:continue\*", text) and re.search(r"B\d+:back\*", text)
    assert re.search(r"for-next +call +for x in xs:", text)
    assert re.search(r"for-iter +<iter> for x in xs:", text)
    assert "def gen" not in text


def test_text_all_functions(src_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _err = _run(capsys, str(src_file))
    assert rc == 0
    chunks = out.rstrip("\n").split("\n\n")
    assert [c.split("  (")[0] for c in chunks] == ["<module>", "Box", "Box.items", "gen"]
    gen = chunks[3]
    assert "yield" in gen and "n = yield n" in gen


def test_json(src_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _err = _run(capsys, f"{src_file}:gen", "--format", "json")
    assert rc == 0
    data = json.loads(out)
    assert isinstance(data, list) and len(data) == 1
    cfg = _expected()["gen"]
    assert data[0] == json.loads(json.dumps(cfg.to_json()))
    back = CFG.from_json(data[0])
    assert back == cfg and back.is_generator
    rc, out, _err = _run(capsys, str(src_file), "--format", "json")
    assert [d["qualname"] for d in json.loads(out)] == ["<module>", "Box", "Box.items", "gen"]


_NODE = re.compile(r'^    f(\d+)b(\d+) \[label="((?:[^"\\]|\\.)*)"(, shape=ellipse)?(, style=dashed)?\];$')
_EDGE = re.compile(r'^    f(\d+)b(\d+) -> f(\d+)b(\d+) \[label="([a-z-]+)"(, style=bold)?\];$')
_CLUSTER = re.compile(r'^  subgraph cluster_(\d+) \{ label="((?:[^"\\]|\\.)*)";$')


def _check_dot(out: str, cfgs: list[CFG]) -> None:
    lines = out.rstrip("\n").splitlines()
    assert lines[0] == "digraph wholetrace {" and lines[-1] == "}"
    nodes: set[tuple[int, int]] = set()
    edges: list[tuple[int, int, int, int, str, bool]] = []
    clusters: list[str] = []
    for ln in lines[2:-1]:
        if m := _CLUSTER.match(ln):
            clusters.append(m.group(2))
        elif m := _NODE.match(ln):
            nodes.add((int(m.group(1)), int(m.group(2))))
        elif m := _EDGE.match(ln):
            edges.append((int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)),
                          m.group(5), bool(m.group(6))))
        else:
            assert ln == "  }", f"unexpected dot line {ln!r}"
    assert clusters == [c.qualname for c in cfgs]
    assert nodes == {(i, b.id) for i, c in enumerate(cfgs) for b in c.blocks}
    assert sorted(edges) == sorted((i, e.src, i, e.dst, e.kind, e.back)
                                   for i, c in enumerate(cfgs) for e in c.edges)


def test_dot(src_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _err = _run(capsys, str(src_file), "--format", "dot")
    assert rc == 0
    _check_dot(out, list(_expected().values()))
    assert '\\"' in out           # the quotes of the source are escaped
    rc, out, _err = _run(capsys, f"{src_file}:Box.items", "--format", "dot")
    _check_dot(out, [_expected()["Box.items"]])


def test_dot_renders_with_graphviz(src_file: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc, out, _err = _run(capsys, str(src_file), "--format", "dot")
    assert rc == 0
    dot = shutil.which("dot")
    if dot is None:
        pytest.skip("graphviz `dot` is not installed")
    proc = subprocess.run([dot, "-Tsvg"], input=out, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "<svg" in proc.stdout and "Box.items" in proc.stdout


def test_errors_are_one_line_exit_2(src_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(capsys, f"{src_file}:nope")
    assert rc == 2 and out == "" and err.count("\n") == 1 and "nope" in err
    rc, out, err = _run(capsys, str(tmp_path / "missing.py"))
    assert rc == 2 and out == "" and err.count("\n") == 1 and "missing.py" in err
    bad = tmp_path / "bad.py"
    bad.write_text("def f(:\n    pass\n", encoding="utf-8")
    rc, out, err = _run(capsys, str(bad))
    assert rc == 2 and out == "" and err.count("\n") == 1 and "bad.py:1" in err
