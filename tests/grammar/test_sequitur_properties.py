"""Hypothesis properties of the grammar engine, both variants, against the plain-Python twin."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wholetrace.errors import GrammarError, UsageError
from wholetrace.grammar import Grammar, GrammarBuilder, sequitur

from naive_sequitur import expand_rules, naive_sequitur

# pure-Python twin (NUMBA_DISABLE_JIT=1): numpy warns on the hash's intended wrap-around
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")


@st.composite
def sequences(draw: st.DrawFn, max_len: int = 3000) -> np.ndarray:
    """Random sequences over 1..1000 symbols, often with long runs and repeated blocks."""
    alphabet = draw(st.sampled_from([1, 2, 3, 4, 10, 50, 1000]))
    n = draw(st.integers(0, max_len))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    style = draw(st.sampled_from(["uniform", "runs", "blocks"]))
    if style == "uniform":
        return rng.integers(0, alphabet, n)
    if style == "runs":
        vals = rng.integers(0, alphabet, max(1, n // 8 + 1))
        reps = rng.geometric(0.08, len(vals))
        return np.repeat(vals, reps)[:n]
    blocks = [rng.integers(0, alphabet, rng.integers(1, 12)) for _ in range(6)]
    picks = rng.integers(0, 6, n // 4 + 1)
    return np.concatenate([blocks[p] for p in picks] + [np.zeros(0, np.int64)])[:n]


def brute_frequencies(g: Grammar) -> np.ndarray:
    count: Counter[int] = Counter({0: 1})
    stack = [0]
    while stack:
        r = stack.pop()
        for x in g.rule(r):
            if x < 0:
                count[-int(x)] += 1
                stack.append(-int(x))
    return np.array([count[i] for i in range(g.num_rules + 1)])


SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(max_examples=120, **SETTINGS)
@given(sequences(), st.booleans(), st.integers(1, 700))
def test_core_properties(seq: np.ndarray, lookahead: bool, chunk: int) -> None:
    g = sequitur(seq, lookahead=lookahead)
    assert np.array_equal(g.expand(), seq)
    assert len(g) == len(seq)
    g.check()
    b = GrammarBuilder(lookahead=lookahead)
    for i in range(0, len(seq), chunk):
        b.feed(seq[i : i + chunk])
    assert b.finish() == g
    fw = list(g.iter_chunks(chunk))
    assert np.array_equal(np.concatenate(fw + [np.zeros(0, np.int64)]), seq)
    bw = list(g.iter_chunks_reversed(chunk))
    assert np.array_equal(np.concatenate(bw + [np.zeros(0, np.int64)]), seq[::-1])
    assert np.array_equal(g.frequencies(), brute_frequencies(g))
    assert Grammar.from_bytes(g.to_bytes(compact=True)) == g
    assert Grammar.from_bytes(g.to_bytes()) == g


@settings(max_examples=60, **SETTINGS)
@given(sequences(max_len=400), st.booleans(), st.data())
def test_expand_range_and_naive_twin(seq: np.ndarray, lookahead: bool, data: st.DataObject) -> None:
    g = sequitur(seq, lookahead=lookahead)
    i = data.draw(st.integers(0, len(seq)))
    j = data.draw(st.integers(i, len(seq)))
    assert np.array_equal(g.expand_range(i, j), seq[i:j])
    rules = naive_sequitur(seq.tolist(), lookahead=lookahead)
    assert rules == [g.rule(k).tolist() for k in range(g.num_rules + 1)]
    assert expand_rules(rules) == seq.tolist()


@pytest.mark.slow
@settings(max_examples=25, **SETTINGS)
@given(sequences(max_len=100_000), st.booleans())
def test_core_properties_large(seq: np.ndarray, lookahead: bool) -> None:
    g = sequitur(seq, lookahead=lookahead)
    assert np.array_equal(g.expand(), seq)
    g.check()
    b = GrammarBuilder(lookahead=lookahead)
    for i in range(0, len(seq), 9973):
        b.feed(seq[i : i + 9973])
    assert b.finish() == g
    assert np.array_equal(np.concatenate(list(g.iter_chunks(4096)) + [np.zeros(0, np.int64)]), seq)
    assert np.array_equal(g.frequencies(), brute_frequencies(g))
    assert Grammar.from_bytes(g.to_bytes()) == g


def test_long_runs_of_one_symbol() -> None:
    for n in (0, 1, 2, 3, 4, 5, 7, 8, 100, 1000, 65537):
        for la in (False, True):
            g = sequitur(np.full(n, 7, np.int64), lookahead=la)
            assert np.array_equal(g.expand(), np.full(n, 7))
            g.check()


@pytest.mark.nojit
def test_small_random_against_twin() -> None:
    rng = np.random.default_rng(5)
    for _ in range(15):
        seq = rng.integers(0, 3, int(rng.integers(0, 60)))
        for la in (False, True):
            g = sequitur(seq, lookahead=la)
            assert naive_sequitur(seq.tolist(), la) == [g.rule(k).tolist() for k in range(g.num_rules + 1)]
            g.check()
            assert Grammar.from_bytes(g.to_bytes()) == g


@pytest.mark.nojit
def test_errors() -> None:
    with pytest.raises(UsageError):
        sequitur(np.array([1, -1]))
    with pytest.raises(UsageError):   # int32 input: one range pass (the WPP builder's ids)
        sequitur(np.array([1, -1], np.int32))
    with pytest.raises(UsageError):
        sequitur(np.array([1, 2**31], np.int64))
    with pytest.raises(UsageError):
        sequitur(np.array([1.5]))
    b = GrammarBuilder()
    b.finish()
    with pytest.raises(UsageError):
        b.feed([1])
    with pytest.raises(GrammarError):
        Grammar.from_bytes(b"nonsense")
    data = sequitur(np.arange(10) % 3).to_bytes()
    with pytest.raises(GrammarError):
        Grammar.from_bytes(data[:-3])
    with pytest.raises(GrammarError):
        Grammar.from_bytes(data[:4] + b"\x09" + data[5:])
    for compact in (False, True):
        data = sequitur(np.arange(3000) % 7 * (np.arange(3000) % 5)).to_bytes(compact=compact)
        for cut in (1, 10, len(data) // 2):
            with pytest.raises(GrammarError):
                Grammar.from_bytes(data[:-cut])
        flipped = bytearray(data)
        flipped[-5] ^= 0x5A
        with pytest.raises(GrammarError):
            Grammar.from_bytes(bytes(flipped))
    bad = Grammar(np.array([0, 2, 4]), np.array([-1, 5, 1, 2]))  # rule 1 used once
    with pytest.raises(GrammarError):
        bad.check()
    dup = Grammar(np.array([0, 4]), np.array([1, 2, 1, 2]))
    with pytest.raises(GrammarError):
        dup.check()
    Grammar(np.array([0, 3]), np.array([1, 1, 1])).check()  # overlapping run is fine


def test_to_dot_and_format() -> None:
    g = sequitur(np.frombuffer(b"abcabcabcabc", np.uint8))
    dot = g.to_dot()
    assert dot.startswith("digraph") and "r0 -> r1" in dot
    assert g.format_rules().splitlines()[0] == "S -> R1 R1"


@pytest.mark.parametrize("layout", ["varint", "u32", "planes"])
@pytest.mark.parametrize("comp", [0, 1, 2])
def test_every_stream_codec_round_trips(monkeypatch: pytest.MonkeyPatch, layout: str, comp: int) -> None:
    """Each (layout, compressor) a writer may have picked decodes exactly (LZMA, bzip2, zstd
    over LEB128, uint32 of version 2, byte planes; kinds raw or 2-bit); version 1 still decodes."""
    import struct

    from wholetrace.grammar import encoding as E

    rng = np.random.default_rng(7)
    g = sequitur(np.tile(np.concatenate([rng.integers(0, 300, 5000), [70_000, 2**31 - 1]]), 3))

    nkinds = len(E.K.preorder_encode(g.off, g.rhs)[0])

    def forced(layouts: list[tuple[int, bytes]]) -> tuple[int, bytes]:
        lay, data = layouts[0]
        if lay == E.L_BITS2:  # the kinds: raw bytes with the layouts of version 2
            if layout != "planes":
                lay, data = E.L_VARINT, E._unbits2(data, nkinds).tobytes()
        else:
            values = E._unplanes(data, len(data) // (lay - E.L_PLANES + 1), lay - E.L_PLANES + 1)
            if layout == "varint":
                lay, data = E.L_VARINT, E.K.varint_encode(values).tobytes()
            elif layout == "u32":
                lay, data = E.L_U32, values.astype("<u4").tobytes()
        return lay << 4 | comp, E._pack(data, comp)

    monkeypatch.setattr(E, "_layouts", lambda values: [E._planes(values)])
    monkeypatch.setattr(E, "_smallest", forced)
    data = g.to_bytes()
    assert data[4] == E.VERSION
    assert Grammar.from_bytes(data) == g
    if layout != "planes" and comp != E.C_ZSTD:  # what version 2 wrote: same bytes, version byte 2
        assert Grammar.from_bytes(data[:4] + b"\x02" + data[5:]) == g
    if layout == "varint" and comp == E.C_LZMA:  # version 1 = LEB128 + LZMA without the codec bytes
        head = E._HEAD.size + 32
        v1 = data[:4] + b"\x01" + data[5:head] + data[head + 4 :]
        assert struct.unpack_from("<B", v1, 4)[0] == 1
        assert Grammar.from_bytes(v1) == g


def test_explicit_encoding_refuses_a_zstd_frame_larger_than_its_stream() -> None:
    """A stream whose zstd frame announces more bytes than the header allows is corrupt data."""
    import zstandard

    from wholetrace.grammar import encoding as E

    with pytest.raises(GrammarError):
        E._unpack(zstandard.ZstdCompressor().compress(bytes(1000)), E.C_ZSTD, 999)
    assert E._unpack(zstandard.ZstdCompressor().compress(bytes(1000)), E.C_ZSTD, 1000) == bytes(1000)


@pytest.mark.nojit
def test_compact_encoding_is_the_coded_sequence() -> None:
    """Version 3 stores the input through the context-mixing coder and decoding rebuilds the
    grammar: a builder's grammar (both variants) round-trips, and a grammar the builder did
    not make (here: an equivalent hand-made one) is stored explicitly, so it comes back as is.
    Without ``compact=True`` every grammar is stored explicitly."""
    from wholetrace.grammar import encoding as E

    seq = np.array([5, 7, 5, 7, 5, 7, 9, 2**31 - 1, 0, 5, 7, 9] * 20)
    for la in (False, True):
        g = sequitur(seq, lookahead=la)
        assert g.to_bytes()[4] == E.VERSION        # explicit unless asked
        data = g.to_bytes(compact=True)
        assert data[4] == E.VERSION_COMPACT
        back = Grammar.from_bytes(data)
        assert back == g and back.built and back.lookahead == la
    flat = Grammar(np.array([0, len(seq)]), seq)  # S -> the whole input: valid, not SEQUITUR's
    data = flat.to_bytes(compact=True)
    assert data[4] == E.VERSION
    assert Grammar.from_bytes(data) == flat


def markov_chain(seed: int, states: int, fanout: int, n: int) -> np.ndarray:
    """n steps of a random first-order chain: each state has ``fanout`` random successors."""
    rng = np.random.default_rng(seed)
    succ = rng.integers(0, states, (states, fanout))
    seq = np.empty(n, np.int64)
    s = 0
    for i, k in enumerate(rng.integers(0, fanout, n)):
        s = succ[s, k]
        seq[i] = s
    return seq


def test_compact_encoding_beats_general_compressors_on_a_markov_chain() -> None:
    """The coder models the sequence: on a sparse Markov chain it needs fewer bytes than
    LZMA and bzip2 of the raw 16-bit symbols (the benchmark measures this at full size)."""
    import bz2
    import lzma

    seq = markov_chain(3, 1000, 3, 200_000)
    g = sequitur(seq)
    data = g.to_bytes(compact=True)
    raw = seq.astype("<u2").tobytes()
    assert len(data) < min(len(lzma.compress(raw, preset=9)), len(bz2.compress(raw, 9)))
    assert Grammar.from_bytes(data) == g


def test_compact_encoding_chooses_fewer_context_models_on_an_order_1_source(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a first-order Markov chain (whose ranks are already conditioned on the previous
    symbol) a shorter set of the ladder (orders 0-2, 0-1 or 0) codes a prefix as small as all
    six models, so the encoder keeps it and says so in the header; the decoder follows the header (round trip), and a header naming a model that does
    not exist is a one-line error."""
    import struct

    from wholetrace.grammar import encoding as E
    from wholetrace.kernels import sequitur_code as CM

    monkeypatch.setattr(E, "_TRIAL", 1 << 12)
    monkeypatch.setattr(E, "_TRIAL_MIN", 1 << 12)
    g = sequitur(markov_chain(5, 500, 4, 60_000))
    data = g.to_bytes(compact=True)
    dropped = struct.unpack_from("<I", data, E._HEAD3.size - 4)[0] & 0xFF  # bits 8-15: version 5's flag
    assert dropped in {CM.ALL_MODELS & ~m for m, _ in E._LADDER}
    assert Grammar.from_bytes(data) == g
    # the same input coded with all six models is another valid encoding of the same grammar
    monkeypatch.setattr(E, "_choose_models", lambda a, rawbits: (CM.ALL_MODELS, 0))
    full = g.to_bytes(compact=True)
    assert struct.unpack_from("<I", full, E._HEAD3.size - 4)[0] == 0 and full != data
    assert Grammar.from_bytes(full) == g
    bad = bytearray(data)
    struct.pack_into("<I", bad, E._HEAD3.size - 4, dropped | 1 << CM.NORD)
    with pytest.raises(GrammarError):
        Grammar.from_bytes(bytes(bad))


