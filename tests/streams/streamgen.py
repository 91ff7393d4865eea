"""Hypothesis strategies for the stream tests: integer streams of the shapes the codecs meet."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from wholetrace.streams import CODEC_NAMES

KINDS = ("constant", "stride", "periodic", "random", "mixed", "walk", "wide")
PREDICTIVE = tuple(n for n in CODEC_NAMES if n.startswith("b"))


def make_stream(kind: str, n: int, seed: int) -> np.ndarray:
    """A uint64 stream of ``n`` values of one shape (``mixed`` splices the others)."""
    rng = np.random.default_rng(seed)
    if kind == "constant":
        return np.full(n, rng.integers(0, 2**63), np.uint64)
    if kind == "stride":
        start, step = (int(x) for x in rng.integers(0, 2**62, 2))
        return (np.uint64(start) + np.arange(n, dtype=np.uint64) * np.uint64((step % 1000 - 500) & (2**64 - 1)))
    if kind == "periodic":
        period = rng.integers(1, 12)
        base = rng.integers(0, 50, period).astype(np.uint64)
        out = np.resize(base, n)
        noise = rng.random(n) < 0.05
        out[noise] = rng.integers(0, 50, int(noise.sum())).astype(np.uint64)
        return out
    if kind == "random":
        return rng.integers(0, rng.choice([2, 5, 300, 2**40]), n).astype(np.uint64)
    if kind == "walk":
        return np.cumsum(rng.integers(-3, 4, n)).astype(np.int64).view(np.uint64)
    if kind == "wide":
        return rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    parts, left = [], n
    while left > 0:
        k = int(rng.integers(1, max(2, left + 1)))
        sub = str(rng.choice([k for k in KINDS if k != "mixed"]))
        parts.append(make_stream(sub, k, int(rng.integers(0, 2**32))))
        left -= k
    return np.concatenate(parts)[:n] if parts else np.zeros(0, np.uint64)


@st.composite
def streams(draw: st.DrawFn, min_size: int = 0, max_size: int = 400) -> np.ndarray:
    kind = draw(st.sampled_from(KINDS))
    n = draw(st.integers(min_size, max_size))
    return make_stream(kind, n, draw(st.integers(0, 2**32 - 1)))


@st.composite
def moves(draw: st.DrawFn, m: int, max_moves: int = 40) -> list[tuple[str, int]]:
    """A walk: single steps, bulk steps and seeks."""
    ops = st.one_of(st.tuples(st.sampled_from(["next", "prev"]), st.just(1)),
                    st.tuples(st.sampled_from(["next_many", "prev_many"]), st.integers(0, m + 3)),
                    st.tuples(st.just("seek"), st.integers(0, m)))
    return draw(st.lists(ops, max_size=max_moves))
