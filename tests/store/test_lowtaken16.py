"""``fdguard.LowTaken``: what opens inside it gets a number >= ``HIGH_FD``; every number it took is given back (wave 16).

Oracle: the process's own descriptor listing (/proc/self/fd) before and after, in a fresh
interpreter (its descriptor table is 0-2 and what the test hands it).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from wtutil import ENV

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/fd")

PROGRAM = r'''
import os, resource, sys
from wholetrace.store import fdguard
how = sys.argv[1]
def fds():
    return sorted(int(n) for n in os.listdir("/proc/self/fd"))
if how == "rlimit":
    resource.setrlimit(resource.RLIMIT_NOFILE, (200, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
if how.startswith("tight"):               # a real limit close to HIGH_FD, many descriptors open first
    limit, first = map(int, how.split(":")[1:])
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    extra = [os.open(os.devnull, os.O_RDONLY) for _ in range(first)]
mine = [os.open(os.devnull, os.O_RDONLY) for _ in range(3)]
os.close(mine[1])                        # a hole among the process's own descriptors
before = fds()
if how == "fail":                        # out of descriptors after 40 copies
    real, calls = os.dup, [0]
    def dup(fd):
        calls[0] += 1
        if calls[0] > 40:
            raise OSError(24, "Too many open files")
        return real(fd)
    os.dup = dup
with fdguard.LowTaken() as taken:
    inside = os.open(os.devnull, os.O_RDONLY)
    n = len(taken.held)
os.close(inside)
print(inside, n, fds() == before, os.open(os.devnull, os.O_RDONLY) == mine[1])
'''


def _run(how: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", PROGRAM, how], capture_output=True, text=True, env=ENV,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_the_low_numbers_are_taken_then_given_back() -> None:
    inside, n, same, hole = _run("plain")
    assert int(inside) == 256 and same == "True" and hole == "True"     # the lowest free number >= 256
    assert int(n) == 256 - 3 - 2                   # every free number below 256 (0-2, 3 and 5 were taken)


def test_out_of_descriptors_gives_back_what_was_taken() -> None:
    inside, n, same, hole = _run("fail")
    assert same == "True" and hole == "True"
    assert int(inside) == 4 and int(n) == 0                 # all given back at once: the hole at 4, as without


@pytest.mark.parametrize("limit,first", [(300, 50), (272, 30), (300, 40)])
def test_a_tight_descriptor_limit_gives_every_copy_back(limit: int, first: int) -> None:
    # review16c H3: the copies filled the limit, the fallback's listing found no free number and
    # every copy stayed open (244 at 300/50); now w is closed first and every copy given back at once
    inside, n, same, hole = _run(f"tight:{limit}:{first}")
    assert same == "True" and hole == "True"
    if first + 3 + 2 + 251 < limit:                         # room for every copy: taken as usual
        assert int(inside) >= 256 and int(n) > 0
    else:                                                   # none held: the low numbers, as below the limit
        assert int(inside) < 256 and int(n) == 0


def test_a_low_descriptor_limit_takes_nothing() -> None:
    inside, n, same, hole = _run("rlimit")
    assert (int(n), same, hole) == (0, "True", "True") and int(inside) == 4   # the hole at 4: as without
