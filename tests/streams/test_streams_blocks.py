"""The zstd block codecs against a pure-Python twin of their bytes, and codec selection
against brute force (every codec compressed over the whole stream)."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wholetrace import streams
from wholetrace.errors import StreamError
from wholetrace.streams import CODEC_NAMES, CompressedStream

from streamgen import make_stream, streams as gen_streams

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")

HEAD = struct.Struct("<4sBBBBQIII")
MASK = (1 << 64) - 1


def _leb128(x: int) -> bytes:
    out = bytearray()
    while x >= 0x80:
        out.append(x & 0x7F | 0x80)
        x >>= 7
    out.append(x)
    return bytes(out)


def _zz(x: int) -> int:
    """Zigzag of a 64-bit two's-complement value."""
    s = x - (1 << 64) if x >> 63 else x
    return ((s << 1) ^ (s >> 63)) & MASK


def twin_segment_bytes(values: list[int], delta: bool) -> bytes:
    """What one segment's zstd frame must decompress to, computed without numpy or numba."""
    out, prev = bytearray(), 0
    for v in values:
        out += _leb128(_zz((v - prev) & MASK if delta else v))
        prev = v
    return bytes(out)


def _frames(blob: bytes, m: int, segment: int) -> list[bytes]:
    """Split a zdelta/zvalue blob body into its frames (the LEB128 frame lengths first)."""
    body, pos, lens = blob[HEAD.size:], 0, []
    for _ in range(-(-m // segment)):
        x = shift = 0
        while True:
            b = body[pos]
            pos += 1
            x |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        lens.append(x)
    frames = []
    for n in lens:
        frames.append(body[pos:pos + n])
        pos += n
    assert pos == len(body)
    return frames


@pytest.mark.nojit
@pytest.mark.parametrize("codec", ["zdelta", "zvalue"])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ref=gen_streams(max_size=200), segment=st.sampled_from([16, 37, 1 << 16]))
def test_frames_hold_the_twins_bytes(codec: str, ref: np.ndarray, segment: int) -> None:
    """Every segment's frame decompresses to the LEB128 zigzag deltas (or values) the twin
    writes, and the segments are independent (each delta chain starts from 0)."""
    cs = streams.encode(ref, codec, segment=segment)
    frames = _frames(cs.to_bytes(), ref.shape[0], segment)
    vals = [int(x) for x in ref]
    for s, frame in enumerate(frames):
        got = zstandard.ZstdDecompressor().decompress(frame)
        assert got == twin_segment_bytes(vals[s * segment:(s + 1) * segment], codec == "zdelta")


def _reseal(blob: bytes) -> bytes:
    head = bytearray(blob[:HEAD.size])
    head[-4:] = bytes(4)
    crc = zlib.crc32(blob[HEAD.size:], zlib.crc32(bytes(head)))
    return bytes(head[:-4]) + struct.pack("<I", crc) + blob[HEAD.size:]


def test_a_frame_claiming_too_much_is_rejected_before_decoding() -> None:
    """A resealed blob whose frame is valid zstd but names a decoded size no segment of
    varints can have is refused by from_bytes (so decoding never allocates it)."""
    ref = np.arange(100, dtype=np.uint64)
    cs = streams.encode(ref, "zdelta", segment=128)
    big = zstandard.ZstdCompressor().compress(bytes(100 * 10 + 1))
    blob = cs.to_bytes()[:HEAD.size] + bytes([len(big)]) + big
    with pytest.raises(StreamError, match="claims"):
        CompressedStream.from_bytes(_reseal(blob))
    wrong = zstandard.ZstdCompressor().compress(bytes(150))  # decodes, but to 150 zero varints
    blob = cs.to_bytes()[:HEAD.size] + bytes([len(wrong)]) + wrong
    bad = CompressedStream.from_bytes(_reseal(blob))
    with pytest.raises(StreamError, match="does not hold"):
        bad.decode()


def _brute(ref: np.ndarray, segment: int = 1 << 16) -> dict[str, int]:
    return {c: streams.encode(ref, c, segment=segment).nbytes for c in CODEC_NAMES}


def test_a_prefix_that_lies_does_not_decide() -> None:
    """A label stream constant over its whole prefix (where packed costs 0 bits) that then
    counts up: the prefix alone picks packed, which is far from the best on the whole.  The
    windows give estimates, not sizes (a frame's fixed cost is scaled with the values), so
    the bound is loose."""
    rng = np.random.default_rng(3)
    sample = 1 << 12
    head = np.zeros(sample * 2, np.uint64)
    tail = np.cumsum(rng.random(30_000) < 0.01).astype(np.uint64) + np.uint64(1)
    ref = np.concatenate([head, tail])
    sizes = _brute(ref)
    best = min(sizes.values())
    assert sizes["packed"] > 4 * best  # the trap is real
    cs = streams.encode(ref, sample=sample)
    assert cs.codec != "packed" and cs.nbytes <= 1.5 * best, (cs.codec, cs.nbytes, best)
    np.testing.assert_array_equal(cs.decode(), ref)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kinds=st.lists(st.sampled_from(["constant", "stride", "periodic", "random", "walk"]), min_size=1,
                      max_size=3), seed=st.integers(0, 2**32 - 1))
def test_auto_on_long_streams_is_near_the_best(kinds: list[str], seed: int) -> None:
    """Streams longer than the sample whose character changes along the way: the chosen
    codec is within 1.5x of the smallest codec on the whole stream (brute force)."""
    parts = [make_stream(k, 3000, seed + i) for i, k in enumerate(kinds)]
    ref = np.concatenate(parts)
    sizes = _brute(ref, segment=1024)
    cs = streams.encode(ref, segment=1024, sample=1024)
    assert cs.nbytes == sizes[cs.codec]
    assert cs.nbytes <= 1.5 * min(sizes.values()) + 64, (cs.codec, sorted(sizes.items(), key=lambda x: x[1])[:4])
    np.testing.assert_array_equal(cs.decode(), ref)
