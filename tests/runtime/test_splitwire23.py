"""The split server's message heads (``runtime/splitwire.py``, wave 23): what ``marshal`` carried, back as it was, and no audit event."""

from __future__ import annotations

import marshal
import subprocess
import sys

import pytest

from wholetrace.runtime import splitwire

HEADS = [
    None, True, False, 0, -1, 127, 128, -128, -129, 2 ** 63 - 1, -2 ** 63, 2 ** 70, "", "wet.val", "é\udc80",
    b"", b"\x00\xff" * 300, bytearray(b"ab"),
    (("split", None, 5, 1 << 33, None, None), [1, 4, 5], [80, 0, 16]),
    ("ok", None, -(3 << 40) - 7, 12, 40, [("wet.pos", "|u1", (8, 40), b"\x28\xb5\x2f\xfd" * 9), ("wet.tag", "|u1", (40,), b"")]),
    ("err", "a probe recorded a value outside int32"), ("/tmp/x/.split-1-ab.req", "/tmp/x/.split-1-ab.rep"), [], (),
]


@pytest.mark.parametrize("x", HEADS)
def test_round_trip_as_marshal(x):
    got = splitwire.loads(splitwire.dumps(x))
    want = marshal.loads(marshal.dumps(x)) if "\udc80" not in str(x) else x
    assert got == want and repr(got) == repr(want).replace("bytearray(b'ab')", "b'ab'")


def test_other_types_and_damaged_heads_are_value_errors():
    for x in (1.5, {1: 2}, object(), 1 << 3000):
        with pytest.raises(ValueError):
            splitwire.dumps(x)
    good = splitwire.dumps(("ok", [1, "a"]))
    for bad in (good[:-1], good + b"N", b"?", b""):
        with pytest.raises(ValueError):
            splitwire.loads(bad)


def test_no_audit_event():
    # in a process of its own: an audit hook cannot be removed
    code = ("import sys; from wholetrace.runtime import splitwire; seen = []; "
            "sys.addaudithook(lambda e, a: seen.append(e)); "
            "splitwire.loads(splitwire.dumps(('ok', None, -5, [('n', '<i8', (2, 3), b'xy')], 'e'))); print(seen)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (out.returncode, out.stdout) == (0, "[]\n"), out.stderr
