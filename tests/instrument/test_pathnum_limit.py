"""The path limit at its bound: a function with exactly ``MAX_PATHS`` (2^29 - 1) acyclic paths is
numbered as it is; one with 2^29 gets extra cuts (``limit_paths``).  Only ``number_cfg``: it counts
paths, it never lists them, so this is fast."""

from __future__ import annotations

from wholetrace.events import LEAVE_PATH
from wholetrace.instrument.cfg import build_module
from wholetrace.instrument.pathnum import MAX_PATHS, number_cfg


def _diamonds(k: int, indent: str) -> str:
    """``k`` sequential if/else diamonds: 2^k paths, no calls (nothing the policy cuts)."""
    return "".join(f"{indent}if (x >> {i}) & 1:\n{indent}    y += {i + 1}\n{indent}else:\n{indent}    y -= {i + 2}\n"
                   for i in range(k))


def _source() -> str:
    # f_max: branch j of an if/elif chain holds 28 - j diamonds (2^(28-j) paths), j = 0..27, and
    # the chain's fall-through one more: 2^28 + 2^27 + ... + 2 + 1 = 2^29 - 1 paths.
    arms = "".join(f"    {'if' if j == 0 else 'elif'} x % 31 == {j}:\n{_diamonds(28 - j, ' ' * 8)}" for j in range(28))
    f_max = f"def f_max(x):\n    y = 0\n{arms}    else:\n        y = -y\n    return y\n"
    # f_over: 28 diamonds on each side of one if/else: 2 * 2^28 = 2^29 paths.
    f_over = (f"def f_over(x):\n    y = 0\n    if x % 31 == 0:\n{_diamonds(28, ' ' * 8)}"
              f"    else:\n{_diamonds(28, ' ' * 8)}    return y\n")
    return f_max + "\n" + f_over


def test_exactly_max_paths_is_numbered_uncut_and_one_more_is_cut() -> None:
    assert MAX_PATHS == LEAVE_PATH - 1 == (1 << 29) - 1
    cfgs = {c.qualname: c for c in build_module(_source(), "bigpaths.py")}
    at = number_cfg(cfgs["f_max"])
    assert not at.fallback and not at.overflow_cuts
    assert at.num_paths == MAX_PATHS          # the source's count, by construction
    over = number_cfg(cfgs["f_over"])
    assert not over.fallback and over.overflow_cuts
    assert 0 < over.num_paths <= MAX_PATHS
    # without the limit, f_over has one path too many: the cuts above are the limit's
    whole = number_cfg(cfgs["f_over"], limit=1 << 40)
    assert not whole.overflow_cuts and whole.num_paths == 1 << 29
