"""The command line: bad recordings give a one-line error and exit status 2; info/trace/cfg outputs."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from wholetrace.cli import main
from wtutil import ENV, run_recorded


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("cli")
    script = d / "prog.py"
    script.write_text("def f(n):\n    return [i for i in range(n)]\n\nfor k in range(3):\n    f(k)\nprint('ok')\n")
    out = d / "prog.wt"
    proc = run_recorded(script, out, quiet=False)
    assert proc.returncode == 0 and proc.stdout == "ok\n"
    line = proc.stderr.strip()
    assert line.startswith("wholetrace: recorded ") and str(out) in line and "\n" not in line
    return out


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wholetrace.cli", *args], capture_output=True, text=True, env=ENV)


def bad_files(tmp: Path, good: Path) -> dict[str, Path]:
    files = {}
    files["empty"] = tmp / "empty.wt"
    files["empty"].write_bytes(b"")
    files["random"] = tmp / "random.wt"
    files["random"].write_bytes(os.urandom(5000))
    data = good.read_bytes()
    files["truncated"] = tmp / "truncated.wt"
    files["truncated"].write_bytes(data[: len(data) // 2])
    files["newer"] = tmp / "newer.wt"
    files["newer"].write_bytes(data)
    con = sqlite3.connect(files["newer"])
    con.execute("PRAGMA user_version = 99")
    con.commit()
    con.close()
    files["missing"] = tmp / "missing.wt"
    return files


@pytest.mark.parametrize("kind", ["empty", "random", "truncated", "newer", "missing"])
@pytest.mark.parametrize("command", ["info", "trace", "counts"])
def test_bad_recordings_fail_in_one_line(kind: str, command: str, recording: Path, tmp_path: Path) -> None:
    path = bad_files(tmp_path, recording)[kind]
    proc = cli(command, str(path))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("wholetrace: error: ")
    assert "Traceback" not in proc.stderr
    if kind == "newer":
        assert "newer" in proc.stderr


def test_info_json_and_text(recording: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(recording), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["meta"]["ended"] == "exit" and d["meta"]["exit_code"] == 0
    assert {f["qualname"] for f in d["functions"]} == {"<module>", "f"}
    assert d["events"] == sum(s["events"] for s in d["streams"]) > 0
    assert main(["info", str(recording)]) == 0
    text = capsys.readouterr().out
    assert "ended:     exit" in text and "functions: 2" in text


def test_trace_fbe_format(recording: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", str(recording), "--format", "fbe"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "T 0"
    assert lines[1].startswith("F <module>@") and lines[1].endswith("prog.py:1")
    assert lines[-1] == "E"
    fs = [l for l in lines if l.startswith("F ")]
    assert len(fs) == 4 and all(l.startswith("F f@") for l in fs[1:])   # module + three calls of f
    assert lines.count("E") == 4
    assert all(l.split()[0] in "TFBEX" for l in lines)
    assert main(["trace", str(recording), "--limit", "3"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 4        # T line + 3 events
    assert main(["trace", str(recording), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["streams"][0]["events"][0][0] == "F"


def test_record_usage_errors(tmp_path: Path) -> None:
    proc = cli("record", str(tmp_path / "nope.py"))
    assert proc.returncode == 2 and proc.stderr.startswith("wholetrace: error:") and proc.stderr.count("\n") == 1
    proc = cli("record")
    assert proc.returncode == 2
    proc = cli("record", "--mode", "bogus", str(tmp_path / "nope.py"))
    assert proc.returncode == 2


def test_cfg_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "m.py"
    src.write_text("def g(x):\n    if x:\n        return 1\n    return 2\n")
    assert main(["cfg", f"{src}:g"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("g  (function") and "B2 -> B3:true, B4:false" in out
    assert main(["cfg", str(src), "--format", "dot"]) == 0
    assert capsys.readouterr().out.startswith("digraph")
    assert main(["cfg", f"{src}:nosuch"]) == 2
