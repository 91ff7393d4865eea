"""The slicing kernels of kernels/wetdeps.py against pure-Python twins on random graphs: the CSR
counting sort against a stable argsort, the backward closure (bucket queue, each node once)
against the fixpoint definition (depth-first, re-expanding a node whenever its ceiling widens)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wholetrace.kernels.wetdeps import closure, csr

BIG = 1 << 62


def naive_back(indptr: list[int], targets: list[int], start: list[int], n_real: int) -> list[bool]:
    """The backward closure by its definition: raise ceilings until nothing changes."""
    n = len(indptr) - 1
    bound = [-2] * n
    work = []
    for s in start:
        if 0 <= s < n:
            bound[s] = BIG
            work.append(s)
    while work:
        v = work.pop()
        c = bound[v]
        for t in targets[indptr[v]:indptr[v + 1]]:
            if not 0 <= t < n:
                continue
            if t >= n_real:
                nb = c if v >= n_real else min(c, v)
            else:
                if t >= c:
                    continue
                nb = min(c, v) if t < v else c
            if nb > bound[t]:
                bound[t] = nb
                work.append(t)
    return [b > -2 for b in bound]


def naive_fwd(indptr: list[int], targets: list[int], start: list[int], n_real: int) -> list[bool]:
    """The forward closure by its definition: lower floors until nothing changes."""
    n = len(indptr) - 1
    bound = [BIG] * n
    work = []
    for s in start:
        if 0 <= s < n:
            bound[s] = -1
            work.append(s)
    while work:
        v = work.pop()
        c = bound[v]
        for t in targets[indptr[v]:indptr[v + 1]]:
            if not 0 <= t < n:
                continue
            if t >= n_real:
                nb = c if v >= n_real else max(c, v)
            elif v >= n_real or t > v:
                if t <= c:
                    continue
                nb = c if v >= n_real else max(c, v)
            else:
                nb = v
            if nb < bound[t]:
                bound[t] = nb
                work.append(t)
    return [b < BIG for b in bound]


@st.composite
def graphs(draw: st.DrawFn) -> tuple[int, int, list[int], list[int], list[int]]:
    n_real = draw(st.integers(1, 25))
    n = n_real + draw(st.integers(0, 4))
    m = draw(st.integers(0, 4 * n))
    src = draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
    dst = draw(st.lists(st.integers(-1, n), min_size=m, max_size=m))
    start = draw(st.lists(st.integers(0, n_real - 1), min_size=1, max_size=3))
    return n, n_real, src, dst, start


@settings(max_examples=300, deadline=None)
@given(graphs())
def test_backward_closure_equals_the_fixpoint(g: tuple[int, int, list[int], list[int], list[int]]) -> None:
    n, n_real, src, dst, start = g
    indptr, targets = csr((np.array(src, np.int64),), (np.array(dst, np.int64),), n)
    got = closure(indptr, targets, np.array(start, np.int64), False, n_real)
    assert got.tolist() == naive_back(indptr.tolist(), targets.tolist(), start, n_real)


@settings(max_examples=300, deadline=None)
@given(graphs())
def test_forward_closure_equals_the_fixpoint(g: tuple[int, int, list[int], list[int], list[int]]) -> None:
    n, n_real, src, dst, start = g
    indptr, targets = csr((np.array(dst, np.int64),), (np.array(src, np.int64),), n + 2)
    indptr, targets = indptr[:n + 1], targets[:indptr[n]]
    got = closure(indptr, targets, np.array(start, np.int64), True, n_real)
    assert got.tolist() == naive_fwd(indptr.tolist(), targets.tolist(), start, n_real)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 30).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(-2, n + 1), st.integers(0, 99)), max_size=80))))
def test_csr_equals_a_stable_sort(case: tuple[int, list[tuple[int, int]]]) -> None:
    n, edges = case
    src = np.array([s for s, _ in edges], np.int64)
    dst = np.array([d for _, d in edges], np.int64)
    cut = len(edges) // 3                # in two parts, as the WET passes its kinds of edges
    indptr, targets = csr((src[:cut], src[cut:]), (dst[:cut], dst[cut:]), n)
    keep = (src >= 0) & (src < n)
    order = np.argsort(src[keep], kind="stable")
    assert targets.tolist() == dst[keep][order].tolist()
    assert indptr.tolist() == [0] + np.cumsum(np.bincount(src[keep], minlength=n)).tolist()


@pytest.mark.nojit
def test_backward_closure_small_example() -> None:
    """0 <- 1 <- 3 (3 uses 1, 1 uses 0); 2 is a call that uses 4's return value, defined later."""
    src = np.array([1, 3, 2, 4], np.int64)
    dst = np.array([0, 1, 4, 1], np.int64)
    indptr, targets = csr((src,), (dst,), 5)
    assert closure(indptr, targets, np.array([3], np.int64), False, 5).tolist() == [True, True, False, True, False]
    assert closure(indptr, targets, np.array([2], np.int64), False, 5).tolist() == [True, True, True, False, True]
