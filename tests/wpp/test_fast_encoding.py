"""The online builder's fast grammar encoding (``encode_explicit(g, fast=True)``, zstd over byte
planes only): the same format, decoded by the ordinary decoder back to the same grammar and input."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from wholetrace.grammar import Grammar, sequitur
from wholetrace.grammar import encoding as E

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")


def _inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(9)
    loop = np.tile(np.array([3, 1, 4, 1, 5, 9, 2, 6], np.int64), 500)
    return {"abcab": np.frombuffer(b"abcab", np.uint8).astype(np.int64),
            "121213121214": np.array([int(c) for c in "121213121214"], np.int64),
            "loop": loop,
            "noisy loop": np.where(rng.random(len(loop)) < 0.02, 70_000, loop),   # 3-byte planes
            "random": rng.integers(0, 300, 20_000).astype(np.int64)}


@pytest.mark.parametrize("lookahead", [False, True])
@pytest.mark.parametrize("name", list(_inputs()))
def test_fast_encoding_decodes_to_the_grammar_and_its_input(name: str, lookahead: bool) -> None:
    data = _inputs()[name]
    g = sequitur(data, lookahead=lookahead)
    enc = E.encode_explicit(g, fast=True)
    back = Grammar.from_bytes(enc)
    assert back == g
    assert np.array_equal(back.expand(), data)          # the input, not the code's own output
    codecs = enc[E._HEAD.size + 32: E._HEAD.size + 36]   # after the header and four u64 sizes
    assert all(c & 0xF == E.C_ZSTD for c in codecs)
    assert codecs[0] >> 4 == E.L_BITS2 and all(c >> 4 >= E.L_PLANES for c in codecs[1:])
    assert struct.unpack_from("<4sB", enc)[1] == E.VERSION


def test_fast_encoding_is_at_most_a_little_larger() -> None:
    g = sequitur(_inputs()["noisy loop"], lookahead=True)
    fast, full = len(E.encode_explicit(g, fast=True)), len(E.encode_explicit(g))
    assert full <= fast <= 1.25 * full + 64
