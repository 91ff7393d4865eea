"""The end of a ``--wpp`` recording (wave 19): the result pipe widened by the builder for a large result, results larger
than it arrive whole, and the tail's moments (meta ``wpp.timeline``) in the order they must happen."""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import sys
from array import array
from pathlib import Path

import numpy as np

from wholetrace.store import Recording, RecordingWriter
from wholetrace.wpp.online import OnlineWpp
from wholetrace.wpp.stored import StoredWpp
from wtutil import ENV

F_GETPIPE_SZ = getattr(fcntl, "F_GETPIPE_SZ", 1032)


def test_the_builder_widens_its_result_pipe_only_for_a_large_result() -> None:
    """A result above the default 64 KiB (go at size small: 82 KB) was written in pieces, each
    waiting for the recorder to read the last one, on the recording's tail; a small one keeps the
    default pipe (every widened pipe counts against the user's pipe pages: review19b)."""
    from wholetrace.wpp.builder import widen_result_pipe
    from wholetrace.wpp.spawn import BuilderProcess

    r, w = os.pipe()
    try:
        default = fcntl.fcntl(w, F_GETPIPE_SZ)
        widen_result_pipe(w, default)
        assert fcntl.fcntl(w, F_GETPIPE_SZ) == default
        widen_result_pipe(w, default + 1)
        assert fcntl.fcntl(w, F_GETPIPE_SZ) == 1 << 20 > default
    finally:
        os.close(r)
        os.close(w)
    p = BuilderProcess("path", queue_events=1000)   # the recorder leaves the result pipe as it is
    p.reap()
    try:
        assert fcntl.fcntl(p.out.fileno(), F_GETPIPE_SZ) == default
    finally:
        os.write(p.fd, struct.pack("<ii", -1, 0))  # the end frame
        os.close(p.fd)
        p.out.read()
        p.out.close()
        p.stderr.close()


def test_a_result_larger_than_the_pipe_arrives_whole(tmp_path: Path) -> None:
    """~80 K distinct terminals: the symbol table alone is ~1.9 MB, more than the widened pipe."""
    rng = np.random.default_rng(19)
    events = (rng.permutation(80_000).astype(np.int64) + 10).tolist() * 2
    w = RecordingWriter(tmp_path / "big.wt")
    w.add_stream(0, kind="thread", name="t0")
    ow = OnlineWpp(w, "blocks", keep_raw=False)
    for i in range(0, len(events), 20_000):
        ow.append_events(0, array("i", events[i:i + 20_000]))
    ow.close(ended="exit", exit_code=0)
    with Recording(tmp_path / "big.wt") as rec:
        wpp = StoredWpp(rec)
        assert wpp.events(0).tolist() == events
        assert len(wpp.terminals.kind) >= 80_000


def test_the_tail_timeline_is_in_order(tmp_path: Path) -> None:
    """Meta ``wpp.timeline`` (seconds since the spawn, one clock): the recorder's stop, its end frame,
    the builder's last build, grammars finished and encoded, the result sent, read and stored."""
    script = tmp_path / "p.py"
    script.write_text("def f(n):\n    return n if n < 2 else f(n - 1) + f(n - 2)\nprint(f(20))\n")
    out = tmp_path / "p.wt"
    proc = subprocess.run([sys.executable, "-m", "wholetrace.cli", "record", "--mode", "path", "--wpp", "-q",
                           "-o", str(out), str(script)], capture_output=True, text=True, cwd=tmp_path, env=ENV,
                          timeout=600, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == "6765\n"
    with Recording(out) as rec:
        tl = rec.meta["wpp"]["timeline"]
        order = ["stop", "close", "end", "built", "finished", "encoded", "sent", "result", "stored"]
        assert [tl[k] for k in order] == sorted(tl[k] for k in order), tl
        assert 0 < tl["first"] <= tl["end"]
