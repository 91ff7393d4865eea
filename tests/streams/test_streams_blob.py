"""Persistence: blob and .wt round trips; truncated, corrupted and hostile blobs are rejected."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wholetrace import streams
from wholetrace.errors import StreamError, UsageError
from wholetrace.store import RecordingWriter, open_recording
from wholetrace.streams import CODEC_NAMES, CompressedStream

from streamgen import make_stream

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")

HEAD = struct.Struct("<4sBBBBQIII")


def _blob(codec: str, n: int = 300, kind: str = "mixed", segment: int = 64) -> bytes:
    return streams.encode(make_stream(kind, n, seed=5), codec, segment=segment).to_bytes()


def _reseal(blob: bytes) -> bytes:
    """Recompute the checksum, so that a tampered blob gets past it to the structure checks."""
    head = bytearray(blob[:HEAD.size])
    head[-4:] = bytes(4)
    crc = zlib.crc32(blob[HEAD.size:], zlib.crc32(bytes(head)))
    return bytes(head[:-4]) + struct.pack("<I", crc) + blob[HEAD.size:]


@pytest.mark.nojit
@pytest.mark.parametrize("codec", CODEC_NAMES)
def test_blob_round_trip(codec: str) -> None:
    ref = make_stream("mixed", 100, seed=1).view(np.int64)
    cs = streams.encode(ref, codec, segment=32)
    again = CompressedStream.from_bytes(cs.to_bytes())
    assert again.codec == codec and len(again) == 100 and again.nbytes == cs.nbytes
    assert again.dtype == np.int64 and again.to_bytes() == cs.to_bytes()
    np.testing.assert_array_equal(again.decode(), ref)
    assert again.cursor(100).prev() == ref[99]


def test_streams_in_a_recording(tmp_path: Path) -> None:
    """Named streams kept in a .wt file next to the events, read back by name and key."""
    a = make_stream("walk", 5000, seed=2)
    b = make_stream("periodic", 700, seed=3).view(np.int64)
    path = tmp_path / "s.wt"
    with RecordingWriter(path) as w:
        streams.put_stream(w, "wet.ts", streams.encode(a), key="node 3")
        streams.put_stream(w, "wet.ts", streams.encode(b, "blast-4"), key="node 4")
        w.close(ended="exit", exit_code=0)
    with open_recording(path) as rec:
        got_a = streams.get_stream(rec, "wet.ts", key="node 3")
        got_b = streams.get_stream(rec, "wet.ts", key="node 4")
        assert streams.get_stream(rec, "wet.ts", key="node 5") is None
        assert got_a is not None and got_b is not None
        np.testing.assert_array_equal(got_a.decode(), a)
        assert got_b.codec == "blast-4" and got_b.cursor(699).next() == b[699]
        with pytest.raises(UsageError):
            streams.get_stream(rec, "")


def test_a_wrong_array_under_a_stream_name_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "s.wt"
    with RecordingWriter(path) as w:
        w.put_array("streams.bad", np.arange(10, dtype=np.int64))
        w.put_array("streams.junk", np.frombuffer(b"not a stream at all", np.uint8))
        w.close(ended="exit", exit_code=0)
    with open_recording(path) as rec:
        for name in ("bad", "junk"):
            with pytest.raises(StreamError):
                streams.get_stream(rec, name)


@pytest.mark.parametrize("codec", CODEC_NAMES)
def test_every_truncation_is_rejected(codec: str) -> None:
    blob = _blob(codec)
    for n in range(len(blob)):
        with pytest.raises(StreamError):
            CompressedStream.from_bytes(blob[:n])
    with pytest.raises(StreamError):
        CompressedStream.from_bytes(blob + b"\x00")


@pytest.mark.parametrize("codec", CODEC_NAMES)
def test_every_single_bit_flip_is_rejected(codec: str) -> None:
    blob = _blob(codec, n=120)
    for byte in range(len(blob)):
        for bit in (0, 3, 7):
            bad = bytearray(blob)
            bad[byte] ^= 1 << bit
            with pytest.raises(StreamError):
                CompressedStream.from_bytes(bytes(bad))


@pytest.mark.parametrize("value", [None, "text", 3, [1, 2], b"", b"WTCS", b"\x00" * 64])
def test_junk_is_a_one_line_error(value: object) -> None:
    with pytest.raises(StreamError) as err:
        CompressedStream.from_bytes(value)  # type: ignore[arg-type]
    assert "\n" not in str(err.value)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(codec=st.sampled_from(CODEC_NAMES), kind=st.sampled_from(["mixed", "periodic", "walk"]),
       edits=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=4),
       cut=st.integers(0, 8))
def test_hostile_blobs_with_a_valid_checksum_never_crash(codec: str, kind: str, edits: list[tuple[int, int]],
                                                         cut: int) -> None:
    """Structure checks reject what the checksum would have: a resealed blob with changed
    bytes either fails with a StreamError (when parsed or when decoded) or decodes to
    arrays of the right length; it never crashes the process or reads out of bounds."""
    blob = bytearray(_blob(codec, n=200, kind=kind, segment=32))
    for where, value in edits:
        blob[where % len(blob)] = value
    if cut:
        del blob[-cut:]
    try:
        cs = CompressedStream.from_bytes(_reseal(bytes(blob)))
    except StreamError as err:
        assert "\n" not in str(err)
        return
    n = len(cs)
    try:
        assert cs.decode().shape == (n,)
        cur = cs.cursor(n // 2)
        assert cur.next_many(n).shape[0] <= n
        assert cur.prev_many(2 * n).shape[0] <= n
    except StreamError as err:
        assert "\n" not in str(err)


def test_bad_arguments_are_usage_errors() -> None:
    cs = streams.encode(np.arange(50, dtype=np.uint64), "bfcm-1", segment=16)
    for bad in ((-1, 3), (3, 2), (0, 51), (0.5, 3)):
        with pytest.raises(UsageError):
            cs.decode_range(*bad)  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        cs.cursor(51)
    with pytest.raises(UsageError):
        streams.encode(np.zeros((2, 2), np.int64))
    with pytest.raises(UsageError):
        streams.encode(np.zeros(3, np.float64))
    with pytest.raises(UsageError):
        streams.encode(np.zeros(3, np.int64), "nope")
    with pytest.raises(UsageError):
        streams.encode(np.zeros(3, np.int64), segment=3)
    with pytest.raises(UsageError):
        streams.encode(np.zeros(0, np.int64), "bdfcm-2")


def test_short_streams_are_stored_fixed_width() -> None:
    """Up to SHORT_STREAM values, auto keeps the smaller of packed and raw (whatever the
    other codecs would save); one value more and it keeps the smallest codec again."""
    from wholetrace.streams.stream import SHORT_STREAM

    for kind in ("constant", "stride", "periodic", "random", "walk"):
        for m in (1, 89, SHORT_STREAM, SHORT_STREAM + 1):
            ref = make_stream(kind, m, seed=m)
            best, sizes = streams.choose(ref, 1 << 16, 1 << 15)
            auto = streams.encode(ref)
            if m <= SHORT_STREAM:
                assert auto.codec in ("packed", "raw") and auto.nbytes == min(sizes["packed"], sizes["raw"])
            else:
                assert auto.nbytes == min(sizes.values())
            assert best.codec == auto.codec
            np.testing.assert_array_equal(auto.decode(), ref)
            np.testing.assert_array_equal(auto.cursor(m).prev_many(m), ref[::-1])


def test_auto_picks_the_smallest_on_the_sample() -> None:
    """The chosen codec is the smallest of all codecs on the sample (here the whole stream)."""
    for kind in ("constant", "stride", "periodic", "random", "walk"):
        ref = make_stream(kind, 2000, seed=9)
        best, sizes = streams.choose(ref, 1 << 16, 1 << 15)
        assert set(sizes) == set(CODEC_NAMES)
        auto = streams.encode(ref)
        assert auto.nbytes == min(sizes.values()) == sizes[auto.codec] == best.nbytes
    empty = streams.encode(np.zeros(0, np.int64))
    assert len(empty) == 0 and empty.decode().shape == (0,) and empty.codec in ("raw", "varint", "packed")
