"""Bidirectional compressed integer streams (WET tier 2): encode, walk both ways, seek, store."""

from wholetrace.streams.codecs import NAMES as CODEC_NAMES
from wholetrace.streams.cursor import Cursor
from wholetrace.streams.store import get_stream, put_stream
from wholetrace.streams.stream import DEFAULT_SAMPLE, DEFAULT_SEGMENT, SHORT_WALK, CompressedStream, choose, encode

__all__ = ["CODEC_NAMES", "CompressedStream", "Cursor", "DEFAULT_SAMPLE", "DEFAULT_SEGMENT", "SHORT_WALK", "choose",
           "encode", "get_stream", "put_stream"]
