"""Generated programs in every recording mode (``tests/differential.py``): same behaviour as the
plain run, well-formed `blocks` traces, count modes equal to `blocks`, witness and branches
regenerating the `blocks` trace (activation form) and its counts.

The time goes to structured programs (``genprogs.structured_programs``, and
``implicit_programs``: implicit calls into code that raises, issue 9); hypothesmith keeps a
few examples for odd syntax.  The slow test draws at least 500 structured programs (half of
them with implicit calls) with a new seed every run; ``WHOLETRACE_TEST_SEED=N`` replays a run
(the seed is printed, and added to the failure).
"""

from __future__ import annotations

import ast
import os
import random
from collections import Counter
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, Phase, assume, given, seed, settings
from hypothesis import strategies as st

from differential import check_all_modes
from genprogs import implicit_programs, programs, structured_programs

SETTINGS = dict(deadline=None, database=None, suppress_health_check=list(HealthCheck))
#: `make test`'s compatibility runs on other interpreters (tools/compat.py) draw a quarter as many
#: and do not shrink a failure (it can take minutes; the failing program is reported as drawn).
SHARE = 4 if os.environ.get("WHOLETRACE_COMPAT") else 1
if SHARE > 1:
    SETTINGS["phases"] = (Phase.explicit, Phase.reuse, Phase.generate)


def run_many(strategy: st.SearchStrategy[str], n: int, at: int, check: Callable[[str], bool] = check_all_modes) -> Counter:
    """``check`` ``n`` programs drawn from ``strategy`` with seed ``at``; fail if more than a
    tenth of them time out plain (they would check nothing)."""
    ran: Counter = Counter()

    @seed(at)
    @settings(max_examples=n, **SETTINGS)
    @given(source=strategy)
    def each(source: str) -> None:
        ran[check(source)] += 1

    try:
        each()
    except BaseException as exc:
        exc.add_note(f"hypothesis seed {at}")
        raise
    assert ran[False] <= max(2, ran[True] // 10), f"{ran[False]} of {sum(ran.values())} programs timed out"
    return ran


@pytest.mark.parametrize("part", range(2))     # two halves, so the xdist workers share them
def test_structured_programs_in_every_mode(part: int) -> None:
    run_many(structured_programs(), 12 // SHARE, 20261126 + part)


@pytest.mark.parametrize("part", range(2))
def test_implicit_call_programs_in_every_mode(part: int) -> None:
    run_many(implicit_programs(), 8 // SHARE, 9052026 + part)


def test_hypothesmith_programs_odd_syntax() -> None:
    """A few hypothesmith programs with statements (odd syntax; little control flow)."""
    def nonempty(source: str) -> bool:
        assume(ast.parse(source).body)
        return check_all_modes(source)

    run_many(programs("node"), 6 // SHARE, 11262026, nonempty)


SLOW_SEED = int(os.environ.get("WHOLETRACE_TEST_SEED") or random.SystemRandom().randrange(1 << 31))


@pytest.mark.slow
@pytest.mark.parametrize("part", range(4))    # four parts of 130, spread over the xdist workers
def test_many_structured_programs_new_seed_each_run(part: int) -> None:
    at = SLOW_SEED + part
    print(f"hypothesis seed {at} (WHOLETRACE_TEST_SEED={SLOW_SEED} replays this run)")
    ran = run_many(st.booleans().flatmap(lambda implicit: structured_programs(implicit=implicit)), 130, at)
    assert ran[True] >= 125
