"""The decoder hands its kernels one events type whatever the chunks' origin (wave 24).

Chunks read from a recording are read-only buffers; joined or regenerated chunks are writable
arrays. numba types the two apart, so ``decode``/``count`` (and ``lookahead.groups``) were
compiled twice on a cold cache (the compatibility subsets compiled both; ``decode``'s own
compile is 7.2 CPU-s on 3.12). The oracle: every signature the kernels' dispatchers hold after decoding both kinds of
chunks, and the rows and counts equal whichever kind fed them.
"""

from __future__ import annotations

from pathlib import Path

import numba
import numpy as np
import pytest

from wholetrace.kernels import decode as K
from wholetrace.kernels import lookahead as LK
from wholetrace.store import Recording
from wholetrace.trace.counts import Tally
from wholetrace.trace.lookahead import groups_ended_by_exceptions
from wholetrace.trace.session import Trace
from wtutil import run_recorded

pytestmark = pytest.mark.skipif(numba.config.DISABLE_JIT, reason="numba's dispatchers: the JIT only")

PROGRAM = """\
def f(n):
    t = 0
    for i in range(n):
        try:
            if i % 3 == 0:
                raise KeyError(i)
            t += i
        except KeyError:
            t -= 1
    return t
print(f(20))
"""


def _writable(chunks: list[np.ndarray]) -> list[np.ndarray]:
    out = [np.array(c, dtype=np.int32) for c in chunks]
    assert all(c.flags.writeable for c in out)
    return out


@pytest.mark.parametrize("mode", ["blocks", "witness"])
def test_read_only_and_writable_chunks_compile_one_signature(tmp_path: Path, mode: str) -> None:
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    wt = tmp_path / f"{mode}.wt"
    assert run_recorded(script, wt, mode=mode).returncode == 0
    with Recording(wt) as rec:
        sid = next(s.sid for s in rec.streams() if s.n_events)
        stored = list(rec.iter_chunks(sid))
        assert not any(c.flags.writeable for c in stored)      # the read-only kind, as stored
        trace = Trace(rec)
        rows = {}
        counts = {}
        for kind, chunks in (("stored", stored), ("writable", _writable(stored))):
            rows[kind] = [r.data.tolist() for r in trace.decoder(sid).decode(chunks, copy=True)]
            trace.tables.reset()
            tally = Tally(trace.tables)
            trace.decoder(sid).count(chunks, tally)
            counts[kind] = {name: np.array(getattr(tally, name)).tolist() for name in ("block", "edge", "enters")}
            groups_ended_by_exceptions(chunks)
    assert rows["stored"] == rows["writable"] and rows["stored"]
    assert counts["stored"] == counts["writable"]
    for kernel in (K.decode, K.count, LK.groups):
        events_types = {sig[0] for sig in kernel.signatures}
        assert events_types and all(not t.mutable for t in events_types), (kernel.__name__, events_types)
