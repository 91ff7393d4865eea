"""Stored WET chunks (``wet/packing.py``): every encoding gives back the chunk exactly, the
smallest one is kept, and a stored WET reads back equal to the one built."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from wholetrace.errors import StoreError
from wholetrace.store import Recording, schema
from wholetrace.wet import packing
from wholetrace.wet.graph import build, save, stored

from golden import GOLDEN
from wtutil import run_recorded


def arrays(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    use = np.sort(rng.integers(0, 4 * n, n))
    src = np.sort(rng.integers(0, 4 * n, n))
    rows = np.arange(n)
    return {"d_use": use, "d_def": use - rng.integers(-3, 50, n), "c_src": src, "c_dst": src + 1,
            "cd": np.where(rng.random(n) < 0.3, -1, np.maximum(rows - rng.integers(1, 9, n), -1)),
            "rec_inst": np.maximum.accumulate(rng.integers(-1, n, n)), "fid": rng.integers(0, 5, n),
            "d_loc": rng.integers(-(1 << 62), 1 << 62, n), "locs": rng.integers(0, 99, (n, 3))}


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n", [1, 17, 3000])
def test_every_encoding_round_trips(seed: int, n: int) -> None:
    """Each candidate encoding, read back as ``get_array`` would return it, is the chunk."""
    rng = np.random.default_rng(seed)
    got = arrays(rng, n)
    for name, part in got.items():
        part = part.astype(np.int64)
        ctx = {"lo": np.int64(5 * n), **{d: got[d].astype(np.int64) for d in packing.TRANSFORMS.get(name, (0, 0, ()))[2]}}
        cands = packing.candidates(name, part, ctx, schema.compress)
        assert set(cands) == ({"z", "p", "s", "P", "S"} if name in packing.TRANSFORMS else {"z", "p", "s"})
        for enc, (blob, dtype, shape) in cands.items():
            raw = schema.decompress(blob, None, "test")
            stored_arr = np.frombuffer(raw, np.dtype(dtype)).reshape(shape)
            back = packing.unpack(name, enc, stored_arr, ctx, part.shape[1] if part.ndim == 2 else 0)
            assert back.dtype == np.int64 and np.array_equal(back, part), (name, enc)
        enc, blob, _d, _s, sizes = packing.pack(name, part, ctx, schema.compress)
        assert len(blob) == min(sizes.values()) == sizes[enc]


def test_stored_wet_equals_the_built_one(tmp_path: Path) -> None:
    script = tmp_path / "prog.py"
    script.write_text(GOLDEN["dict_keys"][0] * 3)
    wt = tmp_path / "prog.wt"
    assert run_recorded(script, wt, mode="full").returncode == 0
    with Recording(wt) as rec:
        w = build(rec)
    save(wt, w)
    with Recording(wt) as rec:
        back = stored(rec)
    assert back is not None
    for name in ("fid", "sid", "frame", "stream", "kind", "cd", "d_use", "d_def", "d_loc", "c_src", "c_dst",
                 "rec_inst", "locs"):
        assert np.array_equal(getattr(back, name), getattr(w, name)), name


def test_damaged_encoding_is_a_store_error(tmp_path: Path) -> None:
    """A stream blob that does not parse is reported in one line, not a crash."""
    import sqlite3

    script = tmp_path / "prog.py"
    script.write_text(GOLDEN["dict_keys"][0])
    wt = tmp_path / "prog.wt"
    assert run_recorded(script, wt, mode="full").returncode == 0
    with Recording(wt) as rec:
        w = build(rec)
    save(wt, w)
    junk = schema.compress(b"\x07" * 40)
    conn = sqlite3.connect(wt)
    cols = [r[1] for r in conn.execute("PRAGMA table_info(arrays)")]
    row = conn.execute("SELECT * FROM arrays WHERE name = 'wet.g.d_use' AND key = '0'").fetchone()
    new = dict(zip(cols, row), dtype="|u1", shape="[40]", blob=junk)
    if "crc" in cols:
        new["crc"] = schema.row_crc("arrays", *(new[c] for c in cols if c != "crc"))
    conn.execute("DELETE FROM arrays WHERE name = 'wet.g.d_use'")
    conn.execute(f"INSERT INTO arrays VALUES ({', '.join('?' * len(cols))})", [new[c] for c in cols])
    conn.commit()
    conn.close()
    meta_enc = None
    with Recording(wt) as rec:
        import json
        meta_enc = json.loads(rec.get_array("wet.g.meta").tobytes())["enc"]["d_use"]
    if meta_enc == ["z"]:
        pytest.skip("the chunk was stored as plain zstd: a junk blob of that size is not a damaged codec")
    with Recording(wt) as rec, pytest.raises(StoreError):
        stored(rec)
