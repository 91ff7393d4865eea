"""The builder's file frames, wave 15: each function's plan strategy read without parsing its description (``wpp.builder._strategies``), against a full JSON parse."""

from __future__ import annotations

import ast
import json
import sysconfig
from pathlib import Path

import pytest

from wholetrace.errors import StoreError
from wholetrace.instrument.cfg import build_cfg, iter_functions
from wholetrace.instrument.modes import make_plan
from wholetrace.store import schema
from wholetrace.store.registry import encode_registry
from wholetrace.wpp import builder as B

STDLIB = Path(sysconfig.get_paths()["stdlib"])
# sources with many shapes of function (loops, try/except, generators, comprehensions, huge ones
# whose path numbering overflows: strategy "trace")
SOURCES = ("difflib.py", "json/decoder.py", "textwrap.py", "tokenize.py", "argparse.py", "pprint.py")


def _registry(path: Path) -> tuple[bytes, int]:
    """The registry blob the instrumenter makes for ``path`` in path mode (as ``InstrumentingLoader.template``)."""
    source = path.read_text()
    tree = ast.parse(source)
    descs, offsets = [], []
    for fn, q in iter_functions(tree):
        cfg = build_cfg(fn, q)
        descs.append(dict(cfg.to_json(), plan=make_plan("path", cfg, 0).to_json()))
        offsets.append(0)
    return encode_registry(source, descs, offsets), len(descs)


def _parsed(blob: bytes) -> list[str]:
    """Each description's strategy by a full JSON parse (the oracle: no use of the builder's code)."""
    raw = schema.decompress(blob, None, "x")
    cut = raw.index(b"\n")
    body = raw[cut + 1:]
    return [json.loads(body[r[5]:r[6]])["plan"]["strategy"] for r in json.loads(raw[:cut])["functions"]]


def _frame(fid_base: int, n: int, blob: bytes) -> bytearray:
    return bytearray(B.FRAME.pack(fid_base, n) + blob)


@pytest.mark.parametrize("name", SOURCES)
def test_strategies_equal_a_full_parse_of_every_description(name: str) -> None:
    blob, n = _registry(STDLIB / name)
    want = _parsed(blob)
    got = B._strategies(blob, n)
    assert got is not None   # the form the recorder sends: read without parsing
    assert got == ["paths" if s == "paths" else "other" for s in want]
    assert B.path_functions(_frame(40, n, blob)) == (40, n, [40 + i for i, s in enumerate(want) if s == "paths"])


def test_both_strategies_occur_in_the_sources() -> None:
    seen = {s for name in SOURCES for s in _parsed(_registry(STDLIB / name)[0])}
    assert seen == {"paths", "trace"}


def _blob(descs: list[str], source: str = "x = 1\n") -> bytes:
    bodies = [d.encode() for d in descs]
    rows, pos = [], 0
    for i, b in enumerate(bodies):
        rows.append([f"f{i}", "function", 1, 1, "fp", pos, pos + len(b), 0])
        pos += len(b)
    head = json.dumps({"source": source, "functions": rows}, separators=(",", ":"))
    return schema.compress(head.encode() + b"\n" + b"".join(bodies))


PATHS = '{"qualname":"f","blocks":[],"plan":{"mode":"path","strategy":"paths","counters":0}}'
TRACE = '{"qualname":"f","blocks":[],"plan":{"mode":"path","strategy":"trace","counters":0}}'


@pytest.mark.parametrize("desc, strategy", [
    # a nested "plan" key before the real one: counted, so the full parse decides
    ('{"x":{"plan":{"mode":"path","strategy":"trace"}},"plan":{"mode":"path","strategy":"paths"}}', "paths"),
    ('{"x":{"plan":{"mode":"path","strategy":"paths"}},"plan":{"mode":"path","strategy":"trace"}}', "trace"),
    # a key ending in an escaped quote and "plan"
    ('{"a\\"plan":{"mode":"path","strategy":"paths"},"plan":{"mode":"path","strategy":"trace"}}', "trace"),
    # an escaped strategy
    ('{"plan":{"mode":"path","strategy":"path\\u0073"}}', "paths"),
    # another key order
    ('{"plan":{"strategy":"paths","mode":"path"}}', "paths"),
    # strings holding the pattern's text (escaped quotes: not the pattern)
    ('{"s":",\\"plan\\":{\\"mode\\":\\"path\\",\\"strategy\\":\\"paths\\"","plan":{"mode":"path","strategy":"trace"}}',
     "trace"),
])
def test_other_forms_give_what_a_full_parse_gives(desc: str, strategy: str) -> None:
    blob = _blob([PATHS, desc, TRACE])
    got = B.path_functions(_frame(7, 3, blob))
    assert json.loads(desc)["plan"]["strategy"] == strategy
    assert got == (7, 3, [7] + ([8] if strategy == "paths" else []))


def test_the_fast_read_and_the_full_parse_agree_on_the_plain_form() -> None:
    blob = _blob([PATHS, TRACE, PATHS])
    assert B._strategies(blob, 3) == ["paths", "other", "paths"]
    assert B.path_functions(_frame(0, 3, blob)) == (0, 3, [0, 2])


@pytest.mark.parametrize("blob, n", [
    (b"not zstd", 1),
    (schema.compress(b'{"source":"","functions":[]}'), 0),         # no newline
    (schema.compress(b'{"source":"","functions":[]}\n'), 2),       # fewer functions than said
    (schema.compress(b'{"source":"","functions":[["f","function",1,1,"fp",0,99,0]]}\n{}'), 1),   # a range past the end
    (schema.compress(b'{"source":"","functions":[["f","function",1,1,"fp",0,2,0]]}\n{}'), 1),    # no plan
    (schema.compress(b'{"source":"","functions":[["f","function",1,1,"fp",0,3,0]]}\n{x}'), 1),   # not JSON
])
def test_a_damaged_registry_fails_as_before(blob: bytes, n: int) -> None:
    """What the fast read does not recognise goes through ``decode_registry`` and its errors."""
    with pytest.raises(StoreError):
        B.path_functions(_frame(0, n, blob))

