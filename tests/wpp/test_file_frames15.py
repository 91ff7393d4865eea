"""The builder's file frames, wave 15: each function's plan strategy read without parsing its description (``wpp.builder._strategies``), against a full JSON parse."""

from __future__ import annotations

import ast
import json
import random
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


_P = b'{"q":1,"plan":{"mode":"path","strategy":"paths"}}'   # 49 bytes


@pytest.mark.parametrize("blob, n", [
    (b"not zstd", 1),
    (schema.compress(b'{"source":"","functions":[]}'), 0),         # no newline
    (schema.compress(b'{"source":"","functions":[]}\n'), 2),       # fewer functions than said
    (schema.compress(b'{"source":"","functions":[["f","function",1,1,"fp",0,99,0]]}\n{}'), 1),   # a range past the end
    (schema.compress(b'{"source":"","functions":[["f","function",1,1,"fp",0,2,0]]}\n{}'), 1),    # no plan
    (schema.compress(b'{"source":"","functions":[["f","function",1,1,"fp",0,3,0]]}\n{x}'), 1),   # not JSON
    # review15b LOW 4: damaged where the fast read looks past the header (a description in the recorder's form)
    (schema.compress(b'{"source":5,"functions":[["f","function",1,1,"fp",0,49,0]]}\n' + _P), 1),
    (schema.compress(b'{"source":"","functions":[[7,"function",1,1,"fp",0,49,0]]}\n' + _P), 1),
    (schema.compress(b'{"source":"","functions":[["f","function",1,1.0,"fp",0,49,0]]}\n' + _P), 1),
    (schema.compress(b'{"source":"","functions":[["f","function",1,1,"fp",0,49,"0"]]}\n' + _P), 1),
])
def test_a_damaged_registry_fails_as_before(blob: bytes, n: int) -> None:
    """What the fast read does not recognise goes through ``decode_registry`` and its errors."""
    assert len(_P) == 49 and B._strategies(_blob([_P.decode()]), 1) == ["paths"]   # the form is read
    with pytest.raises(StoreError):
        B.path_functions(_frame(0, n, blob))



# review15b MED 1: valid JSON where a plain string search would read another "plan" than the
# top-level one ``json.loads`` keeps (the last duplicate; a nested one; none at all)
REVIEW_FORMS = [
    '{"x":1,"plan":{"mode":"path","strategy":"paths"},"pl\\u0061n":{"mode":"path","strategy":"trace"}}',
    '{"x":1,"plan":{"mode":"path","strategy":"paths"},"plan" :{"mode":"path","strategy":"trace"}}',
    '{"pl\\u0061n":{"mode":"path","strategy":"trace"},"x":{"a":1,"plan":{"mode":"path","strategy":"paths"}}}',
    '{"plan" :{"mode":"path","strategy":"trace"},"x":{"a":1,"plan":{"mode":"path","strategy":"paths"}}}',
    '{"plan":{"mode":"path","strategy":"trace"},"x":[1,{"a":1,"plan":{"mode":"path","strategy":"paths"}}]}',
    '{"q":1,"x":{"a":1,"plan":{"mode":"path","strategy":"paths"}}}',          # no top-level plan
    '{"q":[1,{"a":1,"plan":{"mode":"path","strategy":"paths"}}]}',           # none: nested in a list
    '{"x":1,"plan":{"mode":"path","strategy":"paths","strategy":"trace"}}',  # the plan's last strategy
    '{"x":1,"plan":{"mode":"path","strategy":"paths","str\\u0061tegy":"trace"}}',
]


def _oracle(desc: str) -> str | None:
    """What ``path_functions`` makes of one description by ``json.loads``: None where it raises."""
    value = json.loads(desc)
    plan = value.get("plan") if isinstance(value, dict) else None
    if not isinstance(plan, dict):
        return None
    return "paths" if plan.get("strategy") == "paths" else "other"


@pytest.mark.parametrize("desc", REVIEW_FORMS)
def test_the_review_forms_give_what_a_full_parse_gives(desc: str) -> None:
    want = _oracle(desc)
    blob = _blob([PATHS, desc])
    assert B._strategies(blob, 2) in (None, ["paths", want])
    if want is None:
        with pytest.raises(StoreError):
            B.path_functions(_frame(3, 2, blob))
    else:
        assert B.path_functions(_frame(3, 2, blob)) == (3, 2, [3] + ([4] if want == "paths" else []))


# (text with a backslash is put in quotes as it is: a JSON escape)
_KEYS = ["plan", "strategy", "mode", "plan ", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"]
_STRINGS = ["paths", "trace", "plan", "strategy", "}}", "{[", "]", ",", ':"', ',"plan":{"mode":"path","strategy":"',
            "e", "f", "g", "h", "i", "j", "k", "l", "m", "n"]
_ESCAPED = ["pl\\u0061n", "str\\u0061tegy", 'a\\"plan', ',\\"plan\\":{', "path\\u0073"]


def _random_desc(rnd: random.Random) -> str:
    """A valid JSON object, often with a compact path-mode plan last (the recorder's form), and
    around it what valid JSON allows: nested plans, duplicate keys, escapes, spaces, brackets in strings."""
    def string(s: str) -> str:
        s = rnd.choice(_ESCAPED) if rnd.random() < 0.01 else s
        return '"' + s + '"' if "\\" in s else json.dumps(s)

    def value(depth: int) -> str:
        r = rnd.random()
        if r < 0.25 and depth < 3:
            return obj(depth + 1, plan_last=False)
        if r < 0.4 and depth < 3:
            return "[" + ",".join(value(depth + 1) for _ in range(rnd.randrange(3))) + "]"
        if r < 0.35:
            return plan()
        if r < 0.85:
            return string(rnd.choice(_STRINGS))
        return str(rnd.randrange(10))

    def plan() -> str:
        items = ['"mode":"path"', '"strategy":' + string(rnd.choice(["paths", "trace"]))]
        if rnd.random() < 0.1:
            items.reverse()
        if rnd.random() < 0.1:
            items.append(rnd.choice(['"strategy":"trace"', '"strategy":"paths"', '"counters":3']))
        return "{" + ",".join(items) + "}"

    def obj(depth: int, plan_last: bool) -> str:
        sep = rnd.choice([":", ":", " :", ": "]) if rnd.random() < 0.2 else ":"
        items = [string(rnd.choice(_KEYS)) + sep + value(depth) for _ in range(rnd.randrange(int(plan_last), 4))]
        if plan_last and rnd.random() < 0.85:
            items.append('"plan":' + plan())
        elif plan_last and rnd.random() < 0.5:   # no top-level plan, a nested one last, in the pattern's form
            items.append('"k":{"a":1,"plan":' + plan() + "}")
        if rnd.random() < 0.05:
            items.append(rnd.choice(['"plan"', '"pl\\u0061n"', '"plan" ']) + ":" + plan())
        return "{" + ",".join(items) + "}"

    return obj(0, plan_last=True)


def test_the_fast_read_never_differs_from_a_full_parse_of_random_descriptions() -> None:
    rnd = random.Random(15)
    read = 0
    for _ in range(3000):
        descs = [_random_desc(rnd) for _ in range(rnd.randrange(1, 3))]
        want = [_oracle(d) for d in descs]
        got = B._strategies(_blob(descs), len(descs))
        if got is not None:
            assert None not in want and got == want, descs
            read += 1
    assert read > 500   # the fast read is taken often enough to be tested
