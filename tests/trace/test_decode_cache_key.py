"""Kernels that inline ``events`` codes key their numba cache on ``events.py`` too (``cache_depends``):
numba watches only a kernel's own file, so a moved code (wave 14's ``LEAVE_PATH``) would otherwise
leave a stale compiled copy."""

from __future__ import annotations

import hashlib
import sys

import numba
import pytest

import wholetrace.kernels.decode
import wholetrace.kernels.hot_terminals
import wholetrace.kernels.lookahead
import wholetrace.kernels.wpp_intern  # noqa: F401 - the modules checked below


#: The modules a kernel module keys its cache on besides events.py, in ``cache_depends`` order:
#: itself, or (the decoder, split in wave 17) all its parts, each kernel on all of them.
DECODER = ("wholetrace.kernels.decode_layout", "wholetrace.kernels.decode_blocks", "wholetrace.kernels.decode_witness",
           "wholetrace.kernels.decode_path", "wholetrace.kernels.decode")
PARTS = {"wholetrace.kernels.decode": DECODER}


@pytest.mark.skipif(numba.config.DISABLE_JIT, reason="numba's cache only exists with the JIT")
@pytest.mark.parametrize("name", ["wholetrace.kernels.decode", "wholetrace.kernels.lookahead",
                                  "wholetrace.kernels.hot_terminals", "wholetrace.kernels.wpp_intern"])
def test_cache_keyed_on_events_py(name: str) -> None:
    """Every kernel's cache index key ends with the hash of events.py and its module's sources (read here afresh)."""
    parts = PARTS.get(name, (name,))
    h = hashlib.sha256()
    for mod in ("wholetrace.events",) + parts:
        with open(sys.modules[mod].__file__, "rb") as f:  # type: ignore[arg-type]
            h.update(f.read() + b"\0")
    want = h.hexdigest()
    seen = 0
    for mod in parts:
        for d in vars(sys.modules[mod]).values():
            if isinstance(d, numba.core.registry.CPUDispatcher) and d.py_func.__module__ == mod:
                key = d._cache._index_key(numba.int64(numba.int64), d.targetctx.codegen())
                assert key[-1] == want, d.py_func.__name__
                seen += 1
    assert seen >= (20 if name.endswith("decode") else 1)


def test_every_part_of_the_decoder_is_keyed() -> None:
    """The decoder's ``cache_depends`` names every ``kernels/decode*.py`` file (a new part would
    otherwise keep a stale compiled copy of the constants it inlines)."""
    from pathlib import Path

    folder = Path(sys.modules["wholetrace.kernels.decode"].__file__).parent  # type: ignore[arg-type]
    files = {f"wholetrace.kernels.{p.stem}" for p in folder.glob("decode*.py")}
    assert files == set(DECODER)