@pytest.mark.nojit
def test_coder_round_trips_with_any_model_mask() -> None:
    """The coder decodes what it encoded under every subset of its context models (the
    pure-Python run checks the kernel's arithmetic is the same code path)."""
    from wholetrace.kernels import sequitur_code as CM

    rng = np.random.default_rng(11)
    a = np.tile(rng.integers(0, 40, 300), 3).astype(np.int32)
    tables = CM.tables()
    for models in (CM.ALL_MODELS, 0b000111, 0b100010, 0):
        buf = np.empty(4 * a.size + 4096, np.uint8)
        nbytes, status = CM.cm_code(a, a.size, 6, buf, False, 14, *tables, models)
        assert status == CM.ST_OK
        back = np.zeros_like(a)
        _, status = CM.cm_code(back, a.size, 6, buf[:nbytes].copy(), True, 14, *tables, models)
        assert status == CM.ST_OK and np.array_equal(back, a)


def _lcg_chain(n: int) -> np.ndarray:
    """A first-order chain over 41 states (3 successors each) driven by a fixed LCG."""
    x, s, out = 12345, 0, []
    for _ in range(n):
        x = (x * 1103515245 + 12345) % 2**31
        s = (s * 7 + 3 + (x >> 16) % 3 * 11) % 41
        out.append(s)
    return np.array(out)


