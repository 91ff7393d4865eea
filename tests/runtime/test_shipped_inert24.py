"""The inert stand-ins of shipped code agree with both stream fetches: a function's owner check and a body's per-probe ``get`` (wave 24, thread24 merged with fixpickle24)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from wtutil import ENV

# In a process that does not know the recording (a token no recording of it registered),
# what each constant resolves to must lead every fetch to the one sink, and set nothing:
# the function prologue ``wt.c, wt.i = owned_get(unowned); wt.a = wt.i if wt.c._is_owned() else new()``,
# module/class bodies' ``here()`` then ``get(None)(n)`` at each probe, generators' ``get()``,
# the bodies' exception helper; and the kinds pickle again by reference (no growing payload).
CHECK = '''
    import pickle
    from wholetrace.runtime import shipped
    r = shipped.resolve
    owned, unowned, streams, current = r(12345, "owned"), r(12345, "unowned"), r(12345, "streams"), r(12345, "current")
    new = streams.new
    sink = new()
    c, i = owned.get((unowned, None))                      # the function prologue
    assert (i if c._is_owned() else new()) is sink
    assert streams.here() is sink                          # a body's ENTER
    assert current.get(None) is sink and current.get() is sink   # a body's probes, a generator's loop
    assert streams.owned is owned and streams.unowned[0] is unowned
    assert owned.get() is None and not unowned._is_owned()
    helpers = r(12345, "helpers")
    assert helpers.current() is sink
    for kind in ("owned", "unowned", "streams", "helpers", "edges", "held", "driven", "root"):
        obj = r(12345, kind)
        assert r(12345, kind) is obj, kind                  # one stand-in of each kind
        if kind not in ("owned", "root"):                   # (context variables: the pickler's dispatch entry)
            assert pickle.loads(pickle.dumps(obj)) is obj, kind
    print("ok")
'''


def test_inert_stand_ins_lead_every_fetch_to_the_sink() -> None:
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(CHECK)], capture_output=True, text=True, env=ENV,
                       timeout=300)
    assert (r.returncode, r.stdout, r.stderr) == (0, "ok\n", "")
