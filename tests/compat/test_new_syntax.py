"""Python 3.12/3.13 language changes recorded in every mode: same behaviour, oracle line counts."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from differential import check_all_modes
from oracles.settrace_lines import line_counts
from wtutil import compare_lines, run_plain, run_recorded

needs_312 = pytest.mark.skipif(sys.version_info < (3, 12), reason="PEP 695/701 syntax is new in Python 3.12")

#: PEP 695 (`type`, type parameters: new annotation scopes), PEP 701 (nested f-strings with the
#: same quotes), PEP 709 (inlined comprehensions), with implicit calls that raise inside them.
NEW_SYNTAX = '''
type Pair[T] = tuple[T, T]
type Num = int | float


class Checked:
    def __set_name__(self, owner, name):
        self.name = "_" + name

    def __get__(self, obj, owner=None):
        value = getattr(obj, self.name)
        if value < 0:
            raise ValueError(f"{self.name[1:]} is {value}")
        return value

    def __set__(self, obj, value):
        setattr(obj, self.name, value)


class Box[T]:
    v = Checked()

    def __init__(self, v: T) -> None:
        self.v = v

    def get[U](self, f) -> U:
        return f(self.v)

    def __iter__(self):
        yield from range(self.v)


def first[T](xs: list[T]) -> T:
    for x in xs:
        if x:
            return x
    return xs[0]


def squares(n):
    out = [i * i for i in range(n) if i % 2]
    table = {i: [j for j in Box(i)] for i in range(n)}
    return out, sum(len(v) for v in table.values())


def labels(names):
    return f"{'-'.join(f'{n!r:>{len(n) + 2}}' for n in names)}|{f"{f"{len(names)}"}"}"


def main():
    print(labels(["a", "bc"]))
    print(first([0, 3, 4]), Box(5).get(lambda v: v * 2), squares(6))
    print(Pair.__value__, Num.__value__, first.__type_params__)
    for start in (2, -1):
        try:
            print(f"{[b for b in Box(start)]} {Box[int](start).get(lambda v: 1 / (v - 1))}")
        except (ZeroDivisionError, ValueError) as e:
            print(type(e).__name__, e)


main()
'''


@needs_312
def test_new_syntax_in_every_mode() -> None:
    # behaviour, well-formed streams, count modes == blocks, witness/branches regeneration
    assert check_all_modes(textwrap.dedent(NEW_SYNTAX))


@needs_312
@pytest.mark.parametrize("mode", ["count", "witness"])
def test_new_syntax_line_counts_match_the_settrace_oracle(mode: str, tmp_path: Path) -> None:
    script = tmp_path / "new_syntax.py"
    script.write_text(textwrap.dedent(NEW_SYNTAX))
    plain = run_plain(script)
    assert plain.returncode == 0 and "ValueError v is -1" in plain.stdout, plain.stderr
    out = tmp_path / f"{mode}.wt"
    rec = run_recorded(script, out, mode=mode)
    assert (rec.returncode, rec.stdout, rec.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    # the lines the oracle's rule selects (14: descriptor bodies, generic methods and functions,
    # module level; it leaves out lines holding comprehensions, lambdas and `type` values,
    # whose code objects fire line events of their own)
    assert compare_lines(out, {str(script)}, line_counts(script, [], {str(script)})) >= 14