#: ``sequitur(_lcg_chain(3000)).to_bytes(compact=True)`` as wholetrace 326b117 wrote it (before
#: the coder's encoder prefetched and indexed unsigned, wave 7)
_COMPACT_326B117 = (
    "V1RHUgMABg64CwAAAAAAAM0CAAAAAAAAQUQJFQAAAAD58D+vZNaxVdD+U3QxeIEWmfvwN37a9OclV/+GIXwB03QECceE69Gz"
    "xMWUrLJl2KL7CIVKzH1V3kl90Knw9REvqBtJsQCTvgMfeMwg/X73qP4p1GdnBUM4F6Y4QqLd1x7H2taVqO7oNuUKXw3z2mlJ"
    "XlKGlRfrRNf8/SgX8K3V2nURt93PALeuNYXeESf+CsrQunKU0SvNi+IOxbRR8MZd9bYn79A97UoBadCQg5Q91BZK94X14ZXf"
    "pxsEcvFcx96ZImKmMpDpK65Rh6cTAXfRecxm9xJGYuad4j+iWRGrhRCyb6vodQnpscrWaHuD9+9FCLtrCHctIWI72gFC39zs"
    "bHM6ZYJp8yD+HOBehYC6JzAgARTBqCsby4oP4Tg9cOFFnF+DXMAHBx0yhds5bgxcb18EhltKvVTZbHoklLYhxarVE6LH+niK"
    "xBNvXrNN9ZaSR2NnIwcOCfIUPJ9lfsuvMW8Q9uFS40qlc1+EVNTB3amaHIiPuTeceeN1beO5fXcwT80JGCY/u85JGBooNG+z"
    "ebNTEHv0UMKN4+l3j41jdbO0Dq2noJUgQAeUN9BMjqNUGzQ9cg596WgVlphLhp7YDQ5+DFnQDG+5vgFKWG41eDyAybVNybsy"
    "X8M1IRB12Zrw6msH5RQsqMf30uvIL1YTocTJ2xr8DRId+w5iiEjZRtTJsWNnTjo0BOT7OIMRJRZGo2DFF0fP+URrsrZKYWDM"
    "VbN78mYMjKExsOl/5uzHDZJom3qUTqbYmEV0hCt7885YVuQ4sszoAE1JSfd0Dea3KoCy03+yVhWCvx5rtyHSjdVqAqYAetw1"
    "7E7poxHYRWsd4GW7r0ipXNPtzP6nZ7V0q1e5QGt7RddEAzKHOWjmkHrQm8LSiZcLQA8WEPYQrx57iYrow3ay1oLOHJO9fidl"
    "EnUoJ8Uc2iTqFCDL7Egb5/kGaHUX/FORVWhShbQ="
)


