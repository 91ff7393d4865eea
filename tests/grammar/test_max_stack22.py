"""SEQUITUR's ``max_stack`` statistic (wave 22: the deepest point kept in a local of ``_run_check``,
stored once a cascade, no longer at every push): against the work stack's deepest write, seen through
an array that records the highest index written, and the deepest point rule churn's shortcut
(``_extend``) stands for; pure-Python twin, so every push is a visible array store."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import pytest

from test_rule_churn17 import churny
from wholetrace.grammar.builder import GrammarBuilder
from wholetrace.kernels import sequitur as K


class Watched(np.ndarray):
    """An int64 work stack that remembers the highest index written."""

    deepest = -1

    def __setitem__(self, i: Any, v: Any) -> None:
        self.deepest = max(self.deepest, int(i))
        super().__setitem__(i, v)


def inputs() -> list[list[int]]:
    rng = np.random.default_rng(22)
    return ([churny(200 + s, 400, 2 + s % 3) for s in range(4)]
            + [rng.integers(0, 3, 300).tolist(), [0, 1, 0, 1, 2, 0, 1, 2, 3] * 20])


@pytest.mark.nojit
@pytest.mark.skipif(not numba.config.DISABLE_JIT, reason="the pure-Python twin only (make test's nojit run): "
                    "compiled kernels write the stack without Python's item assignment")
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")   # the hash wraps on purpose
@pytest.mark.parametrize("lookahead", [False, True])
def test_max_stack_is_the_deepest_push(lookahead: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    extended: list[int] = []
    original = K._extend

    def extend(*args: Any) -> Any:
        done = original(*args)
        if done:
            extended.append(int(args[7]) + 9)   # the reference's deepest point in the steps it stands for
        return done

    monkeypatch.setattr(K, "_extend", extend)
    shortcuts = 0
    for symbols in inputs():
        extended.clear()
        b = GrammarBuilder(lookahead=lookahead)
        st = list(b._st)   # type: ignore[arg-type]
        st[5] = np.empty(len(st[5]), np.int64).view(Watched)
        b._st = tuple(st)
        for s in range(0, len(symbols), 37):
            b.feed(np.array(symbols[s:s + 37], np.int32))
        want = max([st[5].deepest + 1] + extended)
        assert b.stats()["max_stack"] * 3 == want
        shortcuts += len(extended)
    assert shortcuts > 0   # the shortcut's own deepest point was exercised
