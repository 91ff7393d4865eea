"""Free-threaded interpreters: recording without the GIL is refused in one line, never lossy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from wholetrace.errors import UsageError
from wholetrace.runtime import gil
from wtutil import ENV


def test_gil_detection_on_this_interpreter() -> None:
    assert gil.gil_enabled() == getattr(sys, "_is_gil_enabled", lambda: True)()
    if not gil.free_threaded_build():
        assert gil.gil_enabled()            # a default build always has the GIL
        gil.require_gil()


def test_recording_without_the_gil_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # what a 3.13t interpreter started without PYTHON_GIL=1 reports (sys._is_gil_enabled() False)
    monkeypatch.setattr(sys, "_is_gil_enabled", lambda: False, raising=False)
    with pytest.raises(UsageError, match="PYTHON_GIL=1"):
        gil.require_gil()
    from wholetrace.runtime.runner import Target, record
    from wholetrace.store import RecordingWriter

    script = tmp_path / "p.py"
    script.write_text("print('hi')\n")
    with pytest.raises(UsageError) as err:
        record(Target(script=str(script), module=None, args=[]), RecordingWriter(tmp_path / "p.wt"), mode="count")
    assert "\n" not in str(err.value) and "free-threaded" in str(err.value)


def test_cli_says_it_in_one_line(tmp_path: Path) -> None:
    script = tmp_path / "p.py"
    script.write_text("print('hi')\n")
    shim = ("import sys; sys._is_gil_enabled = lambda: False; from wholetrace.cli import main; "
            "sys.exit(main(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-c", shim, "record", "-o", str(tmp_path / "p.wt"), str(script)],
                          capture_output=True, text=True, env=ENV)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "PYTHON_GIL=1" in proc.stderr


def test_instrumented_code_cache_is_per_interpreter(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # templates are bytecode: another version (or a free-threaded build, whose sys.version
    # says so) must never load this one's
    from wholetrace.instrument.cache import InstrumentCache

    cache = InstrumentCache(tmp_path)
    here = cache.key("x = 1\n", "m.py", "blocks", "")
    monkeypatch.setattr(sys, "version", "3.13.0 experimental free-threading build (main, Oct 16 2024)")
    assert cache.key("x = 1\n", "m.py", "blocks", "") != here