@pytest.mark.nojit
def test_compact_encoding_format_is_unchanged() -> None:
    """Files written by an earlier coder decode, and the encoder still writes the same bytes:
    the coder's speed changes must not change what it predicts."""
    import base64

    old = base64.b64decode(_COMPACT_326B117)
    g = sequitur(_lcg_chain(3000))
    assert Grammar.from_bytes(old) == g
    assert g.to_bytes(compact=True) == old


@pytest.mark.nojit
def test_coder_round_trips_with_the_flag() -> None:
    """Version 5's binarisation (a flag "the predicted symbol" before the rank) decodes what it
    encoded for every predicting context, with and without the match model's symbol, under a
    full, orders 2-3 (textlike's) and an empty model set; and it is a different code from version 3's."""
    from wholetrace.kernels import sequitur_code as CM

    rng = np.random.default_rng(12)
    a = np.concatenate([np.tile(rng.integers(0, 30, 200), 3), rng.integers(0, 30, 300)]).astype(np.int32)
    tables = CM.tables()
    plain = None
    for pmode in (0,) + CM.P_MODES:
        for models in (CM.ALL_MODELS, 0b001100, 0):
            buf = np.empty(4 * a.size + 4096, np.uint8)
            nbytes, status = CM.cm_code(a, a.size, 5, buf, False, 14, *tables, models, pmode)
            assert status == CM.ST_OK
            if pmode == 0 and models == CM.ALL_MODELS:
                plain = buf[:nbytes].copy()
            elif models == CM.ALL_MODELS:
                assert not np.array_equal(buf[:nbytes], plain)
            back = np.zeros_like(a)
            _, status = CM.cm_code(back, a.size, 5, buf[:nbytes].copy(), True, 14, *tables, models, pmode)
            assert status == CM.ST_OK and np.array_equal(back, a)


