"""The per-file function registry: one row per file, expanded into the same functions a
per-function registration gives, and registration cost independent of CFG sizes."""

from __future__ import annotations

from pathlib import Path

import pytest

from wholetrace.errors import StoreError
from wholetrace.instrument.cfg import build_module
from wholetrace.store import Recording, RecordingWriter
from wholetrace.store.registry import encode_registry

SOURCE = '''"""doc"""
import os

def f(x):
    if x:
        return 1
    return 2

class K:
    def m(self):
        yield 1
'''


def descs() -> list[dict[str, object]]:
    return [dict(c.to_json(), plan={"mode": "count", "counters": 2}) for c in build_module(SOURCE, "m.py")]


def test_file_row_expands_like_function_rows(tmp_path: Path) -> None:
    """Functions registered by one ``files`` row read back exactly as if each had been added
    with ``add_function`` (the per-function form older recordings use)."""
    d = descs()
    offsets = [0, 2, 4, 4, 6][:len(d)]
    lines = SOURCE.splitlines(keepends=True)
    with RecordingWriter(tmp_path / "file.wt") as w:
        w.add_file(10, path="/x/m.py", n_functions=len(d), counter_base=100,
                   registry=encode_registry(SOURCE, [dict(x) for x in d], offsets))
    with RecordingWriter(tmp_path / "rows.wt") as w:
        for i, (desc, off) in enumerate(zip(d, offsets)):
            text = SOURCE if desc["kind"] == "module" else "".join(
                lines[int(desc["firstline"]) - 1:int(desc["lastline"])])  # type: ignore[call-overload]
            w.add_function(10 + i, file="/x/m.py", qualname=str(desc["qualname"]),
                           firstline=int(desc["firstline"]), lastline=int(desc["lastline"]),  # type: ignore[call-overload]
                           source=text, cfg=dict(desc, plan={"mode": "count", "counters": 2, "counter_base": 100 + off}),
                           fingerprint=str(desc["fingerprint"]))
    with Recording(tmp_path / "file.wt") as a, Recording(tmp_path / "rows.wt") as b:
        fa, fb = a.functions(), b.functions()
        assert [f.fid for f in fa] == list(range(10, 10 + len(d)))
        assert fa == fb
        assert [f.cfg for f in fa] == [f.cfg for f in fb]
        assert [f.qualname for f in fa] == ["<module>", "f", "K", "K.m"]
        assert fa[1].source == "def f(x):\n    if x:\n        return 1\n    return 2\n"
        assert fa[0].source == SOURCE
        assert a.function(12) == fb[2] and a.function(12).cfg["plan"]["counter_base"] == 104  # type: ignore[index]
        with pytest.raises(StoreError, match="no function 14"):
            a.function(14)
        assert a.meta["totals"]["functions"] == len(d)


def test_overlapping_registrations_are_refused(tmp_path: Path) -> None:
    d = descs()
    with RecordingWriter(tmp_path / "o.wt") as w:
        w.add_file(0, path="m.py", n_functions=len(d), counter_base=0,
                   registry=encode_registry(SOURCE, d, [0] * len(d)))
        w.add_function(2, file="g.py", qualname="g", firstline=1, lastline=1, source="", cfg={}, fingerprint="")
    with Recording(tmp_path / "o.wt") as rec:
        with pytest.raises(StoreError, match="function 2 twice"):
            rec.functions()


def test_bad_registry_blob_is_one_line_error(tmp_path: Path) -> None:
    with RecordingWriter(tmp_path / "b.wt") as w:
        w.add_file(0, path="m.py", n_functions=3, counter_base=0,
                   registry=encode_registry(SOURCE, descs()[:2], [0, 0]))
    with Recording(tmp_path / "b.wt") as rec:
        with pytest.raises(StoreError, match="expected 3 functions") as info:
            rec.functions()
        assert "\n" not in str(info.value)
