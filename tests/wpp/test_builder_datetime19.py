"""The builder's numpy, wave 19: ``_multiarray_umath``'s init gets ``datetime``'s C API capsule from a deferring stand-in, not from ``datetime.py``."""

from __future__ import annotations

import subprocess
import sys

from wtutil import ENV

#: numpy's datetime conversions, each printed with the type of its result
_USES = ("import datetime, _datetime\n"
         "d = datetime.datetime(2020, 1, 2, 3, 4, 5, 6)\n"
         "a = np.array([d, datetime.datetime(1969, 12, 31, 23, 59)], dtype='M8[us]')\n"
         "vals = [a[0].item(), a[1].item(), np.datetime64('2020-01-02').item(),\n"
         "        np.timedelta64(90061, 's').item(), np.array([datetime.timedelta(days=2)], dtype='m8[s]')[0].item(),\n"
         "        (a[0] - a[1]).item(), np.datetime64(datetime.date(1999, 12, 31), 'D').item()]\n"
         "print([(repr(v), type(v).__module__, type(v).__name__) for v in vals])\n"
         "print(datetime.datetime_CAPI is _datetime.datetime_CAPI, datetime.__file__.endswith('datetime.py'))\n")


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-W", "error", "-c", code], env=ENV,
                          capture_output=True, text=True, check=True).stdout.strip()


def test_the_c_tier_does_not_import_datetime_and_numpys_conversions_are_a_plain_processs() -> None:
    """After the C tier: no ``datetime`` (nor the stand-in) in ``sys.modules``; then the real
    ``datetime`` imports as usual (its capsule is ``_datetime``'s, the one numpy was given) and
    numpy's datetime64/timedelta64 conversions both ways give what a plain ``import numpy``
    process gives (the oracle), in the C tier and after the upgrade to the lean core."""
    lean = _run("import sys\nimport wholetrace.wpp.startup as s\nnp = s.lean_numpy()\n"
                "print(s._tier, 'datetime' in sys.modules)\n" + _USES +
                "np.full\nprint(s._tier, s.numpy_state())\n" + _USES)
    plain = _run("import numpy as np\n" + _USES)
    lines = lean.splitlines()
    assert lines[0] == "c False"
    assert lines[1:3] == plain.splitlines()
    assert lines[3] == "python lean"
    assert lines[4:] == plain.splitlines()
    assert plain.splitlines()[1] == "True True"


def test_an_imported_datetime_is_left_alone() -> None:
    """``datetime`` already imported (a builder started with ``site``, say): the C tier uses it,
    no stand-in is made."""
    out = _run("import sys, datetime\nimport wholetrace.wpp.startup as s\n"
               "print(s._datetime_stand_in())\nnp = s.lean_numpy()\n"
               "print(sys.modules['datetime'] is datetime, s._tier)\n"
               "print(np.datetime64('2020-01-02').item() == datetime.date(2020, 1, 2))")
    assert out.splitlines() == ["None", "True c", "True"]
