"""Compile, in one process before the compatibility subset starts, the numba kernels its tests reach (tools/compat.py).

The other interpreters' venvs have no ahead-of-time builder module and start with a cold numba
cache, so the subset's first tests used to compile the kernels inside their own deadlines: the
first ``paths --json`` (the reader's SEQUITUR with look-ahead, ~100 CPU-s on 3.12) ran under
``cli_in_process``'s 1200 s and at load 20-30 exceeded it, which ends the whole pytest process
with status 1 and no summary (docs/design.md, "Test suite time, wave 24").  Here the same work
runs with no deadline and fills numba's on-disk cache (keyed by interpreter); the tests then load
the kernels.  Nothing is checked here: every step is one the subset's tests check.  A step that
fails prints one line and the rest go on (the tests then report the failure themselves).

    .venv-3.12/bin/python tools/compat_warm.py
"""

from __future__ import annotations

import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Callable

TESTS = Path(__file__).resolve().parent.parent / "tests"


def _loops(root: Path) -> None:
    """Every trace mode recorded and decoded, counted and regenerated (``test_loop_sites``)."""
    from differential import check_all_modes
    from test_loop_sites import PROGRAM

    check_all_modes(textwrap.dedent(PROGRAM))


def _except_star(root: Path) -> None:
    """``test_except_star_raising_everywhere[0]``'s reads with no deadline: regeneration (kernel
    and naive twin) and ``paths --json`` of a ``--no-wpp`` path recording."""
    import test_path_raising as T
    from regenutil import compare
    from test_path_mode import truncated_truth
    from wtutil import cli_in_process

    rec = T._record_seeds(root, [0], star=True)[0]
    compare(rec["blocks"], rec["path"], exact=True, twin=True)
    truncated_truth(rec["blocks"], rec["path"])
    cli_in_process("paths", "--json", "--limit", "0", str(rec["path"]), timeout=24 * 3600.0)


def _full(root: Path) -> None:
    """Full mode recorded, counted and its values read (``test_own_tracer_full``)."""
    import subprocess

    from test_own_tracer_full import PROG
    from wtutil import ENV, cli_in_process, run_recorded

    script = root / "full.py"
    script.write_text(PROG)
    run_recorded(script, root / "full.wt", "settrace", mode="full", timeout=24 * 3600.0)
    cli_in_process("counts", "--format", "json", str(root / "full.wt"), timeout=24 * 3600.0)
    subprocess.run([sys.executable, "-m", "wholetrace.cli", "values", "--json", str(root / "full.wt"),
                    f"{script.name}:14"], capture_output=True, env=ENV, cwd=root)


def _wpp(root: Path) -> None:
    """A ``record --wpp`` (the builder process JIT-compiles its kernels here) with and without
    look-ahead (``test_cli_record_fast``, the subset's ``--wpp`` recordings)."""
    from wtutil import run_recorded

    script = root / "wpp.py"
    script.write_text("def f(n):\n    t = 0\n    for i in range(n):\n        t += i % 3\n    return t\nprint(f(50))\n")
    for options in (("--wpp",), ("--wpp", "--keep-raw", "--no-lookahead")):
        run_recorded(script, root / "wpp.wt", mode="path", options=options, timeout=24 * 3600.0)


STEPS: tuple[tuple[str, Callable[[Path], None]], ...] = (
    ("every mode", _loops), ("except* paths", _except_star), ("full", _full), ("wpp builder", _wpp))


def main() -> int:
    import os

    sys.path[:0] = [str(TESTS), str(TESTS / "regen"), str(TESTS / "compat"), str(TESTS / "runtime")]
    # the instrumented-code cache the tests use (tests/conftest.py)
    os.environ.setdefault("WHOLETRACE_CACHE_DIR", os.path.join(tempfile.gettempdir(), "wholetrace-test-cache"))
    for name, step in STEPS:
        t0 = time.perf_counter()
        try:
            with tempfile.TemporaryDirectory(prefix="wt-warm-") as d:
                step(Path(d))
        except Exception as exc:  # noqa: BLE001 - reported, and the tests check the same work
            print(f"compat: warm-up step {name!r} failed ({type(exc).__name__}: {str(exc)[:200]}); "
                  f"the tests will compile what it did not", flush=True)
        print(f"compat: warm-up {name}: {time.perf_counter() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
