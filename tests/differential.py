"""Differential checks of one generated program (``genprogs``) in every recording mode.

``check_all_modes(source)`` runs the program plain once, then records it in each mode and
checks, against independent or ground-truth oracles:

* behaviour: exit status, stdout (with the driver's exception message and traceback lines)
  and the last stderr line equal the plain run's, and nothing was left uninstrumented;
* `blocks`: every stream is well formed against the CFGs (the naive twin
  ``naive_decode.check_stream``, and the decoding kernel's own checks, all activations closed);
* `count`, `count-naive`: block, statement, call and edge counts equal the `blocks` counts;
* `witness`, `branches`: the streams the decoding kernel regenerates equal the `blocks` streams
  in activation form (and event for event unless an implicit call explains it), and equal what
  the pure-Python regenerator (``regen.driver``) gives; so do their counts.

It returns False, checking nothing, when the plain run timed out (the caller counts those).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from genprogs import run_plain, write_program
from naive_decode import check_stream
from regenutil import KINDS, compare
from wholetrace.instrument.cfg import CFG
from wholetrace.store import Recording
from wholetrace.trace.session import Trace
from wtutil import ENV, assert_same_counts, profiles

ALL_MODES = ("blocks", "count", "count-naive") + KINDS


def record(driver: Path, td: str, mode: str) -> tuple[tuple[int, str, str], Path]:
    """Record the driver in ``mode``: ((exit status, stdout, last stderr line), the .wt path)."""
    wt = Path(td) / f"{mode}.wt"
    proc = subprocess.run([sys.executable, "-m", "wholetrace.cli", "record", "-q", "--mode", mode, "-o", str(wt),
                           str(driver)], capture_output=True, cwd=td, env=ENV, timeout=120, stdin=subprocess.DEVNULL)
    err = proc.stderr.decode("utf-8", "replace")
    assert "left uninstrumented" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    return (proc.returncode, proc.stdout.decode("utf-8", "replace"), lines[-1] if lines else ""), wt


def check_all_modes(source: str, modes: tuple[str, ...] = ALL_MODES) -> bool:
    """Run every check of the module docstring on ``source``; False if the plain run timed out."""
    assert modes[0] == "blocks"
    with tempfile.TemporaryDirectory(prefix="wt-diff-") as td:
        plain = run_plain(source, td)
        if plain[0] == -1:
            return False
        driver = write_program(source, td)
        paths: dict[str, Path] = {}
        for mode in modes:
            got, paths[mode] = record(driver, td, mode)
            assert got == plain, (mode, got, plain, source)
        with Recording(paths["blocks"]) as rec:
            cfgs = {f.fid: CFG.from_json(f.cfg) for f in rec.functions()}
            assert any(c.qualname == "<module>" and f.file.endswith("prog.py")
                       for f, c in ((f, cfgs[f.fid]) for f in rec.functions()))
            for st in rec.streams():
                problems = check_stream(rec.iter_chunks(st.sid), cfgs)
                assert not problems, (problems, source)
                decoder = Trace(rec).decoder(st.sid)      # the kernel's own checks
                for _rows in decoder.decode(rec.iter_chunks(st.sid)):
                    pass
                assert decoder.depth == 0, source
        want = profiles(paths["blocks"])
        for mode in modes[1:]:
            if mode in KINDS:
                compare(paths["blocks"], paths[mode], exact=False, twin=True)
            assert_same_counts(want, profiles(paths[mode]), (mode, source), edges=mode == "count")
    return True
