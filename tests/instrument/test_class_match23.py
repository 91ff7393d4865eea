"""A ``match`` in a class body keeps its subject where the namespace cannot see it (explore23
HIGH-4: the split ``match`` bound ``wt.m<N>`` in the namespace, so an ``Enum`` registered it as a
member and failed, ``KeyError: 'wt.m1'``, and a ``__prepare__`` mapping saw the name set)."""

from __future__ import annotations

from pathlib import Path

import pytest

from oracles.settrace_lines import line_counts
from wtutil import assert_same_counts, compare_lines, profiles, run_plain, run_recorded

MODES = ("blocks", "count", "count-naive", "witness", "branches", "path", "full")

PROGRAM = '''\
import enum


class Log(dict):
    def __setitem__(self, k, v):
        if not k.startswith("__"):
            print("set", k)
        super().__setitem__(k, v)

    def __delitem__(self, k):
        print("del", k)
        super().__delitem__(k)


class Meta(type):
    @classmethod
    def __prepare__(mcls, name, bases):
        return Log()


MODE = "x"


class Color(enum.Enum):
    RED = 1
    match MODE:
        case "x":
            GREEN = 2
        case _:
            GREEN = 3


def make(v):
    class C(metaclass=Meta):
        match v:
            case [a, b] if a > b:
                kind = "desc"
            case [a, b]:
                kind = "pair"
            case {"k": k}:
                kind = "map"
            case int(n) | float(n) if n > 0:
                kind = "pos"
            case str():
                kind = "str"
        try:
            match v:
                case 1:
                    raise ValueError(v)
                case 2:
                    x = 1
                case 3 if 1 / 0:
                    x = 2
        except (ValueError, ZeroDivisionError):
            kind = "raised"
    return sorted(k for k in vars(C) if not k.startswith("__")), getattr(C, "kind", None)


for v in ([2, 1], [1, 2], {"k": 3}, 5, -1.0, "s", 1, 2, 3, None):
    print(make(v))
print(list(Color))


class Flag(enum.IntFlag):
    A = 1
    match A:
        case 2:
            B = 4
        case 1 if False:
            B = 8
        case _:
            B = 2
print(list(Flag))
'''


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object, dict[str, Path]]:
    where = tmp_path_factory.mktemp("classmatch")
    script = where / "classmatch.py"
    script.write_text(PROGRAM)
    plain = run_plain(script)
    assert plain.returncode == 0, plain.stderr
    out = {}
    for mode in MODES:
        wt = where / f"{mode}.wt"
        got = run_recorded(script, wt, mode=mode)
        out[mode] = wt
        assert (got.stdout, got.stderr, got.returncode) == (plain.stdout, plain.stderr, plain.returncode), mode
    return script, plain, out


def test_namespace_sees_no_name_of_ours(runs) -> None:
    """Every mode prints what plain prints (the Enums build, the mapping sees the program's names only)."""
    _script, plain, out = runs
    assert "set kind" in plain.stdout and "wt." not in plain.stdout
    assert set(out) == set(MODES)


def test_counts_equal_blocks_and_the_line_oracle(runs) -> None:
    script, _plain, out = runs
    want = profiles(out["blocks"])
    assert any(q == "make.<locals>.C" for _f, q, _l in want)
    for mode in MODES[1:]:
        assert_same_counts(want, profiles(out[mode]), mode)
    oracle = line_counts(script, [], {str(script)})
    assert compare_lines(out["blocks"], {str(script)}, oracle) >= 20