def test_text_like_encoder_loop_is_the_generic_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop compiled for textlike's settings (orders 2-3 + the order-3 flag, encoder: wave 10)
    writes byte for byte what the generic loop writes (forced by making no setting special), on an
    input whose successor table grows several times; the decoder (generic) reads it back."""
    from wholetrace.kernels import sequitur_code as CM

    rng = np.random.default_rng(10)
    words = [rng.integers(0, 400, rng.integers(2, 9)) for _ in range(600)]
    a = np.concatenate([words[i] for i in rng.integers(0, 600, 6000)] + [rng.integers(0, 400, 3000)]).astype(np.int32)
    tables = CM.tables()
    out = []
    for text in (CM._TEXT, (-1, -1)):
        monkeypatch.setattr(CM, "_TEXT", text)
        buf = np.empty(4 * a.size + 4096, np.uint8)
        nbytes, status = CM.cm_code(a, a.size, 9, buf, False, 16, *tables, 0b001100, CM.P_ORDER3, 3)
        assert status == CM.ST_OK
        out.append(buf[:nbytes].copy())
    assert np.array_equal(out[0], out[1])
    back = np.zeros_like(a)
    _, status = CM.cm_code(back, a.size, 9, out[0].copy(), True, 16, *tables, 0b001100, CM.P_ORDER3, 3)
    assert status == CM.ST_OK and np.array_equal(back, a)


def test_compact_encoding_takes_the_flag_where_it_codes_as_small(monkeypatch: pytest.MonkeyPatch) -> None:
    """On text (each word's letters follow from the few before them) the flag codes the prefix
    about as small, so the encoder writes version 6 with the flag's mode in the header, and it
    decodes, as does version 5 (larger match and prediction tables); on a Markov chain it does
    not (version 3).  A version-5 header with an unknown mode
    is a one-line error."""
    import struct

    from wholetrace.grammar import encoding as E
    from wholetrace.kernels import sequitur_code as CM

    monkeypatch.setattr(E, "_TRIAL", 1 << 13)
    monkeypatch.setattr(E, "_TRIAL_MIN", 1 << 13)
    import argparse
    import inspect

    text = inspect.getsource(argparse).encode()[:80_000]  # Python source, as the textlike vector
    g = sequitur(np.frombuffer(text, np.uint8))
    data = g.to_bytes(compact=True)
    assert data[4] == E.VERSION_FLAG6
    assert struct.unpack_from("<I", data, E._HEAD3.size - 4)[0] >> 8 == CM.P_ORDER3
    assert Grammar.from_bytes(data) == g
    monkeypatch.setattr(E, "_FLAG_VERSION", E.VERSION_FLAG)  # version 5 (wave 9): still decodes
    v5 = g.to_bytes(compact=True)
    assert v5[4] == E.VERSION_FLAG and v5[5:] != data[5:]
    assert Grammar.from_bytes(v5) == g
    bad = bytearray(data)
    struct.pack_into("<I", bad, E._HEAD3.size - 4, 7 << 8)
    with pytest.raises(GrammarError, match="inconsistent"):
        Grammar.from_bytes(bytes(bad))
    m = sequitur(markov_chain(5, 500, 4, 80_000))
    assert m.to_bytes(compact=True)[4] == E.VERSION_COMPACT


@pytest.mark.nojit
def test_expand_into_is_the_expansion() -> None:
    """The encoder's one-walk expansion (int32) equals the grammar's own expansion (expand_range
    by rule lengths), on both builder variants; an output one symbol short is reported."""
    from wholetrace.grammar import encoding as E

    rng = np.random.default_rng(3)
    seq = np.concatenate([np.tile(rng.integers(0, 9, 40), 6), rng.integers(0, 9, 200)])
    for la in (False, True):
        g = sequitur(seq, lookahead=la)
        a = E._sequence(g)
        assert a.dtype == np.int32 and np.array_equal(a, g.expand()) and np.array_equal(a, seq)
    work = [np.empty(len(g.off), np.int64) for _ in range(5)] + [np.full(len(g.off), -1, np.int64)]
    ks, ends, rid, at, ln, pos = work
    short = np.empty(len(seq) - 1, np.int32)  # one symbol too few: the walk says it did not fit
    assert E.CM.expand_into(g.off, g.rhs, short, ks, ends, rid, at, pos, ln) == len(seq)


@pytest.mark.parametrize("s23, pmode, expected", [(1030, 3, 0b001100), (1031, 3, 0b001111), (1000, 0, 0b001111)])
def test_orders_2_3_replace_orders_0_3_only_with_the_flag(monkeypatch: pytest.MonkeyPatch, s23: int, pmode: int,
                                                          expected: int) -> None:
    """The model choice on made-up prefix sizes: with the flag, orders 2-3 replace orders 0-3 when
    at most 3% larger than them (textlike); never without the flag, nor beyond the slack."""
    from wholetrace.grammar import encoding as E
    from wholetrace.kernels import sequitur_code as CM

    sizes = {(CM.ALL_MODELS, 0): 1000, (0b000001, 0): 2000, (CM.ALL_MODELS, 3): 1010 if pmode else 1100,
             (0b011111, pmode): 1000, (0b001111, pmode): 1000, (0b000111, pmode): 1100, (0b001100, pmode): s23}
    tried = []

    def fake(a: np.ndarray, rawbits: int, models: int, pm: int = 0) -> tuple[int, int, np.ndarray]:
        tried.append((models, pm))
        return 0, sizes[(models, pm)], a

    monkeypatch.setattr(E, "_cm_encode", fake)
    assert E._choose_models(np.zeros(1 << 20, np.int32), 8) == (expected, pmode)
    assert ((0b001100, pmode) in tried) == bool(pmode)


@settings(max_examples=60, **SETTINGS)
@given(st.integers(1, 16), st.integers(0, 3000), st.integers(0, 2**32 - 1), st.sampled_from(["uniform", "skewed", "drift"]))
def test_order0_tree_coder_round_trips(rawbits: int, n: int, seed: int, style: str) -> None:
    """The order-0 tree coder (version 7) decodes back to its input: any width, skewed and
    drifting sources, a buffer too small reported (ST_SHORT), not overrun."""
    from wholetrace.kernels import order0_code as O0
    from wholetrace.kernels import sequitur_code as CM

    rng = np.random.default_rng(seed)
    top = 1 << rawbits
    if style == "uniform":
        a = rng.integers(0, top, n)
    elif style == "skewed":
        a = np.minimum(rng.geometric(0.3, n) - 1, top - 1)
    else:
        a = (np.arange(n) * top // max(n, 1) + rng.integers(0, 2, n)) % top
    a = a.astype(np.int32)
    buf = np.empty(n * rawbits * 2 + 64, np.uint8)   # a decision costs at most 12 bits (p >= 1/4096)
    nb, status = O0.order0_code(a, n, rawbits, buf, False, np.zeros(2 << rawbits, np.int64))
    assert status == CM.ST_OK
    out = np.zeros(n, np.int32)
    _, status = O0.order0_code(out, n, rawbits, buf[:nb].copy(), True, np.zeros(2 << rawbits, np.int64))
    assert status == CM.ST_OK and np.array_equal(out, a)
    if nb > 4:
        small = np.empty(nb - 5, np.uint8)
        _, status = O0.order0_code(a, n, rawbits, small, False, np.zeros(2 << rawbits, np.int64))
        assert status == CM.ST_SHORT


@pytest.mark.nojit
def test_order0_tree_coder_small_and_near_the_entropy() -> None:
    """Uniform 2-bit symbols cost about 2 bits each (the counts converge), skewed ones less."""
    from wholetrace.kernels import order0_code as O0

    rng = np.random.default_rng(4)
    for a, bound in ((rng.integers(0, 4, 20_000), 20_000 * 2 / 8 * 1.01 + 8),
                     (np.where(rng.random(20_000) < 0.9, 0, 3), 20_000 * 2 * 0.469 / 8 * 1.05 + 8)):
        a = a.astype(np.int32)
        buf = np.empty(20_000, np.uint8)
        nb, _ = O0.order0_code(a, a.size, 2, buf, False, np.zeros(8, np.int64))
        assert nb <= bound, (nb, bound)
        out = np.zeros(a.size, np.int32)
        O0.order0_code(out, a.size, 2, buf[:nb].copy(), True, np.zeros(8, np.int64))
        assert np.array_equal(out, a)


def test_compact_encoding_codes_a_memoryless_input_with_the_tree_coder(monkeypatch: pytest.MonkeyPatch) -> None:
    """A memoryless input (rand4-like) is written as version 7 and decodes to the same grammar;
    the context-mixing coding of the same input is another valid encoding of it; a damaged
    payload or an impossible width is a one-line error."""
    import struct

    from wholetrace.grammar import encoding as E

    monkeypatch.setattr(E, "_TRIAL", 1 << 12)
    monkeypatch.setattr(E, "_TRIAL_MIN", 1 << 12)
    seq = np.random.default_rng(9).integers(0, 4, 60_000)
    g = sequitur(seq)
    data = g.to_bytes(compact=True)
    assert data[4] == E.VERSION_ORDER0
    back = Grammar.from_bytes(data)
    assert back == g and np.array_equal(back.expand(), seq)
    monkeypatch.setattr(E, "_TREE_SLACK", 0.0)   # the tree coder never wins: order 0 of the mixer
    mixed = g.to_bytes(compact=True)
    assert mixed[4] == E.VERSION_COMPACT and Grammar.from_bytes(mixed) == g
    assert len(data) <= len(mixed)
    bad = bytearray(data)
    bad[-10] ^= 0x55
    with pytest.raises(GrammarError):
        Grammar.from_bytes(bytes(bad))
    wide = bytearray(data)
    wide[struct.calcsize("<4sBB")] = 17   # rawbits: the tree has 2**rawbits nodes, at most 2**16
    with pytest.raises(GrammarError):
        Grammar.from_bytes(bytes(wide))
