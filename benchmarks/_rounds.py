"""Interleaved timing rounds: seeded orders, robust figures (paired, least, bootstrap) and the verdict, progress."""

from __future__ import annotations

import math
import random
import statistics
import sys
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

from _report import geomean  # the caller puts benchmarks/ on sys.path (pathmode.py does, before this import)

#: the orders :func:`order` knows
ORDERS = ("adjacent", "shuffle", "rotate", "fixed")


def order(items: Sequence[str], how: str, seed: int, *key: object,
          around: tuple[str, tuple[str, str]] | None = None) -> list[str]:
    """``items`` in the order of one round: ``fixed`` as given; ``rotate`` shifted by the round
    number (``key[0]``); ``shuffle`` a permutation drawn from ``random.Random`` seeded by
    ``seed`` and ``key`` (reproducible, independent per round and program); ``adjacent`` as
    shuffle, but ``around = (c, (a, b))`` keeps c between a and b (which side each, and where the
    three stand among the rest, drawn): c's ratios to a and b are then taken between neighbours,
    whose disturbances are the most alike (the load's noise is correlated over a run or two)."""
    out = list(items)
    if how == "fixed" or not out:
        return out
    if how == "rotate":
        k = int(key[0]) % len(out) if key else 0
        return out[k:] + out[:k]
    if how not in ("shuffle", "adjacent"):
        raise ValueError(f"unknown order {how!r}")
    rng = random.Random(":".join(map(str, (seed, *key))))
    if how == "shuffle" or around is None or not {around[0], *around[1]} <= set(out):
        rng.shuffle(out)
        return out
    c, ends = around
    unit = list(ends)
    rng.shuffle(unit)
    rest = [x for x in out if x != c and x not in ends]
    rng.shuffle(rest)
    at = rng.randrange(len(rest) + 1)
    return rest[:at] + [unit[0], c, unit[1]] + rest[at:]


def median_ratio(a: Sequence[float], b: Sequence[float]) -> float:
    """Median of rounds of a, over median of rounds of b (the script's historical figure)."""
    return statistics.median(a) / statistics.median(b)


def least_ratio(a: Sequence[float], b: Sequence[float]) -> float:
    """Least round of a over least round of b: each configuration's least disturbed run."""
    return min(a) / min(b)


def paired_ratio(a: Sequence[float], b: Sequence[float]) -> float:
    """Median over rounds of a[r] / b[r]: the ratio taken within each round, where both ran minutes
    apart at most, so a drift of the machine's speed between rounds cancels."""
    if len(a) != len(b) or not a:
        raise ValueError("paired rounds must have the same, non-zero length")
    return statistics.median(x / y for x, y in zip(a, b))


def bootstrap_interval(ratios: Sequence[Sequence[float]], *, level: float = 0.9, reps: int = 2000,
                       seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of ``geomean over programs of (median over rounds of ratios[p])``:
    rounds resampled with replacement, the same round indices for every program (a round is one
    stretch of time, so programs share its disturbances). ``ratios[p][r]``: program p, round r."""
    n = len(ratios[0]) if ratios else 0
    if n == 0 or any(len(r) != n for r in ratios):
        raise ValueError("every program needs the same, non-zero number of rounds")
    rng = random.Random(seed)
    stats = []
    for _ in range(reps):
        idx = [rng.randrange(n) for _ in range(n)]
        stats.append(geomean([statistics.median(r[i] for i in idx) for r in ratios]))
    stats.sort()
    lo = stats[int(math.floor((1 - level) / 2 * (reps - 1)))]
    hi = stats[int(math.ceil((1 + level) / 2 * (reps - 1)))]
    return lo, hi


#: fewer rounds than this never decide a verdict (a bootstrap of 3 rounds has 10 distinct resamples)
MIN_ROUNDS = 5


#: 1-minute load average above which a verdict is not one on the targets. The load taken during the
#: rounds includes the benchmark's own runnable processes (the timed command, and path --wpp's builder
#: beside it: 1-1.3 on average), so on 2 CPUs 2.0 leaves less than one CPU's worth to other jobs.
LOADED = 2.0


def verdict(point: float, interval: tuple[float, float], target: float, rounds: int, *,
            median: float | None = None, load: float | None = None) -> str:
    """``met``/``not met`` by the (paired) point figure; *decided* only when the interval (of at least
    MIN_ROUNDS rounds) lies on the point's side of the target, the median figure (if given) is on that
    side too, and the load (if given) is at most LOADED. Above it the verdict says it is not one on
    the targets and is never decided: the interval covers round-to-round noise, not what load costs
    path --wpp's second process."""
    met = point <= target
    says = "met" if met else "not met"
    lo, hi = interval
    excludes = hi <= target if met else lo > target
    where = "excludes" if excludes else ("contains" if lo <= target <= hi else "lies on the other side of")
    why = [f"paired {point:.3f}×" + (f", median {median:.3f}×" if median is not None else ""),
           f"interval {lo:.2f}–{hi:.2f}× {where} {target:g}"]
    agree = median is None or (median <= target) == met
    if not agree:
        why.append(f"the median figure says {'met' if median is not None and median <= target else 'not met'}")
    if rounds < MIN_ROUNDS:
        why.append(f"fewer than {MIN_ROUNDS} rounds")
    if load is not None and load > LOADED:
        return (f"{says} by the paired figure (under load: not a verdict on the targets; load {load:.1f} > {LOADED:g}, "
                f"the benchmark's own processes included; {'; '.join(why)})")
    decided = excludes and agree and rounds >= MIN_ROUNDS
    return f"{says} ({'decided' if decided else 'undecided'}: {'; '.join(why)})"


@contextmanager
def progress(total: int, label: str) -> Iterator[Callable[[str], None]]:
    """A progress bar on stderr (rich, where stderr is a terminal); yields ``advance(description)``."""
    if not sys.stderr.isatty():
        yield lambda _d: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TimeRemainingColumn(), console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda d: bar.update(task, advance=1, description=f"{label} {d}")
