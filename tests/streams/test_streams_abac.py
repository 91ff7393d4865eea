"""The printed Figure 9 of Zhang & Gupta loses data (spec wet.md 3.4); the corrected undo rule does not."""

from __future__ import annotations

import numpy as np
import pytest

from wholetrace import streams

import naive_codecs as N

A, B, C = 11, 22, 33


def _steps(seg: N.Segment, pattern: list[tuple[str, int]]) -> list[int]:
    out: list[int] = []
    for way, count in pattern:
        for _ in range(count):
            out.append(seg.forward() if way == "f" else seg.backward())
    return out


def test_the_printed_rule_decodes_A_B_A_C_wrongly() -> None:
    """The twin with the paper's rule reproduces the counterexample, so the next test can fail."""
    spec = N.Spec(N.FCM, 1, 16)
    assert len({N.table_key(spec, [x]) for x in (A, B, C)}) == 3  # an injective hash here
    seg = N.Segment.parked(spec, [A, B, A, C], 0, paper_rule=True)
    got = _steps(seg, [("f", 3), ("b", 3), ("f", 3)])
    assert got[:6] == [B, A, C, A, B, A]
    assert got[6:] == [B, A, B]  # should be B A C


def test_the_corrected_rule_decodes_A_B_A_C() -> None:
    seg = N.Segment.parked(N.Spec(N.FCM, 1, 16), [A, B, A, C], 0)
    assert _steps(seg, [("f", 3), ("b", 3), ("f", 3), ("b", 2), ("f", 2)]) == [B, A, C, A, B, A, B, A, C, A, B, A, C]


@pytest.mark.nojit
@pytest.mark.parametrize("step", [True, False])
@pytest.mark.parametrize("codec", ["bfcm-1", "bfcm-2", "bdfcm-1"])
def test_A_B_A_C_through_the_kernels(codec: str, step: bool) -> None:
    cs = streams.encode(np.array([A, B, A, C], np.uint64), codec)
    cur = cs.cursor(step=step)
    for _ in range(3):
        assert cur.next_many(4).tolist() == [A, B, A, C]
        assert cur.prev_many(4).tolist() == [C, A, B, A]
    cur.seek(1)
    assert [cur.next(), cur.next(), cur.prev(), cur.prev(), cur.prev(), cur.next()] == [B, A, A, B, A, A]
    assert streams.CompressedStream.from_bytes(cs.to_bytes()).decode().tolist() == [A, B, A, C]
